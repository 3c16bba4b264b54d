"""A lab plan from a description's parts: routers, links, hosts, a protocol, a pool (pure).

"Three FRR routers in a triangle running OSPF, a host behind each, addresses from
10.10.0.0/16" is a :class:`LabIntent`; :func:`plan_from_intent` computes the rest, the way
an engineer would lay it out:

* ports: each node's links take ``eth0``, ``eth1``, … in the order the intent lists them
  (router links first, then the hosts behind the router); a host's is ``eth0``;
* addresses from the pool: a /30 (or /31) per router link, packed from the start of the
  pool, then a /24 per host's LAN; the first end of a link gets the first address, the
  router on a LAN ``.1`` and its host ``.10``; the first block that is free is taken;
* each router's FRR lines (its addresses; OSPF area 0 on every link with point-to-point
  router links, router ids ``N.N.N.N``, the first free from 1.1.1.1; or static routes to
  every other LAN along a shortest path), each host's lines (Linux ``ip addr``/``ip route``; VPCS
  ``ip``);
* the default checks: every host reaches every other host; OSPF Full across every router
  link; every router has a route to every other host's LAN (with the next hop, static).

Given the lab as it is (``keep``), what it already has is kept (ports, subnets, addresses,
router ids, templates, positions of the nodes and links the intent still names) and only
what is new is laid out, so the difference (:func:`~copilot_core.labs.diff`) is what the
change builds: "add a fourth router between R2 and R3" moves nothing else.
"""

from __future__ import annotations

import ipaddress
import math
import re
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Literal

from pydantic import Field

from copilot_core._checks import Check, OspfNeighborCheck, ReachabilityCheck, RouteCheck
from copilot_core._lab_plan import (
    DeviceConfig,
    LabPlan,
    PlanAddress,
    PlanLink,
    PlanNode,
    PlanProblem,
    Subnet,
)
from copilot_core._lab_plan_file import LabPlanError
from copilot_core._lab_shape import Platform, ShapeNodeName, Text, Value

__all__ = ["HostIntent", "LabIntent", "plan_from_intent"]

_Net = ipaddress.IPv4Network
_Addr = ipaddress.IPv4Interface


class HostIntent(Value):
    """A host on a LAN of its own behind a router."""

    name: ShapeNodeName
    behind: ShapeNodeName = Field(description="the router the host's LAN is on")


class LabIntent(Value):
    """The parts of a lab's description (see the module docstring)."""

    summary: Text | None = None
    routers: tuple[ShapeNodeName, ...] = Field(min_length=1, max_length=100)
    links: tuple[tuple[ShapeNodeName, ShapeNodeName], ...] = Field(
        (), max_length=500, description="router pairs, e.g. [R1, R2]"
    )
    hosts: tuple[HostIntent, ...] = Field((), max_length=200)
    protocol: Literal["ospf", "static"] = "ospf"
    pool: Subnet = Field("10.10.0.0/16", description="where every subnet is taken from")
    p2p_length: Literal[30, 31] = Field(30, description="a router link's prefix length")
    host_platform: Literal[Platform.LINUX, Platform.VPCS] = Platform.LINUX


@dataclass
class _Link:
    """A link being laid out: its ends (node, port), its subnet and addresses."""

    a: str
    b: str
    lan: bool
    port_a: str | None = None
    port_b: str | None = None
    subnet: _Net | None = None
    address_a: _Addr | None = None
    address_b: _Addr | None = None


@dataclass
class _Layout:
    intent: LabIntent
    keep: LabPlan | None
    links: list[_Link] = field(default_factory=list)
    problems: list[PlanProblem] = field(default_factory=list)


# ------------------------------------------------------------------ the intent's own rules
def _intent_problems(intent: LabIntent) -> Iterator[PlanProblem]:
    names = [*intent.routers, *(h.name for h in intent.hosts)]
    seen: set[str] = set()
    for index, name in enumerate(names):
        where = (
            f"routers[{index}]"
            if index < len(intent.routers)
            else (f"hosts[{index - len(intent.routers)}].name")
        )
        if name in seen:
            yield PlanProblem(where, f"{name} is named twice")
        seen.add(name)
    routers = set(intent.routers)
    for index, (a, b) in enumerate(intent.links):
        for name in dict.fromkeys((a, b)):
            if name not in routers:
                yield PlanProblem(f"links[{index}]", f"{name} is not one of the routers")
        if a == b:
            yield PlanProblem(f"links[{index}]", f"the link joins {a} to itself")
    for index, host in enumerate(intent.hosts):
        if host.behind not in routers:
            yield PlanProblem(f"hosts[{index}].behind", f"{host.behind} is not one of the routers")
    unreached = set(intent.routers) - _reachable(intent, intent.routers[0])
    if unreached:
        yield PlanProblem(
            "links",
            f"{', '.join(sorted(unreached))} cannot be reached from "
            f"{intent.routers[0]}: every router needs a path to the others",
        )


def _reachable(intent: LabIntent, start: str) -> set[str]:
    return set(_first_hops(intent, start)) | {start}


def _first_hops(intent: LabIntent, start: str) -> dict[str, tuple[str, int]]:
    """For each router reachable from ``start``: the first hop's router and link index
    (a shortest path; ties broken by the order of the links)."""
    hops: dict[str, tuple[str, int]] = {}
    queue = deque([start])
    while queue:
        here = queue.popleft()
        for index, (a, b) in enumerate(intent.links):
            if here not in (a, b):
                continue
            there = b if here == a else a
            if there == start or there in hops:
                continue
            hops[there] = hops[here] if here != start else (there, index)
            queue.append(there)
    return hops


# ------------------------------------------------------------------ laying out
def plan_from_intent(intent: LabIntent, keep: LabPlan | None = None) -> LabPlan:
    """The plan of ``intent`` (see the module docstring), keeping what ``keep`` has;
    :class:`~copilot_core.labs.LabPlanError` names what cannot be laid out."""
    problems = list(_intent_problems(intent))
    if problems:
        raise LabPlanError("intent", problems)
    layout = _Layout(intent, keep)
    layout.links = [_Link(a, b, lan=False) for a, b in intent.links]
    layout.links += [_Link(h.behind, h.name, lan=True) for h in intent.hosts]
    _keep_links(layout)
    _assign_ports(layout)
    _assign_subnets(layout)
    if layout.problems:
        raise LabPlanError("intent", layout.problems)
    ids = _router_ids(layout)
    return LabPlan(
        summary=intent.summary or (keep.summary if keep else None),
        nodes=_nodes(layout),
        links=tuple(
            PlanLink(ends=(f"{k.a}:{k.port_a}", f"{k.b}:{k.port_b}")) for k in layout.links
        ),
        addressing=tuple(
            PlanAddress(interface=f"{node}:{port}", address=str(address))
            for k in layout.links
            for node, port, address in ((k.a, k.port_a, k.address_a), (k.b, k.port_b, k.address_b))
        ),
        config=(*_router_configs(layout, ids), *_host_configs(layout)),
        checks=_checks(layout, ids),
    )


def _keep_links(layout: _Layout) -> None:
    """The links ``keep`` already has between the same nodes keep their ports and addresses."""
    keep = layout.keep
    if keep is None:
        return
    claimed: set[int] = set()
    for link in layout.links:
        for index, kept in enumerate(keep.links):
            if index in claimed or not kept.joins(link.a, link.b):
                continue
            claimed.add(index)
            ends = kept.ends if kept.nodes()[0] == link.a else (kept.ends[1], kept.ends[0])
            link.port_a, link.port_b = (e.partition(":")[2] for e in ends)
            subnet = keep.link_subnet(kept)
            address_a, address_b = (keep.address_of(e) for e in ends)
            if subnet is not None and address_a is not None and address_b is not None:
                link.subnet, link.address_a, link.address_b = (
                    _Net(subnet),
                    _Addr(address_a),
                    _Addr(address_b),
                )
            break


def _assign_ports(layout: _Layout) -> None:
    used: dict[str, set[str]] = {}
    for link in layout.links:
        for node, port in ((link.a, link.port_a), (link.b, link.port_b)):
            if port is not None:
                used.setdefault(node, set()).add(port)
    for link in layout.links:
        if link.port_a is None:
            link.port_a = _free_port(used.setdefault(link.a, set()))
        if link.port_b is None:
            link.port_b = _free_port(used.setdefault(link.b, set()))


def _free_port(used: set[str]) -> str:
    number = 0
    while f"eth{number}" in used:
        number += 1
    used.add(f"eth{number}")
    return f"eth{number}"


def _assign_subnets(layout: _Layout) -> None:
    pool = _Net(layout.intent.pool)
    taken = [k.subnet for k in layout.links if k.subnet is not None]
    for lan in (False, True):  # router links packed first, then a /24 per LAN
        length = 24 if lan else layout.intent.p2p_length
        for link in layout.links:
            if link.lan != lan or link.subnet is not None:
                continue
            subnet = _free_block(pool, length, taken)
            if subnet is None:
                what = f"{link.b}'s LAN" if lan else f"the link {link.a} - {link.b}"
                layout.problems.append(
                    PlanProblem("pool", f"{pool} has no free /{length} left for {what}")
                )
                continue
            taken.append(subnet)
            link.subnet = subnet
            first, second = (1, 10) if lan else ((0, 1) if length == 31 else (1, 2))
            link.address_a = _Addr(f"{subnet[first]}/{length}")
            link.address_b = _Addr(f"{subnet[second]}/{length}")


def _free_block(pool: _Net, length: int, taken: list[_Net]) -> _Net | None:
    if length < pool.prefixlen:
        return None
    return next(
        (s for s in pool.subnets(new_prefix=length) if not any(s.overlaps(t) for t in taken)), None
    )


def _router_ids(layout: _Layout) -> dict[str, str]:
    """Each router's OSPF id: the one ``keep`` configured, else ``N.N.N.N`` not yet used."""
    ids: dict[str, str] = {}
    keep = layout.keep
    for router in layout.intent.routers:
        for line in keep.lines_of(router) if keep else ():
            found = re.fullmatch(r"ospf router-id (\S+)", line.strip())
            if found:
                ids[router] = found.group(1)
    free = (f"{n}.{n}.{n}.{n}" for n in range(1, 256) if f"{n}.{n}.{n}.{n}" not in ids.values())
    for router in layout.intent.routers:
        if router not in ids:
            ids[router] = next(free)  # at most 100 routers: 255 ids are enough
    return ids


def _nodes(layout: _Layout) -> tuple[PlanNode, ...]:
    intent, keep = layout.intent, layout.keep
    nodes: list[PlanNode] = []
    count = len(intent.routers)
    for index, router in enumerate(intent.routers):
        angle = 2 * math.pi * index / count - math.pi / 2
        nodes.append(_node(keep, router, Platform.FRR, angle, 200))
    for host in intent.hosts:
        index = intent.routers.index(host.behind)
        angle = 2 * math.pi * index / count - math.pi / 2
        nodes.append(_node(keep, host.name, intent.host_platform, angle, 380))
    return tuple(nodes)


def _node(
    keep: LabPlan | None, name: str, platform: Platform, angle: float, radius: int
) -> PlanNode:
    kept = keep.node(name) if keep else None
    if kept is not None and kept.platform is platform:
        return kept
    x, y = round(radius * math.cos(angle)), round(radius * math.sin(angle))
    return PlanNode(name=name, platform=platform, x=x, y=y)


def _router_configs(layout: _Layout, ids: dict[str, str]) -> list[DeviceConfig]:
    intent = layout.intent
    configs: list[DeviceConfig] = []
    for router in intent.routers:
        ends = sorted(_ends_of(layout, router), key=lambda e: _port_number(e[0]))
        lines: list[str] = []
        for port, address, link in ends:
            lines += [f"interface {port}", f"ip address {address}"]
            if intent.protocol == "ospf" and not link.lan:
                lines.append("ip ospf network point-to-point")
            lines.append("exit")
        if intent.protocol == "ospf":
            lines += ["router ospf", f"ospf router-id {ids[router]}"]
            lines += [f"network {link.subnet} area 0" for _, _, link in ends]
            lines.append("exit")
        else:
            lines += [f"ip route {lan} {via}" for lan, via in _static_routes(layout, router)]
        if lines:  # a lone router with static routes has none
            configs.append(DeviceConfig(node=router, lines=tuple(lines)))
    return configs


def _ends_of(layout: _Layout, node: str) -> Iterator[tuple[str, _Addr, _Link]]:
    for link in layout.links:
        if link.a == node:
            assert link.port_a is not None
            assert link.address_a is not None
            yield link.port_a, link.address_a, link
        if link.b == node:
            assert link.port_b is not None
            assert link.address_b is not None
            yield link.port_b, link.address_b, link


def _port_number(port: str) -> tuple[int, str]:
    found = re.fullmatch(r"[A-Za-z]*(\d+)", port)
    return (int(found.group(1)), port) if found else (1 << 30, port)


def _static_routes(layout: _Layout, router: str) -> Iterator[tuple[_Net, str]]:
    """Each other router's LANs, via the first hop of a shortest path."""
    hops = _first_hops(layout.intent, router)
    for link in layout.links:
        if not link.lan or link.a == router or link.a not in hops:
            continue
        neighbour, index = hops[link.a]
        via = layout.links[index]
        address = via.address_b if via.b == neighbour else via.address_a
        assert link.subnet is not None
        assert address is not None
        yield link.subnet, str(address.ip)


def _host_configs(layout: _Layout) -> list[DeviceConfig]:
    configs: list[DeviceConfig] = []
    for link in layout.links:
        if not link.lan:
            continue
        assert link.address_a is not None
        assert link.address_b is not None
        gateway = link.address_a.ip
        if layout.intent.host_platform is Platform.VPCS:
            lines = [f"ip {link.address_b} {gateway}"]
        else:
            lines = [
                f"ip addr add {link.address_b} dev {link.port_b}",
                f"ip route add default via {gateway}",
            ]
        configs.append(DeviceConfig(node=link.b, lines=tuple(lines)))
    return configs


def _checks(layout: _Layout, ids: dict[str, str]) -> tuple[Check, ...]:
    intent = layout.intent
    lans = [link for link in layout.links if link.lan]
    checks: list[Check] = []
    for source in lans:
        for target in lans:
            if target is not source:
                assert target.address_b is not None
                checks.append(
                    ReachabilityCheck.model_validate(
                        {
                            "kind": "reachability",
                            "from": source.b,
                            "to": str(target.address_b.ip),
                            "name": f"{source.b} reaches {target.b}",
                        }
                    )
                )
    if intent.protocol == "ospf":
        for link in layout.links:
            if not link.lan:
                checks.append(
                    OspfNeighborCheck(
                        kind="ospf_neighbor",
                        node=link.a,
                        neighbor=ids[link.b],
                        name=f"{link.a} and {link.b} are OSPF Full",
                    )
                )
    for router in intent.routers:
        routes = dict(_static_routes(layout, router)) if intent.protocol == "static" else {}
        for lan in lans:
            if lan.a == router:
                continue
            assert lan.subnet is not None
            checks.append(
                RouteCheck(
                    kind="route",
                    node=router,
                    prefix=str(lan.subnet),
                    protocol=intent.protocol,
                    via=routes.get(lan.subnet),
                    name=f"{router} has a route to {lan.b}'s LAN",
                )
            )
    return tuple(checks)
