"""Standing intent: the checks a user wants to hold in a lab, kept per project and user,
and run on demand through the tool source's ``verify_intent``.

:class:`StandingIntent` reads and replaces a user's checks (validated as
:data:`~copilot_core.intent.checks_adapter` validates them: a bad check is an
:class:`~copilot_core.errors.InvalidRequestError` naming it, and nothing is stored) and
runs them with the caller's credentials, answering what ``verify_intent`` answers. The
result of the last run is kept with the checks, with when it ended: replacing the checks
by others forgets it (it describes the checks it ran), and a run whose checks were
replaced while it ran is answered but not kept.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

from copilot_core._abort import AbortToken
from copilot_core._checks import Check, checks_adapter, dump_check
from copilot_core._session import CopilotMode
from copilot_core._tools import ParsedToolCall, ToolContext, ToolStatus
from copilot_core.errors import CopilotError, InvalidRequestError
from copilot_core.ports import (
    Clock,
    IntentRun,
    IntentStore,
    StandingIntentRecord,
    ToolExecutor,
)

__all__ = ["MAX_STANDING_CHECKS", "StandingIntent"]

#: The most checks one user keeps in one project.
MAX_STANDING_CHECKS = 32
VERIFY_TOOL = "verify_intent"


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
    """A user's standing intent per project: get, replace, run."""

    def __init__(self, store: IntentStore, tools: ToolExecutor, clock: Clock) -> None:
        self.store = store
        self.tools = tools
        self.clock = clock

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

    async def run(
        self, project_id: str, user_id: str, credentials: str, *, wait_s: float = 0.0
    ) -> dict[str, Any]:
        """The user's checks verified now (``wait_s``: how long checks that do not hold
        yet are retried), as ``verify_intent`` answers, kept as their last run; no
        checks: a pass of none (nothing kept)."""
        record = await self.store.standing_intent(project_id, user_id)
        if record is None or not record.checks:
            return {"status": "pass", "summary": {"pass": 0, "fail": 0, "error": 0},
                    "waited_s": 0.0, "checks": []}  # fmt: skip
        context = ToolContext(
            project_id,
            user_id,
            "",
            CopilotMode.TEACHING_ASSISTANT,  # read-only: offered in every mode
            AbortToken(),
            credentials,
        )
        call = ParsedToolCall.parse(
            "standing-intent", VERIFY_TOOL, json.dumps({"checks": record.checks, "wait_s": wait_s})
        )
        result = await self.tools.execute(call, context)
        output = result.output
        if result.status is not ToolStatus.SUCCESS or not isinstance(output, dict):
            message = output.get("error") if isinstance(output, dict) else str(output)
            raise CopilotError(f"The standing intent could not be run: {message}")
        await self.store.save_intent_run(
            project_id, user_id, record.checks, IntentRun(self.clock.now(), output)
        )
        return output
