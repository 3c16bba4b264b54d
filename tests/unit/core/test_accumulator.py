from __future__ import annotations

import itertools
import json

import pytest

from copilot_core._accumulator import ToolCallAccumulator
from copilot_core._guards import ArgumentMeter
from copilot_core.ports import ToolCallDelta
from copilot_core.rules import ArgumentLimit, ArgumentLimits, Coalescing


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


def test_coalesced_events_of_a_long_argument_stream_in_linear_size() -> None:
    raw = json.dumps({"commands": [f"ping 10.0.0.{n % 250} -c 40" for n in range(80)]})
    now = [0.0]
    acc = ToolCallAccumulator(
        coalescing=Coalescing(interval=0.1, growth=0.25), clock=lambda: now[0]
    )
    events = acc.add(ToolCallDelta(0, "a", "run", ""))
    for char in raw:  # a slow model: one character every 20 ms
        now[0] += 0.02
        events += acc.add(ToolCallDelta(0, None, None, char))
    events += acc.finish()
    streamed = sum(len(e.arguments) for e in events)
    assert events[-1].complete and events[-1].arguments == raw
    assert all(b.arguments.startswith(a.arguments) for a, b in itertools.pairwise(events))
    assert streamed < 6 * len(raw)  # every fragment reported: about len(raw)**2 / 2
    assert len(events) < len(raw) // 20


def test_without_coalescing_every_fragment_is_reported() -> None:
    acc = ToolCallAccumulator()
    events = acc.add(ToolCallDelta(0, "a", "run", "{"))
    events += acc.add(ToolCallDelta(0, None, None, "}"))
    assert [e.arguments for e in events] == ["", "{", "{}"]


def test_the_meter_counts_list_items_but_not_commas_inside_strings() -> None:
    meter = ArgumentMeter(ArgumentLimit(max_chars=10_000, max_items=3))
    assert meter.feed('{"a": ["x, y, z, w", "[1,2,3,4]", {"k": [1, 2, 3]}]') is None
    assert meter.feed(', "b": [[1, 2], [3], 4]}') is None
    over = ArgumentMeter(ArgumentLimit(max_items=3))
    assert over.feed('{"c": ["1", "2",') is None
    assert over.feed(' "3", "4"') is not None and "3 items" in str(over.exceeded)


def test_a_call_past_its_limit_stops_the_accumulator_at_that_fragment() -> None:
    acc = ToolCallAccumulator(limits=ArgumentLimits(per_tool={"run": ArgumentLimit(max_chars=10)}))
    acc.add(ToolCallDelta(0, "a", "run", '{"x": '))
    assert acc.stopped is None
    assert acc.add(ToolCallDelta(0, None, None, '"0123456789"}')) == []
    assert (
        acc.stopped is not None and acc.stopped.id == "a" and "10 characters" in acc.stopped.reason
    )


def test_a_new_id_at_the_same_index_starts_the_next_call() -> None:
    # Some servers start every parallel call at index 0, each with its own id.
    acc = ToolCallAccumulator()
    acc.add(ToolCallDelta(0, "one", "show", '{"n": 1}'))
    acc.add(ToolCallDelta(0, "two", "show", '{"n": 2}'))
    acc.add(ToolCallDelta(0, "two", None, ""))  # the same id again: the same call
    acc.finish()
    assert [(c.id, c.arguments) for c in acc.calls()] == [("one", {"n": 1}), ("two", {"n": 2})]


def test_ids_a_turn_used_already_are_not_given_again() -> None:
    acc = ToolCallAccumulator(new_id=lambda: "x", taken={"call_0"})
    acc.add(ToolCallDelta(0, "call_0", "show", "{}"))
    acc.add(ToolCallDelta(1, "call_0", "show", "{}"))
    acc.finish()
    ids = [c.id for c in acc.calls()]
    assert len(set(ids)) == 2 and "call_0" not in ids


def test_a_reply_past_its_call_bound_halts_at_the_first_call_past_it() -> None:
    """Issue 40: a reply of 40 calls is not read to its token limit; the calls within the
    bound are whole and the first one past it is kept (to be answered, not run)."""
    acc = ToolCallAccumulator(max_calls=2)
    for index in range(2):
        acc.add(ToolCallDelta(index, f"c{index}", "show", '{"n": '))
        assert not acc.halted
        acc.add(ToolCallDelta(index, None, None, f"{index}}}"))
        assert not acc.halted
    acc.add(ToolCallDelta(2, "c2", "show", ""))
    assert acc.halted and acc.stopped is None
    acc.finish(None)
    assert [(c.id, c.arguments) for c in acc.calls()] == [
        ("c0", {"n": 0}),
        ("c1", {"n": 1}),
        ("c2", {}),
    ]


def test_interleaved_calls_past_the_bound_halt_once_those_within_it_are_whole() -> None:
    acc = ToolCallAccumulator(max_calls=2)
    for index in range(3):
        acc.add(ToolCallDelta(index, f"c{index}", "show", '{"n"'))
    assert not acc.halted  # calls 1 and 2 are still being written
    acc.add(ToolCallDelta(0, None, None, ": 0}"))
    acc.add(ToolCallDelta(2, None, None, ": 2}"))  # past the bound: it does not matter
    assert not acc.halted
    acc.add(ToolCallDelta(1, None, None, ": {}}"))
    assert acc.halted


def test_without_a_bound_or_within_it_the_accumulator_never_halts() -> None:
    unbounded = ToolCallAccumulator()
    bounded = ToolCallAccumulator(max_calls=40)
    for index in range(40):
        for acc in (unbounded, bounded):
            acc.add(ToolCallDelta(index, f"c{index}", "show", "{}"))
    assert not unbounded.halted and not bounded.halted
