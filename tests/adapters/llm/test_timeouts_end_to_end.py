"""The user's waits hold end to end (issue 40, item 1), over real HTTP on 127.0.0.1.

A 1.5B model on two CPU cores read a 1,742-token prompt for more than 120 s; every such
request failed at 120 s whatever the user's ``first_token_timeout`` said, because
langchain-openai's own ``stream_chunk_timeout`` (120 s) ended the call. Then each request
given up on kept llama.cpp's server busy, and the next one timed out too, unexplained.

Here: the user's connect / first-token / between-token bounds replace each SDK's own
(read from the built clients, and in real time with the library's own bound forced low),
a request the service gives up on is closed (the scripted server sees the hang-up), and
the next request's ``waiting_for_model`` status says the server may still be busy.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from pydantic import SecretStr

from adapters.llm import LangchainLanguageModel, SettingsLanguageModelProvider
from adapters.llm._abandoned import AbandonedRequests
from adapters.llm._settings import LLMSettings
from copilot_core import AbortToken, AgentSettings, BuiltinAgent, CopilotMode, ToolContext
from copilot_core.events import AgentEvent, ContentEvent, ErrorEvent, StatusEvent
from copilot_core.ports import AgentRunConfig, CallOptions, ModelOverrides, ModelSelection
from copilot_core.testing import FakeToolExecutor, SequentialIds, SteppingClock
from tests.adapters.llm.conftest import settings_for
from tests.adapters.llm.test_native_providers import (
    ANTHROPIC_KEY,
    HELLO,
    anthropic_settings,
    ollama_settings,
)
from tests.fakes.anthropic_server import ScriptedAnthropicServer
from tests.fakes.ollama_server import ScriptedOllamaServer
from tests.fakes.openai_server import SEEN_WITHIN, Reply, ScriptedOpenAIServer

CHUNK_TIMEOUT_ENV = "LANGCHAIN_OPENAI_STREAM_CHUNK_TIMEOUT_S"


class Source:
    """The user's stored settings (one user's, whoever asks)."""

    def __init__(self, settings: LLMSettings) -> None:
        self.settings = settings

    async def get_secret(self, user_id: str) -> LLMSettings | None:
        return self.settings


@pytest.fixture
def anthropic() -> Iterator[ScriptedAnthropicServer]:
    server = ScriptedAnthropicServer(api_key=ANTHROPIC_KEY, models=["claude-test"])
    with server:
        yield server


@pytest.fixture
def ollama() -> Iterator[ScriptedOllamaServer]:
    server = ScriptedOllamaServer(models=["llama-test"])
    with server:
        yield server


def settings_of(provider: str, server: ScriptedOpenAIServer, **waits: object) -> LLMSettings:
    if provider == "anthropic":
        assert isinstance(server, ScriptedAnthropicServer)
        return anthropic_settings(server, **waits)
    if provider == "ollama_native":
        assert isinstance(server, ScriptedOllamaServer)
        return ollama_settings(server, **waits)
    return settings_for(server, provider="openai_compatible", **waits)


def agent(waiting_interval: float = 5.0) -> BuiltinAgent:
    return BuiltinAgent(
        FakeToolExecutor(),
        None,
        clock=SteppingClock(),
        ids=SequentialIds("m"),
        settings=AgentSettings(waiting_interval=waiting_interval),
    )


def context(user: str = "alice", abort: AbortToken | None = None) -> ToolContext:
    return ToolContext(
        project_id="p1",
        user_id=user,
        session_id="s1",
        mode=CopilotMode.TEACHING_ASSISTANT,
        abort=abort or AbortToken(),
    )


async def turn(
    selection: ModelSelection,
    *,
    user: str = "alice",
    waiting_interval: float = 5.0,
    abort: AbortToken | None = None,
    speak_after: tuple[threading.Event, int] | None = None,
) -> list[AgentEvent]:
    """The agent's events for one question; ``speak_after`` (a held reply's event, a
    number of ``waiting_for_model`` notes) lets the model speak once that many notes came."""
    events: list[AgentEvent] = []
    async for event in agent(waiting_interval).run(
        "What is in my lab?", [], AgentRunConfig(context=context(user, abort), model=selection)
    ):
        events.append(event)
        if speak_after is not None and len(waiting(events)) >= speak_after[1]:
            speak_after[0].set()
    return events


def errors(events: list[AgentEvent]) -> list[ErrorEvent]:
    return [e for e in events if isinstance(e, ErrorEvent)]


def waiting(events: list[AgentEvent]) -> list[StatusEvent]:
    return [e for e in events if isinstance(e, StatusEvent) and e.status == "waiting_for_model"]


def answer(events: list[AgentEvent]) -> str:
    return "".join(e.content for e in events if isinstance(e, ContentEvent))


# ============================================================ what each SDK receives
async def test_the_openai_client_takes_the_users_bounds_over_langchain_openais_120_s(
    server: ScriptedOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The issue's settings (a first token may take 300 s): langchain-openai's chunk
    timeout, 120 s by default (or its environment variable's), is replaced by the
    client's bound, a margin above the user's; so are the HTTP client's waits."""
    monkeypatch.setenv(CHUNK_TIMEOUT_ENV, "1")  # the library's own default, forced low
    settings = settings_for(server, connect_timeout=5, first_token_timeout=300, token_timeout=60)
    selection = await SettingsLanguageModelProvider(Source(settings)).for_user(
        "alice", ModelOverrides()
    )
    chat = selection.model.chat_model  # type: ignore[attr-defined]
    assert chat.stream_chunk_timeout == 330.0  # not 120 s, not the environment's 1 s
    timeout = chat.root_async_client.timeout  # what each request of the SDK carries
    assert (timeout.connect, timeout.read, timeout.write, timeout.pool) == (5, 330, 330, 330)
    http = chat.root_async_client._client.timeout  # the HTTP client's own defaults
    assert (http.connect, http.read) == (5, 330)
    assert selection.model.request_options == {}  # type: ignore[attr-defined]


async def test_the_anthropic_client_takes_the_connect_bound_on_each_call(
    anthropic: ScriptedAnthropicServer,
) -> None:
    """``ChatAnthropic`` takes one number for every wait; the connection's own bound
    goes with each call, as the Anthropic SDK takes a per-request timeout."""
    import anthropic as sdk

    settings = anthropic_settings(
        anthropic, connect_timeout=5, first_token_timeout=300, token_timeout=60
    )
    selection = await SettingsLanguageModelProvider(Source(settings)).for_user(
        "alice", ModelOverrides()
    )
    model = selection.model
    assert isinstance(model, LangchainLanguageModel)
    assert model.chat_model._async_client.timeout == 330.0  # type: ignore[attr-defined]
    per_call = model.request_options["timeout"]
    assert isinstance(per_call, sdk.Timeout)
    assert (per_call.connect, per_call.read, per_call.write, per_call.pool) == (5, 330, 330, 330)
    # ... and the call with it still streams (the SDK accepts it per request).
    anthropic.add(Reply(text="from claude"))
    deltas = [d async for d in model.stream(HELLO, [], CallOptions())]
    assert "from claude" in "".join(getattr(d, "text", "") for d in deltas)


async def test_the_ollama_client_takes_every_bound_over_its_none(
    ollama: ScriptedOllamaServer,
) -> None:
    """The Ollama SDK waits forever by default (``timeout=None``)."""
    settings = ollama_settings(ollama, connect_timeout=5, first_token_timeout=300, token_timeout=60)
    selection = await SettingsLanguageModelProvider(Source(settings)).for_user(
        "alice", ModelOverrides()
    )
    client = selection.model.chat_model._async_client._client  # type: ignore[attr-defined]
    timeout = client.timeout
    assert (timeout.connect, timeout.read, timeout.write, timeout.pool) == (5, 330, 330, 330)
    assert selection.model.request_options == {}  # type: ignore[attr-defined]


@pytest.mark.parametrize("provider", ["openai_compatible", "anthropic", "ollama_native"])
async def test_a_server_that_does_not_accept_the_connection_fails_within_the_connect_bound(
    provider: str,
) -> None:
    """A listening socket whose accept queue is full: connecting hangs until the client's
    connect bound ends it (every other bound is longer than the test may take)."""
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
        base = f"http://127.0.0.1:{port}" + ("/v1" if provider == "openai_compatible" else "")
        settings = LLMSettings(
            provider=provider,
            model="m",
            base_url=base,
            api_key=SecretStr("k"),
            connect_timeout=1.0,
            first_token_timeout=3600,
            token_timeout=3600,
        )
        selection = await SettingsLanguageModelProvider(Source(settings)).for_user(
            "alice", ModelOverrides()
        )
        events = await turn(selection)
    finally:
        for filler in fillers:
            filler.close()
        listener.close()
    (error,) = errors(events)
    assert error.code == "llm_unavailable", error
    # a wait given up on (the queue was full), not a connection refused at once
    assert "did not answer in time" in error.error, f"{provider}: {error.error}"


# ============================================================ a slow first token, in real time
async def test_a_first_token_after_the_librarys_own_bound_reaches_the_answer(
    server: ScriptedOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The issue's case, scaled: the server sends nothing at all (llama.cpp reading the
    prompt: headers, then silence) until the agent noted its wait three times, half a
    second apart at least: 1.5 s of silence, past the library's own chunk bound of 1 s
    (its environment variable), within the user's 6 s: only the user's bound counts."""
    monkeypatch.setenv(CHUNK_TIMEOUT_ENV, "1")
    spoken = threading.Event()
    server.add(Reply(text="Your lab is empty.", first_chunk_held=spoken))
    settings = settings_for(server, provider="openai_compatible", first_token_timeout=6)
    selection = await SettingsLanguageModelProvider(Source(settings)).for_user(
        "alice", ModelOverrides()
    )

    events = await turn(selection, waiting_interval=0.5, speak_after=(spoken, 3))

    assert not errors(events), errors(events)
    assert answer(events) == "Your lab is empty."
    assert len(waiting(events)) >= 3  # the wait was reported meanwhile


@pytest.mark.parametrize("provider", ["openai_compatible", "anthropic", "ollama_native"])
async def test_a_first_token_within_the_users_bound_reaches_the_answer_on_every_provider(
    provider: str,
    server: ScriptedOpenAIServer,
    anthropic: ScriptedAnthropicServer,
    ollama: ScriptedOllamaServer,
) -> None:
    scripted = {"anthropic": anthropic, "ollama_native": ollama}.get(provider, server)
    # Silent until three waiting notes came, half a second apart at least: 1.5 s of
    # silence, past the 1 s between tokens, within the first token's 5 s.
    spoken = threading.Event()
    scripted.add(Reply(text="Your lab is empty.", first_chunk_held=spoken))
    settings = settings_of(provider, scripted, first_token_timeout=5, token_timeout=1)
    selection = await SettingsLanguageModelProvider(Source(settings)).for_user(
        "alice", ModelOverrides()
    )
    events = await turn(selection, waiting_interval=0.5, speak_after=(spoken, 3))
    assert not errors(events), errors(events)
    assert answer(events) == "Your lab is empty."
    assert len(waiting(events)) >= 3


# ============================================================ given up: closed, and said so
@pytest.mark.parametrize("provider", ["openai_compatible", "anthropic", "ollama_native"])
async def test_a_request_given_up_on_is_closed_at_once(
    provider: str,
    server: ScriptedOpenAIServer,
    anthropic: ScriptedAnthropicServer,
    ollama: ScriptedOllamaServer,
) -> None:
    scripted = {"anthropic": anthropic, "ollama_native": ollama}.get(provider, server)
    # The server would never answer: what ends the request is the agent's 1 s bound
    # (the error names it), and the server sees the hang-up.
    scripted.add(Reply(text="too late", first_chunk_held=threading.Event()))
    settings = settings_of(provider, scripted, first_token_timeout=1)
    selection = await SettingsLanguageModelProvider(Source(settings)).for_user(
        "alice", ModelOverrides()
    )

    events = await turn(selection)

    (error,) = errors(events)
    assert error.code == "llm_unavailable" and "first_token_timeout" in error.error
    (request,) = scripted.requests
    assert await asyncio.to_thread(request.finished.wait, SEEN_WITHIN), "the server still streams"
    assert request.client_disconnected and request.disconnected_at is not None


async def test_the_next_request_says_the_server_may_still_be_busy_with_the_abandoned_one(
    server: ScriptedOpenAIServer,
) -> None:
    server.add(
        Reply(text="too late", first_chunk_delay=60),  # given up on after 4 s
        Reply(text="Hello bob.", first_chunk_delay=1.0),  # another user's
        Reply(text="Your lab is empty.", first_chunk_delay=1.0),  # the next: answered
        Reply(text="Still empty.", first_chunk_delay=1.0),  # the one after: no note
    )
    # (The note lasts the first-token bound after the abandon, 4 s: this test's turns
    # take about 3.)
    settings = settings_for(server, provider="openai_compatible", first_token_timeout=4)
    provider = SettingsLanguageModelProvider(Source(settings))
    before = datetime.now(UTC).replace(microsecond=0)

    first = await turn(await provider.for_user("alice", ModelOverrides()))
    assert [e.code for e in errors(first)] == ["llm_unavailable"]

    # Another user of the same server is not told about alice's request.
    bob = await turn(
        await provider.for_user("bob", ModelOverrides()), user="bob", waiting_interval=0.3
    )
    assert answer(bob) == "Hello bob." and waiting(bob)
    assert not [w for w in waiting(bob) if "busy" in w.message]

    second = await turn(await provider.for_user("alice", ModelOverrides()), waiting_interval=0.3)
    assert answer(second) == "Your lab is empty.", errors(second)
    notes = waiting(second)
    assert notes
    for note in notes:
        assert "the model server may still be busy with the request abandoned at " in (
            note.message
        ), note.message
        assert note.extra["server_note"] in note.message
    abandoned_at = notes[0].extra["server_note"].split(" abandoned at ")[1][:8]
    when = datetime.strptime(abandoned_at, "%H:%M:%S").time()
    assert before.time() <= when <= datetime.now(UTC).time()
    assert "no first token after 4 s" in notes[0].message

    # The server answered alice since: the next wait carries no such note.
    third = await turn(await provider.for_user("alice", ModelOverrides()), waiting_interval=0.3)
    assert answer(third) == "Still empty."
    assert waiting(third) and not [w for w in waiting(third) if "busy" in w.message]


async def test_a_request_the_user_stops_before_the_first_token_is_noted_too(
    server: ScriptedOpenAIServer,
) -> None:
    """The user's stop while the server reads the prompt leaves it reading, as a
    timeout does; a stop after the first token does not (the server stops streaming)."""
    server.add(Reply(text="too late", first_chunk_delay=60))
    settings = settings_for(server, provider="openai_compatible", first_token_timeout=30)
    provider = SettingsLanguageModelProvider(Source(settings))
    abort = AbortToken()
    asyncio.get_running_loop().call_later(0.8, abort.abort)
    await turn(await provider.for_user("alice", ModelOverrides()), abort=abort)
    (request,) = server.requests
    assert await asyncio.to_thread(request.finished.wait, SEEN_WITHIN)
    assert request.client_disconnected
    selection = await provider.for_user("alice", ModelOverrides())
    assert selection.server_note is not None
    note = selection.server_note()
    assert note is not None and "abandoned at" in note

    # Stopped after the first token: the server is free (it answered).
    server.add(Reply(text="x" * 200, chunk=1, token_delay=0.05))
    abort = AbortToken()
    asyncio.get_running_loop().call_later(1.0, abort.abort)
    events = await turn(selection, abort=abort)
    assert answer(events)
    assert selection.server_note() is None


def test_an_abandoned_request_is_forgotten_after_the_users_first_token_bound() -> None:
    clock = [100.0]
    table = AbandonedRequests(
        monotonic=lambda: clock[0], now=lambda: datetime(2026, 5, 1, 14, 2, 11, tzinfo=UTC)
    )
    watch = table.watch("alice", "http://127.0.0.1:8080/v1", linger=300)
    other = table.watch("alice", "http://127.0.0.1:9090/v1", linger=300)
    watch.gave_up(120.4)
    assert watch.note() == (
        "the model server may still be busy with the request abandoned at 14:02:11 UTC "
        "(no first token after 120 s)"
    )
    assert other.note() is None  # another server of the same user
    clock[0] += 299
    assert watch.note() is not None
    clock[0] += 1
    assert watch.note() is None


async def test_a_timeout_of_the_sdk_itself_is_noted_and_an_error_answer_is_not(
    server: ScriptedOpenAIServer,
) -> None:
    """Used without the agent (a title, the settings test), the SDK's own bound is the
    one that gives up: that is an abandoned request too. A server's error is an answer."""
    from adapters.llm import build_chat_model
    from copilot_core.errors import LLMError
    from tests.fakes.openai_server import Failure

    table = AbandonedRequests()
    watch = table.watch("alice", server.base_url, linger=60)
    settings = settings_for(server)
    model = LangchainLanguageModel(
        build_chat_model(settings, timeout=1.0, connect_timeout=1.0), watch=watch
    )
    server.add(Reply(text="too late", first_chunk_delay=30), Failure.server_error())
    with pytest.raises(LLMError):
        [d async for d in model.stream(HELLO, [], CallOptions())]
    note = watch.note()
    assert note is not None and "no first token after 1 s" in note
    (request,) = server.requests
    assert (
        await asyncio.to_thread(request.finished.wait, SEEN_WITHIN) and request.client_disconnected
    )

    with pytest.raises(LLMError):
        [d async for d in model.stream(HELLO, [], CallOptions())]
    assert watch.note() is None
