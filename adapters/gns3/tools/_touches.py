"""Which nodes each GNS3 tool's call reads, creates or changes, from its validated
arguments: the core runs the calls of one model reply concurrently unless one needs what
an earlier one creates or changes (:mod:`copilot_core._callorder`), and it learns that
only from these declarations.

A node and the device on its console are one resource, keyed by the node's name folded
as GNS3 names are matched here (case ignored: see
:meth:`adapters.gns3.lab._snapshot.LabSnapshot.by_name`); the label keeps the name as written. A
link, its filters and a capture on it change or read both end nodes: "link PC1 to PC2"
then "ping PC2 from PC1" in one reply pings over the new link. A tool without a
declaration here (the topology reader, ``start_all_gns3_nodes``, ``verify_intent``…) is
ordered by its declared effect alone.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from adapters.gns3.tools._capture import PacketCapture
from adapters.gns3.tools._commands import ConfigCommands, ShowCommands, changing_devices
from adapters.gns3.tools._consoles import WaitForConsole
from adapters.gns3.tools._filters import LinkFilters
from adapters.gns3.tools._links import CreateLinks, DeleteLinks
from adapters.gns3.tools._nodes import CreateNodes, NodeNames, RenameNodes
from copilot_core.ports import Touch, TouchKind

__all__ = ["TOUCHES", "node"]


def node(name: str, kind: TouchKind) -> Touch:
    """The touch of the node ``name`` (keyed as GNS3 names are matched)."""
    return Touch(name.strip().lower(), kind, name.strip())


def _all(names: Iterable[str], kind: TouchKind) -> list[Touch]:
    return [node(name, kind) for name in names]


def _create_nodes(args: CreateNodes) -> list[Touch] | None:
    names = [request.name for request in args.nodes]
    if any(name is None for name in names):
        return None  # GNS3 names it (PC1, R2…): any later call may mean it
    return _all((name for name in names if name is not None), TouchKind.CREATE)


def _rename(args: RenameNodes) -> list[Touch]:
    return [
        touch
        for entry in args.nodes
        for touch in (
            node(entry.node_name, TouchKind.CHANGE),
            node(entry.new_name, TouchKind.CREATE),
        )
    ]


def _links(args: CreateLinks | DeleteLinks) -> list[Touch]:
    return _all(
        (name for link in args.links for name in (link.node1, link.node2)), TouchKind.CHANGE
    )


def _capture(args: PacketCapture) -> list[Touch]:
    return _all((args.node1, args.node2), TouchKind.READ)


def _filters(args: LinkFilters) -> list[Touch]:
    kind = TouchKind.READ if args.action == "get" else TouchKind.CHANGE
    return _all((args.node1, args.node2), kind)


def _acting(args: NodeNames) -> list[Touch]:
    return _all(args.node_names, TouchKind.CHANGE)


def _consoles(args: WaitForConsole) -> list[Touch]:
    return _all(args.node_names, TouchKind.READ)


def _commands(args: ShowCommands | ConfigCommands) -> list[Touch]:
    changed = changing_devices(args)
    return [
        node(
            entry.device_name, TouchKind.CHANGE if entry.device_name in changed else TouchKind.READ
        )
        for entry in args.device_configs
    ]


#: Each declaring tool's touches of a call, from its validated arguments (by tool name).
TOUCHES: dict[str, Callable[[Any], list[Touch] | None]] = {
    "create_gns3_node": _create_nodes,
    "create_gns3_link": _links,
    "delete_gns3_link": _links,
    "start_gns3_node": _acting,
    "stop_gns3_node": _acting,
    "suspend_gns3_node": _acting,
    "delete_gns3_node": _acting,
    "update_gns3_node_name": _rename,
    "wait_for_console": _consoles,
    "packet_capture": _capture,
    "gns3_link_filters": _filters,
    "execute_multiple_device_commands": _commands,
    "execute_vpcs_commands": _commands,
    "execute_multiple_device_config_commands": _commands,
}
