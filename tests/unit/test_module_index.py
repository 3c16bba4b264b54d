"""docs/architecture.md's module index names every module of the code, so that any
behaviour is one hop away (and the index cannot fall behind a new module unnoticed)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SECTIONS = ("copilot_core", "adapters", "entrypoints")


def indexed(section: str) -> set[str]:
    """The modules the section's table names: backticked names in its first column; a name
    without a package after one with a package (``gns3/_a``, ``_b``) shares that package."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    body = text.split(f"### {section}\n", 1)[1].split("\n#", 1)[0]
    names: set[str] = set()
    for line in body.splitlines():
        if not line.startswith("| `"):
            continue
        package = ""
        for name in re.findall(r"`([^`]+)`", line.split(" | ", 1)[0]):
            if "/" in name and section == "adapters" and not name.startswith("_"):
                package = name.split("/", 1)[0] + "/"
                names.add(name)
            else:
                names.add(package + name)
    names.discard("__init__")  # the core's public root has a row of its own
    return names


def modules(section: str) -> set[str]:
    base = ROOT / section
    return {
        path.relative_to(base).with_suffix("").as_posix()
        for path in base.rglob("*.py")
        if path.stem not in ("__init__", "__main__")
    }


def test_every_module_is_in_the_architecture_index() -> None:
    missing = {section: sorted(modules(section) - indexed(section)) for section in SECTIONS}
    assert missing == {section: [] for section in SECTIONS}


def test_the_index_names_no_module_that_does_not_exist() -> None:
    stale = {section: sorted(indexed(section) - modules(section)) for section in SECTIONS}
    assert stale == {section: [] for section in SECTIONS}
