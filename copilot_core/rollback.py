"""Rolling a restore point back: the user's own undo, as a use case of the core.

:class:`Rollback` is what an adapter calls when the user asks to undo a change (the
page's "Undo this change"). It

1. applies the operator's policy: a user whom it keeps below lab automation may not roll
   back (:class:`~copilot_core.errors.PermissionDeniedError`, 403), checked before
   anything else;
2. checks that the session is the caller's and holds the restore point (404 otherwise);
3. claims the session exactly as a turn does (a :class:`~copilot_core.ports.SessionLeases`
   claim, held by ``rollback-<id>``): while it runs, a turn or a second rollback of the
   session is refused with :class:`~copilot_core.errors.SessionBusyError` (409, "has a
   rollback running"), and a turn that runs refuses it;
4. rolls the point back through the lab's :class:`~copilot_core.ports.RestorePoints`, as a
   change the user approved (the click is the approval, handed to the port and kept with
   the tool message): the port takes a restore point of what the rollback changes first,
   and answers a typed :class:`~copilot_core.ports.RollbackResult`. Like every call into
   the lab, it runs within the gate's :class:`~copilot_core.rules.CallBounds` (its time
   limit; a longer result is cut in the history, saying so), stops when the claim is
   lost, and a failure of the lab is a result that says so. A rollback refused for its
   conflicts changed nothing: :class:`~copilot_core.errors.RollbackConflictError` (409),
   nothing recorded;
5. records it in the session's history as one assistant message calling the tool source's
   rollback (the call the port names: the model of the next turn reads what was undone as
   one of its tools' calls) and the tool message that answers it, the result's JSON (so
   the conversation stays a valid OpenAI conversation), their metadata saying who, when,
   which restore point and the status;
6. marks the restore point as rolled back (its typed ``rolled_back``), which the
   restore-point listing shows.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from copilot_core._approvals import (
    ApprovalDecision,
    ApprovalPolicy,
    ChangePreview,
    call_digest,
)
from copilot_core._conversation import Conversation
from copilot_core._history import HistoryWindows
from copilot_core._limits import UNLIMITED, UserLimits
from copilot_core._messages import Message, ToolCall
from copilot_core._restore_point import RestorePoint, RolledBack
from copilot_core._restore_ports import (
    RestorePoints,
    RollbackOptions,
    RollbackResult,
    RollbackStatus,
)
from copilot_core._session import CopilotMode, Session
from copilot_core._session_key import SessionKey
from copilot_core._store_ports import owned_session
from copilot_core._streams import Aborted, race_abort
from copilot_core._toolgate import CallBounds
from copilot_core._tools import ToolContext, render_tool_output
from copilot_core.errors import (
    CopilotError,
    NotFoundError,
    RollbackConflictError,
    SessionBusyError,
)
from copilot_core.ports import (
    AbortToken,
    CheckpointStore,
    Clock,
    IdFactory,
    RestorePointStore,
    SessionLeases,
)

__all__ = [
    "ROLLBACK_TURN_PREFIX",
    "Rollback",
    "RollbackOutcome",
    "RollbackRequest",
    "held_by_rollback",
]

log = logging.getLogger(__name__)

#: The turn id of a rollback's claim on its session starts with this.
ROLLBACK_TURN_PREFIX = "rollback-"
#: The mode a rollback needs under the operator's policy (it changes the lab).
ROLLBACK_MODE = CopilotMode.LAB_AUTOMATION_ASSISTANT


@dataclass(frozen=True, slots=True)
class RollbackRequest:
    """One undo asked for by a session's owner. ``credentials`` stays in memory."""

    key: SessionKey
    restore_point_id: str
    credentials: str | None = None
    #: Restore the GNS3-side snapshot the point holds (the whole project returns to that
    #: moment, others' work included) instead of undoing the change by itself.
    use_snapshot: bool = False
    #: Go on despite what conflicts with the undo (the preview lists what it touches).
    force: bool = False
    #: Who, in words (a user name), for the history; the user id is kept regardless.
    by: str | None = None
    #: The caller's limits under the operator's policy (checked here, before anything).
    limits: UserLimits = UNLIMITED

    @property
    def options(self) -> RollbackOptions:
        return RollbackOptions(use_snapshot=self.use_snapshot, force=self.force)

    def __repr__(self) -> str:
        return f"RollbackRequest(key={self.key!r}, restore_point_id={self.restore_point_id!r})"


@dataclass(frozen=True, slots=True)
class RollbackOutcome:
    """What a rollback did: the port's typed result and the two messages that record it."""

    point: RestorePoint
    result: RollbackResult
    messages: tuple[Message, ...]


class Rollback:
    """Undo a restore point's change, one at a time per session (see the module docstring)."""

    def __init__(
        self,
        store: CheckpointStore,
        points: RestorePointStore,
        restore: RestorePoints,
        leases: SessionLeases,
        *,
        clock: Clock,
        ids: IdFactory,
        bounds: CallBounds | None = None,
        windows: HistoryWindows | None = None,
    ) -> None:
        self._store = store
        self._points = points
        self._restore = restore
        self._leases = leases
        self._clock = clock
        self._ids = ids
        #: The time limit and result cap of every call into the lab (the gate's).
        self.bounds = bounds or CallBounds()
        self._windows = windows

    # =================================================================== reading
    async def points(self, key: SessionKey) -> list[RestorePoint]:
        """The session's restore points, oldest first (``SessionNotFoundError`` when the
        session is not the caller's)."""
        await self._owned(key)
        return await self._points.restore_points(key.project_id, key.session_id)

    async def preview(self, request: RollbackRequest) -> ChangePreview:
        """What the rollback would change, every node, link and device by name (read
        now; what cannot be read leaves the card's one line)."""
        await self._owned(request.key)
        point = await self._point(request)
        fallback = ChangePreview(f"roll back to before {point.tool_name} ({point.summary})")
        abort = AbortToken()
        try:
            return await race_abort(
                self._restore.preview(point, request.options, self._context(request, abort)),
                abort,
                self.bounds.timeout,
            )
        except (CopilotError, TimeoutError, Aborted):
            return fallback

    # =================================================================== running
    async def __call__(self, request: RollbackRequest) -> RollbackOutcome:
        """Roll the restore point back and record it (see the module docstring).

        Raises before anything is done: PermissionDeniedError (the operator's policy),
        SessionNotFoundError, NotFoundError (no such restore point), SessionBusyError (a
        turn or another rollback runs), RollbackConflictError (what was done since is in
        the way, and not ``force``).
        """
        key = request.key
        request.limits.require_mode(ROLLBACK_MODE, "Rolling back a change")  # the one check
        await self._owned(key)
        point = await self._point(request)
        holder = f"{ROLLBACK_TURN_PREFIX}{self._ids.new_id()}"
        try:
            claim = await self._leases.claim(key.project_id, key.session_id, holder)
        except SessionBusyError as exc:
            raise SessionBusyError(
                key.session_id,
                rollback=await held_by_rollback(self._leases, key.project_id, key.session_id),
            ) from exc
        try:
            function = self._restore.as_tool_call(point.id, request.options)
            call = ToolCall(id=f"{ROLLBACK_TURN_PREFIX}{self._ids.new_id()}", function=function)
            arguments = json.loads(function.arguments or "{}")
            clicked = ApprovalDecision(True, user_id=key.user_id, comment="Undo by the user")
            clicked = clicked.bound(call_digest(function.name, arguments))
            result = await self._roll_back(point, request, clicked, call.id, claim.lost)
            if result.status is RollbackStatus.CONFLICT:  # nothing was done: nothing to record
                raise RollbackConflictError(result.conflict_lines)
            now = self._clock.now()
            messages = self._record(point, call, result, clicked, request, now)
            await self._store.append_messages(key.project_id, key.session_id, messages)
            await self._store.record_turn(key.project_id, key.session_id, now)
            if self._windows is not None:
                self._windows.forget(key.project_id, key.session_id)
            # Read again: the port may have kept something with the point (an id map).
            point = (
                await self._points.restore_point(key.project_id, key.session_id, point.id) or point
            )
            mark = RolledBack(
                at=now,
                by=key.user_id,
                status=result.status,
                tool_call_id=call.id,
                restore_point_id=result.restore_point_id,
            )
            marked = replace(point, rolled_back=mark)
            await self._points.update_restore_point(marked)
            return RollbackOutcome(marked, result, messages)
        finally:
            await self._leases.release(claim)

    # ================================================================= internals
    async def _roll_back(
        self,
        point: RestorePoint,
        request: RollbackRequest,
        approval: ApprovalDecision,
        call_id: str,
        lost: AbortToken,
    ) -> RollbackResult:
        """The port's rollback within the bounds of a call into the lab: its time limit,
        the claim's loss (``aborted``), a failure answered as a result."""
        context = self._context(request, lost)
        work = self._restore.roll_back(
            point, request.options, context, approval=approval, tool_call_id=call_id
        )
        try:
            return await race_abort(work, lost, self.bounds.timeout)
        except Aborted:
            return RollbackResult.aborted()
        except TimeoutError:
            return RollbackResult.failure(
                f"The rollback did not finish within {self.bounds.timeout:g} s."
            )
        except CopilotError as exc:
            return RollbackResult.failure(exc.message)
        except Exception:
            log.exception("the rollback of restore point %s failed", point.id)
            return RollbackResult.failure(
                "The rollback failed with an internal error; see the server log."
            )

    async def _owned(self, key: SessionKey) -> Session:
        return await owned_session(self._store, key)

    async def _point(self, request: RollbackRequest) -> RestorePoint:
        point = await self._points.restore_point(
            request.key.project_id, request.key.session_id, request.restore_point_id
        )
        if point is None:
            raise NotFoundError(
                f"There is no restore point {request.restore_point_id!r} in this session."
            )
        return point

    @staticmethod
    def _context(request: RollbackRequest, abort: AbortToken) -> ToolContext:
        return ToolContext(
            project_id=request.key.project_id,
            user_id=request.key.user_id,
            session_id=request.key.session_id,
            # The user's own action, not the agent's: no copilot mode bounds it (the
            # operator's policy did, above).
            mode=ROLLBACK_MODE,
            abort=abort,
            credentials=request.credentials,
            approval=ApprovalPolicy.NEVER,
        )

    def _capped(self, result: RollbackResult) -> str:
        """The tool message's text: the result's JSON, cut (saying so) past the bound on
        what one call may put in the model's context."""
        text = render_tool_output(result.to_json())
        limit = self.bounds.max_result_chars
        if len(text) <= limit:
            return text
        note = (
            f"The rollback's result was {len(text)} characters long; only the first {limit} "
            "are kept."
        )
        return render_tool_output({"truncated": True, "note": note, "output": text[:limit]})

    def _record(
        self,
        point: RestorePoint,
        call: ToolCall,
        result: RollbackResult,
        approval: ApprovalDecision,
        request: RollbackRequest,
        now: datetime,
    ) -> tuple[Message, ...]:
        """The assistant message calling the rollback and the tool message answering it."""
        status = result.status.value
        who = request.by or request.key.user_id
        note = (
            f"{who} rolled back restore point {point.id} (taken before {point.tool_name}: "
            f"{point.summary}); the rollback's status: {status}."
        )
        rollback = {
            "restore_point_id": point.id,
            "undoes_tool_call_id": point.tool_call_id,
            "by": request.key.user_id,
            "by_name": who,
            "status": status,
        }
        assistant = Message.assistant(self._ids.new_id(), note, now, (call,), rollback=rollback)
        metadata: dict[str, Any] = {"approval": approval.to_metadata()}
        if result.restore_point_id is not None:
            metadata["restore_point_id"] = result.restore_point_id
        tool = Message.tool(
            self._ids.new_id(),
            call.id,
            call.function.name,
            self._capped(result),
            now,
            rollback=rollback,
            **metadata,
        )
        conversation = Conversation()
        conversation.extend([assistant, tool])  # refuses anything invalid
        return (assistant, tool)


async def held_by_rollback(leases: SessionLeases, project_id: str, session_id: str) -> bool:
    """Whether what holds the session is a rollback (for the 409's words)."""
    holder = await leases.holder(project_id, session_id)
    return holder is not None and holder.startswith(ROLLBACK_TURN_PREFIX)
