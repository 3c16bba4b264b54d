"""The other shapes small models write their calls in (issue 40, item 7): ``<tools>``
tags, and ``"function"`` naming the tool with ``"arguments"`` as a JSON string (flat, or
``function`` an object whose ``arguments`` is a string)."""

from __future__ import annotations

import json

from copilot_core._textcalls import text_tool_calls
from copilot_core.rules import ArgumentLimits

OFFERED = {"create_gns3_node", "start_gns3_node"}
NODES = {"nodes": [{"template_name": "VPCS", "name": "PC1"}]}


def found(text: str) -> tuple[list[tuple[str, object]], str]:
    calls, rest = text_tool_calls(text, OFFERED, ArgumentLimits())
    return [(call.name, json.loads(call.arguments)) for call in calls], rest


def test_tools_tags_hold_a_call() -> None:
    body = json.dumps({"name": "create_gns3_node", "arguments": NODES})
    calls, rest = found(f"Creating PC1.\n<tools>\n{body}\n</tools>\nThen I start it.")
    assert calls == [("create_gns3_node", NODES)]
    assert rest == "Creating PC1."


def test_function_as_the_name_with_string_arguments() -> None:
    flat = json.dumps({"function": "start_gns3_node", "arguments": '{"node_names": ["PC1"]}'})
    assert found(flat) == ([("start_gns3_node", {"node_names": ["PC1"]})], "")
    fenced = "```json\n" + flat + "\n```"
    assert found(fenced)[0] == [("start_gns3_node", {"node_names": ["PC1"]})]
    nested = {"function": {"name": "create_gns3_node", "arguments": json.dumps(NODES)}}
    assert found("<tools>" + json.dumps(nested) + "</tools>")[0] == [("create_gns3_node", NODES)]


def test_a_function_string_not_offered_or_with_bad_arguments_stays_text() -> None:
    unknown = json.dumps({"function": "format_disk", "arguments": "{}"})
    assert found(unknown) == ([], unknown)
    broken = json.dumps({"function": "start_gns3_node", "arguments": "{not json"})
    assert found(broken) == ([], broken)
