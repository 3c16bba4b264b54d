"""Restore points of a session, for the page: list them, roll one back ("Undo this change").

Thin calls into the core: the session must be the caller's
(:meth:`~copilot_core.ChatService.get_session`: 404 otherwise, as for a session that does
not exist); the list comes from the :class:`~copilot_core.ports.RestorePointStore`; a
rollback is the ``restore_point`` tool's ``rollback``, run through a
:class:`~copilot_core.ToolGate` over the service's
:class:`~copilot_core.ports.ToolExecutor` with the caller's click as the approval (the
executor takes a restore point of what the rollback changes first, so it can be undone in
turn). It is refused (409) while a turn runs on the session.
"""

from __future__ import annotations

import contextlib
import json
import uuid
from typing import Annotated, Any

import structlog
from litestar import Controller, get, post
from litestar.di import NamedDependency
from litestar.exceptions import HTTPException
from litestar.params import Body, PathParameter, QueryParameter
from litestar.status_codes import HTTP_200_OK, HTTP_501_NOT_IMPLEMENTED
from pydantic import BaseModel, ConfigDict, Field

from adapters.web._auth import Caller
from adapters.web._contracts import WebDependencies
from adapters.web._openapi import errors
from adapters.web._schemas import ID_PATTERN
from copilot_core import AbortToken, ToolGate
from copilot_core.approvals import ApprovalDecision, ApprovalPolicy
from copilot_core.errors import NotFoundError, ProjectNotOpenedError, SessionBusyError
from copilot_core.ports import RestorePoint, RestorePointStore, ToolExecutor
from copilot_core.session import CopilotMode
from copilot_core.tools import ParsedToolCall, ToolContext

__all__ = ["RestorePointController", "RollbackRequest"]

log = structlog.get_logger("adapters.web")

ProjectId = Annotated[
    str, PathParameter(pattern=ID_PATTERN, description="The GNS3 project's id (a UUID).")
]
SessionId = Annotated[str, PathParameter(pattern=ID_PATTERN, description="The session's id.")]
PointId = Annotated[str, PathParameter(pattern=ID_PATTERN, description="The restore point's id.")]

#: The tool that rolls a restore point back (the GNS3 executor's).
ROLLBACK_TOOL = "restore_point"


class RollbackRequest(BaseModel):
    """How to roll back (the body is optional)."""

    model_config = ConfigDict(extra="forbid")

    use_snapshot: bool = Field(
        default=True,
        description="Restore the GNS3 snapshot the restore point holds when every node is "
        "stopped (the whole project returns to that moment); false: undo the topology "
        "change by itself.",
    )


def _store(deps: WebDependencies) -> RestorePointStore:
    if deps.restore_points is None:
        raise HTTPException(
            status_code=HTTP_501_NOT_IMPLEMENTED,
            detail="This deployment keeps no restore points.",
        )
    return deps.restore_points


def _tools(deps: WebDependencies) -> ToolExecutor:
    if deps.tools is None:
        raise HTTPException(
            status_code=HTTP_501_NOT_IMPLEMENTED,
            detail="This deployment cannot roll changes back.",
        )
    return deps.tools


def describe(point: RestorePoint, *, full: bool = False) -> dict[str, Any]:
    """A restore point for the page: what it was taken before and what it holds.

    ``devices``, ``topology`` and ``gns3_snapshot`` read the GNS3 executor's state
    (``docs/gns3.md``); ``state`` itself only with ``full``.
    """
    state = point.state
    devices = state.get("devices") if isinstance(state.get("devices"), dict) else {}
    snapshot = state.get("gns3_snapshot")
    body: dict[str, Any] = {
        "id": point.id,
        "created_at": point.created_at.isoformat(),
        "tool_call_id": point.tool_call_id,
        "tool_name": point.tool_name,
        "summary": point.summary,
        "devices": sorted(
            name for name, entry in (devices or {}).items() if dict(entry).get("captured")
        ),
        "topology": "topology" in state,
        "gns3_snapshot": snapshot.get("name") if isinstance(snapshot, dict) else None,
    }
    if full:
        body["state"] = dict(state)
    return body


class RestorePointController(Controller):
    path = "/projects/{project_id:str}/chat/sessions/{session_id:str}/restore-points"
    tags = ["restore points"]  # noqa: RUF012 - Litestar's declared attribute

    @get(
        "/",
        operation_id="listRestorePoints",
        responses=errors(401, 404, 501),
    )
    async def list_points(
        self,
        project_id: ProjectId,
        session_id: SessionId,
        caller: NamedDependency[Caller],
        deps: NamedDependency[WebDependencies],
        full: Annotated[bool, QueryParameter(description="Include each point's state.")] = False,
    ) -> list[dict[str, Any]]:
        """The session's restore points, oldest first: each taken before a change the
        user approved (its ``tool_call_id`` is that change's call), with what it holds."""
        store = _store(deps)
        structlog.contextvars.bind_contextvars(project_id=project_id, session_id=session_id)
        with contextlib.suppress(ProjectNotOpenedError):  # a closed project's can be read
            await deps.projects.require_open(project_id, caller.token)
        await deps.chat.get_session(project_id, session_id, caller.user_id)
        points = await store.restore_points(project_id, session_id)
        return [describe(point, full=full) for point in points]

    @post(
        "/{restore_point_id:str}/rollback",
        operation_id="rollBackRestorePoint",
        status_code=HTTP_200_OK,
        responses=errors(400, 401, 404, 409, 501, 502, 503),
    )
    async def roll_back(
        self,
        project_id: ProjectId,
        session_id: SessionId,
        restore_point_id: PointId,
        caller: NamedDependency[Caller],
        deps: NamedDependency[WebDependencies],
        data: Annotated[RollbackRequest | None, Body()] = None,
    ) -> dict[str, Any]:
        """Undo a change: put back what the restore point holds, then read it back.

        Only the session's owner may (404 to anyone else). Refused with 409 while a turn
        runs on the session or when the project is not opened. The answer is the
        ``restore_point`` tool's result: ``status``, one entry per device and one for the
        topology (each with its ``state`` afterwards, read back), ``rolled_back_to``, and
        ``restore_point_id``: the restore point taken just before, which undoes this
        rollback.
        """
        store, tools = _store(deps), _tools(deps)
        structlog.contextvars.bind_contextvars(project_id=project_id, session_id=session_id)
        await deps.projects.require_open(project_id, caller.token)
        await deps.chat.get_session(project_id, session_id, caller.user_id)
        if await store.restore_point(project_id, session_id, restore_point_id) is None:
            raise NotFoundError(f"There is no restore point {restore_point_id!r} in this session.")
        if await deps.chat.runner.running(project_id, session_id):
            raise SessionBusyError(session_id)
        options = data or RollbackRequest()
        arguments = {
            "action": "rollback",
            "restore_point_id": restore_point_id,
            "use_snapshot": options.use_snapshot,
        }
        call = ParsedToolCall.parse(
            f"rollback-{uuid.uuid4().hex[:12]}", ROLLBACK_TOOL, json.dumps(arguments)
        )
        context = ToolContext(
            project_id=project_id,
            user_id=caller.user_id,
            session_id=session_id,
            # The user's own action on the page, not the agent's: no mode bounds it.
            mode=CopilotMode.LAB_AUTOMATION_ASSISTANT,
            abort=AbortToken(),
            credentials=caller.token,
            approval=ApprovalPolicy.NEVER,
            approved=ApprovalDecision(True, user_id=caller.user_id, comment="Undo from the page"),
        )
        result = await ToolGate(tools).call(call, context)
        log.info(
            "restore_point_rolled_back",
            restore_point_id=restore_point_id,
            status=result.status.value,
        )
        output = result.output if isinstance(result.output, dict) else {"output": result.output}
        return {"tool_status": result.status.value, **output}
