"""StatsCollector, AbortToken, titles and tool output rendering."""

from __future__ import annotations

import asyncio

import pytest

from copilot_core import AbortToken, TurnStats
from copilot_core._prompts import clean_title, fallback_title
from copilot_core._stats import StatsCollector
from copilot_core.ports import render_tool_output


def test_stats_sum_tokens_over_calls_and_total_is_input_plus_output() -> None:
    stats = StatsCollector()
    stats.messages_added(1)
    stats.llm_call(100, 10)
    stats.llm_call(150, 20)
    stats.messages_added(3)
    snapshot = stats.snapshot()
    assert snapshot == TurnStats(messages=4, llm_calls=2, input_tokens=250, output_tokens=30)
    assert snapshot.total_tokens == 280
    assert snapshot + snapshot == TurnStats(8, 4, 500, 60)


def test_stats_refuse_negative_numbers() -> None:
    stats = StatsCollector()
    with pytest.raises(ValueError, match="remove"):
        stats.messages_added(-1)
    with pytest.raises(ValueError, match="negative"):
        stats.llm_call(-1, 0)


def test_abort_runs_callbacks_once_and_reports_whether_it_changed_anything() -> None:
    token = AbortToken()
    seen: list[str] = []
    remove = token.on_abort(lambda: seen.append("a"))
    token.on_abort(lambda: seen.append("b"))
    unregister = token.on_abort(lambda: seen.append("never"))
    unregister()
    assert token.abort("stop") is True
    assert token.abort("again") is False
    assert seen == ["a", "b"]
    assert token.is_aborted() and token.reason == "stop"
    remove()  # removing after the fact is harmless
    token.on_abort(lambda: seen.append("late"))
    assert seen[-1] == "late"


async def test_abort_wakes_every_waiter() -> None:
    token = AbortToken()
    waiters = [asyncio.create_task(token.wait()) for _ in range(3)]
    await asyncio.sleep(0)
    assert not any(w.done() for w in waiters)
    token.abort()
    await asyncio.wait_for(asyncio.gather(*waiters), 1)
    await asyncio.wait_for(token.wait(), 1)  # already set: returns at once


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ('"OSPF neighbour troubleshooting"\n', "OSPF neighbour troubleshooting"),
        ("Title: VLAN lab", "VLAN lab"),
        ("Line one\nline two", "Line one line two"),
        ("A" * 60, "A" * 40),
        (
            "Configuring a very long title with many many words in it",
            "Configuring a very long title with many",
        ),
    ],
)
def test_clean_title_is_one_short_unquoted_line(raw: str, expected: str) -> None:
    assert clean_title(raw) == expected
    assert len(clean_title(raw)) <= 40


def test_fallback_title_is_the_first_30_characters_of_the_message() -> None:
    assert (
        fallback_title("  Why can't PC1\nping PC2 across the switch?  ")
        == "Why can't PC1 ping PC2 across "
    )
    assert fallback_title("   ") == "New chat"


def test_tool_output_is_pretty_json_keeping_non_ascii_and_strings_pass_through() -> None:
    assert render_tool_output({"名前": "R1"}) == '{\n  "名前": "R1"\n}'
    assert render_tool_output("plain") == "plain"


async def test_abortable_hands_out_nothing_buffered_once_the_token_fired() -> None:
    from collections.abc import AsyncIterator

    from copilot_core._streams import abortable

    async def fast() -> AsyncIterator[int]:
        for i in range(100):
            yield i

    token = AbortToken()
    seen = []
    async for item in abortable(fast(), token, buffer=256):
        seen.append(item)
        if item == 2:
            await asyncio.sleep(0.01)  # the producer fills the buffer meanwhile
            token.abort()
    assert seen == [0, 1, 2]
