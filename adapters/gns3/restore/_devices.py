"""Putting one device's kept configuration back, then reading it back."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from adapters.gns3.lab import CallScope, LabAccess, LabSnapshot, wait_for_prompt
from adapters.gns3.model import ConfigurationKeeper, DeviceKind, keeper_for
from adapters.gns3.restore._take import RestorePointError, read_configuration
from adapters.gns3.restore._undo.judged import refusal
from adapters.gns3.restore._undo.lines import lines_left, plan_line_undo
from copilot_core.errors import CopilotError, Gns3Error
from copilot_core.ports import RollbackConflict, RollbackStatus, RolledBackItem

__all__ = ["line_conflicts", "overall_status", "restore_device"]

JSON = dict[str, Any]


async def restore_device(
    lab: LabAccess,
    scope: CallScope,
    snapshot: LabSnapshot,
    name: str,
    entry: JSON,
    *,
    by_name: bool = True,
) -> RolledBackItem:
    """Put one device's kept configuration back and read it back: one result item.
    The device is found by its node id (already mapped), else by its name when
    ``by_name`` (a restore point without a change record: ids may have changed)."""
    if not entry.get("captured"):
        return RolledBackItem(
            name, RollbackStatus.FAILED, error=f"nothing of {name} was kept: {entry.get('note')}"
        )
    node = snapshot.by_id(str(entry.get("node_id"))) or (
        snapshot.by_name(name) if by_name else None
    )
    if node is None:
        return RolledBackItem(name, RollbackStatus.FAILED, error=f"{name} no longer exists.")
    current_name = str(node.get("name"))
    output: JSON = {}
    problems: list[str] = []
    differences: list[str] = []
    for path, text in (entry.get("files") or {}).items():
        node_id = str(node["node_id"])
        try:
            try:
                now = await lab.client.node_file(scope.token, scope.project_id, node_id, path)
            except Gns3Error as exc:  # a node made again has none yet
                if exc.status_code != 404:
                    raise
                now = b""
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
            changes = entry.get("lines_changed")
            if isinstance(changes, dict):
                await _undo_lines(
                    lab, snapshot, node, keeper, changes, output, problems, differences
                )
            else:
                await _put_back(lab, snapshot, node, keeper, saved, output, problems, differences)
    # Only the change's own lines are undone: the device is as before the change, not as
    # at the restore point (what others configured since stays).
    mark = "before the change" if isinstance(entry.get("lines_changed"), dict) else None
    if problems or differences:
        output["state"] = f"differs from {mark or 'the restore point'}"
    else:
        output["state"] = f"as {mark or 'at the restore point'}"
    if differences:
        output["differences"] = differences
    status = RollbackStatus.SUCCESS if not problems and not differences else RollbackStatus.FAILED
    if status is RollbackStatus.FAILED and output.get("commands_sent"):
        status = RollbackStatus.PARTIAL_SUCCESS
    return RolledBackItem(current_name, status, output, error="; ".join(problems) or None)


def overall_status(items: list[RolledBackItem]) -> RollbackStatus:
    """A rollback's status over its items: every one as it was, none, or some."""
    statuses = {entry.status for entry in items}
    if statuses == {RollbackStatus.SUCCESS}:
        return RollbackStatus.SUCCESS
    if statuses == {RollbackStatus.FAILED}:
        return RollbackStatus.FAILED
    return RollbackStatus.PARTIAL_SUCCESS


async def line_conflicts(
    lab: LabAccess, snapshot: LabSnapshot, devices: JSON, node_ids: Mapping[str, str]
) -> list[RollbackConflict]:
    """What in the devices (their restore point entries; those of ``node_ids``) whose
    change's lines are kept conflicts with undoing those lines on the configuration as it
    is now (a line's context gone since), read before anything is touched. ``node_ids``:
    each device's kept node id -> its node id now."""

    async def one(entry: JSON) -> list[RollbackConflict]:
        node = snapshot.by_id(node_ids[str(entry.get("node_id"))])
        keeper = keeper_for(DeviceKind(str(entry.get("kind") or DeviceKind.GENERIC.value)))
        if node is None or keeper is None or node.get("status") != "started":
            return []
        try:
            current = await read_configuration(lab, snapshot, node, keeper)
        except RestorePointError:
            return []  # said by the device's restore
        name = str(node.get("name"))
        undo = plan_line_undo(keeper, entry["lines_changed"], current, name)
        return [RollbackConflict(conflict, device=name) for conflict in undo.conflicts]

    wanted = [
        entry
        for entry in devices.values()
        if isinstance(entry, dict)
        and isinstance(entry.get("lines_changed"), dict)
        and str(entry.get("node_id")) in node_ids
    ]
    found = await asyncio.gather(*(one(entry) for entry in wanted))
    return [conflict for conflicts in found for conflict in conflicts]


async def _send(
    lab: LabAccess,
    snapshot: LabSnapshot,
    node: JSON,
    keeper: ConfigurationKeeper,
    commands: list[str],
    output: JSON,
    problems: list[str],
    config_mode: bool = True,
) -> None:
    """Send ``commands``, each judged just before by the platform's grammar
    (:func:`~adapters.gns3.restore._undo.judged.refusal`); the forbidden and the refused ones
    are not sent: said in ``problems``."""
    allowed: list[str] = []
    blocked: list[str] = []
    refused = [
        why for command in commands if (why := refusal(command, keeper.kind, config=config_mode))
    ]
    if refused:
        problems += [f"not sent: {why}" for why in refused]
        if config_mode:  # lines nested in blocks: one left out puts the next in another
            problems.append("nothing was sent: a configuration line was refused")
            return
    for command in commands:
        if refusal(command, keeper.kind, config=config_mode) is not None:
            continue
        reason = lab.skills.forbidden.reason(command)
        (allowed if reason is None else blocked).append(command)
    if blocked:
        problems.append(f"not sent (forbidden commands): {', '.join(blocked)}")
    if not allowed:
        return
    transcript = await lab.runner.run(
        snapshot.console_target(node, keeper.kind), allowed, config_mode=config_mode
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


async def _undo_lines(
    lab: LabAccess,
    snapshot: LabSnapshot,
    node: JSON,
    keeper: ConfigurationKeeper,
    changes: JSON,
    output: JSON,
    problems: list[str],
    differences: list[str],
) -> None:
    """Undo the lines the change added and removed, and only them; read back."""
    name = str(node.get("name"))
    try:
        current = await read_configuration(lab, snapshot, node, keeper)
    except RestorePointError as exc:
        problems.append(str(exc))
        return
    undo = plan_line_undo(keeper, changes, current, name)
    differences += [f"not undone: {conflict}" for conflict in undo.conflicts]
    if undo.notes:
        output["notes"] = undo.notes
    config_mode = keeper.kind is not DeviceKind.LINUX  # a host's lines go to its shell
    await _send(lab, snapshot, node, keeper, undo.commands, output, problems, config_mode)
    try:
        after = await read_configuration(lab, snapshot, node, keeper)
    except RestorePointError as exc:
        problems.append(f"read back: {exc}")
        return
    differences += lines_left(keeper, changes, after)


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
        current = await read_configuration(lab, snapshot, node, keeper)
    except RestorePointError as exc:
        problems.append(str(exc))
        return
    plan = keeper.restore(saved, current)
    await _send(lab, snapshot, node, keeper, plan.commands, output, problems, plan.config_mode)
    try:
        after = await read_configuration(lab, snapshot, node, keeper)
    except RestorePointError as exc:
        problems.append(f"read back: {exc}")
        return
    differences += keeper.differences(saved, after)
