"""The ``restore_point`` tool: a session's restore points, listed and rolled back.

Taking a restore point and recording what its change did is
:mod:`adapters.gns3.restore._take`; rolling one back, the restore feature itself,
:mod:`adapters.gns3.restore._port` (``Gns3RestorePoints``, also the core's
``RestorePoints`` port): the tool rolls back with it and answers its typed result as JSON.
The executor takes the restore point of an approved rollback first, as for any change.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from adapters.gns3.lab import (
    AUTOMATION_ONLY,
    CallScope,
    Gns3Tool,
    LabAccess,
    RestoreScope,
    ToolArguments,
)
from adapters.gns3.restore import (
    Gns3RestorePoints,
    NoConversationError,
    RestorePointError,
    restore_point_notes,
    roll_back,
    rollback_scope,
    take_restore_point,
)
from copilot_core import ToolResult
from copilot_core.errors import SessionNotFoundError
from copilot_core.ports import (
    ChangePreview,
    RestorePoint,
    RollbackOptions,
    ToolEffect,
)

__all__ = [
    "NoConversationError",
    "RestorePointError",
    "restore_tools",
    "roll_back",
    "rollback_scope",
    "take_restore_point",
]

JSON = dict[str, Any]


# ========================================================================== the tool
class RestorePointAction(ToolArguments):
    action: Literal["list", "rollback"] = Field(
        description="list this conversation's restore points, or roll one back"
    )
    restore_point_id: str | None = Field(
        None, description="for rollback: the restore point's id (from list or a change's result)"
    )
    use_snapshot: bool = Field(
        False,
        description="for rollback: restore the GNS3 snapshot the restore point holds when "
        "every node is stopped (the whole project returns to that moment, what others did "
        "since included); false (the default): undo the change by itself",
    )
    force: bool = Field(
        False,
        description="for rollback: go on where undoing the change conflicts with what was "
        "done since (e.g. a link made since to a node the change created, which is then "
        "deleted too); false: such a rollback stops before changing anything and says why",
    )

    @model_validator(mode="after")
    def _an_id_to_roll_back(self) -> RestorePointAction:
        if self.action == "rollback" and not (self.restore_point_id or "").strip():
            raise ValueError("rollback needs restore_point_id (list shows them)")
        return self


def describe_point(point: RestorePoint) -> JSON:
    described: JSON = {
        "restore_point_id": point.id,
        "taken_at": point.created_at.isoformat(),
        "before": f"{point.tool_name}: {point.summary}",
        "tool_call_id": point.tool_call_id,
        "devices": sorted(point.devices),
        "topology": point.topology,
        "gns3_snapshot": point.snapshot,
    }
    change = None if point.change is None else point.change.described.to_json()
    if change:
        described["change"] = change
    if point.rolled_back is not None:
        described["rolled_back"] = point.rolled_back.to_json()
    notes = restore_point_notes(point)
    if notes:
        described["not_kept"] = notes
    return described


async def restore_points(lab: LabAccess, args: RestorePointAction, scope: CallScope) -> ToolResult:
    store = lab.restore_points
    if store is None:
        return ToolResult.error("This service keeps no restore points.")
    session = scope.context.session_id
    if args.action == "list":
        try:
            points = await store.restore_points(scope.project_id, session)
        except SessionNotFoundError:
            return ToolResult.error(
                "Restore points are kept with copilot conversations, and this call comes from "
                "outside one: there are none to list."
            )
        return ToolResult(
            {"status": "success", "restore_points": [describe_point(p) for p in points]}
        )
    point_id = str(args.restore_point_id).strip()
    point = await store.restore_point(scope.project_id, session, point_id)
    if point is None:
        return ToolResult.error(
            f"There is no restore point {point_id!r} in this conversation; "
            "restore_point with action list shows them."
        )
    # The core's rollback, the port's own; its typed result made JSON here, for the model.
    result = await Gns3RestorePoints(lab).undo(point, _options(args), scope)
    return ToolResult(result.to_json(), result.tool_status)


def _options(args: RestorePointAction) -> RollbackOptions:
    return RollbackOptions(use_snapshot=args.use_snapshot, force=args.force)


async def _rollback_preview(
    lab: LabAccess, args: RestorePointAction, scope: CallScope
) -> ChangePreview | None:
    """What the rollback will send to each device and change in the topology, read now
    (:mod:`adapters.gns3.restore._preview`)."""
    if args.action != "rollback" or lab.restore_points is None:
        return None
    point = await lab.restore_points.restore_point(
        scope.project_id, scope.context.session_id, str(args.restore_point_id).strip()
    )
    if point is None:
        return None
    return await Gns3RestorePoints(lab).preview(point, _options(args), scope.context)


def _rollback_scope(args: RestorePointAction, preview: ChangePreview) -> RestoreScope | None:
    return rollback_scope(_options(args), preview)


def restore_tools() -> list[Gns3Tool[Any]]:
    return [
        Gns3Tool(
            "restore_point",
            "Before every change the user approves, a restore point keeps what it changes "
            "(devices' configurations, the topology, a GNS3 snapshot when all nodes are "
            "stopped); each change's result names it (restore_point_id). action list shows "
            "this conversation's restore points and what each change did; action rollback "
            "undoes that change and nothing else (what it created is deleted, what it "
            "deleted is made again as it was, what it changed is set back; what anyone did "
            "since stays), or refuses with the conflicts when what was done since is in the "
            "way (force: go on, also touching what it lists), and says, per device and for "
            "the topology, whether each is as it was, read back.",
            RestorePointAction,
            restore_points,
            AUTOMATION_ONLY,
            effect=ToolEffect.TOPOLOGY_CHANGE,
            example={"action": "rollback", "restore_point_id": "3f0c…"},
            mutates_topology=True,
            describe=_rollback_preview,
            restores=_rollback_scope,
            checks_allowed=False,  # a rollback undoes a change; it is not itself verified
        )
    ]
