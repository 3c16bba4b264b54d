"""How each GNS3 tool names one of its calls for people: a short plain-language title
from the call's validated arguments ("Run 2 show commands on R1", "Verify 3 checks",
"Capture packets on R1 Gi0/0 – PC1 e0"), shown on the page's tool card above the tool's
name. The service computes it (the model never writes it); :data:`TITLES` has one per
tool of the catalogue."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from adapters.gns3.tools._capture import PacketCapture
from adapters.gns3.tools._commands import ConfigCommands, ShowCommands
from adapters.gns3.tools._consoles import WaitForConsole
from adapters.gns3.tools._filters import LinkFilters
from adapters.gns3.tools._intent import StandingIntentAction, VerifyIntent
from adapters.gns3.tools._lab_state import DiffLabState
from adapters.gns3.tools._links import CreateLinks, DeleteLinks, LinkEnds, LinkRef
from adapters.gns3.tools._nodes import CreateNodes, NodeNames, RenameNodes
from adapters.gns3.tools._project import Annotate, Snapshots
from adapters.gns3.tools._restore import RestorePointAction
from adapters.gns3.tools._skills import DeviceSkills

__all__ = ["TITLES", "counted", "listed"]

_LISTED = 3  # names listed before "and N more"
_QUOTED = 40  # a single command longer than this is counted, not quoted


def counted(number: int, noun: str, plural: str | None = None) -> str:
    """``1 node``, ``3 nodes``."""
    return f"{number} {noun if number == 1 else plural or noun + 's'}"


def listed(names: Sequence[str]) -> str:
    """``R1``, ``R1 and R2``, ``R1, R2 and R3``, ``R1, R2, R3 and 2 more``."""
    if len(names) > _LISTED + 1:
        return f"{', '.join(names[:_LISTED])} and {len(names) - _LISTED} more"
    if len(names) > 1:
        return f"{', '.join(names[:-1])} and {names[-1]}"
    return names[0] if names else ""


def _end(node: str, port: str | None) -> str:
    return f"{node} {port}" if port else node


def _link(link: LinkEnds | LinkRef) -> str:
    return f"{_end(link.node1, link.port1)} – {_end(link.node2, link.port2)}"


# ------------------------------------------------------------------ reading
def _topology(args: Any) -> str:
    return "Read the lab's topology"


def _templates(args: Any) -> str:
    return "List the node templates"


def _commands(args: ShowCommands) -> str:
    devices = [entry.device_name for entry in args.device_configs]
    commands = [command for entry in args.device_configs for command in entry.commands]
    if len(commands) == 1 and len(commands[0]) <= _QUOTED:
        return f"Run “{commands[0].strip()}” on {devices[0]}"
    shows = all(c.strip().lower().startswith(("sh", "do sh")) for c in commands)
    what = counted(len(commands), "show command") if shows else counted(len(commands), "command")
    return f"Run {what} on {listed(devices)}"


def _capture(args: PacketCapture) -> str:
    link = _link(args)
    if args.action == "start":
        return f"Capture packets on {link}"
    if args.action == "stop":
        return f"Stop the capture on {link}"
    return f"Read the packets captured on {link}"


def _skills(args: DeviceSkills) -> str:
    if args.action == "list":
        return f"List the guides for {args.device_type}" if args.device_type else "List the guides"
    topic = f" on {args.topic}" if args.topic else ""
    return f"Read the {args.device_type or 'device'} guide{topic}"


def _verify(args: VerifyIntent) -> str:
    return f"Verify {counted(len(args.checks), 'check')}"


def _standing(args: StandingIntentAction) -> str:
    if args.action == "add":
        return f"Add {counted(len(args.checks), 'standing check')}"
    if args.action == "remove":
        return f"Remove {counted(len(args.names), 'standing check')}"
    return "List your standing checks"


def _capture_state(args: Any) -> str:
    return "Capture the lab's state"


def _diff_states(args: DiffLabState) -> str:
    if args.source == "now" or args.to == "now":
        return "Compare a captured lab state with now"
    return "Compare two captured lab states"


def _consoles(args: WaitForConsole) -> str:
    if len(args.node_names) == 1:
        return f"Wait for {args.node_names[0]}'s console"
    return f"Wait for the consoles of {listed(args.node_names)}"


def _restore_points(args: RestorePointAction) -> str:
    if args.action == "list":
        return "List the restore points"
    return "Roll the lab back to a restore point"


# ------------------------------------------------------------------ changing
def _create_nodes(args: CreateNodes) -> str:
    if len(args.nodes) == 1:
        node = args.nodes[0]
        template = node.template_name or "template"
        return f"Create {node.name} ({template})" if node.name else f"Create a {template} node"
    names = [node.name for node in args.nodes if node.name]
    if len(names) == len(args.nodes):
        return f"Create {counted(len(names), 'node')}: {listed(names)}"
    return f"Create {counted(len(args.nodes), 'node')}"


def _create_links(args: CreateLinks) -> str:
    if len(args.links) == 1:
        return f"Link {_link(args.links[0])}"
    return f"Create {counted(len(args.links), 'link')}"


def _delete_links(args: DeleteLinks) -> str:
    if len(args.links) == 1:
        return f"Delete the link {_link(args.links[0])}"
    return f"Delete {counted(len(args.links), 'link')}"


def _acting(verb: str) -> Callable[[NodeNames], str]:
    def title(args: NodeNames) -> str:
        return f"{verb} {listed(args.node_names)}"

    return title


def _every_node(verb: str) -> Callable[[Any], str]:
    def title(args: Any) -> str:
        return f"{verb} every node"

    return title


def _rename(args: RenameNodes) -> str:
    if len(args.nodes) == 1:
        return f"Rename {args.nodes[0].node_name} to {args.nodes[0].new_name}"
    return f"Rename {counted(len(args.nodes), 'node')}"


def _configure(args: ConfigCommands) -> str:
    devices = [entry.device_name for entry in args.device_configs]
    lines = sum(len(entry.config_commands) for entry in args.device_configs)
    return f"Configure {listed(devices)} ({counted(lines, 'line')})"


def _vpcs(args: ShowCommands) -> str:
    devices = [entry.device_name for entry in args.device_configs]
    commands = sum(len(entry.commands) for entry in args.device_configs)
    return f"Run {counted(commands, 'command')} on {listed(devices)}"


def _snapshots(args: Snapshots) -> str:
    if args.action == "create":
        return f"Take the snapshot “{args.name}”" if args.name else "Take a snapshot"
    if args.action == "restore":
        return f"Restore the snapshot “{args.name}”" if args.name else "Restore a snapshot"
    return "List the project's snapshots"


def _filters(args: LinkFilters) -> str:
    link = _link(args)
    if args.action == "set":
        return f"Set filters on {link}"
    if args.action == "clear":
        return f"Clear filters on {link}"
    return f"Read the filters on {link}"


def _annotate(args: Annotate) -> str:
    what = "a rectangle" if args.kind == "rectangle" else "a note"
    return f"Draw {what} near {args.near}" if args.near else f"Draw {what}"


#: Each tool's title for a call, from its validated arguments (by tool name).
TITLES: dict[str, Callable[[Any], str]] = {
    "gns3_topology_reader": _topology,
    "get_gns3_templates": _templates,
    "create_gns3_node": _create_nodes,
    "create_gns3_link": _create_links,
    "start_gns3_node": _acting("Start"),
    "update_gns3_node_name": _rename,
    "execute_multiple_device_commands": _commands,
    "packet_capture": _capture,
    "device_skills": _skills,
    "verify_intent": _verify,
    "standing_intent": _standing,
    "capture_lab_state": _capture_state,
    "diff_lab_state": _diff_states,
    "gns3_snapshots": _snapshots,
    "gns3_link_filters": _filters,
    "stop_gns3_node": _acting("Stop"),
    "suspend_gns3_node": _acting("Suspend"),
    "start_all_gns3_nodes": _every_node("Start"),
    "stop_all_gns3_nodes": _every_node("Stop"),
    "wait_for_console": _consoles,
    "delete_gns3_node": _acting("Delete"),
    "delete_gns3_link": _delete_links,
    "execute_multiple_device_config_commands": _configure,
    "execute_vpcs_commands": _vpcs,
    "gns3_annotate": _annotate,
    "restore_point": _restore_points,
}
