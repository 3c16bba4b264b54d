"""A lab plan as a value: nodes, links, addresses, each device's lines, the checks (pure).

:class:`LabPlan` is what a lab build is decided on (issue 39): the nodes (name, platform,
GNS3 template, position), the links between their ports (as GNS3 names them: ``eth0``),
the interface addresses, each device's configuration lines in its platform's own words
(FRR configuration lines, Linux shell commands, VPCS commands: what the fault catalog's
:class:`~copilot_core.faults.DeviceLines` carry) and the intent checks that prove the lab
works. A plan built in code and a plan read from a file obey the same rules, checked here
against each other (names, ports, subnets, addresses); what only the GNS3 server knows
(templates and port names that exist) is the adapter's :class:`LabPlanner`.

Every problem is named by the field of the plan's file (``links[2]``,
``addressing.R1:eth0``, ``checks[0].from``: the same path for a plan built in code), so the
model that wrote the plan, or the user who wrote the file, can act on it; all of a plan's
problems are reported at once.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, Field, model_validator
from pydantic_core import PydanticCustomError

from copilot_core._checks import Check, check_node, is_plain_address
from copilot_core._lab_shape import (
    DeviceLine,
    Endpoint,
    InterfaceAddress,
    Platform,
    Prefix,
    ShapeNodeName,
    Text,
    Value,
)
from copilot_core.faults import (
    DeviceLines,
    check_targets,  # one rule with the catalog's
)

__all__ = [
    "DeviceConfig",
    "LabPlan",
    "PlanAddress",
    "PlanLink",
    "PlanNode",
    "PlanProblem",
    "link_text",
    "parse_link",
]

#: How many lines one device's configuration may have (a router of ten links needs ~80).
MAX_DEVICE_LINES = 400
_ENDPOINT = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*:[A-Za-z0-9][A-Za-z0-9_.:/-]*")


@dataclass(frozen=True, slots=True)
class PlanProblem:
    """One thing wrong with a plan: the field of its file, and why (a sentence to act on)."""

    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.field}: {self.message}"


def _normal_address(value: str) -> str:
    return str(ipaddress.IPv4Interface(value))


def _normal_prefix(value: str) -> str:
    return str(ipaddress.IPv4Network(value, strict=False))


#: One device line: printable text, no control character (the fault catalog's own).
PlanLine = DeviceLine
#: An interface address with its prefix length, written the one way (``10.0.1.1/24``).
PlanInterfaceAddress = Annotated[InterfaceAddress, AfterValidator(_normal_address)]
#: A subnet, written as its network (``10.0.1.0/24``; host bits are dropped).
Subnet = Annotated[Prefix, AfterValidator(_normal_prefix)]


# ------------------------------------------------------------------ the parts
class PlanNode(Value):
    """A node to build: a router is ``frr``, a host ``linux`` or ``vpcs``."""

    name: ShapeNodeName
    platform: Platform
    template: Text | None = Field(
        None, description="the GNS3 template's name; none: the server's template for the platform"
    )
    x: int = Field(0, ge=-100000, le=100000, description="position on the canvas")
    y: int = Field(0, ge=-100000, le=100000)

    @property
    def role(self) -> str:
        return "router" if self.platform is Platform.FRR else "host"


def _link_candidates(text: str) -> list[tuple[str, str]]:
    """The ways ``text`` splits at one ``-`` into two ``node:port`` ends."""
    found: list[tuple[str, str]] = []
    for index, char in enumerate(text):
        if char == "-":
            a, b = text[:index], text[index + 1 :]
            if _ENDPOINT.fullmatch(a) and _ENDPOINT.fullmatch(b):
                found.append((a, b))
    return found


def parse_link(text: str) -> tuple[str, str]:
    """``R1:eth0-R2:eth0`` as its two ends; ``ValueError`` saying why when it is not one."""
    found = _link_candidates(text.strip())
    if len(found) == 1:
        return found[0]
    if not found:
        raise ValueError(f"{text!r} is not a link such as R1:eth0-R2:eth0 (node:port-node:port)")
    raise ValueError(
        f"{text!r} splits at '-' more than one way: write it as a mapping "
        "{ends: [R1:eth0, R2:eth0]}"
    )


def _link_input(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return {"ends": parse_link(value)}
        except ValueError as exc:
            raise PydanticCustomError("link_text", str(exc)) from None
    return value


class PlanLink(Value):
    """A link between two ports; written ``R1:eth0-R2:eth0`` when it has no ``prefix``."""

    ends: tuple[Endpoint, Endpoint] = Field(description="its two ends, node:port (R1:eth0)")
    prefix: Subnet | None = Field(
        None, description="the link's subnet; none: the one its ends' addresses are in"
    )

    def nodes(self) -> tuple[str, str]:
        return self.ends[0].partition(":")[0], self.ends[1].partition(":")[0]

    def joins(self, a: str, b: str) -> bool:
        """Whether the link is between nodes ``a`` and ``b`` (either way)."""
        return sorted(self.nodes()) == sorted((a, b))

    def key(self) -> frozenset[str]:
        """The link whatever the order of its ends."""
        return frozenset(self.ends)


def link_text(link: PlanLink) -> str | dict[str, Any]:
    """The link as a file writes it: ``R1:eth0-R2:eth0`` when that reads back the same."""
    text = f"{link.ends[0]}-{link.ends[1]}"
    if link.prefix is None and _link_candidates(text) == [link.ends]:
        return text
    written: dict[str, Any] = {"ends": list(link.ends)}
    if link.prefix is not None:
        written["prefix"] = link.prefix
    return written


class PlanAddress(Value):
    """An interface's address: ``R1:eth0`` has ``10.0.12.1/30``."""

    interface: Endpoint
    address: PlanInterfaceAddress


class DeviceConfig(Value):
    """A device's lines, as its platform reads them (as the fault catalog's
    :class:`~copilot_core.faults.DeviceLines`, with room for a whole device)."""

    node: ShapeNodeName
    lines: tuple[PlanLine, ...] = Field(min_length=1, max_length=MAX_DEVICE_LINES)

    def as_steps(self) -> tuple[DeviceLines, ...]:
        """The lines as the fault catalog's steps (at most 50 lines a step), in order."""
        return tuple(
            DeviceLines(kind="lines", node=self.node, lines=self.lines[start : start + 50])
            for start in range(0, len(self.lines), 50)
        )


# ------------------------------------------------------------------ the file's mapping forms
def _addressing_input(value: Any) -> Any:
    """``{R1:eth0: 10.0.12.1/30}`` (the file) is the list of :class:`PlanAddress` es."""
    if isinstance(value, Mapping):
        return [{"interface": key, "address": address} for key, address in value.items()]
    return value


def _config_input(value: Any) -> Any:
    """``{R1: [lines]}`` (the file) is the list of :class:`DeviceConfig` s."""
    if isinstance(value, Mapping):
        return [{"node": key, "lines": lines} for key, lines in value.items()]
    return value


Addressing = Annotated[
    tuple[PlanAddress, ...],
    BeforeValidator(_addressing_input, json_schema_input_type=dict[str, InterfaceAddress]),
]
Configs = Annotated[
    tuple[DeviceConfig, ...],
    BeforeValidator(_config_input, json_schema_input_type=dict[str, list[PlanLine]]),
]


#: A link as the file writes it: ``R1:eth0-R2:eth0``, or the mapping of its ends.
LinkItem = Annotated[PlanLink, BeforeValidator(_link_input, json_schema_input_type=str | PlanLink)]


# ------------------------------------------------------------------ the plan
class LabPlan(Value):
    """A lab to build, or a lab as it is (see the module docstring); its references checked."""

    summary: Text | None = Field(None, description="what the lab is, in words")
    nodes: tuple[PlanNode, ...] = Field(min_length=1, max_length=200)
    links: tuple[LinkItem, ...] = Field((), max_length=1000)
    addressing: Addressing = Field((), max_length=2000, description="node:port: its address/length")
    config: Configs = Field((), max_length=200, description="node: its lines, in order")
    checks: tuple[Check, ...] = Field(
        (), max_length=2000, description="intent checks that prove the lab works"
    )

    @model_validator(mode="after")
    def _coherent(self) -> LabPlan:
        found = plan_problems(self)
        if found:
            raise PydanticCustomError(
                "lab_plan",
                "{summary}",
                {"summary": "; ".join(str(p) for p in found), "problems": found},
            )
        return self

    def node(self, name: str) -> PlanNode | None:
        return next((n for n in self.nodes if n.name == name), None)

    def address_of(self, interface: str) -> str | None:
        """The address (with its length) of ``node:port``, if the plan gives one."""
        return next((a.address for a in self.addressing if a.interface == interface), None)

    def lines_of(self, node: str) -> tuple[str, ...]:
        return next((c.lines for c in self.config if c.node == node), ())

    def link_subnet(self, link: PlanLink) -> str | None:
        """The link's subnet: its ``prefix``, else the one its first addressed end is in."""
        if link.prefix is not None:
            return link.prefix
        for end in link.ends:
            address = self.address_of(end)
            if address is not None:
                return str(ipaddress.IPv4Interface(address).network)
        return None


# ------------------------------------------------------------------ the rules
def plan_problems(plan: LabPlan) -> list[PlanProblem]:
    """Every reference of ``plan`` that does not hold, in the order of the file's fields."""
    return [
        *_node_problems(plan),
        *_link_problems(plan),
        *_address_problems(plan),
        *_config_problems(plan),
        *_check_problems(plan),
    ]


def _known(plan: LabPlan) -> str:
    return ", ".join(n.name for n in plan.nodes)


def _node_problems(plan: LabPlan) -> Iterator[PlanProblem]:
    first: dict[str, int] = {}
    for index, node in enumerate(plan.nodes):
        if node.name in first:
            yield PlanProblem(
                f"nodes[{index}].name",
                f"{node.name} is already the name of "
                f"nodes[{first[node.name]}]: a name is given once",
            )
        first.setdefault(node.name, index)


def _link_problems(plan: LabPlan) -> Iterator[PlanProblem]:
    used: dict[str, int] = {}
    for index, link in enumerate(plan.links):
        field = f"links[{index}]"
        a, b = link.nodes()
        for node in dict.fromkeys((a, b)):
            if plan.node(node) is None:
                yield PlanProblem(field, f"{node} is not a node of the plan ({_known(plan)})")
        if a == b:
            yield PlanProblem(field, f"the link joins {a} to itself")
        for end in link.ends:
            if end in used:
                yield PlanProblem(
                    field,
                    f"port {end} is already the end of links[{used[end]}]: a port takes one link",
                )
            used.setdefault(end, index)


def _address_problems(plan: LabPlan) -> Iterator[PlanProblem]:
    seen_interface: set[str] = set()
    seen_address: dict[ipaddress.IPv4Address, str] = {}
    for entry in plan.addressing:
        field = f"addressing.{entry.interface}"
        node = entry.interface.partition(":")[0]
        if plan.node(node) is None:
            yield PlanProblem(field, f"{node} is not a node of the plan ({_known(plan)})")
        if entry.interface in seen_interface:
            yield PlanProblem(field, "the interface is given an address twice")
        seen_interface.add(entry.interface)
        interface = ipaddress.IPv4Interface(entry.address)
        network = interface.network
        if network.prefixlen < 31 and interface.ip in (network[0], network[-1]):
            which = "network" if interface.ip == network[0] else "broadcast"
            yield PlanProblem(
                field,
                f"{interface.ip} is the {which} address of {network}: an "
                "interface needs a host address",
            )
        if interface.ip in seen_address:
            yield PlanProblem(
                field, f"{interface.ip} is already the address of {seen_address[interface.ip]}"
            )
        seen_address.setdefault(interface.ip, entry.interface)
    yield from _subnet_problems(plan)


def _subnet_problems(plan: LabPlan) -> Iterator[PlanProblem]:
    """Each link's ends in its one subnet; no two subnets (links, unlinked ports) overlap."""
    subnets: list[tuple[str, ipaddress.IPv4Network]] = []
    linked: set[str] = set()
    for index, link in enumerate(plan.links):
        field = f"links[{index}]"
        if linked.intersection(link.ends):
            continue  # a port of an earlier link: said once, by _link_problems
        linked.update(link.ends)
        subnet = plan.link_subnet(link)
        if subnet is None:
            continue
        network = ipaddress.IPv4Network(subnet)
        for end in link.ends:
            address = plan.address_of(end)
            if address is not None and ipaddress.IPv4Interface(address).network != network:
                yield PlanProblem(
                    f"addressing.{end}",
                    f"{address} is outside the subnet "
                    f"{network} of {field} ({link.ends[0]} - {link.ends[1]})",
                )
        subnets.append((field, network))
    for entry in plan.addressing:
        if entry.interface not in linked:
            network = ipaddress.IPv4Interface(entry.address).network
            subnets.append((f"addressing.{entry.interface}", network))
    # one sweep in address order (a plan of a thousand links is checked as fast as three):
    # each subnet against the widest one before it; said on the later of the two in the file
    found: dict[int, PlanProblem] = {}
    ordered = sorted(range(len(subnets)), key=lambda i: (subnets[i][1].network_address, i))
    widest: int | None = None
    for index in ordered:
        network = subnets[index][1]
        if widest is not None and network.network_address <= subnets[widest][1][-1]:
            later, earlier = max(index, widest), min(index, widest)
            found.setdefault(
                later,
                PlanProblem(
                    subnets[later][0],
                    f"its subnet "
                    f"{subnets[later][1]} overlaps {subnets[earlier][1]} of "
                    f"{subnets[earlier][0]}",
                ),
            )
        if widest is None or network[-1] > subnets[widest][1][-1]:
            widest = index
    yield from (found[index] for index in sorted(found))


def _config_problems(plan: LabPlan) -> Iterator[PlanProblem]:
    seen: set[str] = set()
    for entry in plan.config:
        field = f"config.{entry.node}"
        if plan.node(entry.node) is None:
            yield PlanProblem(field, f"{entry.node} is not a node of the plan ({_known(plan)})")
        if entry.node in seen:
            yield PlanProblem(field, "the node's lines are given twice: give them once, in order")
        seen.add(entry.node)


def _check_problems(plan: LabPlan) -> Iterator[PlanProblem]:
    ports = {end for link in plan.links for end in link.ends}
    for index, check in enumerate(plan.checks):
        field = f"checks[{index}]"
        source = check_node(check)
        if plan.node(source) is None:
            name = "from" if check.kind == "reachability" else "node"
            yield PlanProblem(
                f"{field}.{name}", f"{source} is not a node of the plan ({_known(plan)})"
            )
        for name, value in check_targets(check):
            if is_plain_address(value) or plan.node(value) is not None:
                continue
            if name == "via" and f"{source}:{value}" in ports:
                continue
            yield PlanProblem(
                f"{field}.{name}",
                f"{value!r} is neither an address nor a node of the plan ({_known(plan)})",
            )
