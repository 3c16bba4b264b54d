"""Rolling back exactly one change: what its restore point recorded that it did.

The record (the point's typed ``change``) is planned against the lab as it is now
(:func:`~adapters.gns3.restore._undo.plan_undo`): what the change made is deleted, what it
deleted is made again from its saved JSON, what it changed is set back; what others did
since stays. A plan with conflicts is refused before anything is touched (``status``
``conflict`` with the ``conflicts``, and ``would_also_touch``: the extra nodes and links a
confirmed rollback touches); with ``force`` it is carried out, extras included. With
``partial`` (a verified change whose check failed: the change must not stay because of
what others did since) it is carried out without the extras: everything of the change
that does not conflict is undone, each conflict is left as it is and said (``not
undone: …`` among the differences, status ``partial_success``).

Then the devices the point kept get their configuration back (their startup files, and
the running configuration over the console when they run), on their current node (ids
followed through the session's id maps). Ids GNS3 gave anew are kept with the point
(its ``id_map``) so that the session's other restore points keep finding what they
name.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import replace
from typing import Any

from adapters.gns3.lab import CallScope, LabAccess, LabSnapshot
from adapters.gns3.restore._devices import line_conflicts, overall_status, restore_device
from adapters.gns3.restore._undo import Gns3TopologyPort, UndoPlan, carry_out, plan_undo
from adapters.gns3.restore._undo.plan import without_extras
from adapters.gns3.restore._undo.record import kept_drawing, kept_link, kept_node, port_names
from copilot_core.errors import CopilotError
from copilot_core.ports import (
    ChangeRecord,
    RestorePoint,
    RollbackConflict,
    RollbackResult,
    RollbackStatus,
    RolledBackItem,
)

__all__ = ["has_change_record", "id_maps", "roll_back_change", "scoped_plan"]

JSON = dict[str, Any]


def has_change_record(point: RestorePoint) -> bool:
    return point.change is not None


async def id_maps(lab: LabAccess, scope: CallScope) -> dict[str, str]:
    """Every id GNS3 changed in an undo of this session: old id -> new id."""
    if lab.restore_points is None:
        return {}
    merged: dict[str, str] = {}
    try:
        points = await lab.restore_points.restore_points(scope.project_id, scope.context.session_id)
    except CopilotError:
        return merged
    for point in points:
        merged.update(point.id_map)
    return merged


def _kept_devices(point: RestorePoint) -> dict[str, str]:
    devices = point.kept.get("devices") or {}
    return {
        str(entry["node_id"]): str(name)
        for name, entry in devices.items()
        if isinstance(entry, dict) and entry.get("node_id") and entry.get("captured")
    }


async def _current(
    lab: LabAccess, scope: CallScope, change: ChangeRecord
) -> tuple[JSON, LabSnapshot]:
    """The lab now, read once: as the plan reads it (kept JSON by id) and as the devices'
    restore reads it. Drawings are read only when the change touched some."""
    snapshot = await lab.snapshot(scope)
    drawings: list[JSON] = []
    if change.drawings:
        drawings = await lab.client.drawings(scope.token, scope.project_id)
    ports = port_names(snapshot.nodes)
    current = {
        "nodes": {str(n.get("node_id")): kept_node(n) for n in snapshot.nodes},
        "links": {str(k.get("link_id")): kept_link(k, ports) for k in snapshot.links},
        "drawings": {str(d.get("drawing_id")): kept_drawing(d) for d in drawings},
    }
    return current, snapshot


async def scoped_plan(
    lab: LabAccess, scope: CallScope, point: RestorePoint
) -> tuple[UndoPlan, dict[str, str], LabSnapshot]:
    """The plan of undoing ``point``'s change on the lab as it is now, the id map, and the
    lab as read for it."""
    change = point.change
    if change is None:
        raise ValueError(f"restore point {point.id} records no change")
    known, (current, snapshot) = await asyncio.gather(
        id_maps(lab, scope), _current(lab, scope, change)
    )
    plan = plan_undo(change, current, known, kept_devices=_kept_devices(point))
    return plan, known, snapshot


def _typed(plan: UndoPlan, on_devices: list[RollbackConflict]) -> tuple[RollbackConflict, ...]:
    """The plan's conflicts as values: a device's lines name the device."""
    device = {conflict.description: conflict.device for conflict in on_devices}
    return tuple(RollbackConflict(line, device=device.get(line)) for line in plan.conflicts)


def _conflict(plan: UndoPlan, on_devices: list[RollbackConflict]) -> RollbackResult:
    extra = [step.line for step in plan.steps if step.extra]
    return RollbackResult(
        RollbackStatus.CONFLICT,
        conflicts=_typed(plan, on_devices),
        would_also_touch=tuple(extra),
        error="Not undone: undoing this change would also touch what was done since ("
        + "; ".join(plan.conflicts)
        + "). Nothing was changed; roll back with force to undo it anyway"
        + (f", which also does: {'; '.join(extra)}." if extra else "."),
    )


async def roll_back_change(
    lab: LabAccess, scope: CallScope, point: RestorePoint, *, force: bool, partial: bool = False
) -> RollbackResult:
    """Undo ``point``'s change and nothing else (see the module docstring)."""
    plan, known, snapshot = await scoped_plan(lab, scope, point)
    devices: JSON = point.kept.get("devices") or {}
    # A device's lines of the change that were changed again since conflict too (read
    # now, before anything is touched).
    on_devices = await line_conflicts(lab, snapshot, devices, plan.devices)
    line_conflicting = [conflict.description for conflict in on_devices]
    plan.conflicts += line_conflicting
    if plan.conflicts and not force and not partial:
        return _conflict(plan, on_devices)
    if partial and not force:
        # A device's conflicts are said by its own result (``not undone: …``).
        plan = without_extras(plan)
        plan.skipped = [c for c in plan.skipped if c not in line_conflicting]
    items: list[RolledBackItem] = []
    outcome = await carry_out(
        plan, Gns3TopologyPort(lab.client, scope.token, scope.project_id), known
    )
    skipped = [f"not undone: {why}" for why in plan.skipped] if partial else plan.skipped
    differences = outcome.differences + (skipped if force or partial else [])
    if plan.steps or outcome.problems or differences:
        exact = not differences and not outcome.problems
        output: JSON = {
            "state": "as before the change" if exact else "differs from before the change",
            "actions": outcome.actions,
        }
        if differences:
            output["differences"] = differences
        extra = [step.line for step in plan.steps if step.extra]
        if extra:
            output["also_touched"] = extra
        if plan.notes:
            output["notes"] = plan.notes
        status = (
            RollbackStatus.SUCCESS
            if exact
            else RollbackStatus.PARTIAL_SUCCESS
            if outcome.actions
            else RollbackStatus.FAILED
        )
        items.append(
            RolledBackItem("topology", status, output, error="; ".join(outcome.problems) or None)
        )
    mapped = {**known, **outcome.id_map}
    if outcome.id_map and lab.restore_points is not None:
        id_map = {**point.id_map, **outcome.id_map}
        with contextlib.suppress(CopilotError):  # done; later points then find less
            await lab.restore_points.update_restore_point(replace(point, id_map=id_map))
    wanted = {
        name: {**entry, "node_id": mapped.get(str(entry["node_id"]), entry["node_id"])}
        for name, entry in devices.items()
        if entry.get("captured") and str(entry.get("node_id")) in plan.devices
    }
    if wanted:
        if plan.steps:  # read again: nodes were made again, started
            snapshot = await lab.snapshot(scope)
        items += await asyncio.gather(
            *(
                restore_device(lab, scope, snapshot, name, entry, by_name=False)
                for name, entry in wanted.items()
            )
        )
    if not items:
        notes = plan.notes or ["nothing to undo: the lab is as before the change"]
        items.append(
            RolledBackItem(
                "topology",
                RollbackStatus.SUCCESS,
                {"state": "as before the change", "actions": [], "notes": notes},
            )
        )
    # Conflicts gone past (``force``), or left as they are: the rest was undone.
    return RollbackResult(
        overall_status(items),
        tuple(items),
        conflicts=_typed(plan, on_devices),
        forced=bool(plan.conflicts) and force,
    )
