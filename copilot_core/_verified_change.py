"""A verified change: checks before, the change, checks after, and a rollback when a check
that decides the change fails.

:func:`verify_change` runs one change as a transaction over a :class:`CheckProbe` (which
answers the checks) and the :class:`ChangeSteps` of the tool source (which makes the change
after taking its restore point, and rolls that change back):

1. every check, once (``before``: what held before the change; nothing waits);
2. the change (the restore point first: the tool source's business);
3. the checks that decide the change, retried until they hold or ``wait_s`` runs out
   (``after``). The call's own checks always decide; a check of the user's standing intent
   decides only when it held before (the change must not break what held; one that did not
   hold before is not the change's doing, and is not waited for);
4. when a deciding check is not ``pass`` after the wait (``fail``, or ``error``: the change
   is not verified) and ``on_fail`` is ``rollback``: the rollback, then the deciding checks
   once more, with the same wait (``after_rollback``).

The outcome (:class:`VerifiedChange`) says which checks decided, what each phase saw,
whether the change was rolled back and why. An aborted or rejected change runs no checks
after it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from copilot_core._checks import (
    Check,
    CheckStatus,
    IntentResult,
    check_label,
    checks_adapter,
    dump_check,
)
from copilot_core._tools import ToolResult, ToolStatus
from copilot_core._verification import CheckProbe, WaitClock, verify_checks

__all__ = [
    "ChangeSteps",
    "OnFail",
    "VerificationPlan",
    "VerifiedChange",
    "undid_all",
    "verify_change",
]

OnFail = Literal["rollback", "keep"]


@dataclass(frozen=True, slots=True)
class VerificationPlan:
    """What decides a change: the call's own ``checks``, the user's ``standing`` intent
    (deciding where it held before), what to do when one fails, and how long the checks
    after the change (and after a rollback) may take to hold."""

    checks: tuple[Check, ...]
    standing: tuple[Check, ...] = ()
    on_fail: OnFail = "rollback"
    wait_s: float = 60.0

    def __post_init__(self) -> None:
        if not self.checks:
            raise ValueError("a verified change needs at least one check of its own")

    @property
    def every_check(self) -> tuple[Check, ...]:
        return self.checks + self.standing

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> VerificationPlan:
        """The plan :meth:`to_dict` gave (the one an approval card showed)."""
        return cls(
            tuple(checks_adapter.validate_python(list(data["checks"]))),
            tuple(checks_adapter.validate_python(list(data.get("standing") or ()))),
            "keep" if data.get("on_fail") == "keep" else "rollback",
            float(data.get("wait_s", 60.0)),
        )

    def to_dict(self) -> dict[str, Any]:
        """The plan as the approval card shows it."""
        return {
            "checks": [dump_check(check) for check in self.checks],
            "standing": [dump_check(check) for check in self.standing],
            "labels": [check_label(check) for check in self.checks],
            "standing_labels": [check_label(check) for check in self.standing],
            "on_fail": self.on_fail,
            "wait_s": self.wait_s,
        }


class ChangeSteps(Protocol):
    """The two moves of a verified change, made by the tool source."""

    async def change(self) -> ToolResult:
        """Take the restore point and make the change (its result, as without checks)."""
        ...

    async def roll_back(self) -> ToolResult | None:
        """Undo exactly that change; ``None`` when there is nothing to undo it with (no
        restore point was taken)."""
        ...


@dataclass(frozen=True, slots=True)
class VerifiedChange:
    """What a verified change did: the change's own result, and the checks' story."""

    plan: VerificationPlan
    result: ToolResult
    before: IntentResult
    #: Indices (into ``plan.every_check``) of the checks that decided the change.
    deciding: tuple[int, ...] = ()
    after: IntentResult | None = None
    rollback: ToolResult | None = None
    after_rollback: IntentResult | None = None
    reason: str = ""
    failed: tuple[str, ...] = field(default_factory=tuple)

    @property
    def status(self) -> Literal["pass", "fail", "not_run"]:
        """``pass``: every deciding check held after the change; ``fail``: one did not;
        ``not_run``: the change did not run to the point of being checked."""
        if self.after is None:
            return "not_run"
        return "fail" if self.failed else "pass"

    @property
    def rolled_back(self) -> bool:
        """Whether the rollback undid the whole change (a rollback that left part of it,
        ``partial_success``, did not: the change partly stays)."""
        return self.rollback is not None and undid_all(self.rollback)

    def to_dict(self) -> dict[str, Any]:
        checks = self.plan.every_check
        data: dict[str, Any] = {
            "status": self.status,
            "on_fail": self.plan.on_fail,
            "deciding": [check_label(checks[i]) for i in self.deciding],
            "before": self.before.to_dict(),
            "after": self.after.to_dict() if self.after is not None else None,
            "rolled_back": self.rolled_back,
            "after_rollback": (
                self.after_rollback.to_dict() if self.after_rollback is not None else None
            ),
            "reason": self.reason,
        }
        if self.plan.standing:
            data["standing"] = [check_label(check) for check in self.plan.standing]
        if self.rollback is not None:
            data["rollback"] = self.rollback.output
        return data


def undid_all(rollback: ToolResult) -> bool:
    """Whether a rollback's result says the whole change was undone: a success whose
    output, when it has a ``status``, says ``success`` (not ``partial_success``)."""
    if rollback.status is not ToolStatus.SUCCESS:
        return False
    output = rollback.output
    return not isinstance(output, dict) or output.get("status", "success") == "success"


def _held(result: IntentResult, index: int) -> bool:
    return result.checks[index].status is CheckStatus.PASS


def _not_holding(result: IntentResult) -> tuple[str, ...]:
    return tuple(
        f"{check_label(r.check)}: {r.reason or r.status.value}"
        for r in result.checks
        if r.status is not CheckStatus.PASS
    )


async def verify_change(
    plan: VerificationPlan,
    steps: ChangeSteps,
    probe: CheckProbe,
    clock: WaitClock,
    *,
    interval: float = 2.0,
    progress: Callable[[str], None] | None = None,
) -> VerifiedChange:
    """Run the change as a transaction (see the module docstring)."""

    def say(text: str) -> None:
        if progress is not None:
            progress(text)

    every = plan.every_check
    say(f"checking {len(every)} check(s) before the change\n")
    before = await verify_checks(every, probe, clock, wait_s=0.0, interval=interval)
    result = await steps.change()
    if result.status in (ToolStatus.ABORTED, ToolStatus.REJECTED):
        return VerifiedChange(plan, result, before, reason="the change did not run: no checks")
    own = range(len(plan.checks))
    standing = (len(plan.checks) + n for n in range(len(plan.standing)))
    deciding = (*own, *(i for i in standing if _held(before, i)))
    chosen = [every[i] for i in deciding]
    say(f"checking {len(chosen)} check(s) after the change (up to {plan.wait_s:g} s)\n")
    after = await verify_checks(
        chosen, probe, clock, wait_s=plan.wait_s, interval=interval, progress=progress
    )
    failed = _not_holding(after)
    if not failed:
        return VerifiedChange(plan, result, before, deciding, after, reason="every check held")
    if plan.on_fail == "keep":
        return VerifiedChange(
            plan,
            result,
            before,
            deciding,
            after,
            reason="a check failed and the change was kept (on_fail: keep)",
            failed=failed,
        )
    say("a check failed after the change: rolling it back\n")
    rollback = await steps.roll_back()
    if rollback is None:
        return VerifiedChange(
            plan,
            result,
            before,
            deciding,
            after,
            reason="a check failed, and there is no restore point to roll the change back with",
            failed=failed,
        )
    say(f"checking {len(chosen)} check(s) after the rollback\n")
    again = await verify_checks(
        chosen, probe, clock, wait_s=plan.wait_s, interval=interval, progress=progress
    )
    if rollback.status is not ToolStatus.SUCCESS:
        reason = "a check failed, and rolling the change back failed (see rollback)"
    elif not undid_all(rollback):
        reason = (
            "a check failed: the change was rolled back except what conflicts with what was "
            "done since, which stays (see rollback)"
        )
    elif again.status is CheckStatus.PASS:
        reason = "a check failed: the change was rolled back, and the checks hold again"
    else:
        reason = "a check failed: the change was rolled back, but not every check holds again"
    return VerifiedChange(plan, result, before, deciding, after, rollback, again, reason, failed)
