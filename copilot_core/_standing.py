"""Standing intent: the checks a user wants to hold in a lab, kept per project and user,
and run on demand through the tool source's ``verify_intent``.

:class:`StandingIntent` reads and replaces a user's checks (validated as
:data:`~copilot_core.intent.checks_adapter` validates them: a bad check is an
:class:`~copilot_core.errors.InvalidRequestError` naming it, and nothing is stored) and
runs them with the caller's credentials, answering what ``verify_intent`` answers. The
result of the last run is kept with the checks, with when it ended: replacing the checks
by others forgets it (it describes the checks it ran), and a run whose checks were
replaced while it ran is answered but not kept.

Runs are bounded, because each one holds device consoles that chat turns need too:

* one run per user and project at a time (in this process): another is a
  :class:`~copilot_core.errors.ConflictError` that says a run is under way;
* the answer comes within ``wait_s + round_s`` seconds, whatever the run waits for
  (a console another run holds included): a run that has not ended by then is answered
  ``status: running`` (with the checks and the last progress it reported) and goes on in
  the background, its result kept as the checks' last run when it ends;
* a run is stopped ``overrun_s`` seconds after that bound at the latest (nothing kept).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

from copilot_core._abort import AbortToken
from copilot_core._checks import Check, check_label, checks_adapter, dump_check
from copilot_core._session import CopilotMode
from copilot_core._tools import ParsedToolCall, ToolContext, ToolProgress, ToolStatus
from copilot_core.errors import ConflictError, CopilotError, InvalidRequestError
from copilot_core.ports import (
    Clock,
    IntentRun,
    IntentStore,
    StandingIntentRecord,
    ToolExecutor,
)

__all__ = ["MAX_STANDING_CHECKS", "RUNNING", "StandingIntent"]

log = logging.getLogger(__name__)

#: The most checks one user keeps in one project.
MAX_STANDING_CHECKS = 32
VERIFY_TOOL = "verify_intent"
#: The ``status`` of a run that had not ended when its answer was due.
RUNNING = "running"
#: Seconds a run may take beyond its ``wait_s`` before it is answered as still running
#: (one round of checks: the console reads and pings, the wait for a console included).
ROUND_S = 30.0
#: Seconds a run may go on after its answer was due before it is stopped.
OVERRUN_S = 300.0


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
    """A user's standing intent per project: get, replace, run (bounded: see the module)."""

    def __init__(
        self,
        store: IntentStore,
        tools: ToolExecutor,
        clock: Clock,
        *,
        round_s: float = ROUND_S,
        overrun_s: float = OVERRUN_S,
    ) -> None:
        self.store = store
        self.tools = tools
        self.clock = clock
        self.round_s = round_s
        self.overrun_s = overrun_s
        self._running: set[tuple[str, str]] = set()
        self._background: set[asyncio.Task[dict[str, Any]]] = set()

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
        self, project_id: str, user_id: str, credentials: str, *, wait_s: float = 0.0
    ) -> dict[str, Any]:
        """The user's checks verified now (``wait_s``: how long checks that do not hold
        yet are retried), as ``verify_intent`` answers, kept as their last run; no
        checks: a pass of none (nothing kept). Answered within ``wait_s + round_s``
        seconds: ``status: running`` when the run had not ended then (it goes on; its
        result is kept when it ends). Another run of the same user and project while one
        is under way: :class:`~copilot_core.errors.ConflictError`."""
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
                return {"status": "pass", "summary": {"pass": 0, "fail": 0, "error": 0},
                        "waited_s": 0.0, "checks": []}  # fmt: skip
            loop = asyncio.get_running_loop()
            started = loop.time()
            bound = max(0.0, wait_s) + self.round_s
            said: list[str] = []
            ceiling = bound + self.overrun_s
            verifying = self._verify(
                project_id, user_id, credentials, record.checks, wait_s, ceiling, said
            )
            task = asyncio.create_task(verifying)
            self._background.add(task)
            task.add_done_callback(lambda done: self._ended(key, done))
            handed_over = True
            # asyncio.wait neither cancels the run at the bound nor when the caller goes
            await asyncio.wait({task}, timeout=bound)
            if task.done():
                return task.result()
            return _still_running(record.checks, loop.time() - started, bound, said)
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
    def _ended(self, key: tuple[str, str], task: asyncio.Task[dict[str, Any]]) -> None:
        self._running.discard(key)
        self._background.discard(task)
        if task.cancelled():
            return
        problem = task.exception()  # retrieved: a run answered as running may fail later
        if problem is not None:
            log.warning("a standing-intent run failed: %s", problem, exc_info=problem)

    async def _verify(
        self,
        project_id: str,
        user_id: str,
        credentials: str,
        checks: list[dict[str, Any]],
        wait_s: float,
        ceiling: float,
        said: list[str],
    ) -> dict[str, Any]:
        """One run through the tools' ``verify_intent``, stopped at ``ceiling`` seconds;
        kept as the checks' last run. ``said`` receives its progress, as reported."""

        def heard(progress: ToolProgress) -> None:
            said.append(progress.text)
            del said[:-20]

        abort = AbortToken()
        context = ToolContext(
            project_id,
            user_id,
            "",
            CopilotMode.TEACHING_ASSISTANT,  # read-only: offered in every mode
            abort,
            credentials,
            progress=heard,
            background=True,  # no person waits at a console for it
        )
        call = ParsedToolCall.parse(
            "standing-intent", VERIFY_TOOL, json.dumps({"checks": checks, "wait_s": wait_s})
        )
        try:
            async with asyncio.timeout(ceiling):
                result = await self.tools.execute(call, context)
        except TimeoutError:
            abort.abort(f"the run went on {ceiling:g} s")
            log.warning("a standing-intent run was stopped after %g s", ceiling)
            raise
        output = result.output
        if result.status is not ToolStatus.SUCCESS or not isinstance(output, dict):
            message = output.get("error") if isinstance(output, dict) else str(output)
            raise CopilotError(f"The standing intent could not be run: {message}")
        await self.store.save_intent_run(
            project_id, user_id, checks, IntentRun(self.clock.now(), output)
        )
        return output


def _still_running(
    checks: list[dict[str, Any]], waited: float, bound: float, said: list[str]
) -> dict[str, Any]:
    """The answer of a run that had not ended when its answer was due: the shape of
    ``verify_intent``'s, ``status: running``, each check ``running``."""
    labels = []
    for raw in checks:
        try:
            labels.append(check_label(checks_adapter.validate_python([raw])[0]))
        except ValidationError:
            labels.append(str(raw.get("name") or raw.get("kind")))
    last = next((text.strip() for text in reversed(said) if text.strip()), None)
    message = (
        f"The run had not ended after {bound:g} s (wait_s plus one round); it goes on, and "
        "its result is kept as the checks' last run when it ends (GET …/intent)."
    )
    if last:
        message += f" Last progress: {last}"
    return {
        "status": RUNNING,
        "summary": {"pass": 0, "fail": 0, "error": 0},
        "waited_s": round(waited, 2),
        "checks": [
            {"name": label, "kind": raw.get("kind"), "check": raw, "status": RUNNING}
            for label, raw in zip(labels, checks, strict=True)
        ],
        "message": message,
    }
