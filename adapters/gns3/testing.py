"""Test doubles that ship with the GNS3 adapter (as :mod:`copilot_core.testing` ships
the core's): a small simulated lab behind the GNS3 tools' own specs and argument models.

:class:`SimulatedLab` keeps VPCS hosts and switches in memory; :class:`SimulatedLabTools`
is a :class:`~copilot_core.ports.ToolExecutor` over it. The model reads exactly what it
reads against GNS3 (:class:`~adapters.gns3.Gns3ToolExecutor`'s specs, in either tool set)
and its arguments are validated by the tools' own argument models, so a wrong call gets
the real error; what the calls do is simulated: nodes are created, linked and started,
VPCS hosts take ``ip A/N [gateway]``, answer ``show ip`` and ``ping``, and refuse IOS
configuration as VPCS does.

It lives in the package, not beside the tests, because ``gns3-copilot eval`` runs its
tasks in it at run time, for users without a GNS3 server (``docs/decisions.md``).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from adapters.gns3.rest import Gns3Client
from adapters.gns3.tools import Gns3ToolExecutor, Gns3ToolSettings, unknown_template
from copilot_core import CopilotMode, ParsedToolCall, ToolContext, ToolResult, ToolSpec
from copilot_core.ports import NOT_CLEARED, Assessment, ChangeSteps, Clearance

__all__ = ["TEMPLATES", "SimNode", "SimulatedLab", "SimulatedLabTools"]

#: template -> (node type, device type, ports)
TEMPLATES = {
    "VPCS": ("vpcs", "vpcs", ("Ethernet0",)),
    "Ethernet switch": ("ethernet_switch", "generic", tuple(f"Ethernet{i}" for i in range(8))),
}
_IP = re.compile(r"^ip\s+(\d+\.\d+\.\d+\.\d+)(?:/(\d+)|\s+(\d+\.\d+\.\d+\.\d+))?(?:\s+(\S+))?\s*$")
_PING = re.compile(r"^ping\s+(\d+\.\d+\.\d+\.\d+)")


@dataclass
class SimNode:
    name: str
    template: str
    status: str = "stopped"
    address: ipaddress.IPv4Interface | None = None

    @property
    def kind(self) -> tuple[str, str, tuple[str, ...]]:
        return TEMPLATES[self.template]


@dataclass
class SimulatedLab:
    """The simulated lab, and what the model ran in it; also its
    :class:`~copilot_core.ports.TopologySource` (:meth:`read`)."""

    nodes: dict[str, SimNode] = field(default_factory=dict)
    links: list[tuple[tuple[str, str], tuple[str, str]]] = field(default_factory=list)
    #: (device, command) of every console command run, in order.
    commands: list[tuple[str, str]] = field(default_factory=list)

    # ------------------------------------------------------------------ set-up
    def add(self, name: str, template: str = "VPCS", *, started: bool = False) -> SimNode:
        node = SimNode(name, template, "started" if started else "stopped")
        self.nodes[name] = node
        return node

    def link(self, a: str, b: str) -> None:
        self.links.append(((a, self._free_port(a) or ""), (b, self._free_port(b) or "")))

    def linked(self, a: str, b: str) -> bool:
        return any({x[0], y[0]} == {a, b} for x, y in self.links)

    # --------------------------------------------------------------- the model's view
    def summary(self) -> dict[str, Any]:
        nodes = []
        for node in sorted(self.nodes.values(), key=lambda n: n.name):
            node_type, device_type, ports = node.kind
            used = self._used(node.name)
            nodes.append(
                {
                    "name": node.name,
                    "node_type": node_type,
                    "device_type": device_type,
                    "status": node.status,
                    "ports": [{"name": p, "in_use": p in used} for p in ports],
                    "template": node.template,
                }
            )
        links = [
            {"ends": [{"node": a[0], "port": a[1]}, {"node": b[0], "port": b[1]}]}
            for a, b in self.links
        ]
        project = {"name": "eval", "project_id": "eval", "status": "opened"}
        return {"project": project, "nodes": nodes, "links": links}

    async def read(self, context: ToolContext) -> dict[str, Any]:  # TopologySource
        return self.summary()

    def _used(self, name: str) -> set[str]:
        return {end[1] for link in self.links for end in link if end[0] == name}

    def _free_port(self, name: str) -> str | None:
        used = self._used(name)
        return next((p for p in self.nodes[name].kind[2] if p not in used), None)

    def _reachable(self, source: str) -> set[str]:
        seen, todo = {source}, [source]
        while todo:
            here = todo.pop()
            for a, b in self.links:
                for x, y in ((a[0], b[0]), (b[0], a[0])):
                    if x == here and y not in seen and self.nodes[y].status == "started":
                        seen.add(y)
                        todo.append(y)
        return seen

    # ------------------------------------------------------------------ the tools
    def create_gns3_node(self, args: Any) -> Any:
        made = []
        for item in args.nodes:
            template = item.template_name or item.template_id
            if template not in TEMPLATES:
                label = item.name or str(template)
                return ToolResult.error(unknown_template(str(template), label, sorted(TEMPLATES)))
            name = item.name or f"{template}-{len(self.nodes) + 1}"
            if name in self.nodes:
                return ToolResult.error(f"A node named {name} already exists.")
            self.add(name, template)
            made.append({"name": name, "status": "stopped", "ports": list(TEMPLATES[template][2])})
        return {"created": made}

    def create_gns3_link(self, args: Any) -> Any:
        for link in args.links:
            for node, port in ((link.node1, link.port1), (link.node2, link.port2)):
                if node not in self.nodes:
                    return ToolResult.error(f"No node named {node}.")
                if port not in self.nodes[node].kind[2]:
                    ports = ", ".join(self.nodes[node].kind[2])
                    return ToolResult.error(f"{node} has no port {port!r}; its ports: {ports}.")
                if port in self._used(node):
                    return ToolResult.error(f"{node}'s port {port} already has a link.")
            self.links.append(((link.node1, link.port1), (link.node2, link.port2)))
        return {"created": len(args.links)}

    def start_gns3_node(self, args: Any) -> Any:
        missing = [name for name in args.node_names if name not in self.nodes]
        if missing:
            return ToolResult.error(f"No node named {', '.join(missing)}.")
        for name in args.node_names:
            self.nodes[name].status = "started"
        return {"started": list(args.node_names)}

    def start_all_gns3_nodes(self, args: Any) -> Any:
        for node in self.nodes.values():
            node.status = "started"
        return {"started": sorted(self.nodes)}

    def execute_vpcs_commands(self, args: Any) -> Any:
        return self._consoles(args, configure=True)

    def execute_multiple_device_commands(self, args: Any) -> Any:
        return self._consoles(args, configure=False)

    def execute_multiple_device_config_commands(self, args: Any) -> Any:
        names = [job.device_name for job in args.device_configs]
        return ToolResult.error(
            f"{', '.join(names)}: VPCS has no configuration mode; run its own commands with "
            "execute_vpcs_commands (ip 10.0.0.1/24 10.0.0.254).",
            platform="vpcs",
        )

    def _consoles(self, args: Any, *, configure: bool) -> Any:
        results = []
        for job in args.device_configs:
            node = self.nodes.get(job.device_name)
            if node is None or node.status != "started":
                results.append({"device": job.device_name, "error": "not a started node"})
                continue
            outputs = [
                {"command": c, "output": self._vpcs(node, c, configure)} for c in job.commands
            ]
            results.append({"device": node.name, "platform": "vpcs", "results": outputs})
        return {"results": results}

    def _vpcs(self, node: SimNode, command: str, configure: bool) -> str:
        self.commands.append((node.name, command.strip()))
        text = command.strip()
        if (match := _IP.match(text)) and configure:
            address, prefix, mask, _gateway = match.groups()
            try:
                node.address = ipaddress.IPv4Interface(f"{address}/{prefix or mask or 24}")
            except ValueError:
                return "Invalid address"
            return f"{node.name} : {node.address.with_prefixlen}"
        if text == "show ip" or text == "show":
            return f"NAME : {node.name}\nIP/MASK : {node.address or '0.0.0.0/0'}"
        if match := _PING.match(text):
            target = ipaddress.IPv4Address(match.group(1))
            peers = [self.nodes[n] for n in self._reachable(node.name) if n != node.name]
            if node.address and any(p.address and p.address.ip == target for p in peers):
                return f"84 bytes from {target} icmp_seq=1 ttl=64 time=0.5 ms"
            return f"host ({target}) not reachable"
        return "Bad command: VPCS takes ip 10.0.0.1/24 <gateway>, show ip, ping <address>."


class SimulatedLabTools:
    """A :class:`~copilot_core.ports.ToolExecutor`: the GNS3 tools' specs and argument
    models over a :class:`SimulatedLab` (other tools answer that they are not part of
    the simulated lab). A call is assessed by its tool's declared effect, so the
    gate asks for approval of a change as it does against GNS3."""

    def __init__(self, lab: SimulatedLab) -> None:
        self.lab = lab
        self.real = Gns3ToolExecutor(Gns3Client("http://127.0.0.1:9"))  # never called
        self.settings = Gns3ToolSettings()

    def specs(self, mode: CopilotMode) -> Sequence[ToolSpec]:
        return self.real.specs(mode)

    async def assess(self, call: ParsedToolCall, context: ToolContext) -> Assessment:
        # No view of its own: the tool's declared effect decides, so a change waits for
        # an approval as it would against GNS3.
        return Assessment()

    async def change_steps(
        self, call: ParsedToolCall, context: ToolContext, assessment: Assessment
    ) -> ChangeSteps | None:
        return None  # no verified changes: the simulated lab has no checks to run

    async def execute(
        self, call: ParsedToolCall, context: ToolContext, clearance: Clearance = NOT_CLEARED
    ) -> ToolResult:
        if call.name == "gns3_topology_reader":
            return ToolResult(self.lab.summary())
        if call.name == "get_gns3_templates":
            return ToolResult({"templates": [{"name": name} for name in TEMPLATES]})
        tool = self.real.registry.get(call.name)
        handler = getattr(self.lab, call.name, None)
        if tool is None or handler is None:
            return ToolResult.error(f"{call.name} is not part of the simulated lab.")
        parsed = tool.parse(dict(call.arguments or {}), self.settings)
        if isinstance(parsed, ToolResult):
            return parsed
        value = handler(parsed)
        return value if isinstance(value, ToolResult) else ToolResult(value)
