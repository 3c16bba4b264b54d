from __future__ import annotations

import pytest

from copilot_core._accumulator import ToolCallAccumulator
from copilot_core.ports import ToolCallDelta


def test_a_call_yields_a_first_empty_event_growing_events_and_one_complete_event() -> None:
    acc = ToolCallAccumulator()
    events = acc.add(ToolCallDelta(0, "call_1", "show", '{"a"'))
    events += acc.add(ToolCallDelta(0, None, None, ": 1}"))
    events += acc.finish("tool_calls")
    assert [(e.id, e.name, e.arguments, e.complete) for e in events] == [
        ("call_1", "show", "", False),
        ("call_1", "show", '{"a"', False),
        ("call_1", "show", '{"a": 1}', False),
        ("call_1", "show", '{"a": 1}', True),
    ]
    [call] = acc.calls()
    assert (call.id, call.name, call.arguments, call.error) == ("call_1", "show", {"a": 1}, None)


def test_interleaved_parallel_calls_are_kept_apart_by_index() -> None:
    acc = ToolCallAccumulator()
    acc.add(ToolCallDelta(1, "b", "two", ""))
    acc.add(ToolCallDelta(0, "a", "one", '{"x":'))
    acc.add(ToolCallDelta(1, None, None, '{"y": 2}'))
    acc.add(ToolCallDelta(0, None, None, " 1}"))
    complete = acc.finish("tool_calls")
    assert [(e.id, e.complete) for e in complete] == [("a", True), ("b", True)]
    assert [(c.id, c.arguments) for c in acc.calls()] == [("a", {"x": 1}), ("b", {"y": 2})]


def test_empty_fragments_cause_no_event() -> None:
    acc = ToolCallAccumulator()
    assert len(acc.add(ToolCallDelta(0, "a", "t", ""))) == 1
    assert acc.add(ToolCallDelta(0, None, None, "")) == []


def test_a_finish_with_no_call_yields_nothing() -> None:
    acc = ToolCallAccumulator()
    assert acc.finish("stop") == []
    assert acc.calls() == []
    assert not acc.has_calls


@pytest.mark.parametrize(
    ("raw", "error_part"),
    [('{"a": ', "not valid JSON"), ("[1, 2]", "JSON object, not list"), ('"text"', "not str")],
)
def test_arguments_that_are_not_a_json_object_become_an_error_not_an_exception(
    raw: str, error_part: str
) -> None:
    acc = ToolCallAccumulator()
    acc.add(ToolCallDelta(0, "a", "t", raw))
    acc.finish("tool_calls")
    [call] = acc.calls()
    assert call.arguments is None
    assert call.error is not None and error_part in call.error
    assert call.raw_arguments == raw


def test_no_arguments_at_all_means_an_empty_object() -> None:
    acc = ToolCallAccumulator()
    acc.add(ToolCallDelta(0, "a", "t"))
    acc.finish()
    assert acc.calls()[0].arguments == {}


def test_a_call_without_id_gets_one_and_a_late_name_is_taken() -> None:
    acc = ToolCallAccumulator(new_id=lambda: "generated")
    first = acc.add(ToolCallDelta(0, None, None, "{"))
    acc.add(ToolCallDelta(0, None, "late", "}"))
    acc.finish()
    assert first[0].id == "call_0_generated"
    assert acc.calls()[0].name == "late"


def test_a_call_with_no_name_is_malformed() -> None:
    acc = ToolCallAccumulator()
    acc.add(ToolCallDelta(0, "a", None, "{}"))
    acc.finish()
    assert acc.calls()[0].error == "the tool call has no tool name"


def test_finish_is_idempotent_and_fragments_after_it_are_refused() -> None:
    acc = ToolCallAccumulator()
    acc.add(ToolCallDelta(0, "a", "t", "{}"))
    assert len(acc.finish()) == 1
    assert acc.finish() == []
    with pytest.raises(RuntimeError):
        acc.add(ToolCallDelta(0, None, None, "x"))


def test_calls_before_finish_is_a_programming_error() -> None:
    with pytest.raises(RuntimeError):
        ToolCallAccumulator().calls()
