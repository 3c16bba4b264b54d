"""Tool calls written in a reply's text (issue 30): the shapes small models write are
read as calls, anything else stays text, and every bound holds."""

from __future__ import annotations

import json

from copilot_core._textcalls import text_tool_calls
from copilot_core.rules import ArgumentLimit, ArgumentLimits

OFFERED = {"create_gns3_node", "start_gns3_node", "gns3_topology_reader"}
LIMITS = ArgumentLimits()


def found(text: str, **options: int) -> tuple[list[tuple[str, object]], str]:
    calls, rest = text_tool_calls(text, OFFERED, LIMITS, **options)
    return [(call.name, json.loads(call.arguments)) for call in calls], rest


def test_a_json_code_block_naming_an_offered_tool_is_a_call_and_leaves_the_prose_before() -> None:
    text = (
        "I will create the two PCs.\n```json\n"
        '{"name": "create_gns3_node", "arguments": {"nodes": [{"template_name": "VPCS", '
        '"name": "PC1"}]}}\n```\nDone soon.'
    )
    calls, rest = found(text)
    assert calls == [("create_gns3_node", {"nodes": [{"template_name": "VPCS", "name": "PC1"}]})]
    assert rest == "I will create the two PCs."  # what came after the call goes (issue 40)


def test_tool_call_tags_parameters_a_function_object_and_string_arguments() -> None:
    text = (
        '<tool_call>\n{"name": "start_gns3_node", "parameters": {"node_names": ["PC1"]}}\n'
        "</tool_call>\n<tool_call>"
        '{"function": {"name": "gns3_topology_reader", "arguments": "{}"}}</tool_call>'
    )
    calls, rest = found(text)
    assert calls == [
        ("start_gns3_node", {"node_names": ["PC1"]}),
        ("gns3_topology_reader", {}),
    ]
    assert rest == ""


def test_a_whole_answer_that_is_a_call_or_a_list_of_calls() -> None:
    assert found('  {"name": "gns3_topology_reader", "arguments": {}} ') == (
        [("gns3_topology_reader", {})],
        "",
    )
    text = json.dumps(
        [
            {"name": "start_gns3_node", "arguments": {"node_names": ["R1"]}},
            {"name": "start_gns3_node", "arguments": {"node_names": ["R2"]}},
        ]
    )
    assert [c[1] for c in found(text)[0]] == [{"node_names": ["R1"]}, {"node_names": ["R2"]}]


def test_an_unclosed_tool_call_tag_at_the_end_counts() -> None:
    calls, _ = found('Sure.<tool_call>{"name": "gns3_topology_reader", "arguments": {}}')
    assert calls == [("gns3_topology_reader", {})]


def test_what_is_not_a_call_of_an_offered_tool_stays_text() -> None:
    for text in (
        'Use this configuration:\n```json\n{"ip": "10.0.0.1"}\n```',  # JSON, no tool
        '```json\n{"name": "rm_rf", "arguments": {}}\n```',  # not an offered tool
        '```json\n{"name": "start_gns3_node", "arguments": ["PC1"]}\n```',  # not an object
        '```json\n{"name": "start_gns3_node", "arguments": {"node_names": [}\n```',  # broken
        '{"name": "start_gns3_node", "arguments": "not json"}',
        'The PC is named "PC1" {"name": "gns3_topology_reader"} inline.',  # not a block
        # A list with one thing that is not a call: it is an example, not calls.
        '```json\n[{"name": "start_gns3_node", "arguments": {}}, {"ip": 1}]\n```',
        "",
    ):
        assert found(text) == ([], text), text


def test_bounds_a_long_text_is_not_searched_and_at_most_max_calls_are_taken() -> None:
    block = '<tool_call>{"name": "gns3_topology_reader", "arguments": {}}</tool_call>'
    assert len(found(block * 10)[0]) == 4
    assert len(found(block * 10, max_calls=2)[0]) == 2
    long = block + "x" * 40_000
    assert found(long) == ([], long)


def test_a_call_past_its_tools_argument_limit_is_not_taken_from_text_either() -> None:
    limits = ArgumentLimits(per_tool={"start_gns3_node": ArgumentLimit(max_items=3)})
    names = [f"PC{i}" for i in range(5)]
    text = json.dumps({"name": "start_gns3_node", "arguments": {"node_names": names}})
    assert text_tool_calls(text, OFFERED, limits) == ([], text)
    few = json.dumps({"name": "start_gns3_node", "arguments": {"node_names": names[:3]}})
    assert len(text_tool_calls(few, OFFERED, limits)[0]) == 1
