"""Counters never decrease, total = input + output, a session's counters are the sum of
its turns, and message_count equals the history's length — whatever the turns do."""

from __future__ import annotations

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from copilot_core import TurnStats
from copilot_core._stats import StatsCollector
from copilot_core.errors import LLMUnavailableError
from copilot_core.ports import TextDelta
from copilot_core.testing import text_reply, tool_reply

from .turn_world import TurnWorld

usages = st.tuples(st.integers(0, 5000), st.integers(0, 2000))


class StatsMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.world = TurnWorld()
        self.world.tools.add("read", lambda args, ctx: {"ok": True})
        self.expected = TurnStats()
        self.previous = TurnStats()

    def teardown(self) -> None:
        self.world.close()

    def play(
        self, replies: list[list[object]], calls: int, usage: tuple[int, int], added: int
    ) -> None:
        first = self.world.session_id is None
        self.world.model.add(*replies)  # type: ignore[arg-type]
        if first:
            self.world.model.add(text_reply("Title", usage=(9999, 9999)))  # never counted
        turn = self.world.run(self.world.service.start_turn(self.world.request("question")))
        self.world.session_id = turn.session_id
        result = self.world.run(turn.wait())
        self.world.model.clear()  # an unused title reply must not answer the next turn
        assert result.stats == TurnStats(added, calls, *usage)
        self.expected = self.expected + result.stats

    @rule(usage=usages)
    def text_turn(self, usage: tuple[int, int]) -> None:
        self.play([text_reply("answer", usage=usage)], 1, usage, 2)

    @rule(first=usages, second=usages, tools=st.integers(1, 3))
    def tool_turn(self, first: tuple[int, int], second: tuple[int, int], tools: int) -> None:
        calls = [("read", {"n": i}) for i in range(tools)]
        replies = [tool_reply(*calls, usage=first), text_reply("done", usage=second)]
        total = (first[0] + second[0], first[1] + second[1])
        self.play(replies, 2, total, 1 + (1 + tools) + 1)

    @rule()
    def failing_turn(self) -> None:
        self.play([[TextDelta("half"), LLMUnavailableError("gone")]], 1, (0, 0), 2)

    @invariant()
    def counters_are_the_sum_of_the_turns_and_match_the_history(self) -> None:
        if self.world.session_id is None:
            return
        session = self.world.assert_consistent()
        now = TurnStats(
            session.message_count,
            session.llm_calls_count,
            session.input_tokens,
            session.output_tokens,
        )
        assert now == self.expected
        assert all(
            getattr(now, f) >= getattr(self.previous, f)
            for f in ("messages", "llm_calls", "input_tokens", "output_tokens")
        )
        self.previous = now


StatsMachine.TestCase.settings = settings(max_examples=40, stateful_step_count=8)
TestStats = StatsMachine.TestCase


def test_the_collector_alone_matches_a_plain_sum() -> None:
    collector = StatsCollector()
    collector.messages_added(3)
    collector.llm_call(5, 6)
    assert collector.snapshot().total_tokens == 11
