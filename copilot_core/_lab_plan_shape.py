"""A fault catalog's lab shape as a lab plan (pure).

A troubleshooting drill needs a lab of a known shape (:class:`~copilot_core.faults.
LabShape`: nodes, their interfaces' addresses, links, each router's protocols); a plan of
that shape is what an empty project is built from before the drill starts (an evaluation's
scratch project, a student without a lab). :func:`plan_from_shape` lays it out:

- nodes: each of the shape's, with the template given for its platform (none: the
  server's template for the platform), routers on a circle and each host outward of the
  router it is linked to;
- links: the shape's, end for end (ports as the shape names its interfaces);
- addressing: every interface address of the shape;
- config: FRR lines per router (each addressed interface's block, point-to-point OSPF in
  it; then ``router ospf``, ``router bgp`` with ``no bgp ebgp-requires-policy`` (FRR's
  default refuses an eBGP session without a policy) or the static routes), a Linux host's
  ``ip addr add`` and default route, a VPCS' ``ip ADDRESS GATEWAY``;
- checks: every host reaches every other host; each router link between two OSPF routers
  is Full (from the first router, the other's router id); each BGP neighbour is
  established; each router has a route to every LAN it is not on, by its protocol (a
  static route with its next hop).
"""

from __future__ import annotations

import ipaddress
import math
from collections.abc import Iterator, Mapping

from copilot_core._checks import (
    BgpSessionCheck,
    Check,
    OspfNeighborCheck,
    ReachabilityCheck,
    RouteCheck,
)
from copilot_core._lab_plan import DeviceConfig, LabPlan, PlanAddress, PlanLink, PlanNode
from copilot_core._lab_shape import (
    BgpRouter,
    LabShape,
    OspfRouter,
    Platform,
    ShapeNode,
    StaticRoute,
)

__all__ = ["plan_from_shape"]


def plan_from_shape(shape: LabShape, templates: Mapping[Platform, str]) -> LabPlan:
    """The plan that builds ``shape``'s healthy lab (see the module docstring), each node
    from ``templates``' template for its platform (a platform left out: the server's)."""
    return LabPlan(
        summary=shape.summary,
        nodes=_nodes(shape, templates),
        links=tuple(PlanLink(ends=link) for link in shape.links),
        addressing=tuple(
            PlanAddress(interface=f"{node.name}:{interface.name}", address=interface.address)
            for node in shape.nodes
            for interface in node.interfaces
            if interface.address is not None
        ),
        config=tuple(
            DeviceConfig(node=node.name, lines=tuple(lines))
            for node in shape.nodes
            if (lines := _lines(shape, node))
        ),
        checks=tuple(_checks(shape)),
    )


# ------------------------------------------------------------------ nodes
def _neighbour_router(shape: LabShape, host: ShapeNode) -> str | None:
    for a, b in shape.links:
        for here, there in ((a, b), (b, a)):
            other = shape.node(there.partition(":")[0])
            if here.partition(":")[0] == host.name and other and other.role == "router":
                return other.name
    return None


def _nodes(shape: LabShape, templates: Mapping[Platform, str]) -> tuple[PlanNode, ...]:
    routers = [n.name for n in shape.nodes if n.role == "router"]
    count = max(len(routers), 1)
    hosts_behind: dict[str | None, int] = {}
    placed: list[PlanNode] = []
    for node in shape.nodes:
        if node.role == "router":
            index, radius, spread = routers.index(node.name), 200, 0.0
        else:
            behind = _neighbour_router(shape, node)
            index = routers.index(behind) if behind in routers else len(placed) % count
            seen = hosts_behind.get(behind, 0)
            hosts_behind[behind] = seen + 1
            radius, spread = 380, 0.35 * seen
        angle = 2 * math.pi * index / count - math.pi / 2 + spread
        placed.append(
            PlanNode(
                name=node.name,
                platform=node.platform,
                template=templates.get(node.platform),
                x=round(radius * math.cos(angle)),
                y=round(radius * math.sin(angle)),
            )
        )
    return tuple(placed)


# ------------------------------------------------------------------ lines
def _lines(shape: LabShape, node: ShapeNode) -> list[str]:
    if node.platform is Platform.FRR:
        return _router_lines(shape, node)
    if node.platform is Platform.LINUX:
        lines = [
            f"ip addr add {interface.address} dev {interface.name}"
            for interface in node.interfaces
            if interface.address
        ]
        if node.gateway:
            lines.append(f"ip route add default via {node.gateway}")
        return lines
    address = next((i.address for i in node.interfaces if i.address), None)
    if address is None:
        return []
    return [f"ip {address}" + (f" {node.gateway}" if node.gateway else "")]


def _router_lines(shape: LabShape, node: ShapeNode) -> list[str]:
    protocols = [p for p in shape.protocols if p.node == node.name]
    point_to_point = {
        name for p in protocols if isinstance(p, OspfRouter) for name in p.point_to_point
    }
    lines: list[str] = []
    for interface in node.interfaces:
        inner = [f"ip address {interface.address}"] if interface.address else []
        if interface.name in point_to_point:
            inner.append("ip ospf network point-to-point")
        if inner:
            lines += [f"interface {interface.name}", *inner, "exit"]
    for protocol in protocols:
        if isinstance(protocol, OspfRouter):
            lines += ["router ospf", f"ospf router-id {protocol.router_id}"]
            lines += [f"network {n.prefix} area {n.area}" for n in protocol.networks]
            lines.append("exit")
        elif isinstance(protocol, BgpRouter):
            lines.append(f"router bgp {protocol.asn}")
            if protocol.router_id:
                lines.append(f"bgp router-id {protocol.router_id}")
            lines.append("no bgp ebgp-requires-policy")
            lines += [f"neighbor {n.address} remote-as {n.remote_as}" for n in protocol.neighbors]
            lines += [f"network {prefix}" for prefix in protocol.networks]
            lines.append("exit")
        else:
            lines.append(f"ip route {protocol.prefix} {protocol.via}")
    return lines


# ------------------------------------------------------------------ checks
def _networks(node: ShapeNode) -> set[ipaddress.IPv4Network]:
    return {
        ipaddress.IPv4Interface(i.address).network for i in node.interfaces if i.address is not None
    }


def _checks(shape: LabShape) -> Iterator[Check]:
    hosts = [n for n in shape.nodes if n.role == "host" and n.addresses()]
    for source in hosts:
        for target in hosts:
            if target is not source:
                yield ReachabilityCheck.model_validate(
                    {
                        "kind": "reachability",
                        "from": source.name,
                        "to": target.addresses()[0],
                        "name": f"{source.name} reaches {target.name}",
                    }
                )
    ospf = {p.node: p for p in shape.protocols if isinstance(p, OspfRouter)}
    for a, b in shape.links:
        first, second = a.partition(":")[0], b.partition(":")[0]
        if first in ospf and second in ospf:
            yield OspfNeighborCheck(
                kind="ospf_neighbor",
                node=first,
                neighbor=ospf[second].router_id,
                name=f"{first} and {second} are OSPF Full",
            )
    for protocol in shape.protocols:
        if isinstance(protocol, BgpRouter):
            for neighbor in protocol.neighbors:
                yield BgpSessionCheck(
                    kind="bgp_session",
                    node=protocol.node,
                    peer=neighbor.address,
                    name=f"{protocol.node}'s BGP session to {neighbor.address} is up",
                )
    yield from _route_checks(shape)


def _route_checks(shape: LabShape) -> Iterator[Check]:
    """Each router's route to each host LAN it is not on, by the protocol that brings it."""
    lans = [
        (host.name, ipaddress.IPv4Interface(i.address).network)
        for host in shape.nodes
        if host.role == "host"
        for i in host.interfaces
        if i.address is not None
    ]
    for router in (n for n in shape.nodes if n.role == "router"):
        mine = [p for p in shape.protocols if p.node == router.name]
        statics = {
            ipaddress.IPv4Network(p.prefix): p.via for p in mine if isinstance(p, StaticRoute)
        }
        for host, lan in dict.fromkeys(lans):
            if lan in _networks(router):
                continue
            protocol = _bringing(shape, router, mine, lan)
            if protocol is None:
                continue
            yield RouteCheck(
                kind="route",
                node=router.name,
                prefix=str(lan),
                protocol=protocol,
                via=statics.get(lan) if protocol == "static" else None,
                name=f"{router.name} has a route to {host}'s LAN",
            )


def _bringing(
    shape: LabShape,
    router: ShapeNode,
    mine: list[OspfRouter | BgpRouter | StaticRoute],
    lan: ipaddress.IPv4Network,
) -> str | None:
    """The protocol that gives ``router`` its route to ``lan`` (``None``: none does)."""
    if any(isinstance(p, StaticRoute) and ipaddress.IPv4Network(p.prefix) == lan for p in mine):
        return "static"
    others = [p for p in shape.protocols if p.node != router.name]
    announced = {
        kind
        for p in others
        for kind, prefixes in (
            ("ospf", [n.prefix for n in p.networks] if isinstance(p, OspfRouter) else []),
            ("bgp", list(p.networks) if isinstance(p, BgpRouter) else []),
        )
        if any(ipaddress.IPv4Network(prefix).supernet_of(lan) for prefix in prefixes)
    }
    for kind in ("ospf", "bgp"):
        if kind in announced and any(p.kind == kind for p in mine):
            return kind
    return None
