"""Putting one device's kept configuration back, then reading it back."""

from __future__ import annotations

from typing import Any

from adapters.gns3._device_state import ConfigurationKeeper, keeper_for
from adapters.gns3._lab import LabSnapshot
from adapters.gns3._platforms import DeviceKind
from adapters.gns3._tools.consoles import wait_for_prompt
from adapters.gns3._tools.registry import CallScope, LabAccess
from adapters.gns3._tools.restore_take import RestorePointError, read_configuration
from adapters.gns3._tools.results import item
from copilot_core.errors import CopilotError, Gns3Error

__all__ = ["restore_device"]

JSON = dict[str, Any]


async def restore_device(
    lab: LabAccess,
    scope: CallScope,
    snapshot: LabSnapshot,
    name: str,
    entry: JSON,
    *,
    by_name: bool = True,
) -> JSON:
    """Put one device's kept configuration back and read it back: one result item.
    The device is found by its node id (already mapped), else by its name when
    ``by_name`` (a restore point without a change record: ids may have changed)."""
    if not entry.get("captured"):
        return item(name, "failed", error=f"nothing of {name} was kept: {entry.get('note')}")
    node = snapshot.by_id(str(entry.get("node_id"))) or (
        snapshot.by_name(name) if by_name else None
    )
    if node is None:
        return item(name, "failed", error=f"{name} no longer exists.")
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
        current = await read_configuration(lab, snapshot, node, keeper)
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
        after = await read_configuration(lab, snapshot, node, keeper)
    except RestorePointError as exc:
        problems.append(f"read back: {exc}")
        return
    differences += keeper.differences(saved, after)
