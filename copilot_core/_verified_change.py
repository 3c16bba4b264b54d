"""A verified change: checks before, the change, checks after, and a rollback when a check
that decides the change fails.

The gate (:class:`~copilot_core.ToolGate`) runs it for a call whose tool source gives it
:class:`ChangeSteps` (``ToolExecutor.change_steps``): the typed :class:`VerificationPlan`
the approval card showed, the :class:`CheckProbe` that answers the checks, and the source's
moves. :func:`verify_change` runs the change as a transaction over them:

1. every check, once (``before``: what held before the change; nothing waits);
2. the restore point, then the change (a change no restore point could be taken for is
   not made: the refusal is its result, and nothing is checked after it);
3. the checks that decide the change, retried until they hold or ``wait_s`` runs out
   (``after``). The call's own checks always decide; a check of the user's standing intent
   decides only when it held before (the change must not break what held; one that did not
   hold before is not the change's doing, and is not waited for);
4. when a deciding check is not ``pass`` after the wait (``fail``, or ``error``: the change
   is not verified) and ``on_fail`` is ``rollback``: the rollback, then the deciding checks
   once more, with the same wait (``after_rollback``).

Each step is said as it starts (``progress``: the call's ``tool_progress``). The outcome
(:class:`VerifiedChange`) says which checks decided, what each phase saw, whether the
change was rolled back and why, and what the tool source saw change (``observed``); its
:meth:`~VerifiedChange.to_result` is the call's result, made JSON once. An aborted or
rejected change runs no checks after it.

The result says each thing once (:meth:`VerifiedChange.to_dict`): a check that holds by
its name only; a check that does not hold with its verdict and the evidence that decided
it, in the phase where it did not hold; before the change only the names of the checks
that held; after the rollback only the checks that held before and still do not (in
full), and by name those that do not hold, as before the change. Its size grows with the
number of checks, not with their evidence; one still longer than the gate's cap has the
evidence's lines cut first (:meth:`VerifiedChange.to_result` with ``max_chars``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Protocol

from copilot_core._checks import (
    Check,
    CheckStatus,
    IntentResult,
    check_label,
    dump_check,
)
from copilot_core._tools import ToolResult, ToolStatus, render_tool_output
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

    def to_dict(self) -> dict[str, Any]:
        """The plan as the approval card shows it (the wire only: the gate keeps the typed
        plan from the card to the run)."""
        return {
            "checks": [dump_check(check) for check in self.checks],
            "standing": [dump_check(check) for check in self.standing],
            "labels": [check_label(check) for check in self.checks],
            "standing_labels": [check_label(check) for check in self.standing],
            "on_fail": self.on_fail,
            "wait_s": self.wait_s,
        }


class ChangeSteps(Protocol):
    """One verified change as its tool source makes it (``ToolExecutor.change_steps``):
    what decides it, what answers its checks, and the source's moves, in the order
    :func:`verify_change` makes them."""

    @property
    def plan(self) -> VerificationPlan:
        """The checks that decide the change, as the approval card shows them."""
        ...

    @property
    def probe(self) -> CheckProbe:
        """What answers the checks, for this call's caller."""
        ...

    @property
    def interval(self) -> float:
        """Seconds between two rounds of checks that do not hold yet."""
        ...

    async def restore_point(self) -> ToolResult | None:
        """Take the restore point of what the change touches. ``None``: go on (taken, or
        nothing to keep, or none kept here: the change's result says so); a result: no
        restore point could be taken, the change is not made, and this answers the call."""
        ...

    async def apply(self) -> ToolResult:
        """Make the change (its result, as without checks, naming its restore point)."""
        ...

    async def roll_back(self) -> ToolResult | None:
        """Undo exactly that change; ``None`` when there is nothing to undo it with (no
        restore point was taken)."""
        ...

    async def observed(self, rolled_back: bool) -> Mapping[str, Any]:
        """What the source saw change in the lab (``rolled_back``: also after the
        rollback), read once the checks ran: kept with the verification as it is."""
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
    #: What the tool source saw change (``ChangeSteps.observed``).
    observed: Mapping[str, Any] = field(default_factory=dict)

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
        """The checks' story, each thing once (see the module). Each phase has ``status``,
        ``summary`` (the count per status) and ``waited_s``; ``before`` adds ``held`` (the
        names of the checks that held); ``after``, ``passed`` (names) and ``checks`` (each
        deciding check that does not hold, in full, with ``held_before``);
        ``after_rollback``, ``checks`` (in full, those that held before the change and do
        not now) and ``as_before`` (the names of those that do not hold, as before)."""
        checks = self.plan.every_check
        held = [_held(self.before, i) for i in self.deciding]
        data: dict[str, Any] = {
            "status": self.status,
            "on_fail": self.plan.on_fail,
            "deciding": [check_label(checks[i]) for i in self.deciding],
            "before": _before(self.before),
            "after": _after(self.after, held) if self.after is not None else None,
            "rolled_back": self.rolled_back,
            "after_rollback": (
                _after_rollback(self.after_rollback, held)
                if self.after_rollback is not None
                else None
            ),
            "reason": self.reason,
        }
        if self.plan.standing:
            data["standing"] = [check_label(check) for check in self.plan.standing]
        if self.rollback is not None:
            data["rollback"] = self.rollback.output
        data.update(self.observed)
        return data

    def to_result(self, max_chars: int | None = None) -> ToolResult:
        """The call's result: the change's own, carrying ``verification``. A change rolled
        back because a check failed is an error result that says so (the model must not
        report it as done), and one whose check failed and that could not be rolled back
        (or only in part: what conflicts with others' work since stays) is an error
        result with ``status`` ``failed``, never ``success``. ``max_chars`` (the gate's
        cap, as the model reads the result): a longer result has its verification cut
        (:func:`_fitted`), never its verdicts."""
        result = self.result
        output: Any = result.output
        body: dict[str, Any] = dict(output) if isinstance(output, dict) else {"output": output}
        body["verification"] = self.to_dict()
        metadata = {**(result.metadata or {}), "verification": self.status}
        status = result.status
        if self.status == "fail" and self.plan.on_fail == "keep":
            body["warning"] = (
                "The change was made and kept (on_fail: keep), but a check failed: "
                + "; ".join(self.failed)
            )
        elif self.status == "fail":
            body["status"], body["error"] = self._failure()
            status = ToolStatus.ERROR
        if max_chars is not None:
            body = _fitted(body, max_chars)
        return ToolResult(body, status, metadata)

    def _failure(self) -> tuple[str, str]:
        """The status and the error of a change whose deciding check failed."""
        failed = "; ".join(self.failed)
        if self.rolled_back:
            return "rolled_back", f"The change was rolled back: a check failed after it ({failed})."
        # The change stays (whole or in part) though a deciding check failed: never success.
        if self.rollback is None:
            why = "no restore point was taken to roll it back with: the change stays."
            return "failed", f"A check failed after the change ({failed}), and {why}"
        if self.rollback.status is ToolStatus.SUCCESS:  # undone, except the conflicts
            return "failed", (
                f"A check failed after the change ({failed}); it was rolled back except what "
                "conflicts with what was done since, which stays: see verification.rollback."
            )
        return "failed", (
            f"A check failed after the change ({failed}), and rolling it back failed: see "
            "verification.rollback."
        )


def undid_all(rollback: ToolResult) -> bool:
    """Whether a rollback's result says the whole change was undone: a success whose
    output, when it has a ``status``, says ``success`` (not ``partial_success``)."""
    if rollback.status is not ToolStatus.SUCCESS:
        return False
    output = rollback.output
    return not isinstance(output, dict) or output.get("status", "success") == "success"


def _held(result: IntentResult, index: int) -> bool:
    checks = result.checks
    return index < len(checks) and checks[index].status is CheckStatus.PASS


def _phase(result: IntentResult) -> dict[str, Any]:
    """A phase's verdict and its counts per status."""
    counts = {status.value: 0 for status in CheckStatus}
    for check in result.checks:
        counts[check.status.value] += 1
    return {"status": result.status.value, "summary": counts, "waited_s": round(result.waited_s, 2)}


def _before(result: IntentResult) -> dict[str, Any]:
    """Before the change: what held, by name (the rest did not)."""
    phase = _phase(result)
    phase["held"] = [check_label(r.check) for r in result.checks if r.status is CheckStatus.PASS]
    return phase


def _after(result: IntentResult, held: list[bool]) -> dict[str, Any]:
    """After the change: the checks that hold by name, the others in full (``held_before``:
    the change broke what held)."""
    phase = _phase(result)
    phase["passed"] = [check_label(r.check) for r in result.checks if r.status is CheckStatus.PASS]
    phase["checks"] = [
        {**r.to_dict(), "held_before": i < len(held) and held[i]}
        for i, r in enumerate(result.checks)
        if r.status is not CheckStatus.PASS
    ]
    return phase


def _after_rollback(result: IntentResult, held: list[bool]) -> dict[str, Any]:
    """After the rollback: in full, the checks that held before the change and do not now
    (what the rollback did not bring back); by name, those that do not hold, as before."""
    phase = _phase(result)
    failing = [(i, r) for i, r in enumerate(result.checks) if r.status is not CheckStatus.PASS]
    phase["checks"] = [r.to_dict() for i, r in failing if i < len(held) and held[i]]
    phase["as_before"] = [check_label(r.check) for i, r in failing if i >= len(held) or not held[i]]
    return phase


#: Room kept for ``verification.cut``, the sentence that says what a cut result lost.
_NOTE_CHARS = 400


def _fitted(body: dict[str, Any], max_chars: int) -> dict[str, Any]:
    """``body`` as it is when it fits in ``max_chars`` (as the model reads it), else its
    verification cut, each step only when the ones before were not enough: the output
    lines of the failing checks' evidence (a share of the cap per check, halved until it
    fits), their observed values, the rest of each but its verdict (name, kind, status,
    reason, ``held_before``, each evidence's node and command), then the names of the
    checks that held (before, after) or not, as before (after the rollback), their counts
    staying. ``verification.cut`` says what went; whatever is still too long (the tool's
    own output) the gate cuts as it cuts any result."""
    size = len(render_tool_output(body))
    if size <= max_chars:
        return body
    room = max_chars - _NOTE_CHARS  # ``cut`` says what went
    failing = _failing(body)
    share = max(0, room) // (2 * max(1, len(failing)))
    while True:
        cut = [{**check, "evidence": _cut_lines(check["evidence"], share)} for check in failing]
        fitted = _with_checks(body, cut)
        if len(render_tool_output(fitted)) <= room or share == 0:
            break
        share //= 2
    said = ["the output lines of the evidence"] if cut != failing else []
    for step, what in _CUTS:
        if len(render_tool_output(fitted)) <= room:
            break
        fitted = step(fitted)
        said.append(what)
    fitted["verification"]["cut"] = (
        f"The result was {size} characters long; a tool's result may be {max_chars}, so "
        f"{', '.join(said)} were cut (every verdict and count stays)."
    )
    return fitted


def _without_observed(body: dict[str, Any]) -> dict[str, Any]:
    return _with_checks(body, [{**check, "observed": None} for check in _failing(body)])


_VERDICT = ("name", "kind", "status", "reason", "held_before")


def _verdicts_only(body: dict[str, Any]) -> dict[str, Any]:
    return _with_checks(
        body,
        [
            {
                **{key: check[key] for key in _VERDICT if key in check},
                "evidence": [
                    {"node": e["node"], "command": e["command"]} for e in check["evidence"]
                ],
            }
            for check in _failing(body)
        ],
    )


def _without_names(body: dict[str, Any]) -> dict[str, Any]:
    verification = dict(body["verification"])
    for phase, names in (("before", "held"), ("after", "passed"), ("after_rollback", "as_before")):
        said = verification.get(phase)
        if said is not None:
            verification[phase] = {key: value for key, value in said.items() if key != names}
    return {**body, "verification": verification}


#: The steps of a cut after the evidence's lines, in order, and what each takes away.
_CUTS: tuple[tuple[Callable[[dict[str, Any]], dict[str, Any]], str], ...] = (
    (_without_observed, "the observed values"),
    (_verdicts_only, "each failing check's definition, attempts and waits"),
    (_without_names, "the names of the checks that held (before, after) or not, as before"),
)


def _failing(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The failing checks listed in full: after the change, then after the rollback."""
    verification = body["verification"]
    return [
        check
        for key in ("after", "after_rollback")
        if verification.get(key) is not None
        for check in verification[key]["checks"]
    ]


def _with_checks(body: dict[str, Any], checks: list[dict[str, Any]]) -> dict[str, Any]:
    """``body`` with its failing checks (after, then after the rollback) replaced, in order."""
    verification = dict(body["verification"])
    left = iter(checks)
    for key in ("after", "after_rollback"):
        phase = verification.get(key)
        if phase is not None:
            verification[key] = {**phase, "checks": [next(left) for _ in phase["checks"]]}
    return {**body, "verification": verification}


def _cut_lines(evidence: list[dict[str, Any]], share: int) -> list[dict[str, Any]]:
    """A check's evidence with at most about ``share`` characters of output lines."""
    kept: list[dict[str, Any]] = []
    left = share
    for item in evidence:
        lines: list[str] = []
        for line in item["lines"]:
            if len(line) > left:
                break
            lines.append(line)
            left -= len(line)
        kept.append({**item, "lines": lines})
    return kept


def _not_holding(result: IntentResult) -> tuple[str, ...]:
    return tuple(
        f"{check_label(r.check)}: {r.reason or r.status.value}"
        for r in result.checks
        if r.status is not CheckStatus.PASS
    )


async def verify_change(
    steps: ChangeSteps,
    clock: WaitClock,
    *,
    progress: Callable[[str], None] | None = None,
) -> VerifiedChange:
    """Run the change as a transaction (see the module docstring)."""
    outcome = await _transaction(steps, clock, progress or (lambda text: None))
    if outcome.after is None:  # the change did not run: nothing to see
        return outcome
    return replace(outcome, observed=await steps.observed(outcome.rollback is not None))


async def _transaction(
    steps: ChangeSteps, clock: WaitClock, say: Callable[[str], None]
) -> VerifiedChange:
    plan, probe, interval = steps.plan, steps.probe, steps.interval
    every = plan.every_check
    say(f"checking {len(every)} check(s) before the change\n")
    before = await verify_checks(every, probe, clock, wait_s=0.0, interval=interval)
    say("taking a restore point, then making the change\n")
    refused = await steps.restore_point()
    if refused is not None:
        why = "no restore point could be taken, so the change was not made: no checks"
        return VerifiedChange(plan, refused, before, reason=why)
    result = await steps.apply()
    if result.status in (ToolStatus.ABORTED, ToolStatus.REJECTED):
        return VerifiedChange(plan, result, before, reason="the change did not run: no checks")
    own = range(len(plan.checks))
    standing = (len(plan.checks) + n for n in range(len(plan.standing)))
    deciding = (*own, *(i for i in standing if _held(before, i)))
    chosen = [every[i] for i in deciding]
    say(f"checking {len(chosen)} check(s) after the change (up to {plan.wait_s:g} s)\n")
    after = await verify_checks(
        chosen, probe, clock, wait_s=plan.wait_s, interval=interval, progress=say
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
        chosen, probe, clock, wait_s=plan.wait_s, interval=interval, progress=say
    )
    return VerifiedChange(
        plan,
        result,
        before,
        deciding,
        after,
        rollback,
        again,
        _rolled_back(rollback, again),
        failed,
    )


def _rolled_back(rollback: ToolResult, again: IntentResult) -> str:
    """Why the change ended as it did, once it was rolled back (or tried to be)."""
    if rollback.status is not ToolStatus.SUCCESS:
        return "a check failed, and rolling the change back failed (see rollback)"
    if not undid_all(rollback):
        return (
            "a check failed: the change was rolled back except what conflicts with what was "
            "done since, which stays (see rollback)"
        )
    if again.status is CheckStatus.PASS:
        return "a check failed: the change was rolled back, and the checks hold again"
    return "a check failed: the change was rolled back, but not every check holds again"
