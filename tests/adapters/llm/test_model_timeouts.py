"""The waits for a model, over real HTTP against the scripted server: the first token,
the pause between tokens, and the ``waiting_for_model`` notes while a slow model reads.

A local model on a CPU may read a long prompt for minutes before its first token; the
agent waits for it (bounded by ``first_token_timeout``) and says so meanwhile, whatever
the server sends (keep-alive comments do not count as an answer), and ends a stream
that pauses too long between tokens with the partial answer kept.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import socket
import threading

from adapters.llm import LLMTimeouts, SettingsLanguageModelProvider, TiktokenTokenCounter
from adapters.llm._settings import LLMSettings
from copilot_core import AbortToken, AgentSettings, BuiltinAgent, CopilotMode, ToolContext
from copilot_core.events import (
    AgentEvent,
    ContentEvent,
    ErrorEvent,
    StatusEvent,
    StepCompleted,
)
from copilot_core.ports import AgentRunConfig, ModelOverrides, ModelSelection, ModelTimeouts
from copilot_core.testing import FakeToolExecutor, SequentialIds, SteppingClock
from tests.adapters.llm.conftest import settings_for
from tests.fakes.openai_server import SEEN_WITHIN, Reply, ScriptedOpenAIServer


class Settings:
    def __init__(self, settings: LLMSettings) -> None:
        self.settings = settings

    async def get_secret(self, user_id: str) -> LLMSettings | None:
        return self.settings


def agent(waiting_interval: float = 5.0) -> BuiltinAgent:
    return BuiltinAgent(
        FakeToolExecutor(),
        None,
        clock=SteppingClock(),
        ids=SequentialIds("m"),
        token_counter=TiktokenTokenCounter(),
        settings=AgentSettings(waiting_interval=waiting_interval),
    )


def context() -> ToolContext:
    return ToolContext(
        project_id="p1",
        user_id="alice",
        session_id="s1",
        mode=CopilotMode.TEACHING_ASSISTANT,
        abort=AbortToken(),
    )


async def selection_for(
    server: ScriptedOpenAIServer, timeouts: LLMTimeouts | None = None, **user: object
) -> ModelSelection:
    provider = SettingsLanguageModelProvider(
        Settings(settings_for(server, **user)), timeouts=timeouts
    )
    return await provider.for_user("alice", ModelOverrides())


async def run(
    server: ScriptedOpenAIServer,
    selection: ModelSelection,
    waiting_interval: float = 5.0,
    speak_after: tuple[threading.Event, int] | None = None,
) -> list[AgentEvent]:
    """The agent's events for one question; ``speak_after`` (a held reply's event, a
    number of ``waiting_for_model`` notes) lets the model speak once that many notes came."""
    events: list[AgentEvent] = []
    async for event in agent(waiting_interval).run(
        "What is in my lab?", [], AgentRunConfig(context=context(), model=selection)
    ):
        events.append(event)
        if speak_after is not None and len(waiting(events)) >= speak_after[1]:
            speak_after[0].set()
    return events


def waiting(events: list[AgentEvent]) -> list[StatusEvent]:
    return [e for e in events if isinstance(e, StatusEvent) and e.status == "waiting_for_model"]


async def test_a_slow_first_token_is_waited_for_and_the_wait_is_reported(
    server: ScriptedOpenAIServer,
) -> None:
    # The server sends its headers and keep-alive comments at once, its first token once
    # the agent said three times that it waits: at least 1.5 s of silence (notes are half
    # a second apart at least), past the 1 s between tokens, within the first token's 10 s.
    spoken = threading.Event()
    server.add(Reply(text="Your lab is empty.", first_token_held=spoken, keepalive=0.3))
    selection = await selection_for(server, first_token_timeout=10, token_timeout=1)

    events = await run(server, selection, waiting_interval=0.5, speak_after=(spoken, 3))

    assert not [e for e in events if isinstance(e, ErrorEvent)], events
    notes = waiting(events)
    first_text = next(i for i, e in enumerate(events) if isinstance(e, ContentEvent))
    assert len(notes) >= 3, notes
    assert all(events.index(e) < first_text for e in notes)  # while it waited, not after
    # The note names the prompt's size: the system prompt, the message, the tools.
    tokens = {e.extra["prompt_tokens"] for e in notes}
    assert len(tokens) == 1 and tokens.pop() > 20
    assert notes[0].message.startswith("waiting for the model: ")
    assert "prompt tokens" in notes[0].message
    # One every interval, never sooner (each ``waited`` is rounded to a tenth).
    waited = [e.extra["waited"] for e in notes]
    assert waited[0] >= 0.4 and all(b - a >= 0.4 for a, b in itertools.pairwise(waited))
    assert "".join(e.content for e in events if isinstance(e, ContentEvent)) == (
        "Your lab is empty."
    )


async def test_no_first_token_within_the_users_timeout_ends_the_turn_saying_which_setting(
    server: ScriptedOpenAIServer,
) -> None:
    # The model never speaks: only a bound can end the turn, and the error names which.
    server.add(Reply(text="too late", first_token_held=threading.Event(), keepalive=0.2))
    selection = await selection_for(server, first_token_timeout=1.0)

    events = await run(server, selection, waiting_interval=0.4)

    (error,) = [e for e in events if isinstance(e, ErrorEvent)]
    assert error.code == "llm_unavailable"
    # the user's bound, not the HTTP client's own (31 s) nor the server ever answering
    assert "within 1 s" in error.error and "first_token_timeout" in error.error
    assert not [e for e in events if isinstance(e, ContentEvent)]
    (request,) = server.requests
    # The agent hung up: the server's stream is closed, not left running.
    assert await asyncio.to_thread(request.finished.wait, SEEN_WITHIN)
    assert request.client_disconnected


async def test_a_pause_between_tokens_past_the_timeout_keeps_the_partial_answer(
    server: ScriptedOpenAIServer,
) -> None:
    # The role chunk and "ab" come at once, then the model falls silent for good: only the
    # 0.5 s between tokens can end the turn (the first token's 10 s no longer applies).
    server.add(Reply(text="abcdefgh", chunk=2, stall_after=2))
    selection = await selection_for(server, token_timeout=0.5, first_token_timeout=10)

    events = await run(server, selection)

    (error,) = [e for e in events if isinstance(e, ErrorEvent)]
    assert error.code == "llm_stream_interrupted"
    assert "0.5 s" in error.error and "token_timeout" in error.error
    text = "".join(e.content for e in events if isinstance(e, ContentEvent))
    assert text == "ab"
    saved = [e for e in events if isinstance(e, StepCompleted)]
    assert saved[-1].messages[0].content == "ab"
    assert saved[-1].messages[0].metadata.get("error") is True


async def test_a_fast_model_gets_no_waiting_notes(server: ScriptedOpenAIServer) -> None:
    server.add(Reply(text="Hello."))
    events = await run(server, await selection_for(server), waiting_interval=0.5)
    assert not [e for e in events if isinstance(e, StatusEvent)]
    assert not [e for e in events if isinstance(e, ErrorEvent)]


async def test_the_users_timeouts_win_over_the_services_and_reach_the_http_client(
    server: ScriptedOpenAIServer,
) -> None:
    service = LLMTimeouts(connect=4.0, first_token=200.0, between_tokens=20.0)
    default = await selection_for(server, service)
    assert default.timeouts == ModelTimeouts(first_token=200.0, between_tokens=20.0)
    own = await selection_for(
        server, service, connect_timeout=2.5, first_token_timeout=600, token_timeout=30
    )
    assert own.timeouts == ModelTimeouts(first_token=600.0, between_tokens=30.0)

    for selection, connect, read in ((default, 4.0, 230.0), (own, 2.5, 630.0)):
        client = selection.model.chat_model.async_client._client  # type: ignore[attr-defined]
        timeout = client.timeout  # the SDK's own client's type (httpx's or httpx2's)
        assert (timeout.connect, timeout.read) == (connect, read)


async def test_a_server_that_does_not_accept_connections_fails_within_the_connect_timeout() -> None:
    # A listening socket whose backlog is full: connecting hangs until the client gives up.
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    port = listener.getsockname()[1]
    fillers = []
    try:
        for _ in range(8):  # fill the accept queue (the kernel allows backlog + 1)
            filler = socket.socket()
            filler.setblocking(False)
            with contextlib.suppress(BlockingIOError):
                filler.connect(("127.0.0.1", port))
            fillers.append(filler)
        # Every other bound is longer than the test may take: only the connect bound can
        # end the turn in time.
        settings = LLMSettings.model_validate(
            {
                "provider": "openai_compatible",
                "model": "m",
                "base_url": f"http://127.0.0.1:{port}/v1",
                "connect_timeout": 1.0,
                "first_token_timeout": 3600,
                "token_timeout": 3600,
            }
        )
        selection = await SettingsLanguageModelProvider(Settings(settings)).for_user(
            "alice", ModelOverrides()
        )
        events = [
            event
            async for event in agent().run(
                "Hi", [], AgentRunConfig(context=context(), model=selection)
            )
        ]
    finally:
        for filler in fillers:
            filler.close()
        listener.close()
    (error,) = [e for e in events if isinstance(e, ErrorEvent)]
    assert error.code == "llm_unavailable"
    # a wait given up on (the queue was full), not a connection refused at once
    assert "did not answer in time" in error.error, error.error


async def test_the_waiting_note_counts_the_prompt_as_sent_the_labs_state_included(
    server: ScriptedOpenAIServer,
) -> None:

    from copilot_core.testing import FakeTopologySource

    nodes = [{"name": f"PC{i}", "device_type": "vpcs", "status": "started"} for i in range(40)]
    lab = FakeTopologySource({"nodes": nodes, "links": []})
    server.add(Reply(text="Forty PCs.", first_token_delay=1.2))
    counter = TiktokenTokenCounter()
    busy = BuiltinAgent(
        FakeToolExecutor(),
        lab,
        clock=SteppingClock(),
        ids=SequentialIds("m"),
        token_counter=counter,
        settings=AgentSettings(waiting_interval=0.4),
    )
    selection = await selection_for(server)
    events = [
        e
        async for e in busy.run(
            "What is in my lab?", [], AgentRunConfig(context=context(), model=selection)
        )
    ]
    waiting = [e for e in events if isinstance(e, StatusEvent) and e.status == "waiting_for_model"]
    assert waiting
    (request,) = server.requests
    sent = sum(counter.count_text(m["content"]) for m in request.messages)
    assert sent > 400  # the forty nodes are in the user's message
    noted = waiting[0].extra["prompt_tokens"]
    assert sent <= noted <= sent * 1.2 + 50, (noted, sent)
