"""A troubleshooting drill for a student, as a use case of the core.

:class:`Drills` hands a student's lab over with one fault of the catalog in it, and back:

1. :meth:`~Drills.start` applies the operator's policy (the user must be allowed teaching
   turns), refuses a project that has a drill running
   (:class:`~copilot_core.errors.DrillActiveError`), picks the fault (by id, or at random
   among a topic's and a difficulty's), checks that the lab fits it
   (:class:`~copilot_core.errors.LabDoesNotFitError` says what is missing), reserves the
   project in the :class:`~copilot_core._drill_store.DrillResults` store (so that two
   starts cannot both inject, and a restart still knows), takes a checkpoint of the lab
   and keeps it with the drill, injects the fault (:meth:`DrillLab.apply`) and watches its
   symptoms fail within the fault's ``settle_s``. When a step fails or a symptom does not
   fail, it restores the lab and raises
   :class:`~copilot_core.errors.DrillNotStartedError` saying why.
2. :meth:`~Drills.hint` reveals the next hint, counted.
3. :meth:`~Drills.grade` runs the fixed-checks (retried until they hold, up to the fault's
   ``settle_s``) and judges the constraints on the lab-state diff
   (:meth:`DrillLab.judge`): a :class:`~copilot_core._drill_score.Grade`, per condition
   with evidence, with partial credit, the time taken and the hints used.
4. :meth:`~Drills.end` (or giving up) restores the lab, reports whether exactly
   (:class:`RestoreReport`), keeps the result in the user's history and, only now,
   reveals the answer (:class:`DrillAnswer`).

What the student sees before the end is a :class:`DrillView` (the topic, the difficulty,
the lab, the symptoms in words, the hints revealed): never the fault's id, title, inject
lines or ground truth. Errors raised before the end say why without them (a step's
failure has the fault's own lines blanked out). The drill is a use case, not a model tool
call: nothing of it enters a session's history.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from copilot_core._abort import AbortToken
from copilot_core._checks import CheckStatus, check_label
from copilot_core._drill_ports import DrillLab, RestoreReport
from copilot_core._drill_score import Grade, grade_fix
from copilot_core._drill_store import ActiveDrill, DrillOutcome, DrillResults
from copilot_core._limits import UNLIMITED, UserLimits
from copilot_core._session import CopilotMode
from copilot_core._tools import ToolContext
from copilot_core._verification import CheckProbes, MonotonicClock, WaitClock, verify_checks
from copilot_core.errors import (
    CopilotError,
    DrillActiveError,
    DrillNotFoundError,
    DrillNotStartedError,
    DrillStepError,
    InvalidRequestError,
    LabDoesNotFitError,
    StoreError,
)
from copilot_core.faults import Fault, GroundTruth, Step, Topic
from copilot_core.ports import Clock, IdFactory

__all__ = [
    "DRILL_MODE",
    "HIDDEN",
    "DrillAnswer",
    "DrillCaller",
    "DrillChoice",
    "DrillEnding",
    "DrillView",
    "Drills",
]

log = logging.getLogger(__name__)

#: The copilot mode a drill needs the user to be allowed (a drill is a teaching turn).
DRILL_MODE = CopilotMode.TEACHING_ASSISTANT
#: What replaces a fault's own line in a message shown before the drill ends.
HIDDEN = "(a line of the fault)"


@dataclass(frozen=True, slots=True)
class DrillCaller:
    """Who asks: the project, the user, their GNS3 credentials (never shown by ``repr``)
    and their limits under the operator's policy (checked at the start, the one check)."""

    project_id: str
    user_id: str
    credentials: str | None = field(default=None, repr=False)
    limits: UserLimits = UNLIMITED


@dataclass(frozen=True, slots=True)
class DrillChoice:
    """Which fault: ``fault_id`` (an instructor's pick), else one at random among those of
    ``topic`` and ``difficulty`` (each: any when ``None``) that the lab fits."""

    fault_id: str | None = None
    topic: Topic | None = None
    difficulty: int | None = None


@dataclass(frozen=True, slots=True)
class DrillView:
    """What the student sees of a running drill: never the answer."""

    id: str
    project_id: str
    topic: Topic
    difficulty: int
    #: The lab the drill runs on, in words (the fault's lab shape's summary).
    lab: str
    #: What is wrong, as the student would notice it (the symptoms' names).
    symptoms: tuple[str, ...]
    #: The hints revealed so far, in order.
    hints: tuple[str, ...]
    hints_left: int
    handed_at: datetime | None
    #: The last grade's score (``None``: not graded yet).
    score: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "project_id": self.project_id,
            "topic": self.topic.value,
            "difficulty": self.difficulty,
            "lab": self.lab,
            "symptoms": list(self.symptoms),
            "hints": list(self.hints),
            "hints_used": len(self.hints),
            "hints_left": self.hints_left,
            "handed_at": self.handed_at.isoformat() if self.handed_at else None,
            "score": self.score,
        }


@dataclass(frozen=True, slots=True)
class DrillAnswer:
    """The answer, revealed when the drill ends: the fault, what broke it, the fix."""

    fault_id: str
    title: str
    ground_truth: GroundTruth
    inject: tuple[Step, ...]
    fix: tuple[Step, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "fault_id": self.fault_id,
            "title": self.title,
            "ground_truth": self.ground_truth.model_dump(mode="json", exclude_none=True),
            "inject": [s.model_dump(mode="json") for s in self.inject],
            "fix": [s.model_dump(mode="json") for s in self.fix],
        }


@dataclass(frozen=True, slots=True)
class DrillEnding:
    """A drill ended: what the student saw, the answer, the restore, the kept result."""

    view: DrillView
    answer: DrillAnswer
    restore: RestoreReport
    outcome: DrillOutcome


class Drills:
    """Troubleshooting drills on students' labs (see the module).

    ``faults`` is the catalog (healthy cases are left out: they break nothing). ``clock``
    stamps the drills; ``wait_clock`` paces the symptoms' and fixed-checks' rounds;
    ``rng`` picks a fault at random.
    """

    def __init__(
        self,
        faults: Sequence[Fault],
        lab: DrillLab,
        probes: CheckProbes,
        results: DrillResults,
        *,
        clock: Clock,
        ids: IdFactory,
        wait_clock: WaitClock | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self._faults = {f.id: f for f in faults if not f.healthy}
        self._lab = lab
        self._probes = probes
        self.results = results
        self._clock = clock
        self._ids = ids
        self._wait_clock = wait_clock or MonotonicClock()
        self._rng = rng or random.Random()

    # ================================================================= reading
    def faults(self, topic: Topic | None = None, difficulty: int | None = None) -> list[Fault]:
        """The faults a drill can hand over, of ``topic`` and ``difficulty`` (any: ``None``)."""
        return [
            f
            for f in self._faults.values()
            if (topic is None or f.topic is topic)
            and (difficulty is None or f.difficulty == difficulty)
        ]

    async def current(self, caller: DrillCaller) -> DrillView | None:
        """The project's running drill as its student sees it (``None``: none, or not
        the caller's)."""
        drill = await self.results.active(caller.project_id)
        if drill is None or drill.user_id != caller.user_id or drill.handed_at is None:
            return None
        return self._view(drill, self._fault(drill))

    # ================================================================= starting
    async def start(self, caller: DrillCaller, choice: DrillChoice | None = None) -> DrillView:
        """Hand the caller's lab over with a fault in it (see the module).

        Raises PermissionDeniedError (the operator's policy), DrillActiveError (the
        project has a drill), InvalidRequestError (no such fault, none of the topic and
        difficulty), LabDoesNotFitError, DrillNotStartedError (the lab was restored).
        """
        caller.limits.require_mode(DRILL_MODE, "A troubleshooting drill")  # the one check
        if await self.results.active(caller.project_id) is not None:
            raise DrillActiveError(caller.project_id)
        drill_id = self._ids.new_id()
        context = self._context(caller, drill_id)
        fault = await self._pick(choice or DrillChoice(), context)
        drill = ActiveDrill(
            drill_id, caller.project_id, caller.user_id, fault.id, self._clock.now()
        )
        await self.results.begin(drill)
        try:
            checkpoint = await self._lab.checkpoint(fault.lab, context)
        except BaseException:
            await self.results.finish(caller.project_id, drill_id, None)
            raise
        drill = replace(drill, checkpoint=checkpoint)
        await self.results.update(drill)
        log.info("drill %s: injecting %s in project %s", drill_id, fault.id, caller.project_id)
        why = await self._inject(fault, context)
        if why is not None:
            report = await self._restore(drill, fault, context)
            await self.results.finish(caller.project_id, drill_id, None)
            left = tuple(_hide(line, fault) for line in report.differences)
            raise DrillNotStartedError(why, restored=report.exact, differences=left)
        drill = replace(drill, handed_at=self._clock.now())
        await self.results.update(drill)
        return self._view(drill, fault)

    async def _pick(self, choice: DrillChoice, context: ToolContext) -> Fault:
        if choice.fault_id is not None:
            fault = self._faults.get(choice.fault_id)
            if fault is None:
                raise InvalidRequestError(f"There is no drill {choice.fault_id!r} in the catalog.")
            candidates = [fault]
        else:
            candidates = self.faults(choice.topic, choice.difficulty)
            if not candidates:
                what = " and ".join(
                    part
                    for part in (
                        f"topic {choice.topic.value!r}" if choice.topic else "",
                        f"difficulty {choice.difficulty}" if choice.difficulty else "",
                    )
                    if part
                )
                raise InvalidRequestError(f"The catalog has no drill of {what or 'any kind'}.")
        fitting: list[Fault] = []
        missing: tuple[str, ...] | None = None
        fits: dict[str, tuple[str, ...]] = {}  # by lab shape, asked once each
        for fault in candidates:
            key = fault.lab.model_dump_json()
            if key not in fits:
                fits[key] = (await self._lab.fit(fault.lab, context)).missing
            if not fits[key]:
                fitting.append(fault)
            elif missing is None or len(fits[key]) < len(missing):
                missing = fits[key]
        if not fitting:
            assert missing is not None
            raise LabDoesNotFitError(missing)
        return self._rng.choice(fitting)

    async def _inject(self, fault: Fault, context: ToolContext) -> str | None:
        """Inject ``fault`` and wait for its symptoms to fail: ``None`` when they all did,
        else why not (with the fault's own lines blanked out)."""
        try:
            await self._lab.apply(fault.inject, fault.lab, context)
        except DrillStepError as exc:
            return _hide(f"step {exc.step + 1} of the fault could not be sent: {exc.reason}", fault)
        except CopilotError as exc:
            return _hide(f"the fault could not be sent: {exc.message}", fault)
        except Exception as exc:  # a lab that fails otherwise is still put back
            log.exception("drill: the lab failed while the fault was sent")
            return f"the lab failed while the fault was sent ({type(exc).__name__})"
        try:
            return await self._symptoms_show(fault, context)
        except CopilotError as exc:
            return _hide(f"the symptoms could not be observed: {exc.message}", fault)
        except Exception as exc:
            log.exception("drill: the symptoms could not be observed")
            return f"the symptoms could not be observed ({type(exc).__name__})"

    async def _symptoms_show(self, fault: Fault, context: ToolContext) -> str | None:
        """Observe the symptoms until each fails (``None``), or ``settle_s`` passes, or one
        cannot be observed (why not)."""
        probe = self._probes.probe(context)
        clock = self._wait_clock
        deadline = clock.monotonic() + fault.settle_s
        pending = list(fault.symptoms)
        while True:
            observed = await probe.observe(pending)
            still = []
            for check, seen in zip(pending, observed, strict=True):
                if seen.status is CheckStatus.FAIL:
                    continue
                if seen.final and seen.status is CheckStatus.ERROR:
                    return _hide(
                        f"the symptom {check_label(check)!r} could not be observed ({seen.reason})",
                        fault,
                    )
                still.append(check)
            pending = still
            if not pending:
                return None
            remaining = deadline - clock.monotonic()
            if remaining <= 0:
                names = ", ".join(repr(check_label(c)) for c in pending)
                return (
                    f"the fault did not show: {names} still held {fault.settle_s:.0f} s "
                    "after it was injected"
                )
            await clock.sleep(min(self._probes.limits.interval, remaining))

    # ================================================================= during
    async def hint(self, caller: DrillCaller, drill_id: str) -> DrillView:
        """Reveal the next hint (counted): the view, the new hint last. InvalidRequestError
        when every hint is revealed."""
        drill = await self._mine(caller, drill_id)
        fault = self._fault(drill)
        if drill.hints_used >= len(fault.hints):
            raise InvalidRequestError("Every hint of this drill has been given already.")
        drill = replace(drill, hints_used=drill.hints_used + 1)
        await self.results.update(drill)
        return self._view(drill, fault)

    async def grade(
        self, caller: DrillCaller, drill_id: str, *, wait_s: float | None = None
    ) -> Grade:
        """Grade the lab as it is now: each fixed-check (retried until it holds, for
        ``wait_s`` seconds: by default the fault's ``settle_s``) and each constraint."""
        drill = await self._mine(caller, drill_id)
        fault = self._fault(drill)
        assert drill.checkpoint is not None  # handed over: checkpointed
        context = self._context(caller, drill.id)
        checks = await verify_checks(
            fault.fixed_checks,
            self._probes.probe(context),
            self._wait_clock,
            wait_s=fault.settle_s if wait_s is None else max(0.0, wait_s),
            interval=self._probes.limits.interval,
        )
        judged = await self._lab.judge(drill.checkpoint, fault.constraints, fault.lab, context)
        grade = grade_fix(
            checks.checks, judged, time_s=self._elapsed(drill), hints_used=drill.hints_used
        )
        grade = replace(
            grade,
            conditions=tuple(
                replace(c, evidence=_hide(c.evidence, fault)) for c in grade.conditions
            ),
        )
        await self.results.update(replace(drill, grades=drill.grades + 1, score=grade.score))
        return grade

    # ================================================================= ending
    async def end(
        self, caller: DrillCaller, drill_id: str, *, give_up: bool = False
    ) -> DrillEnding:
        """Restore the lab, keep the result, reveal the answer. A restore that fails (an
        error, not a difference) leaves the drill running, to end again."""
        drill = await self._mine(caller, drill_id, handed=False)
        fault = self._fault(drill)
        context = self._context(caller, drill.id)
        report = await self._restore(drill, fault, context)
        now = self._clock.now()
        outcome = DrillOutcome(
            drill_id=drill.id,
            user_id=drill.user_id,
            project_id=drill.project_id,
            fault_id=fault.id,
            topic=fault.topic.value,
            difficulty=fault.difficulty,
            score=drill.score,
            started_at=drill.started_at,
            ended_at=now,
            time_s=self._elapsed(drill),
            hints_used=drill.hints_used,
            given_up=give_up,
            restored=report.exact,
        )
        await self.results.finish(drill.project_id, drill.id, outcome)
        if not report.exact:
            log.warning("drill %s: the restore left differences: %s", drill.id, report.differences)
        answer = DrillAnswer(fault.id, fault.title, fault.ground_truth, fault.inject, fault.fix)
        return DrillEnding(self._view(drill, fault), answer, report, outcome)

    async def history(self, user_id: str, limit: int = 50) -> list[DrillOutcome]:
        return await self.results.history(user_id, limit)

    async def best_scores(self, user_id: str) -> dict[str, float]:
        return await self.results.best_scores(user_id)

    # ================================================================= parts
    async def _restore(
        self, drill: ActiveDrill, fault: Fault, context: ToolContext
    ) -> RestoreReport:
        if drill.checkpoint is None:  # set up no further than the reservation
            return RestoreReport(exact=True)
        return await self._lab.restore(drill.checkpoint, fault.lab, context)

    async def _mine(
        self, caller: DrillCaller, drill_id: str, *, handed: bool = True
    ) -> ActiveDrill:
        drill = await self.results.active(caller.project_id)
        if (
            drill is None
            or drill.id != drill_id
            or drill.user_id != caller.user_id
            or (handed and drill.handed_at is None)
        ):
            raise DrillNotFoundError(drill_id)
        return drill

    def _fault(self, drill: ActiveDrill) -> Fault:
        fault = self._faults.get(drill.fault_id)
        if fault is None:  # the catalog changed under a running drill
            raise StoreError(
                f"The drill {drill.id!r} runs a fault the catalog no longer has; "
                "restore the lab by hand."
            )
        return fault

    def _elapsed(self, drill: ActiveDrill) -> float:
        since = drill.handed_at or drill.started_at
        return max(0.0, (self._clock.now() - since).total_seconds())

    def _context(self, caller: DrillCaller, drill_id: str) -> ToolContext:
        return ToolContext(
            project_id=caller.project_id,
            user_id=caller.user_id,
            session_id=f"drill-{drill_id}",
            mode=DRILL_MODE,
            abort=AbortToken(),
            credentials=caller.credentials,
            limits=caller.limits,
        )

    def _view(self, drill: ActiveDrill, fault: Fault) -> DrillView:
        return DrillView(
            id=drill.id,
            project_id=drill.project_id,
            topic=fault.topic,
            difficulty=fault.difficulty,
            lab=fault.lab.summary,
            symptoms=tuple(check_label(c) for c in fault.symptoms),
            hints=fault.hints[: drill.hints_used],
            hints_left=len(fault.hints) - drill.hints_used,
            handed_at=drill.handed_at,
            score=drill.score,
        )


def _hide(text: str, fault: Fault) -> str:
    """``text`` with the fault's own device lines (and its id, title, fault type and
    ground-truth resource) blanked out: a message shown before the drill ends must not give
    the answer away."""
    secrets = {fault.id, fault.title, fault.ground_truth.fault_type.value}
    if fault.ground_truth.resource:
        secrets.add(fault.ground_truth.resource)
    for step in fault.inject:
        secrets.update(getattr(step, "lines", ()))
    for secret in sorted(secrets, key=len, reverse=True):
        if len(secret) >= 4:
            text = text.replace(secret, HIDDEN)
    return text
