"""Module size as a sign of cohesion (issue 28): a production module over 600 lines has
more than one job, and one of the Redis adapter's modules (one per port) over 400 has
taken on another port's."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 600
REDIS_LIMIT = 400


def sizes(package: str) -> dict[str, int]:
    return {
        path.relative_to(ROOT).as_posix(): len(path.read_text(encoding="utf-8").splitlines())
        for path in (ROOT / package).rglob("*.py")
    }


def test_no_production_module_is_over_600_lines() -> None:
    measured = {**sizes("copilot_core"), **sizes("adapters"), **sizes("entrypoints")}
    assert len(measured) > 100  # the tree was found
    assert {name: n for name, n in measured.items() if n > LIMIT} == {}


def test_no_module_of_the_redis_adapter_is_over_400_lines() -> None:
    measured = sizes("adapters/redis")
    assert len(measured) >= 5
    assert {name: n for name, n in measured.items() if n > REDIS_LIMIT} == {}
