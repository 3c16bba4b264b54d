"""What a lab tool call would change: the assessment behind approvals.

Configuration commands always change a device; commands of the other command tools
change it when the device kind's rules say so (VPCS ``ip``/``set``/``save``…, Cisco
``configure``/``write``…, Linux ``ip addr add``…: the same rules teaching mode enforces).
Creating, linking, renaming, stopping and suspending nodes change the topology; reading,
starting, capturing and skills do not. The preview names every device with its exact
commands, or every topology change, one line each.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from adapters.gns3._command_policy import DeviceKind, configuration_reason
from copilot_core.ports import Assessment, ChangePreview

__all__ = ["COMMAND_TOOLS", "assess_call"]

JSON = Mapping[str, Any]

#: Command tools and the argument key holding each device's commands.
COMMAND_TOOLS = {
    "execute_multiple_device_commands": "commands",
    "execute_vpcs_commands": "commands",
    "execute_multiple_device_config_commands": "config_commands",
}


def assess_call(
    name: str, args: JSON, kind_of: Callable[[str], DeviceKind | None] | None = None
) -> Assessment:
    """The assessment of one call; ``kind_of`` gives a node's device kind by name (for
    command tools), ``None`` when unknown."""
    if name in COMMAND_TOOLS:
        return _commands(name, args, kind_of or (lambda _: None))
    describe = _TOPOLOGY.get(name)
    if describe is None:
        return Assessment.read_only()
    changes = describe(args)
    if not changes:
        return Assessment.read_only()
    verb = name.split("_")[0]
    return Assessment(True, ChangePreview(f"{verb} {len(changes)} item(s)", topology=changes))


def _commands(name: str, args: JSON, kind_of: Callable[[str], DeviceKind | None]) -> Assessment:
    key = COMMAND_TOOLS[name]
    devices: dict[str, list[str]] = {}
    changing = False
    for entry in _dicts(args.get("device_configs")):
        device = str(entry.get("device_name", ""))
        commands = [c for c in _strings(entry.get(key)) if c.strip()]
        if not device or not commands:
            continue
        devices.setdefault(device, []).extend(commands)
        if key == "config_commands":
            changing = True
            continue
        kind = kind_of(device) or (DeviceKind.VPCS if name == "execute_vpcs_commands" else None)
        if any(configuration_reason(c, kind or DeviceKind.GENERIC) for c in commands):
            changing = True
    if not changing:
        return Assessment.read_only()
    count = sum(len(commands) for commands in devices.values())
    summary = f"run {count} command(s) that change the configuration of {len(devices)} device(s)"
    return Assessment(True, ChangePreview(summary, devices=devices))


def _create(args: JSON) -> list[str]:
    out = []
    for node in _dicts(args.get("nodes")):
        template = node.get("template_name") or node.get("template_id") or "?"
        named = f" named {node['name']}" if node.get("name") else ""
        out.append(f"create a node from template {template}{named}")
    return out


def _link(args: JSON) -> list[str]:
    return [
        f"link {link.get('node1')} {link.get('port1')} to {link.get('node2')} {link.get('port2')}"
        for link in _dicts(args.get("links"))
    ]


def _rename(args: JSON) -> list[str]:
    return [
        f"rename {node.get('node_name')} to {node.get('new_name')}"
        for node in _dicts(args.get("nodes"))
    ]


def _power(verb: str) -> Callable[[JSON], list[str]]:
    def describe(args: JSON) -> list[str]:
        return [f"{verb} {name}" for name in _strings(args.get("node_names"))]

    return describe


_TOPOLOGY: dict[str, Callable[[JSON], list[str]]] = {
    "create_gns3_node": _create,
    "create_gns3_link": _link,
    "update_gns3_node_name": _rename,
    "stop_gns3_node": _power("stop"),
    "suspend_gns3_node": _power("suspend"),
}


def _dicts(value: object) -> list[JSON]:
    return [item for item in value if isinstance(item, Mapping)] if isinstance(value, list) else []


def _strings(value: object) -> Sequence[str]:
    return [item for item in value if isinstance(item, str)] if isinstance(value, list) else []
