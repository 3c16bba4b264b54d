"""Waiting until checks hold (``copilot_core.intent.verify_checks``) against a fake clock
and a scripted device: a check that holds after N attempts passes at its N-th attempt when
N attempts fit in the wait; one that never holds fails at the bound, never later."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from copilot_core.intent import (
    Check,
    CheckStatus,
    Observation,
    checks_adapter,
    verify_checks,
)
from copilot_core.testing import FakeWaitClock

NEVER = 10**6


class ScriptedDevice:
    """Answers each check ``fail`` until its ``holds_after``-th attempt, then ``pass``;
    every round takes ``cost`` seconds of the clock's time."""

    def __init__(self, clock: FakeWaitClock, holds_after: dict[str, int], cost: float) -> None:
        self.clock = clock
        self.holds_after = holds_after
        self.cost = cost
        self.asked: dict[str, int] = {}
        self.round_starts: list[float] = []

    async def observe(self, checks: Sequence[Check]) -> list[Observation]:
        self.round_starts.append(self.clock.monotonic())
        self.clock.spend(self.cost)
        answers = []
        for check in checks:
            name = str(check.name)
            self.asked[name] = self.asked.get(name, 0) + 1
            if self.holds_after[name] == 0:  # this platform cannot answer it
                answers.append(Observation.error(f"{name} cannot be answered"))
            elif self.asked[name] >= self.holds_after[name]:
                answers.append(Observation.passed({"state": "full"}))
            else:
                answers.append(Observation.failed({"state": "init"}, "not full yet"))
        return answers


def checks(count: int) -> list[Check]:
    return checks_adapter.validate_python(
        [
            {"kind": "ospf_neighbor", "node": "R1", "neighbor": f"10.0.0.{i}", "name": f"c{i}"}
            for i in range(count)
        ]
    )


def fits(attempts: int, wait_s: float, interval: float, cost: float) -> bool:
    """Whether the ``attempts``-th attempt starts: the one before it ended before the bound
    (each round takes ``cost``, then a pause of ``interval``)."""
    return attempts == 1 or (attempts - 1) * cost + (attempts - 2) * interval < wait_s


quarters = st.integers(min_value=0, max_value=400).map(lambda n: n / 4)


@settings(max_examples=300, deadline=None)
@given(
    holds=st.lists(
        st.one_of(st.integers(1, 40), st.just(NEVER), st.just(0)), min_size=1, max_size=5
    ),
    wait_s=quarters,
    interval=st.integers(1, 40).map(lambda n: n / 4),
    cost=st.integers(0, 20).map(lambda n: n / 4),
)
def test_a_check_passes_at_its_nth_attempt_or_fails_at_the_bound(
    holds: list[int], wait_s: float, interval: float, cost: float
) -> None:
    clock = FakeWaitClock()
    start = clock.now
    listed = checks(len(holds))
    device = ScriptedDevice(clock, {f"c{i}": n for i, n in enumerate(holds)}, cost)

    result = asyncio.run(verify_checks(listed, device, clock, wait_s=wait_s, interval=interval))

    deadline = start + wait_s
    assert all(t <= deadline for t in device.round_starts)  # no round starts after the bound
    assert clock.now <= deadline + cost  # the last round ends at most one round later
    for index, (n, verdict) in enumerate(zip(holds, result.checks, strict=True)):
        asked = device.asked[f"c{index}"]
        assert verdict.attempts == asked
        assert verdict.waited_s <= wait_s + cost
        if n == 0:
            assert (verdict.status, verdict.attempts) == (CheckStatus.ERROR, 1)
        elif n != NEVER and fits(n, wait_s, interval, cost):
            assert (verdict.status, verdict.attempts) == (CheckStatus.PASS, n)
            assert verdict.observed == {"state": "full"}
        else:
            assert verdict.status is CheckStatus.FAIL
            assert verdict.observed == {"state": "init"}
            assert verdict.waited_s >= wait_s  # it waited the whole bound
            assert not fits(asked + 1, wait_s, interval, cost)  # and no attempt was left out
    expected = (
        CheckStatus.FAIL
        if CheckStatus.FAIL in {c.status for c in result.checks}
        else CheckStatus.ERROR
        if 0 in holds
        else CheckStatus.PASS
    )
    assert result.status is expected


def test_a_transient_error_is_retried_until_the_bound_and_stays_an_error() -> None:
    clock = FakeWaitClock()

    class Booting:
        calls = 0

        async def observe(self, checks: Sequence[Check]) -> list[Observation]:
            Booting.calls += 1
            return [Observation.error("R1 is starting", transient=True)] * len(checks)

    result = asyncio.run(verify_checks(checks(1), Booting(), clock, wait_s=10, interval=2))
    verdict = result.checks[0]
    assert (verdict.status, verdict.attempts, verdict.waited_s) == (CheckStatus.ERROR, 6, 10)
    assert clock.sleeps == [2, 2, 2, 2, 2]


def test_progress_names_the_checks_still_open_while_it_waits() -> None:
    clock = FakeWaitClock()
    device = ScriptedDevice(clock, {"c0": 1, "c1": 3}, 0)
    said: list[str] = []
    result = asyncio.run(
        verify_checks(checks(2), device, clock, wait_s=30, interval=5, progress=said.append)
    )
    assert result.status is CheckStatus.PASS
    assert len(said) == 2
    assert all("1 of 2 check(s) not holding yet (c1)" in text for text in said)
    assert [c.waited_s for c in result.checks] == [0, 10]
