"""A first token after minutes, in real time (issue 40, item 1): prints a timeline.

Run: ``python -m tests.benchmarks.bench_first_token_wait [--delay 200] [--bound 300]``.
The scripted OpenAI-compatible server on 127.0.0.1 sends its headers, then nothing for
``--delay`` seconds (llama.cpp's server reading a long prompt), then the answer; the
user's ``first_token_timeout`` is ``--bound``; every library default is left as it is (no
``LANGCHAIN_OPENAI_STREAM_CHUNK_TIMEOUT_S``). Then a request given up on (``--bound``
shorter than ``--delay``, scaled to a few seconds) and the next one's waiting note.
Not in the default benchmark run: it takes ``--delay`` seconds. Exits 1 when the answer
does not come or the note is missing.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time

from pydantic import SecretStr

from adapters.llm import LLMSettings, SettingsLanguageModelProvider
from copilot_core import AbortToken, AgentSettings, BuiltinAgent, CopilotMode, ToolContext
from copilot_core.events import AgentEvent, ContentEvent, ErrorEvent, StatusEvent
from copilot_core.ports import AgentRunConfig, ModelOverrides
from copilot_core.testing import FakeToolExecutor, SequentialIds, SteppingClock
from tests.fakes.openai_server import Reply, ScriptedOpenAIServer

__all__ = ["main"]


class _Source:
    def __init__(self, settings: LLMSettings) -> None:
        self.settings = settings

    async def get_secret(self, user_id: str) -> LLMSettings | None:
        return self.settings


async def _turn(provider: SettingsLanguageModelProvider, interval: float) -> list[AgentEvent]:
    agent = BuiltinAgent(
        FakeToolExecutor(),
        None,
        clock=SteppingClock(),
        ids=SequentialIds("m"),
        settings=AgentSettings(waiting_interval=interval),
    )
    context = ToolContext(
        project_id="p",
        user_id="alice",
        session_id="s",
        mode=CopilotMode.TEACHING_ASSISTANT,
        abort=AbortToken(),
    )
    selection = await provider.for_user("alice", ModelOverrides())
    started = time.monotonic()
    events: list[AgentEvent] = []
    config = AgentRunConfig(context=context, model=selection)
    async for event in agent.run("What is in my lab?", [], config):
        first_text = isinstance(event, ContentEvent) and not any(
            isinstance(e, ContentEvent) for e in events
        )
        events.append(event)
        if isinstance(event, (StatusEvent, ErrorEvent)) or first_text:
            what = (
                event.message
                if isinstance(event, StatusEvent)
                else event.error
                if isinstance(event, ErrorEvent)
                else f"first text {getattr(event, 'content', '')!r}"
            )
            print(f"{time.monotonic() - started:8.1f} s  {type(event).__name__}: {what}")
    return events


def _settings(server: ScriptedOpenAIServer, bound: float) -> LLMSettings:
    return LLMSettings(
        provider="openai_compatible",
        model="m",
        base_url=server.base_url,
        api_key=SecretStr("k"),
        first_token_timeout=bound,
    )


async def _run(delay: float, bound: float) -> int:
    os.environ.pop("LANGCHAIN_OPENAI_STREAM_CHUNK_TIMEOUT_S", None)
    failures = 0
    async with ScriptedOpenAIServer() as server:
        print(f"-- a first token after {delay:g} s, the user's bound {bound:g} s")
        server.add(Reply(text="Your lab is empty.", first_chunk_delay=delay))
        provider = SettingsLanguageModelProvider(_Source(_settings(server, bound)))
        events = await _turn(provider, interval=max(1.0, delay / 8))
        text = "".join(e.content for e in events if isinstance(e, ContentEvent))
        print(f"answer: {text!r}")
        failures += text != "Your lab is empty."

        print("-- given up on after 2 s (the server would answer at 60 s), then the next")
        server.add(Reply(text="late", first_chunk_delay=60), Reply(text="ok", first_chunk_delay=1))
        provider = SettingsLanguageModelProvider(_Source(_settings(server, 2.0)))
        await _turn(provider, interval=0.5)
        gone = server.requests[-1]
        await asyncio.to_thread(gone.finished.wait, 5)
        if gone.disconnected_at is not None:
            print(f"the server saw the hang-up {gone.disconnected_at - gone.received_at:.2f} s in")
        else:
            print("the server did not see the hang-up")
            failures += 1
        events = await _turn(provider, interval=0.5)
        noted = [e for e in events if isinstance(e, StatusEvent) and "busy" in e.message]
        failures += not noted
    return 1 if failures else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--delay", type=float, default=200.0)
    parser.add_argument("--bound", type=float, default=300.0)
    args = parser.parse_args(argv)
    return asyncio.run(_run(args.delay, args.bound))


if __name__ == "__main__":
    sys.exit(main())
