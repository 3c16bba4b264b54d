"""Restore points: taken before every approved change, and the record of what it did.

:func:`take_restore_point` keeps, before an approved call runs, what the call will change
(:class:`~adapters.gns3.lab._registry.RestoreScope`): each touched device's
configuration read over its console (and a VPCS's saved ``startup.vpc``), the topology
as it was (every node's own GNS3 JSON, every link and drawing), and a GNS3 snapshot when
every node is stopped (GNS3 refuses one otherwise). It raises :class:`RestorePointError`
when what the change needs cannot be kept: the executor then does not make the change.

Once the change has run, :func:`record_what_it_did` reads the topology again and keeps
the difference with the restore point (its typed ``change``, see
:mod:`adapters.gns3.restore._undo.record`): what an undo of this change, and only it, undoes.

What only these tools read stays in the point's ``kept``: ``devices`` (each device's
entry: its node, kind, configuration as read, saved files, whether it was captured and
why not, the lines its change added and removed), ``topology`` (the topology as it was),
``configured`` (node id -> name of the devices the change sets), ``before`` (every node's
own JSON until the change's record is made) and ``gns3_snapshot_skipped``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any, Generic, TypeVar

from adapters.gns3.lab import CallScope, LabAccess, LabSnapshot, RestoreScope
from adapters.gns3.model import ConfigurationKeeper, DeviceKind, keeper_for, kind_from_name
from adapters.gns3.restore._topology_state import capture_topology
from adapters.gns3.restore._undo import read_kept, record_change
from adapters.gns3.restore._undo.lines import line_changes
from adapters.gns3.restore._undo.record import kept_drawing, kept_link, kept_node, port_names
from copilot_core.errors import CopilotError, SessionNotFoundError
from copilot_core.ports import ChangePreview, RestorePoint

__all__ = [
    "SNAPSHOT_PREFIX",
    "Kept",
    "NoConversationError",
    "RestorePointError",
    "keep_then",
    "read_configuration",
    "record_what_it_did",
    "restore_point_notes",
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


# ===================================================================== taking one
async def read_configuration(
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
    entry["config"] = await read_configuration(lab, snapshot, node, keeper)
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
    point_id = lab.ids.new_id()
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
    kept: JSON = {"devices": devices}
    # The devices whose configuration the change sets (not those it only stops or deletes).
    kept["configured"] = {
        str(e["node_id"]): name
        for name, e in devices.items()
        if name in names and e.get("captured") and e.get("node_id")
    }
    snapshot_name: str | None = None
    if what.topology or what.every_node:
        try:
            drawings = await lab.client.drawings(scope.token, scope.project_id)
        except CopilotError as exc:
            raise RestorePointError(f"the drawings could not be read: {exc.message}") from exc
        kept["topology"] = capture_topology(snapshot, drawings)
        # Every node's own JSON: what the change record is worked out from, once it ran.
        kept["before"] = {
            "nodes": [kept_node(n) for n in snapshot.nodes],
            "links": [kept_link(k, port_names(snapshot.nodes)) for k in snapshot.links],
            "drawings": [kept_drawing(d) for d in drawings],
        }
        running = sorted(str(n.get("name")) for n in snapshot.nodes if n.get("status") != "stopped")
        if running:
            kept["gns3_snapshot_skipped"] = (
                f"not taken: {', '.join(running)} run(s), and GNS3 snapshots only a project "
                "whose nodes are all stopped"
            )
        else:
            snapshot_name = f"{SNAPSHOT_PREFIX}{point_id}"
            try:
                await lab.client.create_snapshot(scope.token, scope.project_id, snapshot_name)
            except CopilotError as exc:
                kept["gns3_snapshot_skipped"] = f"not taken: {exc.message}"
                snapshot_name = None
    point = RestorePoint(
        id=point_id,
        project_id=scope.project_id,
        session_id=scope.context.session_id,
        created_at=lab.clock.now(),
        tool_call_id=tool_call_id,
        tool_name=tool_name,
        summary=preview.summary,
        devices=tuple(name for name, entry in devices.items() if entry.get("captured")),
        topology="topology" in kept,
        snapshot=snapshot_name,
        kept=kept,
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


T = TypeVar("T")


@dataclass(slots=True)
class Kept(Generic[T]):
    """An approved change made after its restore point: the change's result (``None``:
    not made, ``refused`` says why: no restore point could be taken), the point
    (``None``: none was taken, ``notes`` say why) and what it could not keep."""

    result: T | None
    point: RestorePoint | None = None
    notes: list[str] = field(default_factory=list)
    refused: str | None = None


async def take_for_change(
    lab: LabAccess,
    scope: CallScope,
    what: RestoreScope,
    *,
    tool_call_id: str,
    tool_name: str,
    preview: ChangePreview,
) -> Kept[None]:
    """The restore point an approved change is made after: ``point`` taken; or none, and
    the change is made anyway, ``notes`` saying why (a service that keeps none, a call from
    outside a conversation, an MCP client's); or ``refused`` (why no point could be taken),
    and the change is not made. Every change's first step goes through here."""
    if lab.restore_points is None:
        return Kept(None, notes=["no restore point was taken: this service keeps none"])
    try:
        point = await take_restore_point(
            lab, scope, what, tool_call_id=tool_call_id, tool_name=tool_name, preview=preview
        )
    except NoConversationError as exc:
        return Kept(None, notes=[f"no restore point was taken: {exc}"])
    except RestorePointError as exc:
        return Kept(None, refused=str(exc))
    return Kept(None, point)


def without_a_way_back(what: str, refused: str) -> str:
    """Why a change was not made: ``what`` (``"set_ip was not run"``), and the reason no
    restore point could be taken."""
    return (
        f"{what}: no restore point could be taken first ({refused}), and a change is not "
        "made without a way back."
    )


async def keep_then(
    lab: LabAccess,
    scope: CallScope,
    what: RestoreScope,
    run: Callable[[], Awaitable[T]],
    *,
    tool_call_id: str,
    tool_name: str,
    preview: ChangePreview,
) -> Kept[T]:
    """Take a restore point of ``what`` (:func:`take_for_change`), then make the change
    (``run``), then record what it did with the point (even when it failed half-way). The
    tool calls of approved changes and the core's rollbacks both go through here."""
    taken = await take_for_change(
        lab, scope, what, tool_call_id=tool_call_id, tool_name=tool_name, preview=preview
    )
    if taken.refused is not None:
        return Kept(None, refused=taken.refused)
    point = taken.point
    if point is None:
        return Kept(await run(), notes=taken.notes)
    try:
        result = await run()
    finally:  # what it did, for an undo of it alone (even when it failed half-way)
        point = await record_what_it_did(lab, scope, point)
    return Kept(result, point, restore_point_notes(point))


def restore_point_notes(point: RestorePoint) -> list[str]:
    """What a restore point could not keep, one line each (shown with the change)."""
    notes = [
        f"{name}: {entry.get('note')}"
        for name, entry in (point.kept.get("devices") or {}).items()
        if not entry.get("captured")
    ]
    skipped = point.kept.get("gns3_snapshot_skipped")
    if skipped:
        notes.append(f"GNS3 snapshot {skipped}")
    return notes


async def record_what_it_did(lab: LabAccess, scope: CallScope, point: RestorePoint) -> RestorePoint:
    """Keep with ``point`` what its change did (its ``change``), read now that the
    change has run; the topology as it was before (``kept["before"]``) is then dropped:
    the record holds what an undo needs of it. A point whose topology was not kept records
    the devices configured only. Nothing is raised: a record that cannot be made leaves the
    point as it was (its rollback then puts the whole topology back, as before records)."""
    store = lab.restore_points
    kept = dict(point.kept)
    before = kept.pop("before", None)
    configured: dict[str, str] = dict(kept.get("configured") or {})
    try:
        if isinstance(before, dict):
            after = await read_kept(lab.client, scope.token, scope.project_id)
            change = record_change(
                before,
                {key: list(after[key].values()) for key in ("nodes", "links", "drawings")},
                configured,
            )
        else:
            change = replace(record_change({}, {}, configured), topology_kept=False)
    except CopilotError:
        return point
    devices = await _lines_changed(lab, scope, kept.get("devices") or {})
    if devices:
        kept["devices"] = devices
    updated = replace(point, kept=kept, change=change)
    if store is not None:
        try:
            await store.update_restore_point(updated)
        except CopilotError:
            return point
    return updated


async def _lines_changed(lab: LabAccess, scope: CallScope, devices: JSON) -> JSON | None:
    """The point's devices, each router kept in lines (FRR, IOS-like) and each Linux host
    read again now that the change ran, with the lines (a host: the addresses and routes)
    it added and removed (``lines_changed``, see :mod:`adapters.gns3.restore._undo.lines`): its
    rollback then undoes those alone. A device that cannot be read again keeps no such
    record (its rollback puts it back whole)."""
    wanted = {
        name: entry
        for name, entry in devices.items()
        if isinstance(entry, dict)
        and entry.get("captured")
        and isinstance(entry.get("config"), dict)
        and ("lines" in entry["config"] or "addresses" in entry["config"])
    }
    if not wanted:
        return None
    try:
        snapshot = await lab.snapshot(scope)
    except CopilotError:
        return None

    async def one(entry: JSON) -> JSON:
        node = snapshot.by_id(str(entry.get("node_id")))
        keeper = keeper_for(DeviceKind(str(entry.get("kind"))))
        if node is None or keeper is None or node.get("status") != "started":
            return entry
        try:
            after = await read_configuration(lab, snapshot, node, keeper)
        except (RestorePointError, CopilotError):
            return entry
        changes = line_changes(keeper, entry["config"], after)
        return entry if changes is None else {**entry, "lines_changed": changes}

    read = await asyncio.gather(*(one(entry) for entry in wanted.values()))
    return {**devices, **dict(zip(wanted, read, strict=True))}
