"""Rolling a restore point back, and ``Gns3RestorePoints``: the core's
:class:`~copilot_core.ports.RestorePoints` port over GNS3.

Taking a restore point and recording what its change did is
:mod:`adapters.gns3.restore._take`; the preview of a rollback,
:mod:`adapters.gns3.restore._preview`. Rolling one back (:func:`roll_back`):

* a point that records what its change did (every point taken since change records
  exist) is undone by itself, :mod:`adapters.gns3.restore._scoped`: what the change
  made is deleted, what it deleted is made again as it was, what it changed is set back,
  and nothing else; a conflict with what was done since stops it before anything is
  touched, unless ``force`` (go on, touching what is in the way) or ``partial`` (a
  verified change's rollback: go on, leaving what conflicts as it is);
* with ``use_snapshot``, the GNS3 snapshot the point holds is restored when every node is
  stopped (the whole project returns to that moment, others' work included), then the
  topology is put back by difference; the ids GNS3 gives everything anew are mapped;
* an older point without a record puts the whole topology back by difference
  (:mod:`adapters.gns3.restore._topology_state`).

Then each device's configuration is put back by the commands its platform needs, each is
read back, and the typed :class:`~copilot_core.ports.RollbackResult` says, per device and
for the topology, whether it is as it was.

:class:`Gns3RestorePoints` is the one implementation of the feature: the core's undo
(:class:`~copilot_core.rollback.Rollback`) calls it as a port, the ``restore_point`` tool
(:mod:`adapters.gns3.tools._restore`) rolls back with it and makes its result JSON, and the
executor's approved changes take their restore points the same way
(:func:`~adapters.gns3.restore._take.keep_then`).
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from adapters.gns3.lab import CallScope, LabAccess, RestoreScope
from adapters.gns3.restore._devices import overall_status, restore_device
from adapters.gns3.restore._preview import CONFLICT, rollback_plan
from adapters.gns3.restore._scoped import has_change_record, roll_back_change
from adapters.gns3.restore._take import (
    RestorePointError,
    keep_then,
    take_restore_point,
    without_a_way_back,
)
from adapters.gns3.restore._topology_state import restore_topology
from copilot_core import ToolContext
from copilot_core.errors import CopilotError, RestorePointNotTakenError
from copilot_core.ports import (
    ApprovalDecision,
    ChangePreview,
    FunctionCall,
    RestorePoint,
    RollbackOptions,
    RollbackResult,
    RollbackStatus,
    RolledBack,
    RolledBackItem,
    RolledBackTo,
)

__all__ = ["ROLLBACK_TOOL", "Gns3RestorePoints", "roll_back", "rollback_scope", "when"]

JSON = dict[str, Any]

#: The tool the model rolls back with: the history records a user's rollback as its call.
ROLLBACK_TOOL = "restore_point"


def when(moment: datetime) -> str:
    """When a point was taken, as previews and results say it."""
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


async def roll_back_verified(
    lab: LabAccess, scope: CallScope, point: RestorePoint, tool_call_id: str
) -> RollbackResult:
    """A verified change whose check failed, undone: what it did, except what conflicts
    with what was done since (``partial``), and its point marked rolled back by
    ``verification`` (the call ``tool_call_id``)."""
    result = await roll_back(lab, scope, point, use_snapshot=False, partial=True)
    store = lab.restore_points
    if store is not None:
        current = await store.restore_point(point.project_id, point.session_id, point.id)
        mark = RolledBack(
            at=lab.clock.now(), by="verification", status=result.status, tool_call_id=tool_call_id
        )
        await store.update_restore_point(replace(current or point, rolled_back=mark))
    return result


async def roll_back(
    lab: LabAccess,
    scope: CallScope,
    point: RestorePoint,
    *,
    use_snapshot: bool = True,
    force: bool = False,
    partial: bool = False,
) -> RollbackResult:
    """Put back what ``point`` kept, then read it back (see the module docstring).
    ``partial``: undo what does not conflict with what was done since and leave the
    conflicts as they are (a verified change's rollback), instead of refusing."""
    kept = point.kept
    items: list[RolledBackItem] = []
    notes: dict[str, str] = {}
    used_snapshot: str | None = None
    if point.snapshot and use_snapshot:
        used_snapshot, note = await _restore_snapshot(lab, scope, point, point.snapshot)
        if note:
            notes["gns3_snapshot"] = note
    elif point.snapshot:
        notes["gns3_snapshot"] = "not used (use_snapshot is false)"
    if used_snapshot is None and has_change_record(point):
        result = await roll_back_change(lab, scope, point, force=force, partial=partial)
        if result.status is RollbackStatus.CONFLICT:
            return result
        return replace(result, rolled_back_to=RolledBackTo.of(point), notes=notes)
    topology = kept.get("topology")
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
            status = RollbackStatus.SUCCESS
        elif outcome.actions or used_snapshot:
            status = RollbackStatus.PARTIAL_SUCCESS
        else:
            status = RollbackStatus.FAILED
        items.append(
            RolledBackItem("topology", status, output, error="; ".join(outcome.problems) or None)
        )
    devices: JSON = kept.get("devices") or {}
    if devices:
        snapshot = await lab.snapshot(scope)
        items += await asyncio.gather(
            *(restore_device(lab, scope, snapshot, name, entry) for name, entry in devices.items())
        )
    if not items:
        return RollbackResult.failure(f"Restore point {point.id} holds nothing to put back.")
    return RollbackResult(
        overall_status(items), tuple(items), rolled_back_to=RolledBackTo.of(point), notes=notes
    )


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
        for n in (point.kept.get("topology") or {}).get("nodes") or []
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
        merged = {**point.id_map, **id_map}
        await lab.restore_points.update_restore_point(replace(point, id_map=merged))


def rollback_scope(options: RollbackOptions, preview: ChangePreview) -> RestoreScope | None:
    """What the restore point taken before a rollback keeps: what a rollback changes is
    kept too, so that it can itself be undone; a device whose configuration cannot be
    read now does not stop the rollback. One that will be refused for its conflicts
    changes nothing: no restore point (``None``)."""
    if not options.force and any(line.startswith(CONFLICT) for line in preview.topology):
        return None
    return RestoreScope(nodes=tuple(preview.devices), topology=bool(preview.topology))


class Gns3RestorePoints:
    """The restore feature over one :class:`LabAccess` (its GNS3 client, consoles and
    restore-point store): the core's ``RestorePoints`` port (see the module docstring)."""

    def __init__(self, lab: LabAccess) -> None:
        self.lab = lab

    def as_tool_call(self, point_id: str, options: RollbackOptions) -> FunctionCall:
        arguments = {
            "action": "rollback",
            "restore_point_id": point_id,
            "use_snapshot": options.use_snapshot,
            "force": options.force,
        }
        return FunctionCall(name=ROLLBACK_TOOL, arguments=json.dumps(arguments))

    async def take(
        self, context: ToolContext, *, tool_call_id: str, tool_name: str, preview: ChangePreview
    ) -> RestorePoint:
        """A restore point of every device the preview lists and, when it lists topology
        changes, of the topology (``RestorePointNotTakenError`` when it cannot be kept)."""
        try:
            return await take_restore_point(
                self.lab,
                _scope(context),
                RestoreScope.of(preview),
                tool_call_id=tool_call_id,
                tool_name=tool_name,
                preview=preview,
            )
        except RestorePointError as exc:
            raise RestorePointNotTakenError(f"No restore point could be taken: {exc}") from exc

    async def preview(
        self, point: RestorePoint, options: RollbackOptions, context: ToolContext
    ) -> ChangePreview:
        return await rollback_plan(
            self.lab,
            _scope(context),
            point,
            when(point.created_at),
            use_snapshot=options.use_snapshot,
            force=options.force,
        )

    async def roll_back(
        self,
        point: RestorePoint,
        options: RollbackOptions,
        context: ToolContext,
        *,
        approval: ApprovalDecision,
        tool_call_id: str,
    ) -> RollbackResult:
        """The approved rollback: the preview read now sizes the restore point taken first
        (:func:`rollback_scope`: none for a rollback its conflicts will refuse, nor when
        the lab cannot be read), then :meth:`undo`, then what it did is recorded with the
        new point, exactly as the executor makes any approved change."""
        if not context.credentials:
            return RollbackResult.failure(
                "No GNS3 credentials came with this request; the rollback cannot act on GNS3."
            )
        scope = _scope(context)
        try:
            preview: ChangePreview | None = await self.preview(point, options, context)
        except CopilotError:
            preview = None
        what = None if preview is None else rollback_scope(options, preview)
        if preview is None or what is None:  # nothing a restore point could keep
            return await self.undo(point, options, scope)
        kept = await keep_then(
            self.lab,
            scope,
            what,
            lambda: self.undo(point, options, scope),
            tool_call_id=tool_call_id,
            tool_name=ROLLBACK_TOOL,
            preview=preview,
        )
        if kept.result is None:
            return RollbackResult.failure(without_a_way_back("Not rolled back", kept.refused or ""))
        return replace(
            kept.result,
            restore_point_id=kept.point.id if kept.point is not None else None,
            restore_point_notes=tuple(kept.notes),
        )

    async def undo(
        self, point: RestorePoint, options: RollbackOptions, scope: CallScope
    ) -> RollbackResult:
        """The rollback itself (:func:`roll_back`), without a restore point of its own:
        the ``restore_point`` tool's, whose restore point the executor takes."""
        return await roll_back(
            self.lab, scope, point, use_snapshot=options.use_snapshot, force=options.force
        )


def _scope(context: ToolContext) -> CallScope:
    return CallScope(context, context.credentials or "")
