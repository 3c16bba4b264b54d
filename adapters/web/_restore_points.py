"""Restore points of a session, for the page: list them, preview and roll one back
("Undo this change").

Two-line handlers over the core's :class:`~copilot_core.rollback.Rollback` use case, which
applies the operator's policy (403), checks that the session is the caller's (404
otherwise, as for a session that does not exist), claims the session as a turn does (409
while a turn or another rollback runs), rolls back through the lab's ``RestorePoints`` with
the caller's click as the approval, and records the rollback in the session's history.
501 when the deployment has none. The typed result becomes JSON here.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from litestar import Controller, get, post
from litestar.params import PathParameter, QueryParameter
from litestar.status_codes import HTTP_200_OK

from adapters.web._ids import UUID_PATTERN, canonical_uuid
from adapters.web._openapi import errors
from adapters.web._scopes import SessionScope, ids_in_path, scopes
from adapters.web._state import Injected
from copilot_core.policy import UNLIMITED, UserLimits
from copilot_core.ports import RestorePoint, RollbackResult
from copilot_core.rollback import Rollback, RollbackRequest

__all__ = ["PreviewBody", "RestorePointBody", "RestorePointController", "RollbackReply"]

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
        "stopped: the whole project returns to that moment, what others did since "
        "included. False (the default): undo the change by itself."
    ),
]
Force = Annotated[
    bool,
    QueryParameter(
        description="Undo the change even where it conflicts with what was done since "
        "(e.g. a link someone made to a node the change created); the preview lists every "
        "extra node and link it then touches. False: such a rollback is refused (409) "
        "before anything is changed."
    ),
]
Full = Annotated[bool, QueryParameter(description="Include each restore point's state.")]


def _request(
    session: SessionScope,
    point_id: str,
    *,
    use_snapshot: bool = False,
    force: bool = False,
    limits: UserLimits = UNLIMITED,
) -> RollbackRequest:
    return RollbackRequest(
        session.key,
        canonical_uuid(point_id),
        credentials=session.caller.token,
        use_snapshot=use_snapshot,
        force=force,
        by=session.caller.principal.username or None,
        limits=limits,
    )


# ------------------------------------------------------------------- responses
class RestorePointBody(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A restore point: what it was taken before, and what it holds.

    ``devices``, ``topology``, ``gns3_snapshot``, ``change`` and ``rolled_back`` are the
    point's typed fields; ``state``, the GNS3 tools' own JSON (the point's ``kept``, see
    docs/gns3.md), comes only with ``?full=true``.
    """

    id: str
    created_at: str
    tool_call_id: str
    tool_name: str
    summary: str
    devices: list[str]
    topology: bool
    gns3_snapshot: str | None
    #: What the change did, by name: nodes and links it created, deleted or changed, and
    #: the devices it configured (absent for a point whose change did not run).
    change: dict[str, Any] | None = None
    #: Set once the point was rolled back: ``{at, by, status, tool_call_id,
    #: restore_point_id}`` (the latter: the point taken before the rollback).
    rolled_back: dict[str, Any] | None = None
    state: dict[str, Any] | None = None

    @classmethod
    def from_point(cls, point: RestorePoint, *, full: bool) -> RestorePointBody:
        return cls(
            id=point.id,
            created_at=point.created_at.isoformat(),
            tool_call_id=point.tool_call_id,
            tool_name=point.tool_name,
            summary=point.summary,
            devices=sorted(point.devices),
            topology=point.topology,
            gns3_snapshot=point.snapshot,
            change=None if point.change is None else point.change.described.to_json(),
            rolled_back=None if point.rolled_back is None else point.rolled_back.to_json(),
            state=dict(point.kept) if full else None,
        )


class PreviewBody(msgspec.Struct, kw_only=True):
    """What a rollback would change: per device, what is put back; for the topology,
    one line per node and link it creates, deletes or changes, by name."""

    summary: str
    devices: dict[str, list[str]]
    topology: list[str]


class RollbackReply(msgspec.Struct, kw_only=True, omit_defaults=True):
    """What the rollback did: per device and for the topology, the state read back."""

    #: The tool call's status: ``success`` unless it failed as a whole (``error``).
    tool_status: Literal["success", "error", "aborted", "rejected"]
    #: ``success``, ``partial_success`` or ``failed`` over the items; ``error`` when the
    #: call failed as a whole (see ``error``).
    status: str
    #: One per device and one ``topology``: ``{device_name, status, output: {state:
    #: "as at the restore point" | "differs from the restore point" | "as before the
    #: change" | "differs from before the change", …}, error?}``.
    results: list[dict[str, Any]] = msgspec.field(default_factory=list)
    rolled_back_to: dict[str, Any] | None = None
    notes: dict[str, Any] | None = None
    #: The restore point taken just before this rollback: rolling it back undoes it.
    restore_point_id: str | None = None
    error: str | None = None

    @classmethod
    def from_result(cls, result: RollbackResult) -> RollbackReply:
        return cls(
            tool_status=result.tool_status.value,
            status=result.status.value,
            results=[item.to_json() for item in result.items],
            rolled_back_to=result.rolled_back_to.to_json() if result.rolled_back_to else None,
            notes=dict(result.notes) or None,
            restore_point_id=result.restore_point_id,
            error=result.error,
        )


# ------------------------------------------------------------------ controller
class RestorePointController(Controller):
    path = "/projects/{project_id:str}/chat/sessions/{session_id:str}/restore-points"
    tags = ["restore points"]  # noqa: RUF012 - Litestar's declared attribute
    dependencies = {  # noqa: RUF012 - Litestar's declared attribute
        **scopes(),
    }
    guards = [ids_in_path]  # noqa: RUF012 - Litestar's declared attribute

    @get("/", operation_id="listRestorePoints", responses=errors(404, 409, 501))
    async def list_points(
        self,
        visible_session: Injected[SessionScope],
        rollback: Injected[Rollback],
        full: Full = False,
    ) -> list[RestorePointBody]:
        """The session's restore points, oldest first: each was taken just before a
        change the user approved (its ``tool_call_id`` is that change's call); one that
        was rolled back says so (``rolled_back``). Also of a closed project."""
        points = await rollback.points(visible_session.key)
        return [RestorePointBody.from_point(point, full=full) for point in points]

    @get(
        "/{restore_point_id:str}/preview",
        operation_id="previewRollback",
        responses=errors(404, 409, 501),
    )
    async def preview(
        self,
        session: Injected[SessionScope],
        restore_point_id: PointId,
        rollback: Injected[Rollback],
        use_snapshot: UseSnapshot = False,
        force: Force = False,
    ) -> PreviewBody:
        """What rolling the restore point back would change: every node, link and
        device by name, and what it would conflict with."""
        preview = await rollback.preview(
            _request(session, restore_point_id, use_snapshot=use_snapshot, force=force)
        )
        return PreviewBody(**preview.to_dict())

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
        rollback: Injected[Rollback],
        limits: Injected[UserLimits],
        use_snapshot: UseSnapshot = False,
        force: Force = False,
    ) -> RollbackReply:
        """Undo a change: what it created is deleted, what it deleted is made again as it
        was (properties, links, device configuration), what it changed is set back, and
        nothing else; then it is read back and compared.

        Only the session's owner may (404 to anyone else); refused (409) while a turn or
        another rollback runs on the session, and when the undo conflicts with what was
        done since (unless ``force``). The click is the approval: a restore point of what
        the rollback changes is taken first; the reply's ``restore_point_id`` names it.
        The rollback is recorded in the session's history. A caller whom the
        operator's policy keeps in teaching mode may not (403).
        """
        request = _request(
            session, restore_point_id, use_snapshot=use_snapshot, force=force, limits=limits
        )
        return RollbackReply.from_result((await rollback(request)).result)
