"""A turn whose model's integration another thread is still importing (the start-up
warm-up) waits for it off the event loop: the loop answers everything else meanwhile.

Building the model in the loop would wait on Python's import lock with the whole loop
held: 1.6-2.0 s without an answer to ``/healthz`` (or any stream) when a first turn came
during the warm-up, measured with ``serve`` on a 2-core machine.
"""

from __future__ import annotations

import asyncio
import importlib
import sys
import threading
import time
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from pydantic import SecretStr

from adapters.llm import LangchainLanguageModel, LLMSettings, SettingsLanguageModelProvider, _warm
from copilot_core.ports import ModelOverrides

#: The slow integration's import: it tells it has begun, then waits to be released.
_SLOW_MODULE = """
import warm_gate
warm_gate.started.set()
assert warm_gate.release.wait(60)
"""


class _Settings:
    async def get_secret(self, user_id: str) -> LLMSettings | None:
        return LLMSettings(provider="openai", model="gpt-x", api_key=SecretStr("sk-unused"))


@pytest.fixture
def gate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[types.SimpleNamespace]:
    """``slow_integration``, as the provider's integration, whose import another thread
    (the warm-up) has begun and holds until ``release`` is set."""
    gate = types.SimpleNamespace(started=threading.Event(), release=threading.Event())
    monkeypatch.setitem(sys.modules, "warm_gate", gate)
    (tmp_path / "slow_integration.py").write_text(_SLOW_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(_warm, "integration_of", lambda provider: "slow_integration")
    monkeypatch.setattr(_warm, "_LOADED", set())
    warm_up = threading.Thread(
        target=importlib.import_module, args=("slow_integration",), daemon=True
    )
    warm_up.start()
    assert gate.started.wait(30)
    yield gate
    gate.release.set()
    warm_up.join(30)
    sys.modules.pop("slow_integration", None)


def _factory(settings: LLMSettings, **options: Any) -> GenericFakeChatModel:
    importlib.import_module("slow_integration")  # as build_chat_model imports langchain_openai

    return GenericFakeChatModel(messages=iter([AIMessage("ok")]))


async def test_the_loop_answers_while_the_turn_waits_for_its_integration(
    gate: types.SimpleNamespace,
) -> None:
    provider = SettingsLanguageModelProvider(_Settings(), factory=_factory)
    turn = asyncio.ensure_future(provider.for_user("alice", ModelOverrides()))
    ticks = 0
    started = time.monotonic()
    while time.monotonic() - started < 0.5:  # the loop keeps running: it ticks
        await asyncio.sleep(0.01)
        ticks += 1
    assert not turn.done()  # the turn still waits for the import...
    assert ticks >= 10  # ...and the loop went on meanwhile (a held loop: one tick)
    gate.release.set()
    selection = await asyncio.wait_for(turn, 30)
    assert isinstance(selection.model, LangchainLanguageModel)


async def test_once_loaded_the_turn_does_not_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_warm, "_LOADED", set())
    threads: list[str] = []

    def in_thread(*args: object) -> asyncio.Future[None]:
        threads.append("t")
        return _done()

    monkeypatch.setattr(_warm, "in_daemon_thread", in_thread)
    await _warm.integration_loaded("openai")
    await _warm.integration_loaded("openai")
    await _warm.integration_loaded("openai_compatible")  # the same integration
    assert threads == ["t"]  # one import at most, then nothing but a set lookup


def _done() -> asyncio.Future[None]:
    future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    future.set_result(None)
    return future
