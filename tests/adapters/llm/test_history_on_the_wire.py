"""A session survives a reply cut off mid-call (issue 40, item 6), over real HTTP.

The scripted server is strict as llama.cpp's is: a request carrying a tool call whose
arguments are not a JSON object is answered 500 ("Failed to parse tool call arguments
as JSON"). Before the fix the cut call was sent back as it was, and every later
request of the session failed so.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator, Sequence

import pytest

from adapters.llm import SettingsLanguageModelProvider
from copilot_core import Message
from copilot_core._messages import FunctionCall, ToolCall
from copilot_core.events import AgentEvent, ErrorEvent, StepCompleted
from copilot_core.ports import AgentRunConfig, ModelOverrides
from copilot_core.testing import FakeToolExecutor, SteppingClock
from tests.adapters.llm.conftest import API_KEY, settings_for
from tests.adapters.llm.test_agent_over_the_wire import Settings, context, make_agent
from tests.fakes.openai_server import Reply, ScriptedOpenAIServer, ToolCallScript


@pytest.fixture
def strict() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer(api_key=API_KEY, strict_arguments=True) as running:
        yield running


def tools() -> FakeToolExecutor:
    executor = FakeToolExecutor()
    executor.add("get_node", lambda args, ctx: {"node": args["name"], "status": "started"})
    return executor


async def turn(
    server: ScriptedOpenAIServer,
    query: str,
    history: Sequence[Message],
    executor: FakeToolExecutor | None = None,
) -> list[AgentEvent]:
    selection = await SettingsLanguageModelProvider(Settings(settings_for(server))).for_user(
        "alice", ModelOverrides()
    )
    agent = make_agent(executor or tools())
    return [
        event async for event in agent.run(query, history, AgentRunConfig(context(), selection))
    ]


def sent_arguments(server: ScriptedOpenAIServer) -> list[str]:
    return [
        call["function"]["arguments"]
        for request in server.requests
        for message in request.messages
        for call in message.get("tool_calls") or ()
    ]


async def test_a_reply_cut_off_mid_call_leaves_the_session_working(
    strict: ScriptedOpenAIServer,
) -> None:
    strict.add(
        Reply(
            tool_calls=[
                ToolCallScript("get_node", {"name": "R1"}, id="call_r1"),
                ToolCallScript("get_node", '{"name": "R', id="call_r2"),  # cut off
            ],
            finish_reason="length",
        ),
        Reply(text="R1 is started; my call for R2 was cut off."),
        Reply(text="R2 is started."),
    )
    first = await turn(strict, "Are R1 and R2 up?", [])
    assert not [e for e in first if isinstance(e, ErrorEvent)]
    cut = json.loads(strict.requests[1].messages[-1]["content"])
    assert cut["reason"] == "cut_off" and "was not run" in cut["error"]
    stored = [m for e in first if isinstance(e, StepCompleted) for m in e.messages]
    history = [Message.user("u1", "Are R1 and R2 up?", SteppingClock().now()), *stored]
    second = await turn(strict, "And R2?", history)
    assert not [e for e in second if isinstance(e, ErrorEvent)]
    assert len(strict.requests) == 3
    assert all(isinstance(json.loads(args), dict) for args in sent_arguments(strict))


async def test_a_session_stored_with_a_cut_call_works_again(
    strict: ScriptedOpenAIServer,
) -> None:
    now = SteppingClock().now()
    cut = ToolCall(id="call_r2", function=FunctionCall(name="get_node", arguments='{"name": "R'))
    history = [
        Message.user("u1", "Is R2 up?", now),
        Message.assistant("a1", "", now, (cut,)),
        Message.tool("t1", "call_r2", "get_node", '{"status": "error"}', now),
        Message.assistant("a2", "Something went wrong.", now),
    ]
    strict.add(Reply(text="R2 is started."))
    events = await turn(strict, "Try again?", history)
    assert not [e for e in events if isinstance(e, ErrorEvent)]
    assert sent_arguments(strict) == ["{}"]


async def test_a_reply_of_forty_calls_is_read_to_its_ninth_and_the_session_goes_on(
    strict: ScriptedOpenAIServer,
) -> None:
    """Issue 40: past ``max_calls_per_reply`` (8) the agent stops reading the model (one
    reply of 36 calls ran to its token limit in 10.5 minutes): it closes the stream at the
    ninth call, runs eight, and answers the ninth, whose cut arguments go back as ``{}``."""
    calls = [
        ToolCallScript("get_node", {"name": f"R{n}"}, id=f"call_r{n}", fragment=100)
        for n in range(1, 41)
    ]
    # 84 chunks: the role, two per call (its name, its arguments), finish, usage, [DONE];
    # the ninth call's name is chunk 18. Paced, so the server sees the client hang up.
    strict.add(
        Reply(tool_calls=calls, token_delay=0.1),
        Reply(text="R1 to R8 are started; I ask for the rest next."),
        Reply(text="R9 is started."),
    )
    executor = tools()
    first = await turn(strict, "Are R1 to R40 up?", [], executor)
    streamed = strict.requests[0]
    assert await asyncio.to_thread(streamed.finished.wait, 30)
    assert streamed.client_disconnected
    assert streamed.chunks_sent < 42  # not the 84 of the whole reply
    assert [call.arguments["name"] for call in executor.executed] == [f"R{n}" for n in range(1, 9)]
    assert not [e for e in first if isinstance(e, ErrorEvent)]
    answered = strict.requests[1].messages
    assert len(answered[-10]["tool_calls"]) == 9
    ninth = json.loads(answered[-1]["content"])
    assert ninth["reason"] == "too_many_calls" and "call 9" in ninth["error"]
    stored = [m for e in first if isinstance(e, StepCompleted) for m in e.messages]
    history = [Message.user("u1", "Are R1 to R40 up?", SteppingClock().now()), *stored]
    second = await turn(strict, "And R9?", history)
    assert not [e for e in second if isinstance(e, ErrorEvent)]
    assert len(strict.requests) == 3
    assert all(isinstance(json.loads(args), dict) for args in sent_arguments(strict))
