"""A turn whose call the model wrote in its text teaches the next turn the right shape
(issue 40, item 3), over real HTTP with the scripted OpenAI-compatible server.

A 1.5B model (Qwen2.5-Coder, stock template) wrote "…you can use the following
commands:", a ```json call block, then "After running this command…". The call was read
and run, but the stored reply kept the introduction with nothing after it; on the next
turns the model copied that shape, prose pointing at nothing and no call, and the link,
start and address requests did nothing. Then, with the introduction gone, it copied the
prose kept *after* the block, which the template renders before the call: "…configure
the network interfaces.\n\nAfter running this command, the IP addresses … have been
assigned.", and no call. The next turn's request must carry the call as a tool call,
answered, with no introduction left dangling and no outcome told before it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from adapters.llm import SettingsLanguageModelProvider, TiktokenTokenCounter
from copilot_core import AbortToken, BuiltinAgent, CopilotMode, Message, ToolContext
from copilot_core._messages import FunctionCall, ToolCall
from copilot_core.events import AgentEvent, StepCompleted, ToolEndEvent
from copilot_core.ports import AgentRunConfig, ModelOverrides
from copilot_core.testing import FakeToolExecutor, SequentialIds, SteppingClock
from tests.adapters.llm.conftest import settings_for
from tests.adapters.llm.test_agent_over_the_wire import Settings
from tests.fakes.openai_server import RecordedRequest, Reply, ScriptedOpenAIServer

NODES = {
    "nodes": [{"template_name": "VPCS", "name": "PC1"}, {"template_name": "VPCS", "name": "PC2"}]
}
#: The shape of the bench's reply (.cache/bench_real_model/requests.jsonl, request 2).
WRITTEN = (
    "To add two PCs, PC1 and PC2, to the lab, you can use the following commands:\n\n"
    "```json\n"
    + json.dumps({"name": "create_gns3_node", "arguments": NODES}, indent=2)
    + "\n```\n\n"
    "After running this command, the lab will have two PCs, PC1 and PC2."
)
AFTER = "After running this command, the lab will have two PCs, PC1 and PC2."


def lab_tools() -> FakeToolExecutor:
    tools = FakeToolExecutor()
    tools.add(
        "create_gns3_node",
        lambda args, ctx: {"created": [node["name"] for node in args["nodes"]]},
        mutates_topology=True,
    )
    tools.add("set_address", lambda args, ctx: {"set": args})
    return tools


async def turn(
    server: ScriptedOpenAIServer, query: str, history: Sequence[Message], ids: str
) -> list[AgentEvent]:
    """One turn of the agent against ``server`` as a local model (text calls read)."""
    settings = settings_for(server, provider="openai_compatible")
    selection = await SettingsLanguageModelProvider(Settings(settings)).for_user(
        "alice", ModelOverrides()
    )
    assert selection.text_tool_calls is True
    agent = BuiltinAgent(
        lab_tools(),
        None,
        clock=SteppingClock(),
        ids=SequentialIds(ids),
        token_counter=TiktokenTokenCounter(),
    )
    context = ToolContext(
        project_id="p1",
        user_id="alice",
        session_id="s1",
        mode=CopilotMode.LAB_AUTOMATION_ASSISTANT,
        abort=AbortToken(),
    )
    config = AgentRunConfig(context=context, model=selection)
    return [event async for event in agent.run(query, history, config)]


def stored(query: str, events: list[AgentEvent]) -> list[Message]:
    """What the runner stores of a turn: the question and its steps, through their
    stored form (``to_dict`` / ``from_dict``)."""
    messages = [Message.user(f"u-{query}", query, SteppingClock().now())]
    messages += [m for e in events if isinstance(e, StepCompleted) for m in e.messages]
    return [Message.from_dict(message.to_dict()) for message in messages]


def dangling(content: str) -> list[str]:
    """The lines of ``content`` that end with ``:`` and are followed by nothing or by a
    blank line: an introduction whose block is gone."""
    lines = content.split("\n")
    return [
        line
        for index, line in enumerate(lines)
        if line.rstrip().endswith(":") and not "".join(lines[index + 1 : index + 2]).strip()
    ]


def the_call_message(messages: list[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The one assistant message with calls the model was sent, and the message after it."""
    (index,) = [
        i for i, m in enumerate(messages) if m["role"] == "assistant" and m.get("tool_calls")
    ]
    return messages[index], messages[index + 1]


async def test_the_next_turn_reads_a_text_call_as_a_call_with_no_dangling_introduction(
    server: ScriptedOpenAIServer,
) -> None:
    server.add(Reply(text=WRITTEN), Reply(text="PC1 and PC2 are in the lab."))
    first = await turn(server, "Add two PCs, PC1 and PC2.", [], "a")
    history = stored("Add two PCs, PC1 and PC2.", first)

    server.add(Reply(text="I will link them."))
    await turn(server, "Connect PC1 to PC2.", history, "b")

    second = server.requests[2].messages  # the next turn's request
    asked, answered = the_call_message(second)
    assert not asked["content"]  # its prose was an introduction, then an outcome
    assert not any(AFTER in str(m.get("content")) for m in second)
    (call,) = asked["tool_calls"]
    assert call["function"]["name"] == "create_gns3_node"
    assert json.loads(call["function"]["arguments"]) == NODES
    assert answered["role"] == "tool" and answered["tool_call_id"] == call["id"]
    assert json.loads(answered["content"])["created"] == ["PC1", "PC2"]
    # Within the first turn too: the model's own next call read the same shape.
    within, _ = the_call_message(server.requests[1].messages)
    assert not within["content"]


async def test_a_session_stored_with_the_dangling_shape_is_sent_without_it(
    server: ScriptedOpenAIServer,
) -> None:
    # What the product stored for the bench's reply before the fix.
    now = SteppingClock().now()
    call = ToolCall(
        id="call_1", function=FunctionCall(name="create_gns3_node", arguments=json.dumps(NODES))
    )
    history = [
        Message.user("u1", "Add two PCs, PC1 and PC2.", now),
        Message.assistant(
            "a1",
            "To add two PCs, PC1 and PC2, to the lab, you can use the following commands:\n\n"
            + AFTER,
            now,
            (call,),
        ),
        Message.tool("t1", "call_1", "create_gns3_node", '{"created": ["PC1", "PC2"]}', now),
        Message.assistant("a2", "PC1 and PC2 are in the lab.", now),
    ]
    server.add(Reply(text="I will link them."))
    await turn(server, "Connect PC1 to PC2.", history, "b")
    asked, answered = the_call_message(server.requests[0].messages)
    assert not asked["content"]  # the introduction and the outcome after the block
    assert asked["tool_calls"][0]["id"] == answered["tool_call_id"] == "call_1"


#: What the 1.5B model answered to the address request after the build turn above
#: (bench, second run, row 5): the outcome shape copied, no call.
COPIED = (
    "To give PC1 and PC2 their addresses, you need to configure the network interfaces."
    "\n\nAfter running this command, the IP addresses of PC1 and PC2 have been assigned."
)
ADDRESS = {"name": "set_address", "arguments": {"node": "PC1", "address": "10.0.0.1/24"}}


def copying_model(request: RecordedRequest) -> Reply:
    """A model that copies its history's shape, as the 1.5B model did: when an earlier
    call of its own reads as an outcome stated before the call, it answers with such an
    outcome and no call; otherwise it writes its call as a block, as it did."""
    copies = any(
        m["role"] == "assistant" and m.get("tool_calls") and "After running" in (m["content"] or "")
        for m in request.messages
    )
    if copies:
        return Reply(text=COPIED)
    if request.messages[-1]["role"] == "tool":
        return Reply(text="PC1 has 10.0.0.1/24.")
    return Reply(text="Setting it:\n\n```json\n" + json.dumps(ADDRESS) + "\n```")


async def test_a_model_that_copies_its_history_makes_the_next_call(
    server: ScriptedOpenAIServer,
) -> None:
    server.add(Reply(text=WRITTEN), Reply(text="PC1 and PC2 are in the lab."))
    history = stored("Add two PCs, PC1 and PC2.", await turn(server, "Add two PCs.", [], "a"))
    server.add(copying_model, copying_model)
    events = await turn(server, "Give PC1 10.0.0.1/24.", history, "b")
    # The address request was a call, run, and its answer read from the result.
    ran = [e for e in events if isinstance(e, ToolEndEvent)]
    assert [e.tool_name for e in ran] == ["set_address"]
    assert [m for e in events if isinstance(e, StepCompleted) for m in e.messages][-1].content == (
        "PC1 has 10.0.0.1/24."
    )
