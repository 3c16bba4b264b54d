"""What a rollback will send or change, shown for approval before it runs.

The preview reads the lab as it is now and compares it with the restore point: per device
the exact commands the rollback will send (the change's own lines, planned on the
configuration read now as the rollback itself does: a line of the change that was changed
again since is a ``conflict: …`` line; forbidden ones, and ones the platform's grammar does
not read as that one command, are marked "not sent") and the files it will write back;
for the topology one line per action (a node deleted, made again, started, moved; a link
deleted or made again; filters set back; drawings). A device whose configuration cannot
be read now (stopped, unreachable) says so: its commands are worked out when it runs.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

from adapters.gns3.lab import CallScope, LabAccess, LabSnapshot
from adapters.gns3.model import DeviceKind, keeper_for
from adapters.gns3.restore._topology_state import (
    _describe_key,
    _drawing_key,
    _link_key,
    read_topology,
)
from adapters.gns3.restore._undo.judged import refusal
from adapters.gns3.restore._undo.lines import plan_line_undo
from copilot_core.errors import CopilotError
from copilot_core.ports import ChangePreview, RestorePoint

__all__ = ["CONFLICT", "rollback_plan", "topology_actions"]

JSON = dict[str, Any]
_VERBS = {"started": "start", "stopped": "stop", "suspended": "suspend"}


def topology_actions(saved: JSON, current: JSON) -> list[str]:
    """What making ``current`` into ``saved`` takes, one action a line, by names."""
    actions: list[str] = []
    then = {str(n["name"]): n for n in saved.get("nodes") or []}
    now = {str(n["name"]): n for n in current.get("nodes") or []}
    actions += [f"delete node {name} (made since)" for name in sorted(set(now) - set(then))]
    for name in sorted(set(then) - set(now)):
        node = then[name]
        actions.append(f"create node {name} again ({node.get('node_type') or 'node'})")
    for name in sorted(set(then) & set(now)):
        before, after = then[name], now[name]
        if before.get("status") != after.get("status"):
            verb = _VERBS.get(str(before.get("status")), "set the status of")
            actions.append(f"{verb} {name} (it is {after.get('status')})")
        if (before.get("x"), before.get("y")) != (after.get("x"), after.get("y")):
            actions.append(f"move {name} back to ({before.get('x')}, {before.get('y')})")
    links_then = {_link_key(link): link for link in saved.get("links") or []}
    links_now = {_link_key(link): link for link in current.get("links") or []}
    for key in sorted(set(links_now) - set(links_then), key=_describe_key):
        actions.append(f"delete link {_describe_key(key)} (made since)")
    for key in sorted(set(links_then) - set(links_now), key=_describe_key):
        actions.append(f"create link {_describe_key(key)} again")
    for key in sorted(set(links_then) & set(links_now), key=_describe_key):
        before, after = links_then[key], links_now[key]
        if before.get("filters") != after.get("filters"):
            filters = before.get("filters") or "none"
            actions.append(f"set the filters of link {_describe_key(key)} back to {filters}")
        if bool(before.get("suspend")) != bool(after.get("suspend")):
            verb = "suspend" if before.get("suspend") else "resume"
            actions.append(f"{verb} link {_describe_key(key)}")
    drawings_then = Counter(_drawing_key(d) for d in saved.get("drawings") or [])
    drawings_now = Counter(_drawing_key(d) for d in current.get("drawings") or [])
    extra = sum((drawings_now - drawings_then).values())
    missing = sum((drawings_then - drawings_now).values())
    if extra:
        actions.append(f"delete {extra} drawing(s) made since")
    if missing:
        actions.append(f"draw {missing} drawing(s) again")
    return actions


async def _device_lines(
    lab: LabAccess, snapshot: LabSnapshot, name: str, entry: JSON, when: str
) -> list[str]:
    """What the rollback will send to one device (its commands, as it would plan them
    now), or why that is only known when it runs; then the files it writes back."""
    from adapters.gns3.restore._take import RestorePointError, read_configuration

    lines: list[str] = []
    kind = DeviceKind(str(entry.get("kind") or DeviceKind.GENERIC.value))
    keeper = keeper_for(kind)
    saved = entry.get("config")
    node = snapshot.by_id(str(entry.get("node_id"))) or snapshot.by_name(name)
    if saved is not None and keeper is not None:
        if node is None:
            lines.append(f"{name} no longer exists: its {keeper.kept} cannot be put back")
        elif node.get("status") != "started":
            lines.append(
                f"put back {keeper.kept} as read at {when} (the commands are worked out "
                f"when it runs: {name} is {node.get('status')} now)"
            )
        else:
            try:
                current = await read_configuration(lab, snapshot, node, keeper)
            except RestorePointError as exc:
                lines.append(
                    f"put back {keeper.kept} as read at {when} (the commands are worked out "
                    f"when it runs: {exc})"
                )
            else:
                changes = entry.get("lines_changed")
                if isinstance(changes, dict):  # the change's own lines alone
                    undo = plan_line_undo(keeper, changes, current, name)
                    lines += [f"{CONFLICT}{conflict}" for conflict in undo.conflicts]
                    commands = undo.commands
                    config = keeper.kind is not DeviceKind.LINUX
                    if not commands and not undo.conflicts:
                        lines.append(f"nothing to send: {name} is as before the change ({when})")
                else:
                    restore = keeper.restore(saved, current)
                    commands, config = restore.commands, restore.config_mode
                    if not commands:
                        lines.append(f"nothing to send: {keeper.kept} is as at {when}")
                for command in commands:
                    reason = refusal(command, keeper.kind, config=config)
                    reason = reason or lab.skills.forbidden.reason(command)
                    lines.append(command if reason is None else f"{command}  (not sent: {reason})")
    lines += [f"write back {path} as it was at {when}" for path in entry.get("files") or {}]
    return lines


async def rollback_plan(
    lab: LabAccess,
    scope: CallScope,
    point: RestorePoint,
    when: str,
    *,
    use_snapshot: bool,
    force: bool = False,
) -> ChangePreview:
    """The preview of rolling ``point`` back (see the module's docstring)."""
    kept = point.kept
    if point.change is not None and not use_snapshot:
        return await _scoped_preview(lab, scope, point, when, force=force)
    topology: list[str] = []
    if point.snapshot and use_snapshot:
        topology.append(
            f"restore GNS3 snapshot {point.snapshot} if every node is stopped: the whole "
            f"project (every node's disk and saved configuration) returns to {when}"
        )
    try:
        lab_now = await lab.snapshot(scope)
    except CopilotError:
        lab_now = None
    saved_topology = kept.get("topology")
    if isinstance(saved_topology, dict):
        try:
            current = await read_topology(lab.client, scope.token, scope.project_id)
        except CopilotError as exc:
            topology.append(
                f"make nodes, links, link filters and drawings what they were at {when} "
                f"(what changes is worked out when it runs: {exc.message})"
            )
        else:
            topology += topology_actions(saved_topology, current) or [
                f"nothing to change in the topology: it is as at {when}"
            ]
    entries = [
        (str(name), entry)
        for name, entry in (kept.get("devices") or {}).items()
        if entry.get("captured")
    ]
    devices: dict[str, list[str]] = {}
    if lab_now is not None:
        planned = await asyncio.gather(
            *(_device_lines(lab, lab_now, name, entry, when) for name, entry in entries)
        )
        devices = {name: lines for (name, _), lines in zip(entries, planned, strict=True) if lines}
    elif entries:
        for name, _ in entries:
            devices[name] = [f"put back what was kept at {when} (GNS3 cannot be read now)"]
    return ChangePreview(
        f"roll back to before {point.tool_name} ({point.summary}), as at {when}",
        devices=devices,
        topology=topology,
    )


#: The first words of a preview line that names a conflict.
CONFLICT = "conflict: "


async def _scoped_preview(
    lab: LabAccess, scope: CallScope, point: RestorePoint, when: str, *, force: bool
) -> ChangePreview:
    """Undoing the change by itself: every node and link it deletes, makes again or sets
    back, by name; each conflict with what was done since (``conflict: …``) and, with
    ``force``, what else it then touches; per device, what is put back."""
    from adapters.gns3.restore._scoped import scoped_plan

    plan, _, lab_now = await scoped_plan(lab, scope, point)
    topology = [f"{CONFLICT}{line}" for line in plan.conflicts]
    topology += [line.line for line in plan.steps if force or not line.extra or not plan.conflicts]
    if plan.conflicts and not force:
        topology.append(
            "nothing is changed while these conflicts stand: confirm (force) to undo the "
            "change anyway, which also does: "
            + ("; ".join(s.line for s in plan.steps if s.extra) or "nothing more")
        )
    if not topology and point.topology:
        topology.append(f"nothing to change in the topology: it is as before the change ({when})")
    entries = [
        (str(name), entry)
        for name, entry in (point.kept.get("devices") or {}).items()
        if entry.get("captured") and str(entry.get("node_id")) in plan.devices
    ]
    devices: dict[str, list[str]] = {}
    for name, entry in entries:
        mapped = {**entry, "node_id": plan.devices[str(entry["node_id"])]}
        if lab_now.by_id(str(mapped["node_id"])) is None:
            devices[name] = [f"put back what was kept at {when} once {name} is made again"]
            devices[name] += [
                f"write back {path} as it was at {when}" for path in entry.get("files") or {}
            ]
            continue
        lines = await _device_lines(lab, lab_now, name, mapped, when)
        if lines:
            devices[name] = lines
    return ChangePreview(
        f"roll back to before {point.tool_name} ({point.summary}), that change alone, as at {when}",
        devices=devices,
        topology=topology,
    )
