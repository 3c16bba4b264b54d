"""A snapshot of one GNS3 project read for one tool call: name and port resolution.

Tools name nodes and ports the way people do (``R1``, ``Gi0/0``, ``e0``); this is
where those names become GNS3's node ids and adapter/port numbers, and where the
topology summary given to the model is built.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

from adapters.gns3.console import ConsoleTarget
from adapters.gns3.model import DeviceKind, device_kind_of
from adapters.gns3.rest import Gns3Client

__all__ = ["LabSnapshot", "port_matches"]

JSON = dict[str, Any]
_SPLIT = re.compile(r"^([a-z\-]*)(.*)$")


def _norm(name: str) -> str:
    return "".join(name.lower().split())


def port_matches(port: JSON, wanted: str) -> bool:
    """Whether ``wanted`` names ``port``: its name, short name, or an abbreviation."""
    key = _norm(wanted)
    if not key:
        return False
    names = [_norm(str(port.get("name") or "")), _norm(str(port.get("short_name") or ""))]
    if key in names:
        return True
    want_alpha, want_rest = _SPLIT.match(key).groups()  # type: ignore[union-attr]
    full_alpha, full_rest = _SPLIT.match(names[0]).groups()  # type: ignore[union-attr]
    return bool(want_alpha) and want_rest == full_rest and full_alpha.startswith(want_alpha)


@dataclass(slots=True)
class LabSnapshot:
    """The project, its nodes and links, and the templates' names, read once."""

    project: JSON
    nodes: list[JSON]
    links: list[JSON]
    template_names: dict[str, str] = field(default_factory=dict)
    gns3_host: str = "127.0.0.1"

    @classmethod
    async def read(
        cls, client: Gns3Client, token: str, project_id: str, *, templates: bool = True
    ) -> LabSnapshot:
        """Read the project (it must be opened), its nodes and links, and template names."""
        project = await client.opened_project(token, project_id)
        reads: list[Any] = [client.nodes(token, project_id), client.links(token, project_id)]
        if templates:
            reads.append(client.templates(token))
        results = await asyncio.gather(*reads)
        names = {
            str(t.get("template_id")): str(t.get("name")) for t in (results[2] if templates else [])
        }
        host = urlparse(client.base_url).hostname or "127.0.0.1"
        return cls(project, results[0], results[1], names, host)

    # ---------------------------------------------------------------- nodes
    def node_names(self) -> list[str]:
        return sorted(str(node.get("name")) for node in self.nodes)

    def by_name(self, name: str) -> JSON | None:
        for node in self.nodes:
            if node.get("name") == name:
                return node
        folded = [node for node in self.nodes if str(node.get("name", "")).lower() == name.lower()]
        return folded[0] if len(folded) == 1 else None

    def by_id(self, node_id: str) -> JSON | None:
        return next((node for node in self.nodes if node.get("node_id") == node_id), None)

    def unknown_node(self, name: str) -> str:
        known = ", ".join(self.node_names()) or "none (the project has no nodes)"
        return f"No node named {name!r} in this project; existing nodes: {known}."

    def kind(self, node: JSON) -> DeviceKind:
        return device_kind_of(node, self.template_names.get(str(node.get("template_id"))))

    def console_host(self, node: JSON) -> str:
        host = str(node.get("console_host") or "")
        return self.gns3_host if host in ("", "0.0.0.0", "::", "0:0:0:0:0:0:0:0") else host

    def console_target(self, node: JSON, kind: DeviceKind | None = None) -> ConsoleTarget:
        """Where ``node``'s telnet console is and how it behaves (its Enter key: a Docker
        node's console takes ``\\r``; ``\\r\\n`` there is two Enters)."""
        return ConsoleTarget(
            str(node.get("name")),
            self.console_host(node),
            int(node["console"]),
            kind or self.kind(node),
            enter="\r" if node.get("node_type") == "docker" else "\r\n",
        )

    # ---------------------------------------------------------------- ports
    def port_names(self, node: JSON) -> list[str]:
        return [str(port.get("name")) for port in node.get("ports") or []]

    def find_port(self, node: JSON, wanted: str) -> JSON | None:
        ports = node.get("ports") or []
        exact = [
            p
            for p in ports
            if _norm(wanted) in (_norm(str(p.get("name"))), _norm(str(p.get("short_name"))))
        ]
        if len(exact) == 1:
            return dict(exact[0])
        matches = [p for p in ports if port_matches(p, wanted)]
        return dict(matches[0]) if len(matches) == 1 else None

    def unknown_port(self, node: JSON, wanted: str) -> str:
        used = self.used_ports(node)
        described = [f"{name} (in use)" if name in used else name for name in self.port_names(node)]
        listed = ", ".join(described) or "none"
        return f"{node.get('name')} has no port {wanted!r}; its ports: {listed}."

    def port_name(self, node_id: str, adapter: int, port: int) -> str:
        node = self.by_id(node_id)
        for candidate in (node or {}).get("ports") or []:
            if candidate.get("adapter_number") == adapter and candidate.get("port_number") == port:
                return str(candidate.get("name"))
        return f"{adapter}/{port}"

    def used_ports(self, node: JSON) -> set[str]:
        used = set()
        for link in self.links:
            for end in link.get("nodes") or []:
                if end.get("node_id") == node.get("node_id"):
                    used.add(
                        self.port_name(end["node_id"], end["adapter_number"], end["port_number"])
                    )
        return used

    # ---------------------------------------------------------------- links
    def link_ends(self, link: JSON) -> list[tuple[str, str]]:
        ends = []
        for end in link.get("nodes") or []:
            node = self.by_id(str(end.get("node_id")))
            name = str(node.get("name")) if node else str(end.get("node_id"))
            ends.append(
                (
                    name,
                    self.port_name(
                        str(end.get("node_id")),
                        end.get("adapter_number", -1),
                        end.get("port_number", -1),
                    ),
                )
            )
        return ends

    def describe_link(self, link: JSON) -> str:
        return " <-> ".join(f"{name} {port}" for name, port in self.link_ends(link))

    def find_link(self, node1: JSON, port1: JSON, node2: JSON, port2: JSON) -> JSON | None:
        wanted = {
            (node1.get("node_id"), port1.get("adapter_number"), port1.get("port_number")),
            (node2.get("node_id"), port2.get("adapter_number"), port2.get("port_number")),
        }
        for link in self.links:
            ends = {
                (end.get("node_id"), end.get("adapter_number"), end.get("port_number"))
                for end in link.get("nodes") or []
            }
            if ends == wanted:
                return link
        return None

    # ------------------------------------------------------------- summary
    def summary(self) -> JSON:
        """The topology as the model sees it: names, kinds, states, ports and links."""
        nodes = []
        for node in sorted(self.nodes, key=lambda n: str(n.get("name"))):
            used = self.used_ports(node)
            entry: JSON = {
                "name": node.get("name"),
                "node_type": node.get("node_type"),
                "device_type": self.kind(node).value,
                "status": node.get("status"),
                "ports": [{"name": name, "in_use": name in used} for name in self.port_names(node)],
            }
            template = self.template_names.get(str(node.get("template_id")))
            if template:
                entry["template"] = template
            if node.get("console") is not None and node.get("console_type") not in (None, "none"):
                entry["console"] = (
                    f"{node.get('console_type')}://{self.console_host(node)}:{node.get('console')}"
                )
            nodes.append(entry)
        links = []
        for link in self.links:
            ends = self.link_ends(link)
            item: JSON = {"ends": [{"node": name, "port": port} for name, port in ends]}
            if link.get("capturing"):
                item["capturing"] = True
            if link.get("suspend"):
                item["suspended"] = True
            if link.get("filters"):
                item["filters"] = dict(link["filters"])
            links.append(item)
        return {
            "project": {
                "name": self.project.get("name"),
                "project_id": self.project.get("project_id"),
                "status": self.project.get("status"),
            },
            "nodes": nodes,
            "links": links,
        }
