"""The start-up warm-up stops between its steps once asked to."""

from __future__ import annotations

from typing import Any

import pytest

from adapters.llm import _warm, warm_up


@pytest.fixture
def steps(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    done: list[str] = []

    def build(settings: Any, **_: Any) -> None:
        done.append(settings.provider)

    monkeypatch.setattr(_warm, "build_chat_model", build)
    monkeypatch.setattr(_warm, "offline_encoding", lambda name: done.append(name))
    return done


def test_every_step_runs_without_a_stop(steps: list[str]) -> None:
    assert warm_up() is True
    assert steps == ["openai", "anthropic", "ollama_native", "cl100k_base"]


@pytest.mark.parametrize("after", [0, 1, 3])
def test_nothing_more_loads_once_stop_answers_true(steps: list[str], after: int) -> None:
    asked: list[int] = []

    def stop() -> bool:
        asked.append(len(steps))
        return len(steps) >= after

    assert warm_up(stop) is False
    assert len(steps) == after
    assert asked[-1] == after  # asked before the step it refused
