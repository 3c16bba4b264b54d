"""A reply that names the tool to use and makes no call (issue 40), over HTTP with the
real LLM adapter and the scripted OpenAI-compatible server.

The real 1.5B model, asked "Start PC1 and PC2." on the router lab (bench_real_model,
2026-12-07), answered "Use the `start_gns3_node` function to start the two nodes." and
made no call: nothing was done, and that was the turn's answer. Now the model is told,
once in a turn that has made no call, that nothing was done and that it calls the tool
itself; the call it then makes runs through the gate like any other."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.api.conftest import RawEvent, one_turn
from tests.fakes.openai_server import Reply, ScriptedOpenAIServer, ToolCallScript

KEY = "sk-named-tool"
QUESTION = "Start PC1 and PC2."
NAMED = (
    "To start PC1 and PC2, you need to start the nodes by name. Here are the steps:\n\n"
    "1. **Identify the nodes**: PC1 and PC2 are already defined in the lab.\n\n"
    "2. **Start the nodes**: Use the `start_gns3_node` function to start the two nodes.\n"
)
START = {"node_names": ["PC1", "PC2"]}


@pytest.fixture
def llm() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer(api_key=KEY) as server:
        yield server


async def ask(llm: ScriptedOpenAIServer) -> tuple[list[RawEvent], list[dict[str, Any]], list[Any]]:
    """One turn asking QUESTION: its events, its stored history, the starts run."""
    ran: list[Any] = []
    events, messages = await one_turn(
        llm.base_url,
        KEY,
        QUESTION,
        {
            "start_gns3_node": (
                lambda args, ctx: ran.append(args) or {"started": args["node_names"]},
                "Start nodes by name.",
            ),
            "get_topology": (lambda args, ctx: {"nodes": []}, ""),
        },
    )
    return events, messages, ran


def named(events: list[RawEvent]) -> list[dict[str, Any]]:
    return [e.data for e in events if e.type == "status" and e.data["status"] == "named_tool"]


async def test_a_reply_naming_the_tool_without_a_call_is_told_and_the_call_then_runs(
    llm: ScriptedOpenAIServer,
) -> None:
    llm.add(
        Reply(text=NAMED),
        Reply(tool_calls=[ToolCallScript("start_gns3_node", START)]),
        Reply(text="PC1 and PC2 are started."),
    )
    events, messages, ran = await ask(llm)
    (status,) = named(events)
    assert status["tools"] == ["start_gns3_node"]
    told = llm.requests[1].messages
    # The question, then the note; the reply that only named the tool is not sent back.
    assert [m["role"] for m in told[-2:]] == ["user", "user"]
    assert told[-2]["content"] == QUESTION
    assert "not from the user" in told[-1]["content"]
    assert "call start_gns3_node now" in told[-1]["content"]
    assert not any("Identify the nodes" in str(m.get("content")) for m in told)
    assert ran == [START]
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "assistant"]
    assert messages[-1]["content"] == "PC1 and PC2 are started."


async def test_the_model_is_told_once_and_a_second_such_reply_is_the_answer(
    llm: ScriptedOpenAIServer,
) -> None:
    llm.add(Reply(text=NAMED), Reply(text=NAMED))
    events, messages, ran = await ask(llm)
    assert len(named(events)) == 1 and ran == []
    assert len(llm.requests) == 2
    assert [m["role"] for m in messages] == ["user", "assistant"]
    assert messages[-1]["content"] == NAMED


async def test_naming_a_tool_after_calling_it_in_the_turn_is_an_answer(
    llm: ScriptedOpenAIServer,
) -> None:
    llm.add(
        Reply(tool_calls=[ToolCallScript("start_gns3_node", START)]),
        Reply(text="I used `start_gns3_node`: PC1 and PC2 are started."),
    )
    events, messages, ran = await ask(llm)
    assert named(events) == [] and ran == [START]
    assert len(llm.requests) == 2
    assert messages[-1]["content"].startswith("I used `start_gns3_node`")
