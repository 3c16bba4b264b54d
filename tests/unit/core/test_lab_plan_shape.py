"""A fault catalog's lab shape as a lab plan (``plan_from_shape``): the shipped catalog's
shapes give valid plans whose lines are the catalog's healthy lab, with the checks that
prove it; any chain of routers with hosts, by property, gives a valid plan that reads
back from its file."""

from __future__ import annotations

import ipaddress
from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from adapters.gns3 import FAULTS_DIR, baseline_lines, load_fault_catalog
from copilot_core.faults import LabShape
from copilot_core.intent import (
    BgpSessionCheck,
    OspfNeighborCheck,
    ReachabilityCheck,
    RouteCheck,
)
from copilot_core.labs import Platform, parse_plan, plan_data, plan_from_shape

CATALOG = load_fault_catalog()
#: Each catalog file's lab shape (every fault of a file shares it).
SHAPES = {
    CATALOG.sources[fault.id].removeprefix(f"{FAULTS_DIR.name}/"): fault.lab
    for fault in CATALOG.faults
}
TEMPLATES = {Platform.FRR: "FRR 8.4", Platform.LINUX: "Linux host"}


def _structure(line: str) -> bool:
    return line == "exit" or line.startswith("interface ")


@pytest.mark.parametrize("source", sorted(SHAPES))
def test_each_catalog_shape_is_a_valid_plan_of_its_healthy_lab(source: str) -> None:
    shape = SHAPES[source]

    plan = plan_from_shape(shape, TEMPLATES)

    assert parse_plan(plan_data(plan)) == plan
    assert [n.name for n in plan.nodes] == [n.name for n in shape.nodes]
    assert {n.name: n.template for n in plan.nodes} == {
        n.name: TEMPLATES.get(n.platform) for n in shape.nodes
    }
    assert {link.ends for link in plan.links} == set(shape.links)
    assert {(a.interface, a.address) for a in plan.addressing} == {
        (f"{n.name}:{i.name}", i.address) for n in shape.nodes for i in n.interfaces if i.address
    }
    # the catalog's healthy lab, line for line (a point-to-point line sits in its
    # interface's one block here, in a block of its own there)
    for node, lines in baseline_lines(shape).items():
        wanted = Counter(line for line in lines if not _structure(line))
        assert Counter(line for line in plan.lines_of(node) if not _structure(line)) == wanted


def _hosts(shape: LabShape) -> list[str]:
    return [n.name for n in shape.nodes if n.role == "host"]


@pytest.mark.parametrize("source", sorted(SHAPES))
def test_each_catalog_shapes_checks_prove_its_lab(source: str) -> None:
    shape = SHAPES[source]
    plan = plan_from_shape(shape, {})

    reach = [c for c in plan.checks if isinstance(c, ReachabilityCheck)]
    hosts = _hosts(shape)
    assert sorted((c.source, c.to) for c in reach) == sorted(
        (a, shape.node(b).addresses()[0])  # type: ignore[union-attr]
        for a in hosts
        for b in hosts
        if a != b
    )
    kinds = shape.protocol_kinds()
    ospf = [c for c in plan.checks if isinstance(c, OspfNeighborCheck)]
    bgp = [c for c in plan.checks if isinstance(c, BgpSessionCheck)]
    routes = [c for c in plan.checks if isinstance(c, RouteCheck)]
    assert bool(ospf) == ("ospf" in kinds)
    assert bool(bgp) == ("bgp" in kinds)
    if kinds:  # every router learns the LAN behind the other, by its protocol
        assert sorted((c.node, c.prefix) for c in routes) == [
            ("R1", "10.0.2.0/24"),
            ("R2", "10.0.1.0/24"),
        ]
        assert {c.protocol for c in routes} == kinds
    if kinds == {"static"}:
        assert {c.node: c.via for c in routes} == {"R1": "10.0.12.2", "R2": "10.0.12.1"}
    if "ospf" in kinds:
        assert [(c.node, c.neighbor) for c in ospf] == [("R1", "2.2.2.2")]


def test_a_vpcs_host_gets_its_address_and_gateway_in_one_line() -> None:
    shape = next(s for s in SHAPES.values() if Platform.VPCS in s.platforms())
    plan = plan_from_shape(shape, {Platform.VPCS: "VPCS"})
    host = next(n for n in shape.nodes if n.platform is Platform.VPCS)
    address = host.interfaces[0].address
    assert plan.lines_of(host.name) == (f"ip {address} {host.gateway}",)
    assert plan.node(host.name).template == "VPCS"  # type: ignore[union-attr]


# ------------------------------------------------------------------ by property
@st.composite
def chains(draw: st.DrawFn) -> LabShape:
    """A chain of 1–6 FRR routers (R1 - R2 - …, a /30 each), some with a host behind
    (a /24 each, Linux or VPCS), running OSPF everywhere or static routes nowhere."""
    count = draw(st.integers(1, 6))
    hosted = draw(st.lists(st.booleans(), min_size=count, max_size=count))
    ospf = draw(st.booleans())
    host_platform = draw(st.sampled_from([Platform.LINUX, Platform.VPCS]))
    nodes: list[dict[str, object]] = []
    links: list[list[str]] = []
    protocols: list[dict[str, object]] = []
    for index in range(1, count + 1):
        interfaces: list[dict[str, str]] = []
        networks: list[str] = []
        if index > 1:  # the link to the router before
            interfaces.append({"name": "eth0", "address": f"10.0.{index - 1}.2/30"})
            networks.append(f"10.0.{index - 1}.0/30")
        if index < count:
            interfaces.append({"name": "eth1", "address": f"10.0.{index}.1/30"})
            networks.append(f"10.0.{index}.0/30")
            links.append([f"R{index}:eth1", f"R{index + 1}:eth0"])
        if hosted[index - 1]:
            interfaces.append({"name": "eth2", "address": f"10.1.{index}.1/24"})
            networks.append(f"10.1.{index}.0/24")
            nodes.append(
                {
                    "name": f"H{index}",
                    "role": "host",
                    "platform": host_platform.value,
                    "interfaces": [{"name": "eth0", "address": f"10.1.{index}.10/24"}],
                    "gateway": f"10.1.{index}.1",
                }
            )
            links.append([f"R{index}:eth2", f"H{index}:eth0"])
        if not interfaces:
            interfaces.append({"name": "eth0"})
        nodes.append(
            {"name": f"R{index}", "role": "router", "platform": "frr", "interfaces": interfaces}
        )
        if ospf and networks:
            protocols.append(
                {
                    "kind": "ospf",
                    "node": f"R{index}",
                    "router_id": f"{index}.{index}.{index}.{index}",
                    "networks": [{"prefix": n} for n in networks],
                }
            )
    return LabShape.model_validate(
        {"summary": "a chain", "nodes": nodes, "links": links, "protocols": protocols}
    )


@given(chains())
def test_any_chain_is_a_valid_plan_that_reads_back(shape: LabShape) -> None:
    plan = plan_from_shape(shape, TEMPLATES)

    assert parse_plan(plan_data(plan)) == plan
    hosts = _hosts(shape)
    reach = [c for c in plan.checks if isinstance(c, ReachabilityCheck)]
    assert len(reach) == len(hosts) * (len(hosts) - 1)
    for link in plan.links:  # each link's ends are addressed in its one subnet
        subnet = plan.link_subnet(link)
        assert subnet is not None
        for end in link.ends:
            address = plan.address_of(end)
            assert address is not None
            assert ipaddress.IPv4Interface(address) in ipaddress.IPv4Network(subnet)
    if shape.protocol_kinds() == {"ospf"}:
        routers = [n for n in shape.nodes if n.role == "router"]
        routes = [c for c in plan.checks if isinstance(c, RouteCheck)]
        # every router learns every host LAN it is not on
        assert len(routes) == sum(1 for r in routers for h in hosts if h[1:] != r.name[1:])
