"""The drill use case (copilot_core.drills.Drills, issue 38) with a lab in memory: the lab
must fit, one drill per project, a fault that does not take is taken back, hints are
counted, a fix is graded per condition, the end restores and only then gives the answer."""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass, field
from typing import Any

import pytest

from adapters.gns3 import load_fault_catalog
from copilot_core.drills import (
    DrillCaller,
    DrillChoice,
    Drills,
    InMemoryDrillResults,
)
from copilot_core.errors import (
    ConflictError,
    DrillActiveError,
    DrillNotFoundError,
    DrillNotStartedError,
    InvalidRequestError,
    LabDoesNotFitError,
    PermissionDeniedError,
)
from copilot_core.faults import DeviceLines, Fault, Topic
from copilot_core.intent import Check, Observation
from copilot_core.policy import UserLimits
from copilot_core.testing import (
    FakeCheckProbes,
    FakeDrillLab,
    FakeWaitClock,
    SequentialIds,
    SteppingClock,
)

CATALOG = tuple(load_fault_catalog())
HELLO = next(f for f in CATALOG if f.id == "ospf-hello-mismatch")
ALICE = DrillCaller("p1", "alice", credentials="token")
BOB = DrillCaller("p1", "bob", credentials="token-b")


@dataclass
class World:
    """A drill over a lab in memory whose checks hold exactly when the lab is as it was
    healthy (unless ``working`` says otherwise: a student's fix the lab cannot tell)."""

    faults: tuple[Fault, ...] = CATALOG
    lab: FakeDrillLab = field(default_factory=lambda: FakeDrillLab.for_shape(HELLO.lab))
    results: InMemoryDrillResults = field(default_factory=InMemoryDrillResults)
    wait: FakeWaitClock = field(default_factory=FakeWaitClock)
    working: bool | None = None
    symptoms_hold: bool = False
    healthy: dict[str, Any] = field(init=False)
    probes: FakeCheckProbes = field(init=False)
    drills: Drills = field(init=False)

    def __post_init__(self) -> None:
        self.healthy = self.lab.state()
        self.probes = FakeCheckProbes(self.answer)
        self.drills = Drills(
            self.faults,
            self.lab,
            self.probes,
            self.results,
            clock=SteppingClock(),
            ids=SequentialIds("drill"),
            wait_clock=self.wait,
            rng=random.Random(7),
        )

    def answer(self, check: Check, context: Any) -> Observation:
        ok = self.lab.state() == self.healthy if self.working is None else self.working
        if self.symptoms_hold:
            ok = True
        return Observation.passed("ok") if ok else Observation.failed("no", "it does not hold")


def lines_of(fault: Fault) -> list[str]:
    return [line for s in fault.inject if isinstance(s, DeviceLines) for line in s.lines]


async def test_a_drill_starts_with_the_fault_in_and_shows_only_the_symptoms() -> None:
    world = World()
    view = await world.drills.start(ALICE, DrillChoice(fault_id=HELLO.id))
    assert view.topic is Topic.OSPF and view.difficulty == HELLO.difficulty
    assert view.symptoms == ("R1 and R2 are OSPF Full", "PC1 reaches PC2")
    assert view.hints == () and view.hints_left == len(HELLO.hints)
    assert world.lab.applied == list(HELLO.inject)
    assert world.lab.method_calls() == ["fit", "checkpoint", "apply"]
    kept = await world.results.active("p1")
    assert kept is not None and kept.fault_id == HELLO.id and kept.checkpoint is not None
    assert kept.checkpoint.state == world.healthy and kept.handed_at is not None
    assert await world.drills.current(ALICE) == view
    assert await world.drills.current(BOB) is None
    assert all(c.session_id == f"drill-{view.id}" for c in world.probes.contexts)


async def test_a_lab_that_does_not_fit_is_refused_saying_what_is_missing() -> None:
    world = World()
    world.lab.missing = ("R2 is stopped",)
    with pytest.raises(LabDoesNotFitError, match="R2 is stopped") as raised:
        await world.drills.start(ALICE, DrillChoice(fault_id=HELLO.id))
    assert isinstance(raised.value, ConflictError)
    assert raised.value.missing == ("R2 is stopped",)
    assert world.lab.method_calls() == ["fit"] and await world.results.active("p1") is None


async def test_a_random_pick_takes_only_faults_whose_lab_fits() -> None:
    world = World()  # the lab has R1, R2, PC1, PC2: every pair shape fits it by name
    world.lab.nodes.pop("PC2")
    with pytest.raises(LabDoesNotFitError, match="no node named PC2"):
        await world.drills.start(ALICE, DrillChoice(topic=Topic.OSPF))
    fits = [c for c in world.lab.method_calls() if c == "fit"]
    assert len(fits) == 1  # the OSPF faults share one lab shape: asked once


async def test_an_unknown_fault_or_an_empty_choice_is_an_invalid_request() -> None:
    world = World()
    with pytest.raises(InvalidRequestError, match="no-such-fault"):
        await world.drills.start(ALICE, DrillChoice(fault_id="no-such-fault"))
    with pytest.raises(InvalidRequestError, match="healthy"):
        await world.drills.start(ALICE, DrillChoice(topic=Topic.HEALTHY))
    assert world.lab.calls == []


async def test_a_second_drill_on_the_project_is_refused_and_touches_nothing() -> None:
    world = World()
    await world.drills.start(ALICE, DrillChoice(fault_id=HELLO.id))
    before = world.lab.state()
    with pytest.raises(DrillActiveError, match="already has a drill running"):
        await world.drills.start(BOB, DrillChoice(topic=Topic.OSPF))
    assert world.lab.state() == before and world.lab.method_calls().count("apply") == 1


async def test_two_starts_at_once_inject_one_fault() -> None:
    world = World()
    done = await asyncio.gather(
        world.drills.start(ALICE, DrillChoice(fault_id=HELLO.id)),
        world.drills.start(BOB, DrillChoice(fault_id=HELLO.id)),
        return_exceptions=True,
    )
    assert sorted(type(d).__name__ for d in done) == ["DrillActiveError", "DrillView"]
    assert world.lab.method_calls().count("apply") == 1


async def test_a_step_that_fails_restores_the_lab_and_says_why_without_the_answer() -> None:
    world = World()
    world.lab.fail_step = 0
    secret = lines_of(HELLO)[-1]
    world.lab.fail_reason = f"the console refused {secret!r}"
    with pytest.raises(DrillNotStartedError, match="step 1 of the fault") as raised:
        await world.drills.start(ALICE, DrillChoice(fault_id=HELLO.id))
    assert raised.value.restored and "restored as it was" in raised.value.message
    assert secret not in raised.value.message and HELLO.id not in raised.value.message
    assert world.lab.method_calls()[-1] == "restore" and world.lab.state() == world.healthy
    assert await world.results.active("p1") is None
    assert await world.results.history("alice") == []


async def test_a_symptom_that_does_not_fail_within_settle_restores_the_lab() -> None:
    world = World(symptoms_hold=True)
    with pytest.raises(DrillNotStartedError, match="still held 60 s") as raised:
        await world.drills.start(ALICE, DrillChoice(fault_id=HELLO.id))
    assert "'R1 and R2 are OSPF Full'" in raised.value.message
    assert sum(world.wait.sleeps) == HELLO.settle_s  # it waited the whole bound, no more
    assert world.lab.state() == world.healthy and await world.results.active("p1") is None


async def test_a_symptom_that_cannot_be_observed_restores_the_lab() -> None:
    world = World()
    world.probes.answer = lambda check, context: Observation.error("no console")
    with pytest.raises(DrillNotStartedError, match="could not be observed"):
        await world.drills.start(ALICE, DrillChoice(fault_id=HELLO.id))
    assert world.lab.state() == world.healthy and world.wait.sleeps == []


async def test_a_restore_that_is_not_exact_is_said_when_the_drill_cannot_start() -> None:
    world = World(symptoms_hold=True)
    secret = lines_of(HELLO)[-1]
    world.lab.restore_leaves = (f"R2 config + {secret}",)
    with pytest.raises(DrillNotStartedError, match="still differs") as raised:
        await world.drills.start(ALICE, DrillChoice(fault_id=HELLO.id))
    assert not raised.value.restored
    assert raised.value.differences == ("R2 config + (a line of the fault)",)
    assert secret not in raised.value.message


async def test_a_symptom_that_fails_late_is_waited_for() -> None:
    world = World()
    rounds = 0

    def slowly(check: Check, context: Any) -> Observation:
        nonlocal rounds
        rounds += 1
        return Observation.passed("ok") if rounds <= 4 else Observation.failed("no", "down")

    world.probes.answer = slowly
    await world.drills.start(ALICE, DrillChoice(fault_id=HELLO.id))
    assert len(world.probes.rounds) == 3 and world.wait.sleeps == [2.0, 2.0]


async def test_hints_are_given_in_order_and_counted_until_none_is_left() -> None:
    world = World()
    view = await world.drills.start(ALICE, DrillChoice(fault_id=HELLO.id))
    for n in range(1, len(HELLO.hints) + 1):
        view = await world.drills.hint(ALICE, view.id)
        assert view.hints == HELLO.hints[:n] and view.hints_left == len(HELLO.hints) - n
    with pytest.raises(InvalidRequestError, match="Every hint"):
        await world.drills.hint(ALICE, view.id)
    kept = await world.results.active("p1")
    assert kept is not None and kept.hints_used == len(HELLO.hints)


async def test_another_user_cannot_hint_grade_or_end_the_drill() -> None:
    world = World()
    view = await world.drills.start(ALICE, DrillChoice(fault_id=HELLO.id))
    with pytest.raises(DrillNotFoundError):
        await world.drills.hint(BOB, view.id)
    with pytest.raises(DrillNotFoundError):
        await world.drills.grade(BOB, view.id)
    with pytest.raises(DrillNotFoundError):
        await world.drills.end(BOB, view.id)
    with pytest.raises(DrillNotFoundError):
        await world.drills.hint(ALICE, "drill-99")


async def test_a_fix_left_undone_grades_zero_on_the_checks() -> None:
    world = World()
    view = await world.drills.start(ALICE, DrillChoice(fault_id=HELLO.id))
    grade = await world.drills.grade(ALICE, view.id, wait_s=0)
    checks = [c for c in grade.conditions if c.kind == "check"]
    assert [c.met for c in checks] == [False, False] and not grade.fixed
    assert all(c.evidence == "it does not hold" for c in checks)


async def test_a_fix_that_routes_around_the_fault_gets_partial_credit_with_evidence() -> None:
    world = World()
    view = await world.drills.start(ALICE, DrillChoice(fault_id=HELLO.id))
    world.lab.nodes = world.healthy["nodes"] | {"R1": ["ip route 10.0.2.0/24 10.0.12.2"]}
    world.working = True  # PC1 reaches PC2 through the static route
    await world.drills.hint(ALICE, view.id)
    grade = await world.drills.grade(ALICE, view.id)
    met = {c.name: c.met for c in grade.conditions}
    assert met == {
        "R1 and R2 are OSPF Full": True,
        "PC1 reaches PC2": True,
        "no static route added on R1": False,
        "no static route added on R2": True,
        "R2's addresses unchanged": True,
    }
    assert grade.score == pytest.approx(4 / 5) and grade.hints_used == 1 and grade.time_s > 0
    bad = next(c for c in grade.conditions if not c.met)
    assert bad.evidence == "R1 gained ip route 10.0.2.0/24 10.0.12.2"


async def test_the_right_fix_grades_full_and_the_best_score_is_kept() -> None:
    world = World()
    view = await world.drills.start(ALICE, DrillChoice(fault_id=HELLO.id))
    world.lab.nodes = world.healthy["nodes"]  # the student undid exactly the fault
    grade = await world.drills.grade(ALICE, view.id)
    assert grade.fixed and grade.score == 1.0 and grade.hints_used == 0
    ending = await world.drills.end(ALICE, view.id)
    assert ending.outcome.score == 1.0 and not ending.outcome.given_up
    assert await world.drills.best_scores("alice") == {HELLO.id: 1.0}


async def test_ending_restores_the_lab_keeps_the_result_and_only_now_gives_the_answer() -> None:
    world = World()
    view = await world.drills.start(ALICE, DrillChoice(fault_id=HELLO.id))
    await world.drills.hint(ALICE, view.id)
    ending = await world.drills.end(ALICE, view.id, give_up=True)
    assert world.lab.state() == world.healthy and ending.restore.exact
    assert ending.answer.fault_id == HELLO.id and ending.answer.ground_truth == HELLO.ground_truth
    assert ending.answer.to_json()["inject"][0]["lines"] == lines_of(HELLO)
    outcome = ending.outcome
    assert (outcome.fault_id, outcome.topic, outcome.hints_used) == (HELLO.id, "ospf", 1)
    assert outcome.given_up and outcome.restored and outcome.score is None
    assert await world.drills.history("alice") == [outcome]
    assert await world.drills.best_scores("alice") == {}  # never graded
    assert await world.results.active("p1") is None
    await world.drills.start(ALICE, DrillChoice(fault_id=HELLO.id))  # the project is free


async def test_a_restore_that_leaves_differences_says_so_and_the_result_says_it() -> None:
    world = World()
    view = await world.drills.start(ALICE, DrillChoice(fault_id=HELLO.id))
    world.lab.restore_leaves = ("R2: + ip ospf hello-interval 5",)
    ending = await world.drills.end(ALICE, view.id)
    assert not ending.restore.exact and ending.restore.differences == world.lab.restore_leaves
    assert not ending.outcome.restored


async def test_a_restore_that_fails_leaves_the_drill_running_to_end_again() -> None:
    world = World()
    view = await world.drills.start(ALICE, DrillChoice(fault_id=HELLO.id))

    async def broken(*args: Any) -> Any:
        raise ConflictError("GNS3 is busy")

    world.lab.restore = broken  # type: ignore[method-assign]
    with pytest.raises(ConflictError, match="busy"):
        await world.drills.end(ALICE, view.id)
    assert await world.results.active("p1") is not None


async def test_the_operator_policy_is_applied_before_anything() -> None:
    world = World()

    class Nothing(UserLimits):
        def require_mode(self, mode: Any, what: str = "This") -> None:
            raise PermissionDeniedError(f"{what} is not allowed")

    caller = DrillCaller("p1", "alice", limits=Nothing())
    with pytest.raises(PermissionDeniedError, match="A troubleshooting drill"):
        await world.drills.start(caller, DrillChoice(fault_id=HELLO.id))
    assert world.lab.calls == []


async def test_a_drill_set_up_no_further_than_its_reservation_ends_without_a_restore() -> None:
    world = World()

    async def lost(*args: Any) -> Any:
        raise asyncio.CancelledError

    world.lab.checkpoint = lost  # type: ignore[method-assign]
    with pytest.raises(asyncio.CancelledError):
        await world.drills.start(ALICE, DrillChoice(fault_id=HELLO.id))
    assert await world.results.active("p1") is None  # the reservation was dropped


async def test_probes_that_fail_while_the_symptoms_are_watched_restore_the_lab() -> None:
    world = World()

    def unreachable(check: Check, context: Any) -> Observation:
        raise PermissionDeniedError("the console is not yours")

    world.probes.answer = unreachable
    with pytest.raises(DrillNotStartedError, match="console is not yours"):
        await world.drills.start(ALICE, DrillChoice(fault_id=HELLO.id))
    assert world.lab.state() == world.healthy and await world.results.active("p1") is None
