"""The core's built-in agent driving the real adapter against the scripted server.

This is the seam the service relies on: deltas from ChatOpenAI feed the core's
accumulator, tool results go back as messages the server receives, usage is counted,
and an abort mid-stream closes the connection.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from adapters.llm import (
    LLMSettings,
    SettingsLanguageModelProvider,
    TiktokenTokenCounter,
)
from copilot_core import AbortToken, BuiltinAgent, CopilotMode, ToolContext
from copilot_core.events import (
    AbortEvent,
    AgentEvent,
    ContentEvent,
    LLMCallCompleted,
    StepCompleted,
    ToolCallEvent,
)
from copilot_core.ports import AgentRunConfig, ModelOverrides
from copilot_core.testing import FakeToolExecutor, SequentialIds, SteppingClock
from tests.adapters.llm.conftest import settings_for
from tests.fakes.openai_server import SEEN_WITHIN, Reply, ScriptedOpenAIServer, ToolCallScript


class Settings:
    def __init__(self, settings: LLMSettings) -> None:
        self.settings = settings

    async def get_secret(self, user_id: str) -> LLMSettings | None:
        return self.settings


def make_agent(tools: FakeToolExecutor) -> BuiltinAgent:
    return BuiltinAgent(
        tools,
        None,
        clock=SteppingClock(),
        ids=SequentialIds("m"),
        token_counter=TiktokenTokenCounter(),
    )


def context(abort: AbortToken | None = None) -> ToolContext:
    return ToolContext(
        project_id="p1",
        user_id="alice",
        session_id="s1",
        mode=CopilotMode.TEACHING_ASSISTANT,
        abort=abort or AbortToken(),
    )


async def test_turn_with_two_parallel_tool_calls_round_trips_through_the_server(
    server: ScriptedOpenAIServer,
) -> None:
    tools = FakeToolExecutor()
    tools.add("get_node", lambda args, ctx: {"node": args["name"], "status": "started"})
    server.add(
        Reply(
            tool_calls=[
                ToolCallScript("get_node", {"name": "R1"}, id="call_r1"),
                ToolCallScript("get_node", {"name": "R2"}, id="call_r2"),
            ],
            interleave=True,
            usage=(100, 20),
        ),
        Reply(text="Both routers are started.", usage=(150, 8)),
    )
    provider = SettingsLanguageModelProvider(Settings(settings_for(server)))
    selection = await provider.for_user("alice", ModelOverrides())

    events: list[AgentEvent] = [
        event
        async for event in make_agent(tools).run(
            "Are R1 and R2 up?", [], AgentRunConfig(context=context(), model=selection)
        )
    ]

    assert [call.arguments for call in tools.executed] == [{"name": "R1"}, {"name": "R2"}]
    complete = [e for e in events if isinstance(e, ToolCallEvent) and e.complete]
    assert [(e.id, json.loads(e.arguments)) for e in complete] == [
        ("call_r1", {"name": "R1"}),
        ("call_r2", {"name": "R2"}),
    ]
    answer = "".join(e.content for e in events if isinstance(e, ContentEvent))
    assert answer == "Both routers are started."
    usage = [(e.input_tokens, e.output_tokens) for e in events if isinstance(e, LLMCallCompleted)]
    assert usage == [(100, 20), (150, 8)]

    second: list[dict[str, Any]] = server.requests[1].messages
    assert [m["role"] for m in second] == ["system", "user", "assistant", "tool", "tool"]
    assert [c["id"] for c in second[2]["tool_calls"]] == ["call_r1", "call_r2"]
    assert [m["tool_call_id"] for m in second[3:]] == ["call_r1", "call_r2"]
    assert json.loads(second[3]["content"]) == {"node": "R1", "status": "started"}
    steps = [e for e in events if isinstance(e, StepCompleted)]
    assert steps[-1].messages[0].content == "Both routers are started."


async def test_abort_mid_answer_closes_the_connection_and_keeps_the_partial_answer(
    server: ScriptedOpenAIServer,
) -> None:
    server.add(Reply(text="z" * 500, chunk=1, token_delay=0.03))
    provider = SettingsLanguageModelProvider(Settings(settings_for(server)))
    selection = await provider.for_user("alice", ModelOverrides())
    abort = AbortToken()
    events: list[AgentEvent] = []

    async for event in make_agent(FakeToolExecutor()).run(
        "Talk", [], AgentRunConfig(context=context(abort), model=selection)
    ):
        events.append(event)
        if isinstance(event, ContentEvent) and len(events) >= 5:
            abort.abort()

    (request,) = server.requests
    assert await asyncio.to_thread(request.finished.wait, SEEN_WITHIN)
    assert request.client_disconnected
    assert request.chunks_sent < 50  # not the 500 the reply had
    # The agent counts the cut call, saves the partial answer and stops (the turn
    # runner sends abort and done).
    assert not any(isinstance(e, AbortEvent) for e in events)
    assert isinstance(events[-2], LLMCallCompleted)
    assert isinstance(events[-1], StepCompleted)
    partial = [e for e in events if isinstance(e, StepCompleted)]
    assert partial
    assert partial[-1].messages[0].metadata.get("aborted") is True
    assert partial[-1].messages[0].content.startswith("zz")
