"""Restore points: taken before every approved change, and the ``restore_point`` tool.

:func:`take_restore_point` keeps, before an approved call runs, what the call will change
(:class:`~adapters.gns3._tools.registry.RestoreScope`): each touched device's
configuration read over its console (and a VPCS's saved ``startup.vpc``), the topology
as it was, and a GNS3 snapshot when every node is stopped (GNS3 refuses one otherwise).
It raises :class:`RestorePointError` when what the change needs cannot be kept: the
executor then does not make the change.

The ``restore_point`` tool lists a session's restore points and rolls one back
(:func:`roll_back`): the GNS3 snapshot is restored when there is one and every node is
stopped, the topology is put back by difference, each device's configuration is put back
by the commands its platform needs; then each is read back, and the result says, per
device and for the topology, whether it is as it was.
"""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import Field, model_validator

from adapters.gns3._device_state import ConfigurationKeeper, keeper_for
from adapters.gns3._lab import LabSnapshot
from adapters.gns3._platforms import DeviceKind, kind_from_name
from adapters.gns3._tools.consoles import wait_for_prompt
from adapters.gns3._tools.registry import (
    AUTOMATION_ONLY,
    CallScope,
    Gns3Tool,
    LabAccess,
    RestoreScope,
    ToolArguments,
)
from adapters.gns3._tools.results import batch, item
from adapters.gns3._tools.rollback_preview import rollback_plan
from adapters.gns3._topology_state import capture_topology, restore_topology
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

#: Files of a node's directory that hold its saved configuration, readable over GNS3's API.
_NODE_FILES: dict[str, tuple[str, ...]] = {"vpcs": ("startup.vpc",)}
#: GNS3's built-in nodes: no console configuration (their settings are node properties).
_BUILT_IN = frozenset(
    {"ethernet_switch", "ethernet_hub", "frame_relay_switch", "atm_switch", "cloud", "nat"}
)
#: The prefix of the GNS3 snapshots restore points take.
SNAPSHOT_PREFIX = "copilot-"


class RestorePointError(Exception):
    """A restore point could not be taken (the message says why)."""


class NoConversationError(RestorePointError):
    """The call belongs to no conversation the store keeps (an MCP client's call): there
    is no session to keep a restore point with."""


def _when(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


# ===================================================================== taking one
async def _read_configuration(
    lab: LabAccess, snapshot: LabSnapshot, node: JSON, keeper: ConfigurationKeeper
) -> JSON:
    """The device's configuration, read over its console (``RestorePointError``)."""
    name = str(node.get("name"))
    target = snapshot.console_target(node, keeper.kind)
    transcript = await lab.runner.run(
        target,
        keeper.read_commands,
        privileged=keeper.privileged,
        limits=[lab.runner.command_timeout] * len(keeper.read_commands),
    )
    if transcript.error is not None:
        raise RestorePointError(f"{name}'s configuration could not be read: {transcript.error}")
    for outcome in transcript.outcomes:
        if not outcome.ok or outcome.truncated:
            why = outcome.error or "its output was longer than a console read keeps"
            raise RestorePointError(f"{name}: `{outcome.command}` failed ({why})")
    try:
        return keeper.parse([outcome.output for outcome in transcript.outcomes])
    except ValueError as exc:
        raise RestorePointError(f"{name}'s configuration could not be understood: {exc}") from exc


def _kind(snapshot: LabSnapshot, node: JSON, override: str | None) -> DeviceKind:
    return (kind_from_name(override) if override else None) or snapshot.kind(node)


async def _capture_device(
    lab: LabAccess, scope: CallScope, snapshot: LabSnapshot, name: str, override: str | None
) -> JSON:
    """What a restore point keeps of one node; ``RestorePointError`` when its running
    configuration exists but cannot be read."""
    node = snapshot.by_name(name)
    if node is None:
        return {"name": name, "captured": False, "note": "no such node (nothing to keep)"}
    kind = _kind(snapshot, node, override)
    entry: JSON = {
        "node_id": node.get("node_id"),
        "name": node.get("name"),
        "node_type": node.get("node_type"),
        "kind": kind.value,
        "status": node.get("status"),
        "config": None,
        "files": {},
        "captured": True,
    }
    for path in _NODE_FILES.get(str(node.get("node_type")), ()):
        try:
            content = await lab.client.node_file(
                scope.token, scope.project_id, str(node["node_id"]), path
            )
        except CopilotError as exc:
            entry.setdefault("file_notes", {})[path] = f"not read: {exc.message}"
            continue
        entry["files"][path] = content.decode("utf-8", "replace")
    if node.get("status") != "started":
        entry["note"] = f"{node.get('status')}: nothing runs, so no running configuration"
        return entry
    if str(node.get("node_type")) in _BUILT_IN:
        entry["note"] = (
            f"a built-in {node.get('node_type')} has no configuration to read over a console"
        )
        return entry
    keeper = keeper_for(kind)
    if keeper is None:
        raise RestorePointError(
            f"{entry['name']} is a device of no known platform ({kind.value}), so its "
            "configuration cannot be read; tag it device_type:<platform> if it is one of "
            "vpcs, cisco_ios, arista_eos, juniper_junos, frr, linux, huawei_vrp"
        )
    if node.get("console_type") != "telnet" or not node.get("console"):
        raise RestorePointError(
            f"{entry['name']} has no telnet console (console type "
            f"{node.get('console_type')!r}), so its configuration cannot be read"
        )
    entry["config"] = await _read_configuration(lab, snapshot, node, keeper)
    return entry


async def _lenient(
    lab: LabAccess, scope: CallScope, snapshot: LabSnapshot, name: str, override: str | None
) -> JSON:
    try:
        return await _capture_device(lab, scope, snapshot, name, override)
    except RestorePointError as exc:
        return {"name": name, "captured": False, "note": str(exc)}


async def take_restore_point(
    lab: LabAccess,
    scope: CallScope,
    what: RestoreScope,
    *,
    tool_call_id: str,
    tool_name: str,
    preview: ChangePreview,
) -> RestorePoint:
    """Keep what an approved call will change, and save it with the session."""
    store = lab.restore_points
    if store is None:
        raise RestorePointError("this service keeps no restore points")
    session_id = scope.context.session_id
    try:
        await store.restore_points(scope.project_id, session_id)
    except SessionNotFoundError as exc:
        raise NoConversationError(
            f"this call comes from outside a copilot conversation (session {session_id!r}), "
            "and restore points are kept with conversations"
        ) from exc
    except CopilotError as exc:
        raise RestorePointError(f"the restore points could not be read: {exc.message}") from exc
    point_id = str(uuid.uuid4())
    try:
        snapshot = await lab.snapshot(scope)
    except CopilotError as exc:
        raise RestorePointError(f"the lab could not be read: {exc.message}") from exc
    names = list(what.devices)
    lenient = [n for n in (*what.nodes,) if n not in names]
    if what.every_node:
        lenient += [n for n in snapshot.node_names() if n not in names and n not in lenient]
    types = what.device_types
    strict_entries = await asyncio.gather(
        *(_capture_device(lab, scope, snapshot, n, types.get(n)) for n in names),
        return_exceptions=True,
    )
    for entry in strict_entries:
        if isinstance(entry, BaseException):
            if isinstance(entry, RestorePointError | CopilotError):
                raise RestorePointError(str(entry)) from entry
            raise entry
    lenient_entries = await asyncio.gather(
        *(_lenient(lab, scope, snapshot, n, types.get(n)) for n in lenient)
    )
    devices = {
        str(e["name"]): e for e in [*strict_entries, *lenient_entries] if isinstance(e, dict)
    }
    state: JSON = {"format": 1, "devices": devices}
    snapshot_name: str | None = None
    if what.topology or what.every_node:
        try:
            drawings = await lab.client.drawings(scope.token, scope.project_id)
        except CopilotError as exc:
            raise RestorePointError(f"the drawings could not be read: {exc.message}") from exc
        state["topology"] = capture_topology(snapshot, drawings)
        running = sorted(str(n.get("name")) for n in snapshot.nodes if n.get("status") != "stopped")
        if running:
            state["gns3_snapshot_skipped"] = (
                f"not taken: {', '.join(running)} run(s), and GNS3 snapshots only a project "
                "whose nodes are all stopped"
            )
        else:
            snapshot_name = f"{SNAPSHOT_PREFIX}{point_id}"
            try:
                made = await lab.client.create_snapshot(
                    scope.token, scope.project_id, snapshot_name
                )
            except CopilotError as exc:
                state["gns3_snapshot_skipped"] = f"not taken: {exc.message}"
                snapshot_name = None
            else:
                state["gns3_snapshot"] = {
                    "name": snapshot_name,
                    "created_at": made.get("created_at"),
                }
    point = RestorePoint(
        id=point_id,
        project_id=scope.project_id,
        session_id=scope.context.session_id,
        created_at=datetime.now(UTC),
        tool_call_id=tool_call_id,
        tool_name=tool_name,
        summary=preview.summary,
        state=state,
    )
    try:
        await store.save_restore_point(point)
    except CopilotError as exc:
        if snapshot_name is not None:
            await _forget_snapshot(lab, scope, snapshot_name)
        raise RestorePointError(f"it could not be saved: {exc.message}") from exc
    return point


async def _forget_snapshot(lab: LabAccess, scope: CallScope, name: str) -> None:
    try:
        for snap in await lab.client.snapshots(scope.token, scope.project_id):
            if snap.get("name") == name:
                await lab.client.delete_snapshot(
                    scope.token, scope.project_id, str(snap["snapshot_id"])
                )
    except CopilotError:
        pass  # a stray snapshot is harmless; it is named for what it was


def restore_point_notes(point: RestorePoint) -> list[str]:
    """What a restore point could not keep, one line each (shown with the change)."""
    notes = [
        f"{name}: {entry.get('note')}"
        for name, entry in (point.state.get("devices") or {}).items()
        if not entry.get("captured")
    ]
    skipped = point.state.get("gns3_snapshot_skipped")
    if skipped:
        notes.append(f"GNS3 snapshot {skipped}")
    return notes


# =================================================================== rolling back
async def _restore_device(
    lab: LabAccess, scope: CallScope, snapshot: LabSnapshot, name: str, entry: JSON
) -> JSON:
    """Put one device's kept configuration back and read it back: one result item."""
    if not entry.get("captured"):
        return item(name, "failed", error=f"nothing of {name} was kept: {entry.get('note')}")
    node = snapshot.by_id(str(entry.get("node_id"))) or snapshot.by_name(name)
    if node is None:
        return item(name, "failed", error=f"{name} no longer exists.")
    current_name = str(node.get("name"))
    output: JSON = {}
    problems: list[str] = []
    differences: list[str] = []
    for path, text in (entry.get("files") or {}).items():
        node_id = str(node["node_id"])
        try:
            now = await lab.client.node_file(scope.token, scope.project_id, node_id, path)
            if now.decode("utf-8", "replace") != text:
                await lab.client.write_node_file(
                    scope.token, scope.project_id, node_id, path, str(text).encode()
                )
                now = await lab.client.node_file(scope.token, scope.project_id, node_id, path)
                output.setdefault("files_written", []).append(path)
        except CopilotError as exc:
            problems.append(f"{path}: {exc.message}")
            continue
        if now.decode("utf-8", "replace") != text:
            differences.append(f"{path} differs from the restore point")
    saved = entry.get("config")
    kind = DeviceKind(str(entry.get("kind") or DeviceKind.GENERIC.value))
    keeper = keeper_for(kind)
    if saved is None or keeper is None:
        output["configuration"] = (
            f"no running configuration was kept ({entry.get('note') or 'none'})"
        )
    elif node.get("status") != "started":
        problems.append(
            f"{current_name} is {node.get('status')}: its configuration can only be put back "
            "while it runs (start it, then roll back again)"
        )
    else:
        ready = await wait_for_prompt(lab, scope, snapshot, node, lab.settings.start_timeout, kind)
        if ready["status"] != "success":
            problems.append(str(ready.get("error")))
        else:
            await _put_back(lab, snapshot, node, keeper, saved, output, problems, differences)
    if problems or differences:
        output["state"] = "differs from the restore point"
    else:
        output["state"] = "as at the restore point"
    if differences:
        output["differences"] = differences
    status = "success" if not problems and not differences else "failed"
    if status == "failed" and output.get("commands_sent"):
        status = "partial_success"
    return item(current_name, status, output, error="; ".join(problems) or None)


async def _put_back(
    lab: LabAccess,
    snapshot: LabSnapshot,
    node: JSON,
    keeper: ConfigurationKeeper,
    saved: JSON,
    output: JSON,
    problems: list[str],
    differences: list[str],
) -> None:
    try:
        current = await _read_configuration(lab, snapshot, node, keeper)
    except RestorePointError as exc:
        problems.append(str(exc))
        return
    plan = keeper.restore(saved, current)
    allowed: list[str] = []
    blocked: list[str] = []
    for command in plan.commands:
        reason = lab.skills.forbidden.reason(command)
        (allowed if reason is None else blocked).append(command)
    if blocked:
        problems.append(f"not sent (forbidden commands): {', '.join(blocked)}")
    if allowed:
        transcript = await lab.runner.run(
            snapshot.console_target(node, keeper.kind),
            allowed,
            config_mode=plan.config_mode,
        )
        output["commands_sent"] = allowed
        rejected = [
            {"command": o.command, "output": o.output, "error": o.error}
            for o in transcript.outcomes
            if not o.ok
        ]
        if rejected:
            output["rejected"] = rejected
        if transcript.error is not None:
            problems.append(transcript.error)
    try:
        after = await _read_configuration(lab, snapshot, node, keeper)
    except RestorePointError as exc:
        problems.append(f"read back: {exc}")
        return
    differences += keeper.differences(saved, after)


async def roll_back(
    lab: LabAccess, scope: CallScope, point: RestorePoint, *, use_snapshot: bool = True
) -> ToolResult:
    """Put back what ``point`` kept, then read it back (see the module docstring)."""
    state = point.state
    items: list[JSON] = []
    notes: JSON = {}
    snapshot_info = state.get("gns3_snapshot")
    used_snapshot: str | None = None
    if snapshot_info and use_snapshot:
        used_snapshot, note = await _restore_snapshot(lab, scope, str(snapshot_info["name"]))
        if note:
            notes["gns3_snapshot"] = note
    elif snapshot_info:
        notes["gns3_snapshot"] = "not used (use_snapshot is false)"
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
            *(_restore_device(lab, scope, snapshot, name, entry) for name, entry in devices.items())
        )
    if not items:
        return ToolResult.error(f"Restore point {point.id} holds nothing to put back.")
    result = batch(list(items))
    body: JSON = dict(result.output)
    body["rolled_back_to"] = {
        "restore_point": point.id,
        "taken_at": point.created_at.isoformat(),
        "before": point.summary,
    }
    if notes:
        body["notes"] = notes
    return ToolResult(body, result.status)


async def _restore_snapshot(
    lab: LabAccess, scope: CallScope, name: str
) -> tuple[str | None, str | None]:
    """Restore the named GNS3 snapshot if every node is stopped: (name used, note)."""
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
        await lab.client.restore_snapshot(scope.token, scope.project_id, str(found["snapshot_id"]))
    except CopilotError as exc:
        return None, f"not restored: {exc.message}"
    return name, None


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
    return await roll_back(lab, scope, point, use_snapshot=args.use_snapshot)


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
    return await rollback_plan(lab, scope, point, when, use_snapshot=args.use_snapshot)


def _rollback_scope(args: RestorePointAction, preview: ChangePreview) -> RestoreScope:
    # What a rollback changes is kept too, so that it can itself be undone; a device
    # whose configuration cannot be read now does not stop the rollback.
    return RestoreScope(nodes=tuple(preview.devices), topology=bool(preview.topology))


def restore_tools() -> list[Gns3Tool[Any]]:
    return [
        Gns3Tool(
            "restore_point",
            "Before every change the user approves, a restore point keeps what it changes "
            "(devices' configurations, the topology, a GNS3 snapshot when all nodes are "
            "stopped); each change's result names it (restore_point_id). action list shows "
            "this conversation's restore points; action rollback puts one back (devices "
            "and topology return to that moment, later changes to them included) and says, "
            "per device and for the topology, whether each is as it was, read back.",
            RestorePointAction,
            restore_points,
            AUTOMATION_ONLY,
            effect=ToolEffect.TOPOLOGY_CHANGE,
            example={"action": "rollback", "restore_point_id": "3f0c…"},
            mutates_topology=True,
            describe=_rollback_preview,
            restores=_rollback_scope,
        )
    ]
