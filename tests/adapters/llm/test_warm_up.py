"""The start-up warm-up: its steps, in order; it stops between them once asked to; a step
that fails is logged and the others still run."""

from __future__ import annotations

import logging
from collections.abc import Callable

import pytest

from adapters.llm import _warm, warm_up
from adapters.llm._warm import warm_up_steps

NAMES = ["openai", "turn path", "tokenizer", "anthropic", "ollama_native"]


@pytest.fixture
def steps(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    done: list[str] = []

    def recording() -> tuple[tuple[str, Callable[[], object]], ...]:
        return tuple((name, lambda name=name: done.append(name)) for name in NAMES)

    monkeypatch.setattr(_warm, "warm_up_steps", recording)
    return done


def test_the_openai_integration_comes_first_and_every_provider_is_warmed() -> None:
    # OpenAI first: the default provider, and every OpenAI-compatible one's integration.
    assert [name for name, _ in warm_up_steps()] == NAMES


def test_every_step_runs_without_a_stop(steps: list[str]) -> None:
    assert warm_up() is True
    assert steps == NAMES


@pytest.mark.parametrize("after", [0, 1, 3])
def test_nothing_more_loads_once_stop_answers_true(steps: list[str], after: int) -> None:
    asked: list[int] = []

    def stop() -> bool:
        asked.append(len(steps))
        return len(steps) >= after

    assert warm_up(stop) is False
    assert len(steps) == after
    assert asked[-1] == after  # asked before the step it refused


def test_a_step_that_fails_is_logged_and_the_next_ones_run(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    done: list[str] = []

    def missing_sdk() -> None:
        raise ImportError("No module named 'anthropic'")

    monkeypatch.setattr(
        _warm,
        "warm_up_steps",
        lambda: (("anthropic", missing_sdk), ("ollama_native", lambda: done.append("ollama"))),
    )
    with caplog.at_level(logging.WARNING, logger="adapters.llm._warm"):
        assert warm_up() is True
    assert done == ["ollama"]
    [record] = caplog.records
    assert "could not load anthropic" in record.getMessage()
    assert record.exc_info is not None and record.exc_info[0] is ImportError


def test_the_turn_path_step_calls_no_server() -> None:
    # LangChain's local fake model through the service's adapter: it completes offline.
    dict(warm_up_steps())["turn path"]()
