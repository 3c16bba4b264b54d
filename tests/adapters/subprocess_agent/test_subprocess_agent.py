"""SubprocessAgentBackend with real programs: events, failures, limits, cleanup."""

from __future__ import annotations

import asyncio
import json
import os
import resource
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from adapters.subprocess_agent import (
    TRUNCATION_SUFFIX,
    AgentConfig,
    HistoryLimits,
    SubprocessAgentBackend,
    build_agent_backends,
    recent_history,
)
from copilot_core import (
    AbortToken,
    Conversation,
    CopilotMode,
    Message,
    Role,
    SessionKey,
    ToolContext,
    TurnRequest,
)
from copilot_core.bootstrap import build_chat_service
from copilot_core.errors import AgentProcessError
from copilot_core.events import (
    AbortEvent,
    AgentErrorEvent,
    AgentEvent,
    AnswerEvent,
    ContentEvent,
    PlanEvent,
    StatusEvent,
    StepCompleted,
    StepEvent,
    ThinkingEvent,
    ToolCallEvent,
    ToolEndEvent,
    ToolStartEvent,
    TurnEvent,
    event_to_record,
)
from copilot_core.ports import AgentRunConfig
from copilot_core.testing import InMemoryCheckpointStore, SequentialIds, SteppingClock

AGENTS = Path(__file__).parent / "agents"
PROJECT = "project-1"


def agent(script: str, *, mode: str = "", **overrides: Any) -> SubprocessAgentBackend:
    command = [sys.executable, str(AGENTS / script)]
    if mode:
        command += ["--mode", mode]
    config = AgentConfig(id="lab", name="Lab agent", command=command, **overrides)
    return SubprocessAgentBackend(
        config, gns3_url="http://127.0.0.1:3080", clock=SteppingClock(), ids=SequentialIds()
    )


def run_config(abort: AbortToken | None = None, credentials: str | None = None) -> AgentRunConfig:
    context = ToolContext(
        project_id=PROJECT,
        user_id="alice",
        session_id="s1",
        mode=CopilotMode.TEACHING_ASSISTANT,
        abort=abort or AbortToken(),
        credentials=credentials,
    )
    return AgentRunConfig(context=context, agent_id="lab")


async def collect(
    backend: SubprocessAgentBackend,
    query: str = "what is in my lab?",
    history: list[Message] | None = None,
    config: AgentRunConfig | None = None,
    on_event: Callable[[AgentEvent], None] | None = None,
) -> list[AgentEvent]:
    events: list[AgentEvent] = []
    async with asyncio.timeout(60):
        async for event in backend.run(query, history or [], config or run_config()):
            events.append(event)
            if on_event is not None:
                on_event(event)
    return events


def saved(events: list[AgentEvent]) -> list[Message]:
    return [m for e in events if isinstance(e, StepCompleted) for m in e.messages]


def live_in_group(pgid: int) -> list[int]:
    """Processes of a process group that still run (zombies reparented to init are not
    ours to reap and are dead; a zombie child of ours would count)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        state, ppid, pgrp = fields[0], int(fields[1]), int(fields[2])
        if pgrp == pgid and (state != "Z" or ppid == os.getpid()):
            found.append(int(entry.name))
    return found


def running(pid: int) -> bool:
    """Whether a process still runs (a zombie that is our own child counts: unreaped)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    fields = stat[stat.rindex(")") + 2 :].split()
    return fields[0] != "Z" or int(fields[1]) == os.getpid()


def pids_of(events: list[AgentEvent]) -> dict[str, Any]:
    return next(e.extra for e in events if isinstance(e, StatusEvent) and "pid" in e.extra)


async def no_process_left(pgid: int) -> None:
    async with asyncio.timeout(5):
        while live_in_group(pgid):
            await asyncio.sleep(0.02)


# ---------------------------------------------------------------- well behaved
async def test_a_well_behaved_agent_maps_every_event_and_records_a_valid_history() -> None:
    events = await collect(agent("well_behaved.py"))
    kinds = [type(e) for e in events if not isinstance(e, StepCompleted)]
    assert kinds == [
        StatusEvent,
        PlanEvent,
        StepEvent,
        ThinkingEvent,
        ToolCallEvent,  # tool_start: the call appears
        ToolCallEvent,  # tool_args: complete, with its arguments
        ToolStartEvent,
        ToolEndEvent,  # tool_end, after tool_result
        StepEvent,
        ContentEvent,
        ContentEvent,
        AnswerEvent,
    ]
    plan = next(e for e in events if isinstance(e, PlanEvent))
    assert plan.steps == ("look", "answer") and plan.current_step == 0
    calls = [e for e in events if isinstance(e, ToolCallEvent)]
    assert calls[0].complete is False and calls[1].complete is True
    assert json.loads(calls[1].arguments) == {"project": "p1"}
    start = next(e for e in events if isinstance(e, ToolStartEvent))
    end = next(e for e in events if isinstance(e, ToolEndEvent))
    assert start.tool_call_id == end.tool_call_id == calls[0].id
    assert end.status == "success"
    assert end.output["result_data"] == {"nodes": ["R1", "R2"]}
    answer = next(e for e in events if isinstance(e, AnswerEvent))
    assert answer.content == "You asked: what is in my lab? (history 0)"
    assert (answer.steps, answer.tools_used) == (2, 1)

    messages = saved(events)
    assert [m.role for m in messages] == [Role.ASSISTANT, Role.TOOL, Role.ASSISTANT]
    call_message, tool_message, final = messages
    assert call_message.tool_calls is not None
    assert call_message.tool_calls[0].id == tool_message.tool_call_id == start.tool_call_id
    assert tool_message.name == "list_nodes"
    assert final.content == answer.content  # the answer wins over the chunks
    assert final.metadata["agent_id"] == "lab"
    assert Conversation(messages).is_complete
    assert not any(e.type == "done" for e in events if hasattr(e, "type"))


async def test_chunks_become_the_final_message_when_there_is_no_answer() -> None:
    events = await collect(agent("garbage.py"))
    assert [e.content for e in events if isinstance(e, ContentEvent)] == ["still ", "here"]
    (final,) = saved(events)
    assert final.content == "still here"
    assert "aborted" not in final.metadata and "error" not in final.metadata


# ---------------------------------------------------------------- bad output
async def test_garbage_and_oversized_lines_are_skipped_with_warnings() -> None:
    events = await collect(agent("garbage.py", max_line_bytes=1024 * 1024))
    warnings = [e.message for e in events if isinstance(e, StatusEvent)]
    assert all(e.status == "warning" for e in events if isinstance(e, StatusEvent))
    assert len(warnings) == 7
    assert "not JSON: this is not json" in warnings[0]
    assert "not an event" in warnings[1] and "not an event" in warnings[2]
    assert "not JSON" in warnings[3]
    assert "unknown type 'teleport'" in warnings[4]
    assert "malformed 'step'" in warnings[5]
    assert "longer than 1048576 bytes" in warnings[6]
    assert not any(isinstance(e, AgentErrorEvent) for e in events)


# ---------------------------------------------------------------- crash
async def test_a_crash_becomes_agent_error_with_the_tail_of_stderr() -> None:
    events = await collect(agent("crasher.py", stderr_tail_chars=300))
    error = events[-1]
    assert isinstance(error, AgentErrorEvent)
    assert error.content.startswith("Agent Lab agent (lab) exited with status 3: ")
    assert error.content.endswith("Traceback: boom at the end")
    assert len(error.content) < 400  # only the tail of 120 kB of stderr
    messages = saved(events)
    assert [m.role for m in messages] == [Role.ASSISTANT, Role.TOOL, Role.ASSISTANT]
    assert json.loads(messages[1].content)["status"] == "error"  # the open tool is closed
    assert messages[2].content == "partial" and messages[2].metadata["error"] is True
    assert Conversation(messages).is_complete
    ended = next(e for e in events if isinstance(e, ToolEndEvent))
    assert ended.status == "error"


async def test_a_program_that_cannot_start_is_a_clear_error_naming_the_agent() -> None:
    backend = SubprocessAgentBackend(
        AgentConfig(id="ghost", name="Ghost", command=["/nonexistent/ghost-agent"])
    )
    with pytest.raises(AgentProcessError, match=r"Agent 'ghost' \(Ghost\) could not be started"):
        await collect(backend)


# ---------------------------------------------------------------- hang
async def test_the_time_limit_stops_a_hanging_agent_and_its_children() -> None:
    events = await collect(agent("hanger.py", time_limit=1.5, kill_grace=0.5))
    pids = pids_of(events)
    error = events[-1]
    assert isinstance(error, AgentErrorEvent)
    assert "did not finish within 1.5 s and was stopped" in error.content
    messages = saved(events)
    assert messages[-1].content == "partial answer" and messages[-1].metadata["error"] is True
    assert Conversation(messages).is_complete
    assert pids["pgid"] == pids["pid"]  # its own process group
    await no_process_left(pids["pid"])
    assert not running(pids["pid"]) and not running(pids["child"])


@pytest.mark.parametrize("mode", ["", "ignore-term"])
async def test_abort_ends_a_hanging_agent_like_any_aborted_turn(mode: str) -> None:
    abort = AbortToken()

    def abort_when_running(event: AgentEvent) -> None:
        if isinstance(event, ToolStartEvent):
            abort.abort()

    events = await collect(
        agent("hanger.py", mode=mode, kill_grace=0.5),
        config=run_config(abort),
        on_event=abort_when_running,
    )
    # The run just stops (the turn runner sends abort and done), its last word the saved step.
    assert not any(isinstance(e, AbortEvent) for e in events)
    assert isinstance(events[-1], StepCompleted)
    assert not any(isinstance(e, AgentErrorEvent) for e in events)
    messages = saved(events)
    assert [m.role for m in messages] == [Role.ASSISTANT, Role.TOOL]
    assert json.loads(messages[1].content) == {"status": "aborted"}
    assert Conversation(messages).is_complete
    pids = pids_of(events)
    await no_process_left(pids["pid"])
    # (An agent that ignores SIGTERM is gone too: SIGKILL came after the grace; one that
    # never went would leave this test to its time limit.)
    assert not running(pids["pid"]) and not running(pids["child"])


async def test_abort_keeps_the_partial_answer() -> None:
    abort = AbortToken()

    def abort_on_text(event: AgentEvent) -> None:
        if isinstance(event, ContentEvent):
            abort.abort()

    events = await collect(
        agent("hanger.py", kill_grace=0.5), config=run_config(abort), on_event=abort_on_text
    )
    assert isinstance(events[-1], StepCompleted)
    final = saved(events)[-1]
    assert final.content == "partial answer" and final.metadata["aborted"] is True
    await no_process_left(pids_of(events)["pid"])


# ---------------------------------------------------------------- flood
async def test_an_agent_flooding_events_is_stopped_at_the_output_budget() -> None:
    budget = 512 * 1024
    counted = {"chunks": 0}

    def count(event: AgentEvent) -> None:
        if isinstance(event, ContentEvent):
            counted["chunks"] += 1

    backend = agent("flooder.py", max_output_bytes=budget)
    events = await collect(backend, on_event=count)
    error = events[-1]
    assert isinstance(error, AgentErrorEvent)
    assert f"printed more than {budget} bytes" in error.content
    line_bytes = len('{"type": "chunk", "content": "flood flood flood flood flood flood flood"}\n')
    assert 0 < counted["chunks"] <= budget // line_bytes + 1
    final = saved(events)[-1]
    assert final.metadata["error"] is True and len(final.content) <= budget
    await no_process_left(pids_of(events)["pid"])


async def test_an_endless_line_is_skipped_with_bounded_memory() -> None:
    budget = 96 * 1024 * 1024
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    events = await collect(agent("flooder.py", mode="endless-line", max_output_bytes=budget))
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    warnings = [e for e in events if isinstance(e, StatusEvent) and e.status == "warning"]
    assert len(warnings) == 1 and "longer than" in warnings[0].message
    assert isinstance(events[-1], AgentErrorEvent)
    assert "printed more than" in events[-1].content
    # 96 MiB went through; the reader holds at most a line limit plus a chunk.
    assert grown_kib < 24 * 1024, f"peak RSS grew by {grown_kib} KiB"
    await no_process_left(pids_of(events)["pid"])


# ---------------------------------------------------------------- history
def conversation_of(pairs: int, length: int) -> list[Message]:
    clock, messages = SteppingClock(), []
    for n in range(pairs):
        messages.append(Message.user(f"u{n}", f"question {n} " + "q" * length, clock.now()))
        messages.append(Message.assistant(f"a{n}", f"answer {n} " + "a" * length, clock.now()))
    return messages


def test_history_keeps_the_last_pairs_and_truncates_each_message() -> None:
    history = recent_history(conversation_of(4, 600), HistoryLimits())
    assert [m["role"] for m in history] == ["user", "assistant", "user", "assistant"]
    assert history[0]["content"].startswith("question 2 ")
    assert history[3]["content"].startswith("answer 3 ")
    for message in history:
        assert message["content"].endswith(TRUNCATION_SUFFIX)
        assert len(message["content"]) == 500 + len(TRUNCATION_SUFFIX)
    short = recent_history(conversation_of(1, 10), HistoryLimits(max_pairs=3, max_chars=50))
    assert short == [
        {"role": "user", "content": "question 0 " + "q" * 10},
        {"role": "assistant", "content": "answer 0 " + "a" * 10},
    ]
    assert recent_history(conversation_of(2, 1), HistoryLimits(max_pairs=0)) == []


def test_history_leaves_out_tool_activity() -> None:
    clock = SteppingClock()
    tool_step = [
        m
        for e in [
            StepCompleted(
                (
                    Message.model_validate(
                        {
                            "id": "c",
                            "role": "assistant",
                            "content": "let me look",
                            "tool_calls": [
                                {"id": "t1", "function": {"name": "x", "arguments": "{}"}}
                            ],
                        }
                    ),
                    Message.tool("t", "t1", "x", "{}", clock.now()),
                )
            )
        ]
        for m in e.messages
    ]
    messages = [
        Message.user("u", "hi", clock.now()),
        *tool_step,
        Message.assistant("a", "done", clock.now()),
    ]
    assert recent_history(messages, HistoryLimits()) == [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "done"},
    ]


async def test_the_program_receives_the_truncated_history_as_json() -> None:
    events = await collect(agent("well_behaved.py"), history=conversation_of(3, 700))
    received = next(e.extra["history"] for e in events if isinstance(e, StatusEvent))
    assert received == recent_history(conversation_of(3, 700), HistoryLimits())
    assert len(received) == 4


# ---------------------------------------------------------------- environment
async def test_the_program_gets_a_cleaned_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-parent-secret")
    monkeypatch.setenv("COPILOT_SECRET_KEY", "fernet-parent-secret")
    monkeypatch.setenv("LAB_COLOUR", "green")
    monkeypatch.setenv("NOT_ALLOWED", "nope")
    backend = agent("env_probe.py", env_allow=["LAB_COLOUR"], env={"AGENT_LEVEL": "2"})
    events = await collect(backend, config=run_config(credentials="jwt-of-alice"))
    stdin = next(e for e in events if isinstance(e, StatusEvent) and e.message == "stdin")
    assert stdin.extra["devnull"] is True  # stdin is closed: /dev/null
    env = json.loads(next(e.content for e in events if isinstance(e, AnswerEvent)))
    assert "sk-parent-secret" not in json.dumps(env)
    assert "fernet-parent-secret" not in json.dumps(env)
    assert "jwt-of-alice" not in json.dumps(env)
    assert env["LAB_COLOUR"] == "green" and env["AGENT_LEVEL"] == "2"
    assert "NOT_ALLOWED" not in env and "GNS3_TOKEN" not in env
    assert env["GNS3_PROJECT_ID"] == PROJECT and env["GNS3_URL"] == "http://127.0.0.1:3080"
    assert env["PATH"] == os.environ["PATH"]
    assert set(env) <= {
        "PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "LAB_COLOUR",
        "AGENT_LEVEL", "GNS3_URL", "GNS3_PROJECT_ID", "COPILOT_SESSION_ID",
        "COPILOT_USER_ID", "COPILOT_MODE", "COPILOT_AGENT_ID",
    }  # fmt: skip


async def test_the_token_is_passed_only_when_configured_and_never_shown() -> None:
    backend = agent("env_probe.py", pass_token=True)
    events = await collect(backend, config=run_config(credentials="jwt-of-alice"))
    answer = next(e.content for e in events if isinstance(e, AnswerEvent))
    # The program got it, but the echo of it is redacted before anyone sees it.
    assert "jwt-of-alice" not in answer
    assert json.loads(answer)["GNS3_TOKEN"] == "[redacted]"
    assert "jwt-of-alice" not in repr(saved(events))


def test_secret_names_cannot_be_allow_listed() -> None:
    for name in ("OPENAI_API_KEY", "GNS3_TOKEN", "DB_PASSWORD", "MY_SECRET"):
        with pytest.raises(ValueError, match="looks like a secret"):
            AgentConfig(id="x", name="X", command=["x"], env_allow=[name])
    with pytest.raises(ValueError, match="built-in"):
        AgentConfig(id="copilot", name="X", command=["x"])
    with pytest.raises(ValueError, match=r"\{query\}"):
        AgentConfig(id="x", name="X", command=["x"], arguments=["--history", "{history}"])


# ---------------------------------------------------------------- configuration
def test_backends_are_built_per_agent_with_their_capabilities() -> None:
    configs = [
        AgentConfig(id="a", name="A", command=["a"], capabilities={"mcp": True}),
        AgentConfig(id="b", name="B", description="bee", command=["b"]),
    ]
    backends = build_agent_backends(configs)
    assert list(backends) == ["a", "b"]
    caps = backends["a"].capabilities()
    assert caps.mcp is True and caps.uses_llm_settings is False
    assert caps.to_dict()["backend"] == "external"
    assert [(i.id, i.name, i.description) for i in backends["b"].agents()] == [("b", "B", "bee")]
    with pytest.raises(ValueError, match="configured twice"):
        build_agent_backends([configs[0], configs[0]])


async def test_the_argument_template_fills_placeholders_once() -> None:
    backend = agent(
        "well_behaved.py", arguments=["--json-events", "--query={query}", "--history", "{history}"]
    )
    events = await collect(backend, query="say {history} literally")
    answer = next(e for e in events if isinstance(e, AnswerEvent))
    assert answer.content == "You asked: say {history} literally (history 0)"


# ---------------------------------------------------------------- through ChatService
async def test_a_turn_through_chat_service_is_saved_and_reloads() -> None:
    store = InMemoryCheckpointStore()
    backend = agent("well_behaved.py")
    service = build_chat_service(
        store,
        {"lab": backend},
        models=None,
        clock=SteppingClock(),
        ids=SequentialIds("svc"),
        default_agent="lab",
    )
    request = TurnRequest(project_id=PROJECT, user_id="alice", message="list my nodes")
    wire = [wire_of(e) async for e in service.stream_turn(request)]
    types = [e["type"] for e in wire]
    assert types[-1] == "done" and types.count("done") == 1
    assert {"plan", "step", "thinking", "tool_call", "tool_start", "tool_end", "content"} <= set(
        types
    )
    session_id = wire[0]["session_id"]
    _, page = await service.history(SessionKey(PROJECT, session_id, "alice"))
    roles = [m.role for m in page.messages]
    assert roles == [Role.USER, Role.ASSISTANT, Role.TOOL, Role.ASSISTANT]
    assert Conversation(page.messages).is_complete
    assert page.messages[-1].content == "You asked: list my nodes (history 0)"
    assert wire[-1]["message_id"] == page.messages[-1].id

    again = TurnRequest(
        project_id=PROJECT, user_id="alice", message="and links?", session_id=session_id
    )
    wire = [wire_of(e) async for e in service.stream_turn(again)]
    history = next(e["extra"]["history"] for e in wire if e["type"] == "status")
    assert history == [
        {"role": "user", "content": "list my nodes"},
        {"role": "assistant", "content": "You asked: list my nodes (history 0)"},
    ]
    session = await service.get_session(SessionKey(PROJECT, session_id, "alice"))
    assert session.message_count == 8


def wire_of(stamped: TurnEvent) -> dict[str, Any]:
    return {"session_id": stamped.session_id, **event_to_record(stamped.event)}


# ---------------------------------------------------------------- tool bookkeeping
async def replay(tmp_path: Path, *events: dict[str, Any]) -> list[AgentEvent]:
    script = tmp_path / "events.jsonl"
    script.write_text("".join(json.dumps(event) + "\n" for event in events))
    return await collect(agent("replay.py", mode=str(script)))


async def test_tool_end_before_tool_result_and_tools_without_arguments(tmp_path: Path) -> None:
    events = await replay(
        tmp_path,
        {"type": "chunk", "content": "Let me check. "},
        {"type": "tool_start", "tool": "ping"},
        {"type": "tool_args", "tool": "ping", "args": "not an object"},
        {"type": "tool_end", "success": False},
        {"type": "tool_result", "title": "Ping", "summary": "100% loss", "success": False},
        {"type": "tool_start", "tool": "traceroute"},  # no args, no end: closed by the next
        {"type": "tool_start", "tool": "show_ip_route"},
        {"type": "tool_result", "summary": "routes"},  # no end: closed at the end of the run
        {"type": "chunk", "content": "Done."},
        {"type": "status", "status": "info", "session_id": "someone-else", "nodes": 3},
    )
    status = next(e for e in events if isinstance(e, StatusEvent))
    assert status.extra == {"nodes": 3}  # cannot overwrite the wire event's session_id
    ends = [e for e in events if isinstance(e, ToolEndEvent)]
    assert [(e.tool_name, e.status) for e in ends] == [
        ("ping", "error"),
        ("traceroute", "error"),
        ("show_ip_route", "success"),
    ]
    assert ends[0].output["summary"] == "100% loss"
    assert ends[1].output["error"] == "the agent reported no result"
    messages = saved(events)
    assert Conversation(messages).is_complete
    calls = [m for m in messages if m.tool_calls]
    assert calls[0].content == "Let me check. "
    assert calls[0].tool_calls is not None
    assert json.loads(calls[0].tool_calls[0].function.arguments) == {"input": "not an object"}
    assert calls[1].tool_calls is not None
    assert calls[1].tool_calls[0].function.arguments == "{}"
    assert messages[-1].content == "Done." and messages[-1].role is Role.ASSISTANT
    starts = [e.tool_call_id for e in events if isinstance(e, ToolStartEvent)]
    assert starts == [e.tool_call_id for e in ends] and len(set(starts)) == 3


async def test_closing_the_stream_early_stops_the_program() -> None:
    backend = agent("hanger.py", kill_grace=0.5)
    events: list[AgentEvent] = []
    stream = backend.run("q", [], run_config())
    async for event in stream:
        events.append(event)
        if isinstance(event, ToolStartEvent):
            break
    await stream.aclose()  # type: ignore[attr-defined]
    await no_process_left(pids_of(events)["pid"])


async def test_cancelling_the_turn_stops_the_program() -> None:
    backend = agent("hanger.py", kill_grace=0.5)
    events: list[AgentEvent] = []
    running = asyncio.Event()

    async def consume() -> None:
        async for event in backend.run("q", [], run_config()):
            events.append(event)
            if isinstance(event, ToolStartEvent):
                running.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(running.wait(), 30)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await no_process_left(pids_of(events)["pid"])


async def test_aborting_through_chat_service_saves_a_valid_aborted_turn() -> None:
    store = InMemoryCheckpointStore()
    service = build_chat_service(
        store,
        {"lab": agent("hanger.py", kill_grace=0.5)},
        models=None,
        clock=SteppingClock(),
        ids=SequentialIds("svc"),
        default_agent="lab",
    )
    turn = await service.start_turn(
        TurnRequest(project_id=PROJECT, user_id="alice", message="ping R2", agent_id="lab")
    )
    wire: list[dict[str, Any]] = []
    async with asyncio.timeout(30):
        async for event in turn.subscribe():
            wire.append(wire_of(event))
            if event.type == "content":
                assert await service.abort(SessionKey(PROJECT, turn.session_id, "alice"))
    types = [e["type"] for e in wire]
    assert types[-2:] == ["abort", "done"]
    _, page = await service.history(SessionKey(PROJECT, turn.session_id, "alice"))
    assert [m.role for m in page.messages] == [Role.USER, Role.ASSISTANT, Role.TOOL, Role.ASSISTANT]
    assert json.loads(page.messages[2].content) == {"status": "aborted"}
    assert page.messages[3].content == "partial answer"
    assert page.messages[3].metadata["aborted"] is True
    assert wire[-1]["message_id"] == page.messages[3].id
    pids = next(e["extra"] for e in wire if e["type"] == "status")
    await no_process_left(pids["pid"])


async def test_an_agent_that_ends_without_an_answer_is_reported(tmp_path: Path) -> None:
    events = await replay(tmp_path, {"type": "thinking", "content": "hmm"})
    assert isinstance(events[-1], StatusEvent)
    assert events[-1].status == "warning" and "ended without an answer" in events[-1].message
    assert saved(events) == []
