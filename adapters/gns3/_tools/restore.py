"""The ``restore_point`` tool: a session's restore points, listed and rolled back.

Taking a restore point and recording what its change did is
:mod:`adapters.gns3._tools.restore_take`. Rolling one back (:func:`roll_back`):

* a point that records what its change did (every point taken since change records
  exist) is undone by itself, :mod:`adapters.gns3._tools.restore_scoped`: what the change
  made is deleted, what it deleted is made again as it was, what it changed is set back,
  and nothing else; a conflict with what was done since stops it before anything is
  touched, unless ``force`` (go on, touching what is in the way) or ``partial`` (a
  verified change's rollback: go on, leaving what conflicts as it is);
* with ``use_snapshot``, the GNS3 snapshot the point holds is restored when every node is
  stopped (the whole project returns to that moment, others' work included), then the
  topology is put back by difference; the ids GNS3 gives everything anew are mapped;
* an older point without a record puts the whole topology back by difference
  (:mod:`adapters.gns3._topology_state`).

Then each device's configuration is put back by the commands its platform needs, each is
read back, and the result says, per device and for the topology, whether it is as it was.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import Field, model_validator

from adapters.gns3._tools.registry import (
    AUTOMATION_ONLY,
    CallScope,
    Gns3Tool,
    LabAccess,
    RestoreScope,
    ToolArguments,
)
from adapters.gns3._tools.restore_devices import restore_device
from adapters.gns3._tools.restore_scoped import has_change_record, roll_back_change
from adapters.gns3._tools.restore_take import (
    NoConversationError,
    RestorePointError,
    restore_point_notes,
    take_restore_point,
)
from adapters.gns3._tools.results import batch, item
from adapters.gns3._tools.rollback_preview import CONFLICT, rollback_plan
from adapters.gns3._topology_state import restore_topology
from copilot_core import ToolResult
from copilot_core.errors import CopilotError, SessionNotFoundError
from copilot_core.ports import ChangePreview, RestorePoint, ToolEffect

__all__ = [
    "NoConversationError",
    "RestorePointError",
    "restore_tools",
    "roll_back",
    "take_restore_point",
]

JSON = dict[str, Any]


def _when(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _rolled_back_to(point: RestorePoint) -> JSON:
    return {
        "restore_point": point.id,
        "taken_at": point.created_at.isoformat(),
        "before": point.summary,
    }


async def roll_back(
    lab: LabAccess,
    scope: CallScope,
    point: RestorePoint,
    *,
    use_snapshot: bool = True,
    force: bool = False,
    partial: bool = False,
) -> ToolResult:
    """Put back what ``point`` kept, then read it back (see the module docstring).
    ``partial``: undo what does not conflict with what was done since and leave the
    conflicts as they are (a verified change's rollback), instead of refusing."""
    state = point.state
    items: list[JSON] = []
    notes: JSON = {}
    snapshot_info = state.get("gns3_snapshot")
    used_snapshot: str | None = None
    if snapshot_info and use_snapshot:
        used_snapshot, note = await _restore_snapshot(lab, scope, point, str(snapshot_info["name"]))
        if note:
            notes["gns3_snapshot"] = note
    elif snapshot_info:
        notes["gns3_snapshot"] = "not used (use_snapshot is false)"
    if used_snapshot is None and has_change_record(point):
        result = await roll_back_change(lab, scope, point, force=force, partial=partial)
        if not isinstance(result.output, dict) or result.output.get("status") == "conflict":
            return result
        scoped: JSON = {**result.output, "rolled_back_to": _rolled_back_to(point)}
        if notes:
            scoped["notes"] = notes
        return ToolResult(scoped, result.status)
    topology = state.get("topology")
    if isinstance(topology, dict):
        outcome = await restore_topology(lab.client, scope.token, scope.project_id, topology)
        output: JSON = {
            "state": "as at the restore point"
            if not outcome.differences
            else "differs from the restore point",
            "actions": outcome.actions,
        }
        if used_snapshot:
            output["gns3_snapshot_restored"] = used_snapshot
        if outcome.differences:
            output["differences"] = outcome.differences
        if not outcome.differences:
            status = "success"
        elif outcome.actions or used_snapshot:
            status = "partial_success"
        else:
            status = "failed"
        items.append(item("topology", status, output, error="; ".join(outcome.problems) or None))
    devices: JSON = state.get("devices") or {}
    if devices:
        snapshot = await lab.snapshot(scope)
        items += await asyncio.gather(
            *(restore_device(lab, scope, snapshot, name, entry) for name, entry in devices.items())
        )
    if not items:
        return ToolResult.error(f"Restore point {point.id} holds nothing to put back.")
    result = batch(list(items))
    body: JSON = dict(result.output)
    body["rolled_back_to"] = _rolled_back_to(point)
    if notes:
        body["notes"] = notes
    return ToolResult(body, result.status)


async def _restore_snapshot(
    lab: LabAccess, scope: CallScope, point: RestorePoint, name: str
) -> tuple[str | None, str | None]:
    """Restore the named GNS3 snapshot if every node is stopped: (name used, note). GNS3
    gives every node and link a new id: old -> new is kept with the point, by names."""
    try:
        nodes = await lab.client.nodes(scope.token, scope.project_id)
        running = sorted(str(n.get("name")) for n in nodes if n.get("status") != "stopped")
        if running:
            return None, (
                f"not restored: {', '.join(running)} run(s) now and restoring it would stop "
                "them; the topology was put back by difference instead"
            )
        found = next(
            (
                s
                for s in await lab.client.snapshots(scope.token, scope.project_id)
                if s.get("name") == name
            ),
            None,
        )
        if found is None:
            return None, f"{name} no longer exists; the topology was put back by difference"
        links = await lab.client.links(scope.token, scope.project_id)
        await lab.client.restore_snapshot(scope.token, scope.project_id, str(found["snapshot_id"]))
        await _keep_new_ids(lab, scope, point, nodes, links)
    except CopilotError as exc:
        return None, f"not restored: {exc.message}"
    return name, None


def _link_keys(nodes: list[JSON], links: list[JSON]) -> dict[frozenset[tuple[str, int, int]], str]:
    names = {str(n.get("node_id")): str(n.get("name")) for n in nodes}
    return {
        frozenset(
            (
                names.get(str(e.get("node_id")), ""),
                int(e.get("adapter_number", -1)),
                int(e.get("port_number", -1)),
            )
            for e in link.get("nodes") or []
        ): str(link.get("link_id"))
        for link in links
    }


async def _keep_new_ids(
    lab: LabAccess, scope: CallScope, point: RestorePoint, nodes: list[JSON], links: list[JSON]
) -> None:
    """After a snapshot restore: each node's and link's new id, by name and by ends."""
    if lab.restore_points is None:
        return
    now_nodes = await lab.client.nodes(scope.token, scope.project_id)
    now_links = await lab.client.links(scope.token, scope.project_id)
    by_name = {str(n.get("name")): str(n.get("node_id")) for n in now_nodes}
    # The project returns to the snapshot's moment: a node is found by its name then (the
    # point's topology; renamed since, it has another name now), else by its name now.
    named_then = {
        str(n.get("node_id")): str(n.get("name"))
        for n in (point.state.get("topology") or {}).get("nodes") or []
    }
    id_map: dict[str, str] = {}
    for node in nodes:
        old = str(node.get("node_id"))
        new = by_name.get(named_then.get(old, "")) or by_name.get(str(node.get("name")))
        if new is not None and new != old:
            id_map[old] = new
    renamed = [{**n, "name": named_then.get(str(n.get("node_id")), n.get("name"))} for n in nodes]
    then, now = _link_keys(renamed, links), _link_keys(now_nodes, now_links)
    id_map.update(
        {then[key]: now[key] for key in then.keys() & now.keys() if then[key] != now[key]}
    )
    if id_map:
        merged = {**(point.state.get("id_map") or {}), **id_map}
        await lab.restore_points.update_restore_point(
            replace(point, state={**point.state, "id_map": merged})
        )


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
    state = point.state
    devices = state.get("devices") or {}
    kept = sorted(name for name, e in devices.items() if e.get("captured"))
    described: JSON = {
        "restore_point_id": point.id,
        "taken_at": point.created_at.isoformat(),
        "before": f"{point.tool_name}: {point.summary}",
        "tool_call_id": point.tool_call_id,
        "devices": kept,
        "topology": "topology" in state,
        "gns3_snapshot": (state.get("gns3_snapshot") or {}).get("name"),
    }
    change = state.get("change")
    if isinstance(change, dict) and change.get("described"):
        described["change"] = change["described"]
    if state.get("rolled_back"):
        described["rolled_back"] = state["rolled_back"]
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
    return await roll_back(lab, scope, point, use_snapshot=args.use_snapshot, force=args.force)


async def _rollback_preview(
    lab: LabAccess, args: RestorePointAction, scope: CallScope
) -> ChangePreview | None:
    """What the rollback will send to each device and change in the topology, read now
    (:mod:`adapters.gns3._tools.rollback_preview`)."""
    if args.action != "rollback" or lab.restore_points is None:
        return None
    point = await lab.restore_points.restore_point(
        scope.project_id, scope.context.session_id, str(args.restore_point_id).strip()
    )
    if point is None:
        return None
    when = _when(point.created_at)
    return await rollback_plan(
        lab, scope, point, when, use_snapshot=args.use_snapshot, force=args.force
    )


def _rollback_scope(args: RestorePointAction, preview: ChangePreview) -> RestoreScope | None:
    # What a rollback changes is kept too, so that it can itself be undone; a device
    # whose configuration cannot be read now does not stop the rollback. One that will
    # be refused for its conflicts changes nothing: no restore point.
    if not args.force and any(line.startswith(CONFLICT) for line in preview.topology):
        return None
    return RestoreScope(nodes=tuple(preview.devices), topology=bool(preview.topology))


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
