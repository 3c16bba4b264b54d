"""Restore points of a session, for the page: list them, roll one back ("Undo this change").

Thin calls into the core: the session must be the caller's
(:meth:`~copilot_core.ChatService.get_session`: 404 otherwise, as for a session that does
not exist); the list comes from the :class:`~copilot_core.ports.RestorePointStore`; a
rollback is the ``restore_point`` tool's ``rollback``, run through a
:class:`~copilot_core.ToolGate` over the service's
:class:`~copilot_core.ports.ToolExecutor` with the caller's click as the approval (the
executor takes a restore point of what the rollback changes first, so it can be undone in
turn). It is refused (409) while a turn runs on the session.

The controller declares what it works on like the chat controller (``_scopes``), plus the
two collaborators it alone needs, ``restore_points`` and ``tools`` (501 when the
deployment has none).
"""

from __future__ import annotations

import json
import uuid
from typing import Annotated, Any, Literal

import msgspec
import structlog
from litestar import Controller, get, post
from litestar.datastructures import State
from litestar.di import Provide
from litestar.exceptions import HTTPException, ServiceUnavailableException
from litestar.params import PathParameter, QueryParameter
from litestar.status_codes import HTTP_200_OK, HTTP_501_NOT_IMPLEMENTED

from adapters.web._ids import UUID_PATTERN, canonical_uuid
from adapters.web._openapi import errors
from adapters.web._scopes import SessionScope, ids_in_path, scopes
from adapters.web._state import Injected, installed
from copilot_core import AbortToken, ChatService, CopilotMode, ParsedToolCall, ToolContext, ToolGate
from copilot_core.errors import NotFoundError, SessionBusyError
from copilot_core.policy import UserLimits
from copilot_core.ports import (
    ApprovalDecision,
    ApprovalPolicy,
    RestorePoint,
    RestorePointStore,
    ToolExecutor,
    call_digest,
)

__all__ = ["RestorePointBody", "RestorePointController", "RollbackReply"]

log = structlog.get_logger("adapters.web")

#: The tool that rolls a restore point back (the GNS3 executor's).
ROLLBACK_TOOL = "restore_point"

PointId = Annotated[
    str,
    PathParameter(
        pattern=UUID_PATTERN,
        description="The restore point's id (a UUID, as a change's restore_point_id).",
    ),
]
UseSnapshot = Annotated[
    bool,
    QueryParameter(
        description="Restore the GNS3 snapshot the restore point holds when every node is "
        "stopped (the whole project returns to that moment); false: undo the topology "
        "change by itself."
    ),
]
Full = Annotated[bool, QueryParameter(description="Include each restore point's state.")]


# --------------------------------------------------------------- collaborators
def _not_here(what: str) -> HTTPException:
    return HTTPException(
        status_code=HTTP_501_NOT_IMPLEMENTED, detail=f"{what} is not available in this deployment."
    )


def provide_restore_points(state: State) -> RestorePointStore:
    deps = installed(state)
    if deps is None:
        raise ServiceUnavailableException("The service is starting; try again in a moment.")
    if deps.restore_points is None:
        raise _not_here("Keeping restore points")
    return deps.restore_points


def provide_tools(state: State) -> ToolExecutor:
    deps = installed(state)
    if deps is None:
        raise ServiceUnavailableException("The service is starting; try again in a moment.")
    if deps.tools is None:
        raise _not_here("Rolling changes back")
    return deps.tools


# ------------------------------------------------------------------- responses
class RestorePointBody(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A restore point: what it was taken before, and what it holds.

    ``devices``, ``topology`` and ``gns3_snapshot`` read the GNS3 tools' state (see
    docs/gns3.md); ``state`` itself comes only with ``?full=true``.
    """

    id: str
    created_at: str
    tool_call_id: str
    tool_name: str
    summary: str
    devices: list[str]
    topology: bool
    gns3_snapshot: str | None
    state: dict[str, Any] | None = None

    @classmethod
    def from_point(cls, point: RestorePoint, *, full: bool) -> RestorePointBody:
        state = point.state
        devices = state.get("devices")
        snapshot = state.get("gns3_snapshot")
        return cls(
            id=point.id,
            created_at=point.created_at.isoformat(),
            tool_call_id=point.tool_call_id,
            tool_name=point.tool_name,
            summary=point.summary,
            devices=sorted(
                str(name)
                for name, entry in (devices.items() if isinstance(devices, dict) else ())
                if isinstance(entry, dict) and entry.get("captured")
            ),
            topology="topology" in state,
            gns3_snapshot=str(snapshot["name"]) if isinstance(snapshot, dict) else None,
            state=dict(state) if full else None,
        )


class RollbackReply(msgspec.Struct, kw_only=True, omit_defaults=True):
    """What the rollback did: per device and for the topology, the state read back."""

    #: The tool call's status: ``success`` unless it failed as a whole (``error``).
    tool_status: Literal["success", "error", "aborted", "rejected"]
    #: ``success``, ``partial_success`` or ``failed`` over the items; ``error`` when the
    #: call failed as a whole (see ``error``).
    status: str
    #: One per device and one ``topology``: ``{device_name, status, output: {state:
    #: "as at the restore point" | "differs from the restore point", …}, error?}``.
    results: list[dict[str, Any]] = msgspec.field(default_factory=list)
    rolled_back_to: dict[str, Any] | None = None
    notes: dict[str, Any] | None = None
    #: The restore point taken just before this rollback: rolling it back undoes it.
    restore_point_id: str | None = None
    error: str | None = None

    @classmethod
    def from_output(cls, tool_status: str, output: Any) -> RollbackReply:
        body: dict[str, Any] = (
            output if isinstance(output, dict) else {"status": "error", "error": str(output)}
        )
        return cls(
            tool_status=tool_status,  # type: ignore[arg-type]
            status=str(body.get("status", "error")),
            results=list(body.get("results") or []),
            rolled_back_to=body.get("rolled_back_to"),
            notes=body.get("notes"),
            restore_point_id=body.get("restore_point_id"),
            error=body.get("error"),
        )


# ------------------------------------------------------------------ controller
class RestorePointController(Controller):
    path = "/projects/{project_id:str}/chat/sessions/{session_id:str}/restore-points"
    tags = ["restore points"]  # noqa: RUF012 - Litestar's declared attribute
    dependencies = {  # noqa: RUF012 - Litestar's declared attribute
        **scopes(),
        "restore_points": Provide(provide_restore_points, sync_to_thread=False),
        "tools": Provide(provide_tools, sync_to_thread=False),
    }
    guards = [ids_in_path]  # noqa: RUF012 - Litestar's declared attribute

    @get("/", operation_id="listRestorePoints", responses=errors(404, 409, 501))
    async def list_points(
        self,
        visible_session: Injected[SessionScope],
        chat: Injected[ChatService],
        restore_points: Injected[RestorePointStore],
        full: Full = False,
    ) -> list[RestorePointBody]:
        """The session's restore points, oldest first: each was taken just before a
        change the user approved (its ``tool_call_id`` is that change's call). Also of a
        closed project."""
        await chat.get_session(*visible_session.key)
        points = await restore_points.restore_points(
            visible_session.project_id, visible_session.session_id
        )
        return [RestorePointBody.from_point(point, full=full) for point in points]

    @post(
        "/{restore_point_id:str}/rollback",
        operation_id="rollBackRestorePoint",
        status_code=HTTP_200_OK,
        responses=errors(403, 404, 409, 501),
    )
    async def roll_back(
        self,
        session: Injected[SessionScope],
        restore_point_id: PointId,
        chat: Injected[ChatService],
        restore_points: Injected[RestorePointStore],
        tools: Injected[ToolExecutor],
        limits: Injected[UserLimits],
        use_snapshot: UseSnapshot = True,
    ) -> RollbackReply:
        """Undo a change: put back what the restore point holds (each device's
        configuration, the topology, or the GNS3 snapshot when there is one and every
        node is stopped), then read it back.

        Only the session's owner may (404 to anyone else); refused (409) while a turn
        runs on the session. The click is the approval: the rollback runs as an approved
        change, so a restore point of what it changes is taken first; the reply's
        ``restore_point_id`` names it (rolling it back undoes this rollback). A caller
        whom the operator's policy keeps in teaching mode may not (403).
        """
        await chat.get_session(*session.key)
        limits.require_mode(CopilotMode.LAB_AUTOMATION_ASSISTANT, "Rolling back a change")
        point_id = canonical_uuid(restore_point_id)
        if (
            await restore_points.restore_point(session.project_id, session.session_id, point_id)
            is None
        ):
            raise NotFoundError(f"There is no restore point {point_id!r} in this session.")
        if await chat.runner.running(session.project_id, session.session_id):
            raise SessionBusyError(session.session_id)
        arguments = {
            "action": "rollback",
            "restore_point_id": point_id,
            "use_snapshot": use_snapshot,
        }
        call = ParsedToolCall.parse(
            f"rollback-{uuid.uuid4().hex[:12]}", ROLLBACK_TOOL, json.dumps(arguments)
        )
        context = ToolContext(
            project_id=session.project_id,
            user_id=session.user_id,
            session_id=session.session_id,
            # The user's own action on the page, not the agent's: no copilot mode bounds it.
            mode=CopilotMode.LAB_AUTOMATION_ASSISTANT,
            abort=AbortToken(),
            credentials=session.caller.token,
            approval=ApprovalPolicy.NEVER,
        )
        clicked = ApprovalDecision(True, user_id=session.user_id, comment="Undo from the page")
        decision = clicked.bound(call_digest(call.name, arguments))  # this rollback only
        result = await ToolGate(tools).call(call, context, decision=decision)
        log.info("restore_point_rolled_back", restore_point_id=point_id, status=result.status.value)
        return RollbackReply.from_output(result.status.value, result.output)
