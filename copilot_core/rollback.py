"""Rolling a restore point back: the user's own undo, as a use case of the core.

:class:`Rollback` is what an adapter calls when the user asks to undo a change (the
page's "Undo this change"). It

1. checks that the session is the caller's and holds the restore point (404 otherwise);
2. claims the session exactly as a turn does (a :class:`~copilot_core.ports.SessionLeases`
   claim, held by ``rollback-<id>``): while it runs, a turn or a second rollback of the
   session is refused with :class:`~copilot_core.errors.SessionBusyError` (409, "has a
   rollback running"), and a turn that runs refuses it;
3. runs the tool source's rollback call (``tool``, given by the composition root: the
   core knows no tool by name) through the :class:`~copilot_core.ToolGate`, as an
   approved change (the click is the approval), so the executor takes a restore point of
   what the rollback changes first;
4. records it in the session's history as one assistant message calling the rollback
   tool and the tool message that answers it (so the conversation stays a valid OpenAI
   conversation; the model of the next turn reads what was undone), its metadata saying
   who, when, which restore point and the status;
5. marks the restore point as rolled back (``state["rolled_back"]``), which the
   restore-point listing shows.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any

from copilot_core._approvals import (
    ApprovalDecision,
    ApprovalPolicy,
    ChangePreview,
    RestorePoint,
    TurnControl,
    call_digest,
)
from copilot_core._conversation import Conversation
from copilot_core._history import HistoryWindows
from copilot_core._messages import FunctionCall, Message, ToolCall
from copilot_core._session import CopilotMode, Session
from copilot_core._session_key import SessionKey, owned_session, takes_session_key
from copilot_core._toolgate import ToolGate
from copilot_core._tools import ParsedToolCall, ToolContext, ToolResult, render_tool_output
from copilot_core.errors import (
    NotFoundError,
    RollbackConflictError,
    SessionBusyError,
)
from copilot_core.ports import CheckpointStore, Clock, IdFactory, RestorePointStore, SessionLeases

__all__ = [
    "ROLLBACK_TURN_PREFIX",
    "Rollback",
    "RollbackOutcome",
    "RollbackRequest",
    "held_by_rollback",
]

#: The turn id of a rollback's claim on its session starts with this.
ROLLBACK_TURN_PREFIX = "rollback-"


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

    def __repr__(self) -> str:
        return f"RollbackRequest(key={self.key!r}, restore_point_id={self.restore_point_id!r})"


@dataclass(frozen=True, slots=True)
class RollbackOutcome:
    """What a rollback did: the tool's result and the two messages that record it."""

    point: RestorePoint
    result: ToolResult
    messages: tuple[Message, ...]


class Rollback:
    """Undo a restore point's change, one at a time per session (see the module docstring)."""

    def __init__(
        self,
        store: CheckpointStore,
        points: RestorePointStore,
        gate: ToolGate,
        leases: SessionLeases,
        *,
        clock: Clock,
        ids: IdFactory,
        tool: str,
        windows: HistoryWindows | None = None,
    ) -> None:
        self._store = store
        self._points = points
        self._gate = gate
        self._leases = leases
        self._clock = clock
        self._ids = ids
        self.tool = tool
        self._windows = windows

    # =================================================================== reading
    @takes_session_key
    async def points(self, key: SessionKey) -> list[RestorePoint]:
        """The session's restore points, oldest first (``SessionNotFoundError`` when the
        session is not the caller's)."""
        await self._owned(key)
        return await self._points.restore_points(key.project_id, key.session_id)

    async def preview(self, request: RollbackRequest) -> ChangePreview:
        """What the rollback would change, every node, link and device by name."""
        await self._owned(request.key)
        point = await self._point(request)
        call = self._call(request)
        assessment = await self._gate.assess(call, self._context(request, TurnControl()))
        return assessment.preview or ChangePreview(
            f"roll back to before {point.tool_name} ({point.summary})"
        )

    # =================================================================== running
    async def __call__(self, request: RollbackRequest) -> RollbackOutcome:
        """Roll the restore point back and record it (see the module docstring).

        Raises before anything is done: SessionNotFoundError, NotFoundError (no such
        restore point), SessionBusyError (a turn or another rollback runs).
        """
        key = request.key
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
            call = self._call(request)
            clicked = ApprovalDecision(True, user_id=key.user_id, comment="Undo by the user")
            result = await self._gate.call(
                call,
                self._context(request, TurnControl(claim.lost)),
                decision=clicked.bound(call_digest(call.name, call.arguments or {})),
            )
            if _status(result) == "conflict":  # nothing was done: nothing to record
                output = result.output if isinstance(result.output, dict) else {}
                raise RollbackConflictError([str(c) for c in output.get("conflicts") or []])
            messages = self._record(point, call, result, request)
            await self._store.append_messages(key.project_id, key.session_id, messages)
            await self._store.record_turn(key.project_id, key.session_id, self._clock.now())
            if self._windows is not None:
                self._windows.forget(key.project_id, key.session_id)
            # Read again: the tool may have kept something with the point (an id map).
            point = (
                await self._points.restore_point(key.project_id, key.session_id, point.id) or point
            )
            marked = replace(
                point,
                state={
                    **point.state,
                    "rolled_back": {
                        "at": messages[0].metadata.get("created_at"),
                        "by": key.user_id,
                        "status": _status(result),
                        "tool_call_id": call.id,
                        "restore_point_id": _new_point(result),
                    },
                },
            )
            await self._points.update_restore_point(marked)
            return RollbackOutcome(marked, result, messages)
        finally:
            await self._leases.release(claim)

    # ================================================================= internals
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

    def _call(self, request: RollbackRequest) -> ParsedToolCall:
        arguments: dict[str, Any] = {
            "action": "rollback",
            "restore_point_id": request.restore_point_id,
            "use_snapshot": request.use_snapshot,
            "force": request.force,
        }
        return ParsedToolCall(
            f"{ROLLBACK_TURN_PREFIX}{self._ids.new_id()}",
            self.tool,
            json.dumps(arguments),
            arguments,
        )

    def _context(self, request: RollbackRequest, control: TurnControl) -> ToolContext:
        return ToolContext(
            project_id=request.key.project_id,
            user_id=request.key.user_id,
            session_id=request.key.session_id,
            # The user's own action, not the agent's: no copilot mode bounds it.
            mode=CopilotMode.LAB_AUTOMATION_ASSISTANT,
            abort=control.abort,
            credentials=request.credentials,
            approval=ApprovalPolicy.NEVER,
        )

    def _record(
        self,
        point: RestorePoint,
        call: ParsedToolCall,
        result: ToolResult,
        request: RollbackRequest,
    ) -> tuple[Message, ...]:
        """The assistant message calling the rollback and the tool message answering it."""
        now = self._clock.now()
        status = _status(result)
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
        assistant = Message.assistant(
            self._ids.new_id(),
            note,
            now,
            (
                ToolCall(
                    id=call.id, function=FunctionCall(name=call.name, arguments=call.raw_arguments)
                ),
            ),
            rollback=rollback,
        )
        tool = Message.tool(
            self._ids.new_id(),
            call.id,
            call.name,
            render_tool_output(result.output),
            now,
            rollback=rollback,
            **(result.metadata or {}),
        )
        conversation = Conversation()
        conversation.extend([assistant, tool])  # refuses anything invalid
        return (assistant, tool)


async def held_by_rollback(leases: SessionLeases, project_id: str, session_id: str) -> bool:
    """Whether what holds the session is a rollback (for the 409's words)."""
    holder = await leases.holder(project_id, session_id)
    return holder is not None and holder.startswith(ROLLBACK_TURN_PREFIX)


def _status(result: ToolResult) -> str:
    output = result.output
    if isinstance(output, dict) and isinstance(output.get("status"), str):
        return str(output["status"])
    return result.status.value


def _new_point(result: ToolResult) -> str | None:
    output = result.output
    if isinstance(output, dict) and isinstance(output.get("restore_point_id"), str):
        return str(output["restore_point_id"])
    return None
