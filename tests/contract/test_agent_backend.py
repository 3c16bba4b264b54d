"""The AgentBackend contract: one set of assertions, run on every agent backend.

Both backends are asked the same two things: a question they answer after reading the
lab with one tool (:data:`ANSWER`), and one they start answering and then keep working
on until they are stopped (:data:`WATCH`). Each harness makes its backend behave so:

* ``builtin``: :class:`copilot_core.BuiltinAgent` with the core's scripted model and
  fake tools;
* ``subprocess``: ``adapters.subprocess_agent.SubprocessAgentBackend`` running the small
  program ``agents/lab_reader.py`` (spec 002's JSON lines).

Most assertions go through a :class:`~copilot_core.ChatService`, as a real turn does;
the last ones call ``run`` directly to check what a backend yields on its own. To add a
backend, add one entry to ``BACKENDS``.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from adapters.subprocess_agent import AgentConfig, SubprocessAgentBackend
from copilot_core import (
    AbortToken,
    BuiltinAgent,
    ChatService,
    Conversation,
    CopilotMode,
    Message,
    ModelSelection,
    Role,
    SessionKey,
    ToolContext,
    TurnEvent,
    TurnRequest,
)
from copilot_core.bootstrap import build_chat_service
from copilot_core.events import (
    AbortEvent,
    AgentEvent,
    ContentEvent,
    DoneEvent,
    ErrorEvent,
    StepCompleted,
)
from copilot_core.ports import AgentBackend, AgentRunConfig, TextDelta
from copilot_core.testing import (
    FakeToolExecutor,
    FakeTopologySource,
    Hang,
    InMemoryCheckpointStore,
    ScriptedLanguageModel,
    SequentialIds,
    StaticModelProvider,
    SteppingClock,
    text_reply,
    tool_reply,
)

PROJECT = "project-1"
USER = "alice"
ANSWER = "What is in my lab?"
WATCH = "Watch PC1 and PC2 until I stop you"
#: Text both backends stream in a WATCH turn before they wait.
WATCHING = "Watching PC1 and PC2"
AGENT_PROGRAM = Path(__file__).parent / "agents" / "lab_reader.py"


@dataclass
class AgentHarness:
    backend: AgentBackend
    agent_id: str
    #: The model it answers with, when it uses the user's LLM settings.
    selection: ModelSelection | None
    #: Makes the backend ready for the next turn asked ``query`` (ANSWER or WATCH).
    prepare: Callable[[str], None] = field(default=lambda query: None)


BackendFactory = Callable[[], contextlib.AbstractAsyncContextManager[AgentHarness]]


# ================================================================== the harnesses
@contextlib.asynccontextmanager
async def _builtin() -> AsyncIterator[AgentHarness]:
    model = ScriptedLanguageModel()
    tools = FakeToolExecutor().add(
        "gns3_topology_reader",
        lambda args, ctx: {"nodes": ["PC1", "PC2"], "links": []},
        description="Read the lab's nodes and links.",
    )
    topology = FakeTopologySource({"nodes": [{"name": "PC1"}, {"name": "PC2"}], "links": []})
    agent = BuiltinAgent(tools, topology, clock=SteppingClock(), ids=SequentialIds("agent"))
    look = tool_reply(("gns3_topology_reader", {}), text="Let me look at the lab. ")

    def prepare(query: str) -> None:
        model.clear()
        if query == WATCH:
            model.add(look, [TextDelta(WATCHING), Hang()])
        else:
            answer = text_reply("Your lab has two nodes, PC1 and PC2, not linked.")
            model.add(look, answer, text_reply("Two lab nodes"))  # the last one: the title

    yield AgentHarness(agent, BuiltinAgent.agent_id, ModelSelection(model), prepare)


@contextlib.asynccontextmanager
async def _subprocess() -> AsyncIterator[AgentHarness]:
    config = AgentConfig(
        id="lab-reader",
        name="Lab reader",
        description="Reads the lab and answers (a contract-test program).",
        command=[sys.executable, str(AGENT_PROGRAM)],
        time_limit=30,
    )
    backend = SubprocessAgentBackend(config, clock=SteppingClock(), ids=SequentialIds("ext"))
    yield AgentHarness(backend, config.id, None)


BACKENDS: dict[str, BackendFactory] = {
    "builtin": _builtin,
    "subprocess": _subprocess,
}


@pytest.fixture(params=sorted(BACKENDS))
async def harness(request: pytest.FixtureRequest) -> AsyncIterator[AgentHarness]:
    async with BACKENDS[request.param]() as made:
        yield made


@pytest.fixture
async def service(harness: AgentHarness) -> AsyncIterator[ChatService]:
    made = build_chat_service(
        InMemoryCheckpointStore(),
        {harness.agent_id: harness.backend},
        models=StaticModelProvider(harness.selection) if harness.selection else None,
        clock=SteppingClock(),
        ids=SequentialIds("svc"),
        default_agent=harness.agent_id,
    )
    yield made
    await made.shutdown(grace=5)


def request_for(query: str, session_id: str | None = None) -> TurnRequest:
    return TurnRequest(PROJECT, USER, query, session_id=session_id, credentials="token")


async def turn(
    harness: AgentHarness, service: ChatService, query: str, session_id: str | None = None
) -> list[TurnEvent]:
    harness.prepare(query)
    async with asyncio.timeout(30):
        return [event async for event in service.stream_turn(request_for(query, session_id))]


async def saved_history(service: ChatService, session_id: str) -> list[Message]:
    session, page = await service.history(SessionKey(PROJECT, session_id, USER), limit=1000)
    assert session.message_count == len(page.messages)
    return page.messages


def assert_valid(messages: list[Message]) -> Conversation:
    """The history is a valid OpenAI conversation with no call left unanswered."""
    conversation = Conversation(messages)  # raises ConversationInvariantError otherwise
    assert conversation.open_tool_call_ids == ()
    return conversation


def types(events: list[TurnEvent]) -> list[str]:
    return [event.type for event in events]


# ===================================================================== a turn
async def test_a_turn_saves_a_valid_conversation_and_done_names_its_final_message(
    harness: AgentHarness, service: ChatService
) -> None:
    events = await turn(harness, service, ANSWER)

    assert types(events).count("done") == 1
    assert events[-1].type == "done"
    assert "abort" not in types(events) and "error" not in types(events)
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    session_id = events[-1].session_id
    assert {e.session_id for e in events} == {session_id}
    history = await saved_history(service, session_id)
    assert_valid(history)
    assert history[0].role is Role.USER and history[0].content == ANSWER
    final = history[-1]
    assert final.role is Role.ASSISTANT and "two nodes" in final.content
    done = events[-1].event
    assert isinstance(done, DoneEvent)
    assert (done.message_id, done.content) == (final.id, final.content)
    # the tool it used is in the history, its call answered
    calls = [call for m in history if m.tool_calls for call in m.tool_calls]
    assert [call.function.name for call in calls] == ["gns3_topology_reader"]
    assert [m.tool_call_id for m in history if m.role is Role.TOOL] == [calls[0].id]
    streamed = "".join(e.event.content for e in events if isinstance(e.event, ContentEvent))
    assert "two nodes" in streamed


async def test_a_second_turn_continues_the_conversation(
    harness: AgentHarness, service: ChatService
) -> None:
    first = await turn(harness, service, ANSWER)
    session_id = first[-1].session_id

    second = await turn(harness, service, ANSWER, session_id)

    assert second[-1].type == "done" and second[-1].session_id == session_id
    history = await saved_history(service, session_id)
    assert_valid(history)
    assert [m.content for m in history if m.role is Role.USER] == [ANSWER, ANSWER]
    done = second[-1].event
    assert isinstance(done, DoneEvent) and done.message_id == history[-1].id


# ===================================================================== abort
async def test_abort_mid_turn_ends_with_abort_then_done_and_keeps_a_valid_history(
    harness: AgentHarness, service: ChatService
) -> None:
    harness.prepare(WATCH)
    handle = await service.start_turn(request_for(WATCH))
    events: list[TurnEvent] = []
    async with asyncio.timeout(30):
        async for event in handle.subscribe():
            events.append(event)
            if isinstance(event.event, ContentEvent) and WATCHING in event.event.content:
                assert await service.abort(SessionKey(PROJECT, handle.session_id, USER)) is True
        result = await handle.wait()

    assert types(events)[-2:] == ["abort", "done"]
    assert types(events).count("abort") == 1 and types(events).count("done") == 1
    assert "error" not in types(events)
    assert result.aborted and result.error is None
    history = await saved_history(service, handle.session_id)
    assert_valid(history)
    assert history[0].content == WATCH
    partial = history[-1]
    assert partial.role is Role.ASSISTANT and WATCHING in partial.content  # what was said
    done = events[-1].event
    assert isinstance(done, DoneEvent) and done.message_id == partial.id
    assert not await service.runner.running(PROJECT, handle.session_id)


async def test_the_session_takes_a_new_turn_after_an_abort(
    harness: AgentHarness, service: ChatService
) -> None:
    harness.prepare(WATCH)
    handle = await service.start_turn(request_for(WATCH))
    async with asyncio.timeout(30):
        async for event in handle.subscribe():
            if isinstance(event.event, ContentEvent) and WATCHING in event.event.content:
                await service.abort(SessionKey(PROJECT, handle.session_id, USER))
        await handle.wait()

    events = await turn(harness, service, ANSWER, handle.session_id)

    assert events[-1].type == "done" and "abort" not in types(events)
    history = await saved_history(service, handle.session_id)
    assert_valid(history)
    assert [m.content for m in history if m.role is Role.USER] == [WATCH, ANSWER]


# ============================================================ the backend alone
def run_config(harness: AgentHarness, abort: AbortToken) -> AgentRunConfig:
    context = ToolContext(
        project_id=PROJECT,
        user_id=USER,
        session_id="session-1",
        mode=CopilotMode.TEACHING_ASSISTANT,
        abort=abort,
        credentials="token",
    )
    return AgentRunConfig(context=context, model=harness.selection, agent_id=harness.agent_id)


async def run_alone(
    harness: AgentHarness, query: str, *, abort_when_watching: bool
) -> list[AgentEvent]:
    harness.prepare(query)
    abort = AbortToken()
    events: list[AgentEvent] = []
    async with asyncio.timeout(30):
        async for event in harness.backend.run(query, [], run_config(harness, abort)):
            events.append(event)
            if (
                abort_when_watching
                and isinstance(event, ContentEvent)
                and WATCHING in event.content
            ):
                abort.abort("stopped by the user")
    return events


@pytest.mark.parametrize("query", [ANSWER, WATCH], ids=["answered", "aborted"])
async def test_a_backend_never_yields_abort_or_done_itself(
    harness: AgentHarness, query: str
) -> None:
    events = await run_alone(harness, query, abort_when_watching=True)

    assert not [e for e in events if isinstance(e, AbortEvent | DoneEvent)]
    assert not [e for e in events if isinstance(e, ErrorEvent)]
    # what it asks to be saved continues the conversation validly
    steps = [m for e in events if isinstance(e, StepCompleted) for m in e.messages]
    assert steps
    assert_valid([Message.user("u-1", query, SteppingClock().now()), *steps])


# ============================================================== what it declares
async def test_capabilities_and_agents_are_well_formed(
    harness: AgentHarness, service: ChatService
) -> None:
    capabilities = harness.backend.capabilities()
    agents = list(harness.backend.agents())

    assert capabilities.backend.strip()
    flags = capabilities.to_dict()
    assert set(flags) == {"backend", "rag", "streaming", "mcp", "file_tools", "shell_tools"}
    assert all(isinstance(flags[k], bool) for k in flags if k != "backend")
    assert capabilities.uses_llm_settings is (harness.selection is not None)
    assert agents and all(a.id.strip() and a.name.strip() for a in agents)
    assert len({a.id for a in agents}) == len(agents)
    assert harness.agent_id in {a.id for a in agents}
    ((info, backend),) = service.agents()
    assert info.id == harness.agent_id and backend is harness.backend
