"""A lab as a fault needs it: nodes with a role and a platform, links, protocols (pure).

:class:`LabShape` is the lab shape of :mod:`copilot_core.faults` (see there): small and
declarative, enough to say whether a lab fits a fault and to build the healthy lab (each
interface's address, a host's gateway, OSPF, BGP and static routes per router). Names are
checked against each other here; what a platform's device lines look like is the GNS3
adapter's business.
"""

from __future__ import annotations

import ipaddress
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StringConstraints,
    model_validator,
)

from copilot_core._checks import PREFIX_PATTERN, InterfaceName, is_plain_address

__all__ = [
    "Address",
    "BgpNeighbor",
    "BgpRouter",
    "DeviceLine",
    "LabShape",
    "Link",
    "OspfNetwork",
    "OspfRouter",
    "Platform",
    "Protocol",
    "ShapeInterface",
    "ShapeNode",
    "ShapeNodeName",
    "StaticRoute",
    "Text",
    "Value",
]


class Platform(StrEnum):
    """The platforms a catalog lab is built of (a router is FRR, a host Linux or VPCS)."""

    FRR = "frr"
    LINUX = "linux"
    VPCS = "vpcs"


Text = Annotated[
    str, StringConstraints(strip_whitespace=True, min_length=1, max_length=500, pattern=r"\S")
]
#: A node of a lab shape: a name without ``:`` (``R1:eth1`` names an interface).
ShapeNodeName = Annotated[
    str, StringConstraints(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
]
_PRINTABLE = r"[^\x00-\x1f\x7f-\x9f\u2028\u2029]"
#: Printable characters, at least one of them not a space (``\S`` alone would let a
#: control character stand for that one).
_LINE_PATTERN = rf"^{_PRINTABLE}*[^\s\x00-\x1f\x7f-\x9f\u2028\u2029]{_PRINTABLE}*$"
#: One device line: printable text (one command is one line; no control character, C0 or
#: C1, and no line or paragraph separator).
DeviceLine = Annotated[str, StringConstraints(min_length=1, max_length=300, pattern=_LINE_PATTERN)]


def _address(value: Any) -> Any:
    if isinstance(value, str) and not (is_plain_address(value) and "." in value):
        raise ValueError(f"{value!r} is not an IPv4 address such as 10.0.1.1")
    return value


def _interface_address(value: Any) -> Any:
    if isinstance(value, str):
        try:
            ipaddress.IPv4Interface(value)
        except ValueError:
            raise ValueError(f"{value!r} is not an address with its prefix length, such as "
                             "10.0.1.1/24") from None  # fmt: skip
        if "/" not in value:
            raise ValueError(f"{value!r} has no prefix length (write it as 10.0.1.1/24)")
    return value


def _endpoint(value: Any) -> Any:
    if isinstance(value, str):
        node, colon, interface = value.partition(":")
        if not (colon and node and interface):
            raise ValueError(f"{value!r} is not an endpoint such as R1:eth1 (node:interface)")
    return value


Address = Annotated[str, BeforeValidator(_address)]
InterfaceAddress = Annotated[str, BeforeValidator(_interface_address)]
Prefix = Annotated[str, StringConstraints(pattern=PREFIX_PATTERN)]
#: One end of a link: ``node:interface`` (``R1:eth1``).
Endpoint = Annotated[
    str,
    StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*:[A-Za-z0-9][A-Za-z0-9_.:/-]*$"),
    BeforeValidator(_endpoint),
]
#: A link: its two ends, in either order.
Link = tuple[Endpoint, Endpoint]


class Value(BaseModel):
    """A frozen value that refuses unknown fields."""

    model_config = ConfigDict(extra="forbid", frozen=True)


# ------------------------------------------------------------------ the lab shape
class ShapeInterface(Value):
    """An interface of a shape's node, with its address in the healthy lab (if any)."""

    name: InterfaceName
    address: InterfaceAddress | None = Field(None, description="e.g. 10.0.1.1/24")


class ShapeNode(Value):
    """A node the fault needs: a router (FRR) or a host (Linux or VPCS)."""

    name: ShapeNodeName
    role: Literal["router", "host"]
    platform: Platform
    interfaces: tuple[ShapeInterface, ...] = Field(min_length=1)
    gateway: Address | None = Field(None, description="a host's default gateway")

    @model_validator(mode="after")
    def _consistent(self) -> ShapeNode:
        if (self.role == "router") != (self.platform is Platform.FRR):
            raise ValueError(f"a {self.role} cannot be {self.platform.value}: routers are frr, "
                             "hosts linux or vpcs")  # fmt: skip
        if self.gateway is not None and self.role != "host":
            raise ValueError("only a host has a gateway")
        names = [i.name for i in self.interfaces]
        if len(set(names)) != len(names):
            raise ValueError(f"{self.name} names an interface twice: {names}")
        return self

    def addresses(self) -> list[str]:
        """The node's addresses, without their prefix lengths."""
        return [i.address.split("/")[0] for i in self.interfaces if i.address]

    def interface(self, name: str) -> ShapeInterface | None:
        return next((i for i in self.interfaces if i.name == name), None)


class OspfNetwork(Value):
    prefix: Prefix
    area: int = Field(0, ge=0, le=4294967295)


class OspfRouter(Value):
    """OSPF on a router: its router id, the networks it enables, its point-to-point links."""

    kind: Literal["ospf"]
    node: ShapeNodeName
    router_id: Address
    networks: tuple[OspfNetwork, ...] = Field(min_length=1)
    point_to_point: tuple[InterfaceName, ...] = ()


class BgpNeighbor(Value):
    address: Address
    remote_as: int = Field(ge=1, le=4294967295)


class BgpRouter(Value):
    """BGP on a router: its AS, its neighbours, the prefixes it originates."""

    kind: Literal["bgp"]
    node: ShapeNodeName
    asn: int = Field(ge=1, le=4294967295)
    router_id: Address | None = None
    neighbors: tuple[BgpNeighbor, ...] = Field(min_length=1)
    networks: tuple[Prefix, ...] = ()


class StaticRoute(Value):
    """A static route on a router."""

    kind: Literal["static"]
    node: ShapeNodeName
    prefix: Prefix
    via: Address


Protocol = Annotated[OspfRouter | BgpRouter | StaticRoute, Field(discriminator="kind")]


class LabShape(Value):
    """The lab a fault needs, as data: nodes, links between their interfaces, protocols."""

    summary: Text = Field(description="e.g. two FRR routers running OSPF, a host behind each")
    nodes: tuple[ShapeNode, ...] = Field(min_length=1)
    links: tuple[Link, ...] = ()
    protocols: tuple[Protocol, ...] = ()

    @model_validator(mode="after")
    def _references(self) -> LabShape:
        names = [n.name for n in self.nodes]
        if len(set(names)) != len(names):
            raise ValueError(f"a node name is given twice: {names}")
        used: set[str] = set()
        for a, b in self.links:
            for end in (a, b):
                node_name, _, interface = end.partition(":")
                node = self.node(node_name)
                if node is None:
                    raise ValueError(f"link {a} - {b}: no node {node_name} in the shape")
                if node.interface(interface) is None:
                    raise ValueError(f"link {a} - {b}: {node_name} has no interface {interface}")
                if end in used:
                    raise ValueError(f"{end} is the end of two links")
                used.add(end)
            if a.partition(":")[0] == b.partition(":")[0]:
                raise ValueError(f"link {a} - {b} joins a node to itself")
        for protocol in self.protocols:
            node = self.node(protocol.node)
            if node is None or node.role != "router":
                raise ValueError(f"{protocol.kind} on {protocol.node}: not a router of the shape")
            if isinstance(protocol, OspfRouter):
                for interface in protocol.point_to_point:
                    if node.interface(interface) is None:
                        raise ValueError(f"ospf on {node.name}: no interface {interface}")
        return self

    def node(self, name: str) -> ShapeNode | None:
        return next((n for n in self.nodes if n.name == name), None)

    def has_link(self, link: Link) -> bool:
        a, b = link
        return (a, b) in self.links or (b, a) in self.links

    def counts(self) -> dict[str, int]:
        """How many nodes of each role and platform (``router/frr``: 2)."""
        counted: dict[str, int] = {}
        for node in self.nodes:
            key = f"{node.role}/{node.platform.value}"
            counted[key] = counted.get(key, 0) + 1
        return counted

    def protocol_kinds(self) -> set[str]:
        return {p.kind for p in self.protocols}

    def platforms(self) -> set[Platform]:
        return {n.platform for n in self.nodes}
