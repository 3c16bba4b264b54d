"""The pure parts of lab plans on GNS3: what a template makes (its platform and its
ports, told without making a node), a plan resolved against a server's templates, and a
device's kept configuration as plan lines (export)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from adapters.gns3 import load_fault_catalog
from adapters.gns3.labs._current import plan_lines
from adapters.gns3.labs._planner import resolve_plan
from adapters.gns3.labs._templates import find_template, template_kind, template_ports
from adapters.gns3.model import DeviceKind, keeper_for
from copilot_core.labs import (
    HostIntent,
    LabIntent,
    PlanProblems,
    Platform,
    ResolvedPlan,
    parse_plan,
    plan_from_intent,
    plan_from_shape,
)

FRR: dict[str, Any] = {
    "template_id": "t-frr",
    "name": "FRR 8.4",
    "template_type": "docker",
    "image": "frr-lab:8.4-2",
    "adapters": 4,
}
HOST: dict[str, Any] = {
    "template_id": "t-host",
    "name": "Linux host",
    "template_type": "docker",
    "image": "linux-host:bookworm",
    "adapters": 1,
}
VPCS: dict[str, Any] = {"template_id": "t-vpcs", "name": "VPCS", "template_type": "vpcs"}
SWITCH: dict[str, Any] = {"template_id": "t-sw", "name": "Ethernet switch",
                          "template_type": "ethernet_switch"}  # fmt: skip
SERVER = [SWITCH, VPCS, HOST, FRR]


def names(ports: list[dict[str, Any]] | None) -> list[tuple[str, int, int]]:
    assert ports is not None
    return [(p["name"], p["adapter_number"], p["port_number"]) for p in ports]


def test_a_templates_ports_are_told_as_gns3_names_them() -> None:
    assert names(template_ports(FRR)) == [(f"eth{n}", n, 0) for n in range(4)]
    assert names(template_ports(VPCS)) == [("Ethernet0", 0, 0)]
    renamed = {
        **HOST,
        "adapters": 2,
        "custom_adapters": [{"adapter_number": 1, "port_name": "wan"}],
    }
    assert names(template_ports(renamed)) == [("eth0", 0, 0), ("wan", 1, 0)]
    qemu = {"template_type": "qemu", "adapters": 3, "port_name_format": "Gi0/{0}",
            "first_port_name": "Mgmt0"}  # fmt: skip
    assert names(template_ports(qemu)) == [("Mgmt0", 0, 0), ("Gi0/1", 1, 0), ("Gi0/2", 2, 0)]
    segmented = {"template_type": "qemu", "adapters": 3, "port_segment_size": 2,
                 "port_name_format": "Ethernet{segment0}/{port0}"}  # fmt: skip
    assert [n for n, _, _ in names(template_ports(segmented))] == [
        "Ethernet0/0",
        "Ethernet0/1",
        "Ethernet1/0",
    ]
    assert template_ports(SWITCH) is None  # its ports are its own mapping: not told


def test_a_templates_platform_is_read_as_a_nodes_would_be() -> None:
    assert template_kind(FRR) is DeviceKind.FRR
    assert template_kind(HOST) is DeviceKind.LINUX
    assert template_kind(VPCS) is DeviceKind.VPCS
    assert template_kind({"name": "Alpine", "template_type": "docker"}) is DeviceKind.LINUX
    assert template_kind(SWITCH) is DeviceKind.GENERIC


def test_a_template_is_found_by_id_then_name_then_name_in_any_case() -> None:
    assert find_template(SERVER, "t-host") is HOST
    assert find_template(SERVER, "FRR 8.4") is FRR
    assert find_template(SERVER, "vpcs") is VPCS
    assert find_template([FRR, {**FRR, "name": "frr 8.4"}], "Frr 8.4") is None  # two in any case


def test_every_catalog_shapes_plan_resolves() -> None:
    shapes = {f.lab.summary: f.lab for f in load_fault_catalog()}
    assert len(shapes) >= 4
    for shape in shapes.values():
        plan = plan_from_shape(shape, {})
        resolved = resolve_plan(plan, SERVER)
        assert isinstance(resolved, ResolvedPlan), (shape.summary, resolved)
        chosen = {n.name: n.template_id for n in resolved.nodes}
        for node in plan.nodes:
            wanted = {Platform.FRR: "t-frr", Platform.LINUX: "t-host", Platform.VPCS: "t-vpcs"}
            assert chosen[node.name] == wanted[node.platform]
        assert len(resolved.ports) == 2 * len(plan.links)


@pytest.mark.parametrize("protocol", ["ospf", "static"])
@pytest.mark.parametrize("hosts", [Platform.LINUX, Platform.VPCS])
def test_every_layout_of_a_description_resolves(protocol: str, hosts: Platform) -> None:
    intent = LabIntent.model_validate(
        {
            "routers": ["R1", "R2", "R3", "R4"],
            "links": [["R1", "R2"], ["R2", "R3"], ["R3", "R4"], ["R4", "R1"], ["R1", "R3"]],
            "hosts": [HostIntent(name=f"H{n}", behind=f"R{n}").model_dump() for n in (1, 2, 4)],
            "protocol": protocol,
            "host_platform": hosts.value,
        }
    )
    resolved = resolve_plan(plan_from_intent(intent), SERVER)
    assert isinstance(resolved, ResolvedPlan), resolved
    ports = {p.endpoint: (p.adapter_number, p.port_number) for p in resolved.ports}
    assert ports["R1:eth3"] == (3, 0)  # R1 has four links: its adapters 0-3


def test_a_router_with_more_links_than_adapters_is_refused_by_its_port() -> None:
    plan = parse_plan(
        {
            "nodes": [{"name": f"R{n}", "platform": "frr"} for n in range(1, 7)],
            "links": [f"R1:eth{n - 2}-R{n}:eth0" for n in range(2, 7)],
        }
    )
    answer = resolve_plan(plan, SERVER)
    assert isinstance(answer, PlanProblems)
    assert [(p.field, p.message) for p in answer.problems] == [
        ("links[4]", "R1 has no port eth4 (a node of 'FRR 8.4' has eth0, eth1, eth2, eth3)")
    ]


def test_a_server_without_a_platforms_template_says_so_on_the_node() -> None:
    plan = parse_plan({"nodes": [{"name": "PC1", "platform": "vpcs"}]})
    answer = resolve_plan(plan, [FRR, HOST])
    assert isinstance(answer, PlanProblems)
    assert answer.problems[0].field == "nodes[0].template"
    assert "no template for vpcs nodes; its templates: FRR 8.4, Linux host" in (
        answer.problems[0].message
    )


# ------------------------------------------------------------------ export lines
FRR_RUNNING = """Building configuration...

Current configuration:
!
frr version 8.4.4
frr defaults traditional
hostname R1
log file /var/log/frr/frr.log
service integrated-vtysh-config
!
interface eth0
 ip address 10.10.0.1/30
 ip ospf network point-to-point
exit
!
interface eth2
 ip address 10.10.1.1/24
exit
!
router ospf
 ospf router-id 1.1.1.1
 network 10.10.0.0/30 area 0
 network 10.10.1.0/24 area 0
exit
!
router bgp 65001
 no bgp ebgp-requires-policy
 neighbor 10.10.0.2 remote-as 65002
 !
 address-family ipv4 unicast
  network 10.10.1.0/24
 exit-address-family
exit
!
end
"""


def test_a_routers_running_configuration_is_plan_lines_and_addresses() -> None:
    keeper = keeper_for(DeviceKind.FRR)
    assert keeper is not None
    lines, addresses = plan_lines(Platform.FRR, keeper.parse([FRR_RUNNING]), "eth0")
    assert lines == [  # the box's own lines (hostname, log, vtysh's file) left out
        "interface eth0",
        "ip address 10.10.0.1/30",
        "ip ospf network point-to-point",
        "exit",
        "interface eth2",
        "ip address 10.10.1.1/24",
        "exit",
        "router ospf",
        "ospf router-id 1.1.1.1",
        "network 10.10.0.0/30 area 0",
        "network 10.10.1.0/24 area 0",
        "exit",
        "router bgp 65001",
        "no bgp ebgp-requires-policy",
        "neighbor 10.10.0.2 remote-as 65002",
        "address-family ipv4 unicast",
        "network 10.10.1.0/24",
        "exit",
        "exit",
    ]
    assert addresses == [("eth0", "10.10.0.1/30"), ("eth2", "10.10.1.1/24")]


def test_a_hosts_addresses_and_routes_are_the_commands_that_make_them() -> None:
    keeper = keeper_for(DeviceKind.LINUX)
    assert keeper is not None
    kept = keeper.parse(
        [
            "1: lo    inet 127.0.0.1/8 scope host lo\\       valid_lft forever\n"
            "7: eth0    inet 10.10.1.10/24 scope global eth0\\       valid_lft forever\n",
            "default via 10.10.1.1 dev eth0 \n"
            "10.10.1.0/24 dev eth0 proto kernel scope link src 10.10.1.10 \n"
            "10.20.0.0/16 via 10.10.1.2 dev eth0 proto static metric 20 \n",
        ]
    )
    lines, addresses = plan_lines(Platform.LINUX, kept, "eth0")
    assert lines == [
        "ip addr add 10.10.1.10/24 dev eth0",
        "ip route add 10.20.0.0/16 via 10.10.1.2 metric 20",
        "ip route add default via 10.10.1.1",
    ]
    assert addresses == [("eth0", "10.10.1.10/24")]


def test_a_vpcs_ip_is_its_one_line_on_its_one_port() -> None:
    assert plan_lines(Platform.VPCS, {"ip": "10.0.0.2/24", "gateway": "10.0.0.1"}, "Ethernet0") == (
        ["ip 10.0.0.2/24 10.0.0.1"],
        [("Ethernet0", "10.0.0.2/24")],
    )
    assert plan_lines(Platform.VPCS, {"ip": "0.0.0.0/0", "gateway": "0.0.0.0"}, "e0") == ([], [])


# ------------------------------------------------------------------ by property
@st.composite
def intents(draw: st.DrawFn) -> LabIntent:
    """A connected set of 2–6 routers (a chain, then random extra links), hosts behind
    some, OSPF or static, Linux or VPCS hosts."""
    count = draw(st.integers(2, 6))
    routers = [f"R{n}" for n in range(1, count + 1)]
    links = [(routers[n], routers[n + 1]) for n in range(count - 1)]
    extra = draw(st.lists(st.tuples(st.sampled_from(routers), st.sampled_from(routers))))
    links += [(a, b) for a, b in extra if a != b]
    behind = draw(st.lists(st.sampled_from(routers), max_size=6))
    return LabIntent.model_validate(
        {
            "routers": routers,
            "links": links,
            "hosts": [{"name": f"H{i}", "behind": r} for i, r in enumerate(behind)],
            "protocol": draw(st.sampled_from(["ospf", "static"])),
            "host_platform": draw(st.sampled_from(["linux", "vpcs"])),
        }
    )


@given(intents())
def test_a_laid_out_plan_resolves_exactly_when_every_router_has_its_ports(
    intent: LabIntent,
) -> None:
    plan = plan_from_intent(intent)
    used = Counter(
        end.partition(":")[0] for link in plan.links for end in link.ends
    )  # a router's ports: eth0.. in the order of its links (docs/labs.md)
    crowded = {name for name, count in used.items() if name.startswith("R") and count > 4}

    answer = resolve_plan(plan, SERVER)

    if not crowded:
        assert isinstance(answer, ResolvedPlan), answer
        assert len(answer.ports) == 2 * len(plan.links)
    else:  # the FRR template has four adapters: eth4 and beyond do not exist
        assert isinstance(answer, PlanProblems)
        assert {p.message.split()[0] for p in answer.problems} == crowded
        assert all(" has no port eth" in p.message for p in answer.problems)
