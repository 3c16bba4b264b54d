"""Standing intent: the checks a user wants to hold in a lab, kept per project and user,
and run on demand through the lab's :class:`~copilot_core.intent.CheckProbes`.

:class:`StandingIntent` reads and replaces a user's checks (validated as
:data:`~copilot_core.intent.checks_adapter` validates them: a bad check is an
:class:`~copilot_core.errors.InvalidRequestError` naming it, and nothing is stored) and
runs them with :func:`~copilot_core.intent.verify_checks` on the probe the lab gives for
the caller (their project and credentials, as background work: a person's console
commands go first), answering a typed :class:`StandingRun`. The run's JSON (the shape of
``verify_intent``'s answer) is kept as the checks' last run, with when it ended:
replacing the checks by others forgets it (it describes the checks it ran), and a run
whose checks were replaced while it ran is answered but not kept.

A run carries the caller's :class:`~copilot_core._limits.UserLimits` (the operator's
policy) into the probe's context like every core request; it only reads, in teaching
mode, the least any policy allows, so no limit refuses it.

Runs are bounded, because each one holds device consoles that chat turns need too:

* by the operator's :class:`~copilot_core.intent.ProbeLimits`: more checks than
  ``max_checks``, or a ``wait_s`` beyond ``max_wait_s``, is an
  :class:`~copilot_core.errors.InvalidRequestError` (nothing is sent);
* one run per user and project at a time (in this process): another is a
  :class:`~copilot_core.errors.ConflictError` that says a run is under way;
* the answer comes within ``wait_s + round_s`` seconds, whatever the run waits for
  (a console another run holds included): a run that has not ended by then is answered
  running (with the checks and the last progress it reported) and goes on in the
  background, its result kept as the checks' last run when it ends;
* like every tool call, by the gate's :class:`~copilot_core.rules.CallBounds`: a run is
  stopped after ``timeout`` seconds (each check then an ``error`` saying so; nothing
  kept), and a result longer than ``max_result_chars`` (as JSON) has its evidence cut,
  its ``message`` saying so.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from pydantic import ValidationError

from copilot_core._abort import AbortToken
from copilot_core._checks import (
    Check,
    CheckResult,
    CheckStatus,
    Evidence,
    IntentResult,
    check_label,
    checks_adapter,
    dump_check,
)
from copilot_core._limits import UNLIMITED, UserLimits
from copilot_core._session import CopilotMode
from copilot_core._toolgate import CallBounds
from copilot_core._tools import ToolContext, ToolProgress, render_tool_output
from copilot_core._verification import CheckProbes, MonotonicClock, WaitClock, verify_checks
from copilot_core.errors import ConflictError, InvalidRequestError
from copilot_core.ports import Clock, IntentRun, IntentStore, StandingIntentRecord

__all__ = ["MAX_STANDING_CHECKS", "RUNNING", "StandingIntent", "StandingRun"]

log = logging.getLogger(__name__)

#: The most checks one user keeps in one project.
MAX_STANDING_CHECKS = 32
#: The ``status`` of a run that had not ended when its answer was due.
RUNNING = "running"
#: Seconds a run may take beyond its ``wait_s`` before it is answered as still running
#: (one round of checks: the console reads and pings, the wait for a console included).
ROUND_S = 30.0


@dataclass(frozen=True, slots=True)
class StandingRun:
    """A run of a user's standing intent as answered: the checks it ran; their verdict
    (``result``) when the run ended before its answer was due, ``None`` while it goes on
    (:attr:`running`); the seconds waited for it; and a ``message`` for the person (why
    it is still running, what was cut, why it was stopped)."""

    checks: tuple[Check, ...]
    result: IntentResult | None
    waited_s: float
    message: str | None = None

    @property
    def running(self) -> bool:
        """Whether the run had not ended when it was answered (it goes on)."""
        return self.result is None

    @property
    def status(self) -> str:
        """``pass``, ``fail`` or ``error`` (the verdict's), or :data:`RUNNING`."""
        return RUNNING if self.result is None else self.result.status.value

    def to_dict(self) -> dict[str, Any]:
        """Its JSON, in the shape of ``verify_intent``'s answer: what is kept as the
        checks' last run and what the web answers (a running run: each check
        ``running``, the summary all zero)."""
        if self.result is not None:
            body = self.result.to_dict()
        else:
            body = {
                "status": RUNNING,
                "summary": {status.value: 0 for status in CheckStatus},
                "waited_s": round(self.waited_s, 2),
                "checks": [
                    {
                        "name": check_label(check),
                        "kind": check.kind,
                        "check": dump_check(check),
                        "status": RUNNING,
                    }
                    for check in self.checks
                ],
            }
        if self.message:
            body["message"] = self.message
        return body


def _validated(raw: Sequence[Any]) -> list[Check]:
    if len(raw) > MAX_STANDING_CHECKS:
        raise InvalidRequestError(f"At most {MAX_STANDING_CHECKS} checks.")
    try:
        return checks_adapter.validate_python(list(raw))
    except ValidationError as exc:
        problems = "; ".join(
            f"checks.{'.'.join(str(p) for p in error['loc'])}: {error['msg']}"
            for error in exc.errors(include_url=False, include_input=False)
        )
        raise InvalidRequestError(f"Invalid checks: {problems}. Nothing was stored.") from None


class StandingIntent:
    """A user's standing intent per project: get, replace, run (bounded: see the module).

    ``probes``: the lab's checks per caller (the tool source's own, which
    ``verify_intent`` uses too); ``bounds``: the gate's time limit and result cap, the
    same values it applies to a tool call (``ToolGate.bounds``); ``wait_clock``: what
    retries wait on."""

    def __init__(
        self,
        store: IntentStore,
        probes: CheckProbes,
        clock: Clock,
        *,
        bounds: CallBounds | None = None,
        round_s: float = ROUND_S,
        wait_clock: WaitClock | None = None,
    ) -> None:
        self.store = store
        self.probes = probes
        self.clock = clock
        self.bounds = bounds or CallBounds()
        self.round_s = round_s
        self.wait_clock = wait_clock or MonotonicClock()
        self._running: set[tuple[str, str]] = set()
        self._background: set[asyncio.Task[StandingRun]] = set()

    async def get(self, project_id: str, user_id: str) -> StandingIntentRecord | None:
        return await self.store.standing_intent(project_id, user_id)

    async def put(
        self, project_id: str, user_id: str, checks: Sequence[Any]
    ) -> StandingIntentRecord:
        """Replace the user's checks; their last run stays only when they are the same."""
        stored = [dump_check(check) for check in _validated(checks)]
        before = await self.store.standing_intent(project_id, user_id)
        kept = before.last_run if before is not None and before.checks == stored else None
        record = StandingIntentRecord(stored, self.clock.now(), kept)
        await self.store.save_standing_intent(project_id, user_id, record)
        return record

    def running(self, project_id: str, user_id: str) -> bool:
        """Whether a run of the user's checks in the project is under way."""
        return (project_id, user_id) in self._running

    async def run(
        self,
        project_id: str,
        user_id: str,
        credentials: str,
        *,
        wait_s: float = 0.0,
        limits: UserLimits = UNLIMITED,
    ) -> StandingRun:
        """The user's checks verified now (``wait_s``: how long checks that do not hold
        yet are retried), kept as their last run; no checks: a pass of none (nothing
        kept). Answered within ``wait_s + round_s`` seconds: a running run when it had
        not ended then (it goes on; its result is kept when it ends). Another run of the
        same user and project while one is under way:
        :class:`~copilot_core.errors.ConflictError`; beyond the operator's limits:
        :class:`~copilot_core.errors.InvalidRequestError`."""
        key = (project_id, user_id)
        if key in self._running:
            raise ConflictError(
                "A run of your standing intent in this project is under way; its result "
                "is kept as the checks' last run when it ends (GET …/intent). Run again "
                "after it has ended."
            )
        self._running.add(key)  # before any await: two requests cannot both pass
        handed_over = False
        try:
            record = await self.store.standing_intent(project_id, user_id)
            if record is None or not record.checks:
                return StandingRun((), IntentResult(), 0.0)
            most = self.probes.limits  # this server's, not the user's
            if len(record.checks) > most.max_checks:
                raise InvalidRequestError(
                    f"At most {most.max_checks} checks are run at once (this server's "
                    f"limit); your standing intent has {len(record.checks)}. Nothing was sent."
                )
            if wait_s > most.max_wait_s:
                raise InvalidRequestError(
                    f"wait_s is at most {most.max_wait_s:g} (this server's limit). "
                    "Nothing was sent."
                )
            checks = tuple(_validated(record.checks))
            loop = asyncio.get_running_loop()
            started = loop.time()
            bound = max(0.0, wait_s) + self.round_s
            said: list[str] = [f"verifying {len(checks)} check(s)\n"]
            context = self._context(project_id, user_id, credentials, said, limits)
            verifying = self._verify(context, checks, record.checks, wait_s)
            task = asyncio.create_task(verifying)
            self._background.add(task)
            task.add_done_callback(lambda done: self._ended(key, done))
            handed_over = True
            # asyncio.wait neither cancels the run at the bound nor when the caller goes
            await asyncio.wait({task}, timeout=bound)
            if task.done():
                return task.result()
            return _still_running(checks, loop.time() - started, bound, said)
        finally:
            if not handed_over:
                self._running.discard(key)

    async def aclose(self) -> None:
        """Stop the runs still going on in the background (the service is stopping)."""
        for task in list(self._background):
            task.cancel()
        if self._background:
            await asyncio.wait(set(self._background))

    # ------------------------------------------------------------------ internals
    def _ended(self, key: tuple[str, str], task: asyncio.Task[StandingRun]) -> None:
        self._running.discard(key)
        self._background.discard(task)
        if task.cancelled():
            return
        problem = task.exception()  # retrieved: a run answered as running may fail later
        if problem is not None:
            log.warning("a standing-intent run failed: %s", problem, exc_info=problem)

    @staticmethod
    def _context(
        project_id: str, user_id: str, credentials: str, said: list[str], limits: UserLimits
    ) -> ToolContext:
        """The run's caller as the probe sees it: ``said`` receives its progress."""

        def heard(progress: ToolProgress) -> None:
            said.append(progress.text)
            del said[:-20]

        return ToolContext(
            project_id,
            user_id,
            "",
            CopilotMode.TEACHING_ASSISTANT,  # checks only read
            AbortToken(),
            credentials,
            progress=heard,
            background=True,  # no person waits at a console for it
            limits=limits,
        )

    async def _verify(
        self,
        context: ToolContext,
        checks: tuple[Check, ...],
        stored: list[dict[str, Any]],
        wait_s: float,
    ) -> StandingRun:
        """One run on the caller's probe, stopped after the gate's time limit (answered,
        not kept); its result capped as a tool's is, and kept as the checks' last run."""
        started = asyncio.get_running_loop().time()
        limit = self.bounds.timeout
        timeout = asyncio.timeout(limit)
        try:
            async with timeout:
                result = await verify_checks(
                    checks,
                    self.probes.probe(context),
                    self.wait_clock,
                    wait_s=wait_s,
                    interval=self.probes.limits.interval,
                    progress=context.report_progress,
                )
        except TimeoutError:
            if not timeout.expired():
                raise
            context.abort.abort(f"the run went on {limit:g} s")
            log.warning("a standing-intent run was stopped after %g s", limit)
            return _stopped(checks, asyncio.get_running_loop().time() - started, limit)
        run = _capped(result, self.bounds.max_result_chars, checks)
        await self.store.save_intent_run(
            context.project_id, context.user_id, stored, IntentRun(self.clock.now(), run.to_dict())
        )
        return run


def _still_running(
    checks: tuple[Check, ...], waited: float, bound: float, said: list[str]
) -> StandingRun:
    """The answer of a run that had not ended when its answer was due."""
    last = next((text.strip() for text in reversed(said) if text.strip()), None)
    message = (
        f"The run had not ended after {bound:g} s (wait_s plus one round); it goes on, and "
        "its result is kept as the checks' last run when it ends (GET …/intent)."
    )
    if last:
        message += f" Last progress: {last}"
    return StandingRun(checks, None, waited, message)


def _stopped(checks: tuple[Check, ...], waited: float, limit: float) -> StandingRun:
    """The answer of a run stopped at the time limit: no check was decided."""
    reason = f"not decided: the run was stopped after {limit:g} s (the time limit of a tool call)"
    results = tuple(
        CheckResult(check, CheckStatus.ERROR, None, (), 0, waited, reason) for check in checks
    )
    message = (
        f"The run did not end within {limit:g} s, the time limit of a tool call, and was "
        "stopped; nothing was kept. Run fewer checks, or with a shorter wait_s."
    )
    return StandingRun(checks, IntentResult(results, waited), waited, message)


def _capped(result: IntentResult, max_chars: int, checks: tuple[Check, ...]) -> StandingRun:
    """The run's answer, its evidence cut when its JSON is longer than ``max_chars`` (the
    gate's cap on a tool's result): each check keeps its verdict, reason, and each
    evidence's node and command; the output lines are cut to a share of the cap (halved
    until the whole fits), then, when none fit, the observed values go too. A verdict is
    never cut: the ``message`` says what was."""
    size = _size(result)
    if size <= max_chars:
        return StandingRun(checks, result, result.waited_s)
    share = max_chars // (2 * max(1, len(result.checks)))
    while True:
        cut = replace(result, checks=tuple(_cut_lines(check, share) for check in result.checks))
        if _size(cut) <= max_chars or share == 0:
            break
        share //= 2
    dropped = ""
    if _size(cut) > max_chars:
        cut = replace(cut, checks=tuple(replace(c, observed=None) for c in cut.checks))
        dropped = " and the observed values"
    message = (
        f"The result was {size} characters long; a tool's result may be {max_chars}, so "
        f"the evidence's output lines were cut{dropped}. Run fewer checks to see all of it."
    )
    return StandingRun(checks, cut, cut.waited_s, message)


def _cut_lines(check: CheckResult, share: int) -> CheckResult:
    """``check`` with at most about ``share`` characters of evidence lines."""
    kept: list[Evidence] = []
    left = share
    for evidence in check.evidence:
        lines = []
        for line in evidence.lines:
            if len(line) > left:
                break
            lines.append(line)
            left -= len(line)
        kept.append(replace(evidence, lines=tuple(lines)))
    return replace(check, evidence=tuple(kept))


def _size(result: IntentResult) -> int:
    """The result's length as a tool's result is measured (its JSON, as the model reads it)."""
    return len(render_tool_output(result.to_dict()))
