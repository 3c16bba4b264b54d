"""A standing intent's run goes through the lab's typed probes, not a tool called by name,
and is bounded as a tool call is: the gate's time limit stops it (answered, each check an
``error`` saying so, nothing kept), the gate's result cap cuts its evidence (verdicts
kept, the message saying so), and the operator's probe limits refuse a run before
anything is sent. The answer is a typed :class:`StandingRun`."""

from __future__ import annotations

import asyncio
import json

import pytest

from copilot_core import ToolGate
from copilot_core.errors import InvalidRequestError
from copilot_core.intent import (
    Check,
    CheckStatus,
    Evidence,
    Observation,
    ProbeLimits,
    StandingIntent,
    StandingRun,
)
from copilot_core.ports import ToolContext
from copilot_core.rules import CallBounds
from copilot_core.testing import (
    FakeCheckProbes,
    FakeToolExecutor,
    FakeWaitClock,
    InMemoryCheckpointStore,
    SteppingClock,
)

pytestmark = pytest.mark.timeout(30)

PROJECT, USER, TOKEN = "p-1", "u-alice", "token-alice"
CHECKS = [
    {"kind": "reachability", "from": "PC1", "to": "10.0.2.10", "name": "PC1-PC2"},
    {"kind": "ospf_neighbor", "node": "R1", "neighbor": "R2", "name": "R1-R2"},
]


async def standing(
    probes: FakeCheckProbes, bounds: CallBounds | None = None
) -> tuple[StandingIntent, InMemoryCheckpointStore]:
    store = InMemoryCheckpointStore()
    intent = StandingIntent(
        store, probes, SteppingClock(), bounds=bounds, wait_clock=FakeWaitClock()
    )
    await intent.put(PROJECT, USER, CHECKS)
    return intent, store


def test_a_standing_intent_is_bounded_as_the_gate_bounds_a_tool_call_by_default() -> None:
    gate = ToolGate(FakeToolExecutor())
    intent = StandingIntent(InMemoryCheckpointStore(), FakeCheckProbes(), SteppingClock())
    assert intent.bounds == gate.bounds == CallBounds(gate.timeout, gate.max_result_chars)


async def test_the_run_is_a_typed_verdict_of_the_labs_probes_kept_as_its_json() -> None:
    probes = FakeCheckProbes()
    intent, store = await standing(probes)
    run = await intent.run(PROJECT, USER, TOKEN)
    assert isinstance(run, StandingRun) and not run.running
    assert run.result is not None and run.result.status is CheckStatus.PASS
    assert [r.check.name for r in run.result.checks] == ["PC1-PC2", "R1-R2"]
    (context,) = probes.contexts
    assert (context.project_id, context.user_id, context.credentials) == (PROJECT, USER, TOKEN)
    assert context.background
    record = await store.standing_intent(PROJECT, USER)
    assert record is not None and record.last_run is not None
    assert record.last_run.result == run.to_dict() == run.result.to_dict()


async def test_a_run_is_stopped_at_the_gates_time_limit_answered_and_not_kept() -> None:
    never = asyncio.Event()
    seen: list[ToolContext] = []

    async def hangs(check: Check, context: ToolContext) -> Observation:
        seen.append(context)
        await never.wait()
        raise AssertionError("never answered")

    gate = ToolGate(FakeToolExecutor(), timeout=0.2)  # the round (30 s) is far longer
    intent, store = await standing(FakeCheckProbes(hangs), gate.bounds)
    run = await intent.run(PROJECT, USER, TOKEN, wait_s=5)
    assert not run.running and run.result is not None
    assert run.result.status is CheckStatus.ERROR
    assert [r.status for r in run.result.checks] == [CheckStatus.ERROR] * 2
    assert all("stopped after 0.2 s" in (r.reason or "") for r in run.result.checks)
    assert run.message is not None and "nothing was kept" in run.message
    assert seen and seen[0].abort.is_aborted()  # the probe is told to stop
    record = await store.standing_intent(PROJECT, USER)
    assert record is not None and record.last_run is None
    assert not intent.running(PROJECT, USER)  # another run may start
    await intent.aclose()


async def test_a_result_longer_than_the_gates_cap_has_its_evidence_cut_not_its_verdicts() -> None:
    lines = tuple(f"64 bytes from 10.0.2.10: icmp_seq={n} ttl=63 time=0.{n} ms" for n in range(200))

    def wordy(check: Check, context: ToolContext) -> Observation:
        evidence = Evidence(str(getattr(check, "node", "PC1")), "ping -c 3 10.0.2.10", lines)
        if check.kind == "ospf_neighbor":
            return Observation.failed({"state": "init"}, "R2 is init", evidence)
        return Observation.passed({"replies": 3}, evidence)

    cap = 4000
    intent, store = await standing(FakeCheckProbes(wordy), CallBounds(max_result_chars=cap))
    run = await intent.run(PROJECT, USER, TOKEN)
    assert run.result is not None
    assert [r.status for r in run.result.checks] == [CheckStatus.PASS, CheckStatus.FAIL]
    assert run.result.checks[1].reason == "R2 is init"
    body = run.to_dict()
    # measured as the gate measures a tool's result: its JSON as the model reads it
    assert len(json.dumps(run.result.to_dict(), ensure_ascii=False, indent=2)) <= cap
    for check in body["checks"]:
        (evidence,) = check["evidence"]
        assert evidence["command"] == "ping -c 3 10.0.2.10"
        assert 0 < len(evidence["lines"]) < len(lines)
        assert evidence["lines"] == list(lines[: len(evidence["lines"])])  # the first ones
    assert run.message is not None and f"may be {cap}" in run.message
    record = await store.standing_intent(PROJECT, USER)
    assert record is not None and record.last_run is not None
    assert record.last_run.result == body  # kept as answered


async def test_a_result_within_the_cap_is_whole_and_says_nothing() -> None:
    intent, _ = await standing(FakeCheckProbes(), CallBounds(max_result_chars=100_000))
    run = await intent.run(PROJECT, USER, TOKEN)
    assert run.message is None and "message" not in run.to_dict()


@pytest.mark.parametrize(
    ("limits", "wait_s", "says"),
    [
        (ProbeLimits(max_checks=1, max_wait_s=300, interval=2), 0.0, "At most 1 checks"),
        (ProbeLimits(max_checks=32, max_wait_s=10, interval=2), 11.0, "wait_s is at most 10"),
    ],
)
async def test_the_operators_limits_refuse_a_run_before_anything_is_sent(
    limits: ProbeLimits, wait_s: float, says: str
) -> None:
    probes = FakeCheckProbes(limits=limits)
    intent, _ = await standing(probes)
    with pytest.raises(InvalidRequestError, match=says):
        await intent.run(PROJECT, USER, TOKEN, wait_s=wait_s)
    assert not probes.contexts and not probes.rounds
    assert not intent.running(PROJECT, USER)


async def test_the_rounds_wait_the_probes_interval_for_wait_s() -> None:
    calls: list[int] = []

    def holds_at_the_third_round(check: Check, context: ToolContext) -> Observation:
        calls.append(1)
        if len(calls) < 3:
            return Observation.failed(None, "not yet")
        return Observation.passed(None)

    probes = FakeCheckProbes(
        holds_at_the_third_round, limits=ProbeLimits(max_checks=32, max_wait_s=300, interval=4)
    )
    store = InMemoryCheckpointStore()
    clock = FakeWaitClock()
    intent = StandingIntent(store, probes, SteppingClock(), wait_clock=clock)
    await intent.put(PROJECT, USER, CHECKS[:1])
    run = await intent.run(PROJECT, USER, TOKEN, wait_s=60)
    assert run.status == "pass"
    assert clock.sleeps == [4, 4]  # the operator's interval between rounds
