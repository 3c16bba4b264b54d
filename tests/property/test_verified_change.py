"""A verified change as a transaction (``copilot_core.intent.verify_change``), against a
fake clock and a scripted lab whose checks hold or not depending on whether the change is
in place: the rollback runs exactly when a deciding check does not hold within the wait
and ``on_fail`` is ``rollback``; a standing check decides only when it held before; the
checks after a rollback run only after a rollback; the restore point comes before the
change, and a change no restore point could be taken for is not made."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from copilot_core import ToolResult, ToolStatus
from copilot_core.intent import (
    Check,
    CheckProbe,
    CheckStatus,
    Observation,
    VerificationPlan,
    check_label,
    checks_adapter,
    verify_change,
)
from copilot_core.testing import FakeWaitClock

NEVER = 10**6


@dataclass
class Behaviour:
    """How one check answers: whether it holds before the change (and after a rollback),
    and after how many attempts it holds once the change is made (``NEVER``: it does not)."""

    held_before: bool
    holds_after: int


class ScriptedLab:
    """A lab in one of three phases (before, changed, rolled back); each check answers by
    its :class:`Behaviour`. Records what was done, in order."""

    def __init__(
        self,
        clock: FakeWaitClock,
        behaviour: dict[str, Behaviour],
        *,
        change_status: ToolStatus = ToolStatus.SUCCESS,
        refuse_point: bool = False,
    ) -> None:
        self.clock = clock
        self.behaviour = behaviour
        self.change_status = change_status
        self.refuse_point = refuse_point
        self.phase = "before"
        self.attempts_after: dict[str, int] = {}
        self.log: list[str] = []
        self.asked: list[tuple[str, str]] = []

    async def observe(self, checks: Sequence[Check]) -> list[Observation]:
        self.clock.spend(0.5)
        answers = []
        for check in checks:
            name = str(check.name)
            self.asked.append((self.phase, name))
            rule = self.behaviour[name]
            if self.phase == "changed":
                self.attempts_after[name] = self.attempts_after.get(name, 0) + 1
                holds = self.attempts_after[name] >= rule.holds_after
            else:
                holds = rule.held_before
            answers.append(
                Observation.passed({"state": "full"})
                if holds
                else Observation.failed({"state": "down"}, f"{name} does not hold")
            )
        return answers

    async def restore_point(self) -> ToolResult | None:
        self.log.append("restore point")
        if self.refuse_point:
            return ToolResult.error("no restore point could be taken")
        return None

    async def apply(self) -> ToolResult:
        self.log.append("change")
        if self.change_status is ToolStatus.SUCCESS:
            self.phase = "changed"
        return ToolResult({"status": self.change_status.value}, self.change_status)

    async def roll_back(self) -> ToolResult | None:
        self.log.append("rollback")
        self.phase = "rolled back"
        return ToolResult({"status": "success"})

    async def observed(self, rolled_back: bool) -> Mapping[str, Any]:
        self.log.append("observed")
        return {"diff": {"phase": self.phase}}


@dataclass
class Steps:
    """The scripted lab as a tool source's :class:`~copilot_core.intent.ChangeSteps`."""

    lab: ScriptedLab
    plan: VerificationPlan
    interval: float = 2.0

    @property
    def probe(self) -> CheckProbe:
        return self.lab

    async def restore_point(self) -> ToolResult | None:
        return await self.lab.restore_point()

    async def apply(self) -> ToolResult:
        return await self.lab.apply()

    async def roll_back(self) -> ToolResult | None:
        return await self.lab.roll_back()

    async def observed(self, rolled_back: bool) -> Mapping[str, Any]:
        return await self.lab.observed(rolled_back)


def _checks(prefix: str, count: int) -> tuple[Check, ...]:
    return tuple(
        checks_adapter.validate_python(
            [
                {"kind": "interface", "node": "R1", "interface": f"eth{i}", "name": f"{prefix}{i}"}
                for i in range(count)
            ]
        )
    )


behaviours = st.builds(Behaviour, st.booleans(), st.one_of(st.integers(1, 30), st.just(NEVER)))


@settings(max_examples=300, deadline=None)
@given(
    own=st.lists(behaviours, min_size=1, max_size=4),
    standing=st.lists(behaviours, max_size=3),
    on_fail=st.sampled_from(["rollback", "keep"]),
    wait_s=st.integers(0, 40).map(float),
)
def test_the_rollback_runs_exactly_when_a_deciding_check_fails(
    own: list[Behaviour], standing: list[Behaviour], on_fail: str, wait_s: float
) -> None:
    clock = FakeWaitClock()
    behaviour = {f"own{i}": b for i, b in enumerate(own)} | {
        f"standing{i}": b for i, b in enumerate(standing)
    }
    lab = ScriptedLab(clock, behaviour)
    plan = VerificationPlan(
        _checks("own", len(own)),
        _checks("standing", len(standing)),
        "keep" if on_fail == "keep" else "rollback",
        wait_s,
    )
    outcome = asyncio.run(verify_change(Steps(lab, plan), clock))

    deciding = [f"own{i}" for i in range(len(own))] + [
        f"standing{i}" for i, b in enumerate(standing) if b.held_before
    ]
    assert outcome.before.status is not None and len(outcome.before.checks) == len(behaviour)
    assert outcome.after is not None
    assert [str(r.check.name) for r in outcome.after.checks] == deciding
    # a standing check that did not hold before is neither decided on nor waited for
    assert not any(
        phase == "changed" and name.startswith("standing") and not behaviour[name].held_before
        for phase, name in lab.asked
    )
    holds_in_time = {str(r.check.name): r.status is CheckStatus.PASS for r in outcome.after.checks}
    broken = [name for name in deciding if not holds_in_time[name]]
    assert (outcome.status == "fail") == bool(broken)
    assert [f.split(":")[0] for f in outcome.failed] == broken
    expect_rollback = bool(broken) and on_fail == "rollback"
    made = ["restore point", "change"]
    assert lab.log == made + (["rollback"] if expect_rollback else []) + ["observed"]
    assert outcome.observed == {"diff": {"phase": lab.phase}}
    assert outcome.rolled_back is expect_rollback
    if expect_rollback:
        assert outcome.after_rollback is not None
        assert [str(r.check.name) for r in outcome.after_rollback.checks] == deciding
        # after the rollback a check holds exactly when it held before the change
        for result in outcome.after_rollback.checks:
            held = behaviour[str(result.check.name)].held_before
            assert (result.status is CheckStatus.PASS) is held
    else:
        assert outcome.after_rollback is None
        assert not any(phase == "rolled back" for phase, _ in lab.asked)


@settings(max_examples=100, deadline=None)
@given(
    own=st.lists(behaviours, min_size=1, max_size=3),
    status=st.sampled_from([ToolStatus.ABORTED, ToolStatus.REJECTED]),
)
def test_a_change_that_did_not_run_is_not_checked_after(
    own: list[Behaviour], status: ToolStatus
) -> None:
    clock = FakeWaitClock()
    lab = ScriptedLab(clock, {f"own{i}": b for i, b in enumerate(own)}, change_status=status)
    plan = VerificationPlan(_checks("own", len(own)), wait_s=30.0)
    outcome = asyncio.run(verify_change(Steps(lab, plan), clock))
    assert outcome.status == "not_run" and outcome.after is None
    assert lab.log == ["restore point", "change"]
    assert {phase for phase, _ in lab.asked} == {"before"}
    assert outcome.observed == {}  # nothing ran to be seen


def test_a_change_without_its_restore_point_is_not_made() -> None:
    clock = FakeWaitClock()
    lab = ScriptedLab(clock, {"own0": Behaviour(False, 1)}, refuse_point=True)
    outcome = asyncio.run(verify_change(Steps(lab, VerificationPlan(_checks("own", 1))), clock))
    assert lab.log == ["restore point"]  # no change, no checks after it, no rollback
    assert {phase for phase, _ in lab.asked} == {"before"}
    assert outcome.status == "not_run" and outcome.after is None
    result = outcome.to_result()
    assert result.status is ToolStatus.ERROR
    assert result.output["error"] == "no restore point could be taken"  # not a check's


def test_the_card_shows_the_plan_and_a_plan_needs_a_check() -> None:
    plan = VerificationPlan(_checks("own", 2), _checks("standing", 1), "keep", 12.5)
    card = plan.to_dict()
    assert [check["name"] for check in card["checks"]] == ["own0", "own1"]
    assert [check["name"] for check in card["standing"]] == ["standing0"]
    assert card["labels"] == [check_label(check) for check in plan.checks]
    assert (card["on_fail"], card["wait_s"]) == ("keep", 12.5)
    with pytest.raises(ValueError, match="at least one check"):
        VerificationPlan(())
