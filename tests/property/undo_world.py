"""An in-memory GNS3 topology for the undo's property tests.

:class:`Topology` holds nodes and links as GNS3's JSON has them (the fields the undo
reads); :class:`MemoryPort` is the undo's :class:`~adapters.gns3.restore._undo.TopologyPort` over
it, refusing what GNS3 refuses (a port in use, an end that does not exist, a node id in
use). Operations (:class:`Op`) are concrete: ids chosen, so that a history can be
replayed on another topology, where an operation that no longer applies is skipped.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from copilot_core.errors import Gns3Error

JSON = dict[str, Any]
PORTS = 3


@dataclass
class Topology:
    nodes: dict[str, JSON] = field(default_factory=dict)
    links: dict[str, JSON] = field(default_factory=dict)

    def kept(self) -> JSON:
        return {
            "nodes": copy.deepcopy(self.nodes),
            "links": copy.deepcopy(self.links),
            "drawings": {},
        }

    def as_lists(self) -> JSON:
        kept = self.kept()
        return {key: list(kept[key].values()) for key in ("nodes", "links", "drawings")}

    def used(self) -> set[tuple[str, int, int]]:
        return {
            (str(e["node_id"]), int(e["adapter_number"]), int(e["port_number"]))
            for link in self.links.values()
            for e in link["nodes"]
        }


def new_node(node_id: str, name: str) -> JSON:
    return {
        "node_id": node_id,
        "name": name,
        "node_type": "ethernet_switch",
        "compute_id": "local",
        "x": 0,
        "y": 0,
        "properties": {"ports_mapping": [{"port_number": p, "vlan": 1} for p in range(PORTS)]},
        "label": {"text": name},
        "status": "started",
    }


def new_link(link_id: str, ends: list[tuple[str, int]]) -> JSON:
    return {
        "link_id": link_id,
        "nodes": [{"node_id": n, "adapter_number": 0, "port_number": p} for n, p in ends],
        "filters": {},
        "suspend": False,
    }


@dataclass(frozen=True)
class Op:
    """One concrete operation: ``create``/``delete`` a node, ``link``/``unlink``,
    ``set`` a node's field (name, x, properties)."""

    kind: str
    target: str
    value: Any = None

    def apply(self, topo: Topology) -> bool:
        """Do it on ``topo``; False (nothing done) when it does not apply there."""
        if self.kind == "create":
            if self.target in topo.nodes:
                return False
            topo.nodes[self.target] = new_node(self.target, str(self.value))
        elif self.kind == "delete":
            if self.target not in topo.nodes:
                return False
            del topo.nodes[self.target]
            for link_id in [
                i
                for i, k in topo.links.items()
                if any(e["node_id"] == self.target for e in k["nodes"])
            ]:
                del topo.links[link_id]
        elif self.kind == "link":
            ends = [(str(n), int(p)) for n, p in self.value]
            if self.target in topo.links or any(n not in topo.nodes for n, _ in ends):
                return False
            if any((n, 0, p) in topo.used() for n, p in ends):
                return False
            topo.links[self.target] = new_link(self.target, ends)
        elif self.kind == "unlink":
            if topo.links.pop(self.target, None) is None:
                return False
        else:  # set
            node = topo.nodes.get(self.target)
            if node is None:
                return False
            key, value = self.value
            node[key] = copy.deepcopy(value)
            if key == "name":
                node["label"] = {"text": value}
        return True


class MemoryPort:
    """The undo's port over a :class:`Topology` (GNS3's refusals as ``Gns3Error``)."""

    def __init__(self, topo: Topology) -> None:
        self.topo = topo
        self.calls: list[str] = []

    async def read(self) -> JSON:
        return self.topo.kept()

    async def delete_link(self, link_id: str) -> None:
        self.calls.append(f"delete_link {link_id}")
        if self.topo.links.pop(link_id, None) is None:
            raise Gns3Error("no such link", 404)

    async def delete_node(self, node_id: str) -> None:
        self.calls.append(f"delete_node {node_id}")
        if not Op("delete", node_id).apply(self.topo):
            raise Gns3Error("no such node", 404)

    async def create_node(self, body: JSON) -> JSON:
        self.calls.append(f"create_node {body.get('node_id')}")
        node_id = str(body.get("node_id") or f"fresh-{len(self.topo.nodes)}")
        if node_id in self.topo.nodes:
            raise Gns3Error("node id in use", 409)
        node = {**copy.deepcopy(body), "node_id": node_id, "status": "started"}
        self.topo.nodes[node_id] = node
        return copy.deepcopy(node)

    async def create_link(self, body: JSON) -> JSON:
        self.calls.append(f"create_link {body.get('link_id')}")
        link_id = str(body.get("link_id") or f"fresh-link-{len(self.topo.links)}")
        ends = [(str(e["node_id"]), int(e["port_number"])) for e in body["nodes"]]
        if not Op("link", link_id, ends).apply(self.topo):
            raise Gns3Error("port in use, or no such node", 409)
        link = self.topo.links[link_id]
        link["filters"] = dict(body.get("filters") or {})
        link["suspend"] = bool(body.get("suspend"))
        return copy.deepcopy(link)

    async def update_node(self, node_id: str, fields: JSON) -> JSON:
        self.calls.append(f"update_node {node_id}")
        node = self.topo.nodes.get(node_id)
        if node is None:
            raise Gns3Error("no such node", 404)
        node.update(copy.deepcopy(fields))
        return copy.deepcopy(node)

    async def update_link(self, link_id: str, fields: JSON) -> JSON:
        self.calls.append(f"update_link {link_id}")
        link = self.topo.links.get(link_id)
        if link is None:
            raise Gns3Error("no such link", 404)
        link.update(copy.deepcopy(fields))
        return copy.deepcopy(link)

    async def node_action(self, node_id: str, action: str) -> None:
        self.calls.append(f"{action} {node_id}")

    async def delete_drawing(self, drawing_id: str) -> None:
        raise Gns3Error("no drawings here", 404)

    async def create_drawing(self, body: JSON) -> JSON:
        raise Gns3Error("no drawings here", 404)

    async def update_drawing(self, drawing_id: str, fields: JSON) -> JSON:
        raise Gns3Error("no drawings here", 404)
