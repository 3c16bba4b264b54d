"""A history that stays valid, and one small models can learn from (issue 40, items 3
and 6): a call cut off mid-arguments never goes back to the model as a call, a stored
one is repaired on replay, the calls of one reply are bounded, and a call read from the
model's text replays as a tool call with readable prose around it."""

from __future__ import annotations

import json
from typing import Any

from copilot_core import AgentSettings, Conversation, Message
from copilot_core._messages import FunctionCall, ToolCall
from copilot_core.ports import FinishDelta, ModelSelection
from copilot_core.testing import text_reply, tool_reply

from .conftest import PROJECT, World

PC1 = {"name": "PC1", "template": "VPCS"}


def creating(world: World) -> list[dict[str, Any]]:
    made: list[dict[str, Any]] = []

    def create(args: dict[str, Any], ctx: object) -> dict[str, Any]:
        made.append(args)
        return {"created": args["name"]}

    world.tools.add("create_gns3_node", create, mutates_topology=True)
    return made


def cut_off(*calls: tuple[str, dict[str, Any] | str]) -> list[Any]:
    """A reply whose calls ran into the length limit (its finish reason says so)."""
    return [FinishDelta("length") if isinstance(d, FinishDelta) else d for d in tool_reply(*calls)]


def wire_calls(messages: Any) -> list[tuple[str, str]]:
    """Every (tool, arguments text) of the assistant messages a model was sent."""
    return [
        (call.function.name, call.function.arguments)
        for message in messages
        if message.tool_calls
        for call in message.tool_calls
    ]


def cut_call(call_id: str, arguments: str) -> ToolCall:
    """A stored call of ``create_gns3_node`` with ``arguments`` as its text, verbatim."""
    return ToolCall(id=call_id, function=FunctionCall(name="create_gns3_node", arguments=arguments))


def last_prompt(world: World) -> Any:
    """The messages of the newest model call that answered (not one writing a title)."""
    return [c.messages for c in world.model.calls if c.messages[0].id != "title-system"][-1]


def parses_as_object(arguments: str) -> bool:
    try:
        return isinstance(json.loads(arguments), dict)
    except ValueError:
        return False


def tool_outputs(events: list[dict[str, Any]]) -> list[Any]:
    """The tools' outputs in call order (``call_0``, ``call_1`` …; answered calls are
    reported first)."""
    ends = {e["tool_call_id"]: e["output"] for e in events if e["type"] == "tool_end"}
    return [ends[f"call_{index}"] for index in range(len(ends))]


async def test_a_reply_cut_off_mid_call_leaves_the_next_turn_working(world: World) -> None:
    made = creating(world)
    world.model.add(
        cut_off(("create_gns3_node", PC1), ("create_gns3_node", '{"name": "PC2", "templ')),
        text_reply("PC1 is there; PC2 was cut off."),
        text_reply("Title"),
    )
    first = await world.turn("add PC1 and PC2")
    assert made == [PC1]  # the complete call ran, the cut one did not
    cut = tool_outputs(first)[1]
    assert cut["status"] == "error" and cut["reason"] == "cut_off"
    assert "cut off before its arguments were complete" in cut["error"]
    # The model read that, with a call it could have sent back.
    told = world.model.calls[1].messages
    assert all(parses_as_object(args) for _, args in wire_calls(told))
    # What is stored is valid too, so the session's next turn works.
    session_id = str(first[0]["session_id"])
    stored = [Message.from_dict(m) for m in await world.messages(session_id)]
    assert Conversation(stored).is_complete
    assert [args for _, args in wire_calls(stored)] == [json.dumps(PC1), "{}"]
    world.model.add(text_reply("Yes, PC1."), text_reply("T"))
    second = await world.turn("is PC1 there?", session_id=session_id)
    assert second[-1]["type"] == "done"
    sent = last_prompt(world)
    assert len(wire_calls(sent)) == 2
    assert all(parses_as_object(args) for _, args in wire_calls(sent))


async def test_a_stored_history_with_a_broken_call_is_repaired_on_replay(world: World) -> None:
    creating(world)
    world.model.add(text_reply("Hello."), text_reply("T"))
    first = await world.turn("hi")
    session_id = str(first[0]["session_id"])
    # What the product stored before the fix: the cut text as the call's arguments.
    now = world.clock.now()
    await world.store.append_messages(
        PROJECT,
        session_id,
        [
            Message.user("old-u", "add PC2", now),
            Message.assistant(
                "old-a",
                "I will create PC2.",
                now,
                (cut_call("call_7", '{"name": "PC2", "tem'),),
            ),
            Message.tool("old-t", "call_7", "create_gns3_node", '{"status": "error"}', now),
            Message.assistant("old-f", "Something went wrong.", now),
        ],
    )
    world.model.add(text_reply("PC2 is not there."), text_reply("T"))
    second = await world.turn("is PC2 there?", session_id=session_id)
    assert second[-1]["type"] == "done"
    sent = last_prompt(world)
    assert wire_calls(sent) == [("create_gns3_node", "{}")]
    # The call keeps its id and its answer: still a valid OpenAI conversation.
    assert Conversation(sent[1:]).is_complete
    assert [m.id for m in sent if m.id.startswith("old-")] == ["old-u", "old-a", "old-t", "old-f"]


async def test_twelve_calls_in_one_reply_run_eight_and_answer_the_ninth_saying_what_to_do(
    world: World,
) -> None:
    made = creating(world)
    nodes = [{"name": f"PC{i}", "template": "VPCS"} for i in range(1, 13)]
    world.model.add(
        tool_reply(*[("create_gns3_node", node) for node in nodes]),
        text_reply("Eight made."),
        text_reply("T"),
    )
    events = await world.turn("add twelve PCs")
    assert made == nodes[:8]
    # The reply is read no further than its ninth call (issue 40): that one is answered.
    (refused,) = tool_outputs(events)[8:]
    assert refused["reason"] == "too_many_calls"
    assert "only the first 8 calls of a reply are run, and this was call 9" in refused["error"]
    assert "Make the rest in your next reply" in refused["error"]
    told = world.model.calls[1].messages
    assert sum(1 for m in told if m.role.value == "tool") == 9  # every call kept is answered


async def test_the_bound_is_a_setting(world: World) -> None:
    made = creating(world)
    world.agent_settings = AgentSettings(max_calls_per_reply=2)
    nodes = [{"name": f"PC{i}", "template": "VPCS"} for i in range(1, 4)]
    world.model.add(
        tool_reply(*[("create_gns3_node", node) for node in nodes]),
        text_reply("Two made."),
        text_reply("T"),
    )
    events = await world.turn("add three PCs")
    assert made == nodes[:2]
    assert "only the first 2 calls" in tool_outputs(events)[2]["error"]


TEXT_CALLS = (
    "To create the PCs, I will use the following commands:\n\n"
    '```json\n{"name": "create_gns3_node", "arguments": {"name": "PC1", "template": "VPCS"}}\n'
    "```\n\n"
    '```json\n{"name": "create_gns3_node", "arguments": {"name": "PC2", "template": "VPCS"}}\n'
    "```\n\n"
    "These commands will create PC1 and PC2."
)


async def test_a_text_calls_turn_replays_as_tool_calls_with_no_hole_in_the_prose(
    world: World,
) -> None:
    made = creating(world)
    world.selection = ModelSelection(world.model, text_tool_calls=True)
    world.model.add(text_reply(TEXT_CALLS), text_reply("PC1 and PC2 are there."), text_reply("T"))
    first = await world.turn("add PC1 and PC2")
    assert [node["name"] for node in made] == ["PC1", "PC2"]
    session_id = str(first[0]["session_id"])
    world.model.add(text_reply("Yes."), text_reply("T"))
    await world.turn("are they there?", session_id=session_id)
    sent = last_prompt(world)
    (asked,) = [m for m in sent if m.tool_calls]
    # No hole, no introduction pointing at nothing (it went with the blocks), and no
    # outcome told before the calls (what followed them went): the calls stand alone.
    assert asked.content == ""
    assert [json.loads(args)["name"] for _, args in wire_calls(sent)] == ["PC1", "PC2"]
    after = sent[sent.index(asked) + 1 : sent.index(asked) + 3]
    assert [m.tool_call_id for m in after] == [call.id for call in asked.tool_calls or ()]
    assert all("created" in m.content for m in after)


async def test_a_stored_text_call_message_with_a_hole_is_replayed_without_it(
    world: World,
) -> None:
    creating(world)
    world.model.add(text_reply("Hello."), text_reply("T"))
    first = await world.turn("hi")
    session_id = str(first[0]["session_id"])
    now = world.clock.now()
    call = cut_call("c1", "{}")
    await world.store.append_messages(
        PROJECT,
        session_id,
        [
            Message.user("old-u", "add PC1", now),
            Message.assistant(
                "old-a", "use the following commands:\n\n\n\n\nThese commands will", now, (call,)
            ),
            Message.tool("old-t", "c1", "create_gns3_node", "created", now),
            Message.assistant("old-f", "Done.", now),
        ],
    )
    world.model.add(text_reply("Yes."), text_reply("T"))
    await world.turn("and?", session_id=session_id)
    (asked,) = [m for m in last_prompt(world) if m.tool_calls]
    assert asked.content == ""  # no hole, no introduction, no outcome before the call
