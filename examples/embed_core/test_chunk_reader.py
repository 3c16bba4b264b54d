"""chunk_reader's own property test: what the program promises, for any stream.

Run: ``python -m pytest examples/embed_core/test_chunk_reader.py`` (hypothesis). For any
set of tool calls, their argument text cut into any fragments, the fragments of several
calls interleaved in any order (but each call's own in order), with text and usage
anywhere: every call ends with exactly one ``complete`` event holding its whole argument
text, the arguments a client saw only ever grew, the calls come back parsed in index
order (broken JSON as an error, never an exception), and a turn's statistics are the sums
of its calls' usage.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

from chunk_reader import read_reply, read_turn
from hypothesis import given, settings
from hypothesis import strategies as st

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=6,
)
ARGUMENTS = st.one_of(
    st.dictionaries(st.text(max_size=6), JSON_VALUES, max_size=4).map(json.dumps),
    st.sampled_from(['{"host": "10.0.0.1"', "[1, 2]", "not json", '{"a": }']),  # broken
)


def _pieces(draw: st.DrawFn, text: str) -> list[str]:
    """``text`` cut at any places (possibly into one piece, possibly with empty ones)."""
    cuts = sorted(draw(st.lists(st.integers(0, len(text)), max_size=6)))
    bounds = [0, *cuts, len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds)]


@st.composite
def streams(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[tuple[str, str, str]]]:
    """An OpenAI-style chunk stream of some tool calls, and the calls it carries."""
    count = draw(st.integers(0, 4))
    calls = [
        (f"call-{index}", draw(st.sampled_from(["tcp_ping", "dns_lookup", "trace"])))
        for index in range(count)
    ]
    arguments = [draw(ARGUMENTS) for _ in calls]
    queues: list[list[dict[str, Any]]] = []
    for index, ((call_id, name), text) in enumerate(zip(calls, arguments, strict=True)):
        pieces = _pieces(draw, text)
        first = {"index": index, "id": call_id, "function": {"name": name, "arguments": ""}}
        queues.append([first, *({"index": index, "function": {"arguments": p}} for p in pieces)])
    chunks: list[dict[str, Any]] = []
    while any(queues):
        queue = draw(st.sampled_from([q for q in queues if q]))
        fragment = queue.pop(0)
        delta: dict[str, Any] = {"tool_calls": [fragment]}
        if draw(st.booleans()):
            delta["content"] = draw(st.text(max_size=4))
        chunks.append({"choices": [{"index": 0, "delta": delta}]})
    usage = draw(st.tuples(st.integers(0, 10_000), st.integers(0, 10_000)))
    chunks.append(
        {"choices": [], "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1]}}
    )
    expected = [(i, n, text) for (i, n), text in zip(calls, arguments, strict=True)]
    return chunks, expected


@settings(max_examples=100, deadline=None)
@given(streams())
def test_every_call_ends_once_complete_with_its_whole_arguments(
    stream: tuple[list[dict[str, Any]], list[tuple[str, str, str]]],
) -> None:
    chunks, expected = stream
    reply = read_reply(chunks)

    complete = [event for event in reply.events if event.complete]
    assert [(e.id, e.name, e.arguments) for e in complete] == expected
    assert reply.events[-len(complete) :] == complete if complete else reply.events == []
    seen: dict[str, str] = {}
    for event in reply.events:
        assert event.arguments.startswith(seen.get(event.id, ""))  # it only grows
        seen[event.id] = event.arguments


@settings(max_examples=100, deadline=None)
@given(streams())
def test_calls_come_back_parsed_in_index_order_broken_json_as_an_error(
    stream: tuple[list[dict[str, Any]], list[tuple[str, str, str]]],
) -> None:
    chunks, expected = stream
    calls = read_reply(chunks).calls

    assert [(c.id, c.name, c.raw_arguments) for c in calls] == expected
    for call, (_, _, text) in zip(calls, expected, strict=True):
        try:
            wanted = json.loads(text)
        except json.JSONDecodeError:
            wanted = None
        if isinstance(wanted, dict):
            assert call.is_valid
            assert call.arguments == wanted
        else:
            assert not call.is_valid
            assert call.error


@settings(max_examples=100, deadline=None)
@given(st.lists(streams(), max_size=5), st.integers(0, 20))
def test_a_turns_statistics_are_the_sums_of_its_calls(
    responses: list[tuple[list[dict[str, Any]], list[tuple[str, str, str]]]], messages: int
) -> None:
    stats = read_turn((chunks for chunks, _ in responses), messages)

    usages = [chunks[-1]["usage"] for chunks, _ in responses]
    assert stats.messages == messages
    assert stats.llm_calls == len(responses)
    assert stats.input_tokens == sum(u["prompt_tokens"] for u in usages)
    assert stats.output_tokens == sum(u["completion_tokens"] for u in usages)
    assert stats.total_tokens == stats.input_tokens + stats.output_tokens
