"""A call's plain-language title: the tool source's (``ToolSpec.title``), computed by
the agent when the call is complete, carried on the complete ``tool_call`` event and
kept with the call's tool message (``metadata.title``), so a reload shows it again. A
tool without a titler, arguments it cannot read, or a titler that fails give no title,
and never stop the call."""

from __future__ import annotations

from typing import Any

from copilot_core import ParsedToolCall, ToolSpec
from copilot_core._tools import MAX_TITLE_CHARS, call_title
from copilot_core.events import ToolCallEvent, event_from_record, event_to_record
from copilot_core.testing import text_reply, tool_reply

from .conftest import World


def nodes_title(arguments: dict[str, Any]) -> str:
    return f"Read {len(arguments['names'])} nodes"


def broken_title(arguments: dict[str, Any]) -> str:
    raise KeyError("names")


async def test_a_complete_call_carries_its_title_and_its_tool_message_keeps_it(
    world: World,
) -> None:
    world.tools.add("read_nodes", lambda args, ctx: {"ok": True}, title=nodes_title)
    world.tools.add("untitled", lambda args, ctx: {"ok": True})
    world.tools.add("broken", lambda args, ctx: {"ok": True}, title=broken_title)
    world.model.add(
        tool_reply(("read_nodes", {"names": ["R1", "R2"]}), ("untitled", {}), ("broken", {})),
        text_reply("Done."),
        text_reply("Nodes"),
    )
    events = await world.turn("read the nodes")
    calls = [e for e in events if e["type"] == "tool_call"]
    growing = [c for c in calls if not c["complete"]]
    assert all(c["title"] is None for c in growing)  # titled once the arguments are whole
    complete = {c["name"]: c["title"] for c in calls if c["complete"]}
    assert complete == {"read_nodes": "Read 2 nodes", "untitled": None, "broken": None}
    assert [call.name for call in world.tools.executed] == ["read_nodes", "untitled", "broken"]
    history = await world.messages(str(events[0]["session_id"]))
    tools = {m["name"]: m["metadata"] for m in history if m["role"] == "tool"}
    assert tools["read_nodes"]["title"] == "Read 2 nodes"  # type: ignore[index]
    assert "title" not in tools["untitled"]  # type: ignore[operator]
    assert "title" not in tools["broken"]  # type: ignore[operator]


def test_a_title_is_one_bounded_line_and_only_for_arguments_that_are_an_object() -> None:
    spec = ToolSpec("t", "t", title=lambda args: "Run\n  " + "x" * 500)
    title = call_title(spec, ParsedToolCall.parse("c1", "t", "{}"))
    assert title is not None
    assert "\n" not in title and title.startswith("Run x")
    assert len(title) == MAX_TITLE_CHARS and title.endswith("…")
    assert call_title(spec, ParsedToolCall.parse("c1", "t", "[1]")) is None
    assert (
        call_title(ToolSpec("t", "t", title=lambda args: "  "), ParsedToolCall.parse("c", "t", ""))
        is None
    )
    assert call_title(None, ParsedToolCall.parse("c1", "t", "{}")) is None


def test_a_turn_log_keeps_the_title_and_reads_records_written_before_it() -> None:
    event = ToolCallEvent("c1", "read_nodes", "{}", complete=True, title="Read 2 nodes")
    assert event_from_record(event_to_record(event)) == event
    older = {"type": "tool_call", "id": "c1", "name": "t", "arguments": "{}", "complete": True}
    assert event_from_record(older).title is None  # type: ignore[union-attr]
