"""A plan from a description's parts, and a plan relative to the lab as it is."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from copilot_core.labs import (
    DeviceConfig,
    LabIntent,
    LabPlan,
    LabPlanError,
    PlanLink,
    Platform,
    diff,
    parse_plan,
    plan_data,
    plan_from_intent,
)


def _triangle(**extra: Any) -> LabIntent:
    """Three FRR routers in a triangle, a host behind each, addresses from 10.10.0.0/16."""
    return LabIntent.model_validate(
        {
            "routers": ["R1", "R2", "R3"],
            "links": [["R1", "R2"], ["R2", "R3"], ["R3", "R1"]],
            "hosts": [{"name": f"H{n}", "behind": f"R{n}"} for n in (1, 2, 3)],
            **extra,
        }
    )


def _router(
    p2p: list[tuple[str, str]], lan: tuple[str, str], rid: str, nets: list[str]
) -> list[str]:
    lines: list[str] = []
    for port, address in p2p:
        lines += [
            f"interface {port}",
            f"ip address {address}",
            "ip ospf network point-to-point",
            "exit",
        ]
    lines += [f"interface {lan[0]}", f"ip address {lan[1]}", "exit"]
    return [
        *lines,
        "router ospf",
        f"ospf router-id {rid}",
        *(f"network {n} area 0" for n in nets),
        "exit",
    ]


def test_the_ospf_triangle_is_laid_out_exactly() -> None:
    data = plan_data(plan_from_intent(_triangle()))
    assert data["nodes"] == [
        {"name": "R1", "platform": "frr", "x": 0, "y": -200},
        {"name": "R2", "platform": "frr", "x": 173, "y": 100},
        {"name": "R3", "platform": "frr", "x": -173, "y": 100},
        {"name": "H1", "platform": "linux", "x": 0, "y": -380},
        {"name": "H2", "platform": "linux", "x": 329, "y": 190},
        {"name": "H3", "platform": "linux", "x": -329, "y": 190},
    ]
    assert data["links"] == [
        "R1:eth0-R2:eth0",
        "R2:eth1-R3:eth0",
        "R3:eth1-R1:eth1",
        "R1:eth2-H1:eth0",
        "R2:eth2-H2:eth0",
        "R3:eth2-H3:eth0",
    ]
    assert data["addressing"] == {
        "R1:eth0": "10.10.0.1/30",
        "R2:eth0": "10.10.0.2/30",
        "R2:eth1": "10.10.0.5/30",
        "R3:eth0": "10.10.0.6/30",
        "R3:eth1": "10.10.0.9/30",
        "R1:eth1": "10.10.0.10/30",
        "R1:eth2": "10.10.1.1/24",
        "H1:eth0": "10.10.1.10/24",
        "R2:eth2": "10.10.2.1/24",
        "H2:eth0": "10.10.2.10/24",
        "R3:eth2": "10.10.3.1/24",
        "H3:eth0": "10.10.3.10/24",
    }
    assert data["config"] == {
        "R1": _router(
            [("eth0", "10.10.0.1/30"), ("eth1", "10.10.0.10/30")],
            ("eth2", "10.10.1.1/24"),
            "1.1.1.1",
            ["10.10.0.0/30", "10.10.0.8/30", "10.10.1.0/24"],
        ),
        "R2": _router(
            [("eth0", "10.10.0.2/30"), ("eth1", "10.10.0.5/30")],
            ("eth2", "10.10.2.1/24"),
            "2.2.2.2",
            ["10.10.0.0/30", "10.10.0.4/30", "10.10.2.0/24"],
        ),
        "R3": _router(
            [("eth0", "10.10.0.6/30"), ("eth1", "10.10.0.9/30")],
            ("eth2", "10.10.3.1/24"),
            "3.3.3.3",
            ["10.10.0.4/30", "10.10.0.8/30", "10.10.3.0/24"],
        ),
        "H1": ["ip addr add 10.10.1.10/24 dev eth0", "ip route add default via 10.10.1.1"],
        "H2": ["ip addr add 10.10.2.10/24 dev eth0", "ip route add default via 10.10.2.1"],
        "H3": ["ip addr add 10.10.3.10/24 dev eth0", "ip route add default via 10.10.3.1"],
    }
    reach = [c for c in data["checks"] if c["kind"] == "reachability"]
    assert [(c["from"], c["to"], c["name"]) for c in reach] == [
        ("H1", "10.10.2.10", "H1 reaches H2"),
        ("H1", "10.10.3.10", "H1 reaches H3"),
        ("H2", "10.10.1.10", "H2 reaches H1"),
        ("H2", "10.10.3.10", "H2 reaches H3"),
        ("H3", "10.10.1.10", "H3 reaches H1"),
        ("H3", "10.10.2.10", "H3 reaches H2"),
    ]
    ospf = [c for c in data["checks"] if c["kind"] == "ospf_neighbor"]
    assert [(c["node"], c["neighbor"], c["state"]) for c in ospf] == [
        ("R1", "2.2.2.2", "full"),
        ("R2", "3.3.3.3", "full"),
        ("R3", "1.1.1.1", "full"),
    ]
    routes = [c for c in data["checks"] if c["kind"] == "route"]
    assert [(c["node"], c["prefix"], c["protocol"], c.get("via")) for c in routes] == [
        ("R1", "10.10.2.0/24", "ospf", None),
        ("R1", "10.10.3.0/24", "ospf", None),
        ("R2", "10.10.1.0/24", "ospf", None),
        ("R2", "10.10.3.0/24", "ospf", None),
        ("R3", "10.10.1.0/24", "ospf", None),
        ("R3", "10.10.2.0/24", "ospf", None),
    ]
    assert len(data["checks"]) == 15


def test_static_routes_follow_a_shortest_path_and_their_checks_name_the_next_hop() -> None:
    plan = plan_from_intent(_triangle(protocol="static"))
    assert plan.lines_of("R1")[-2:] == (
        "ip route 10.10.2.0/24 10.10.0.2",
        "ip route 10.10.3.0/24 10.10.0.9",
    )
    assert plan.lines_of("R3")[-2:] == (
        "ip route 10.10.1.0/24 10.10.0.10",
        "ip route 10.10.2.0/24 10.10.0.5",
    )
    assert not any("ospf" in line for c in plan.config for line in c.lines)
    assert {c.kind for c in plan.checks} == {"reachability", "route"}
    routes = {(c.node, c.prefix): c for c in plan.checks if c.kind == "route"}
    assert routes["R2", "10.10.3.0/24"].via == "10.10.0.6"
    assert routes["R2", "10.10.3.0/24"].protocol == "static"


def test_a_line_of_routers_routes_statically_through_the_middle() -> None:
    plan = plan_from_intent(
        LabIntent.model_validate(
            {
                "routers": ["A", "B", "C"],
                "links": [["A", "B"], ["B", "C"]],
                "protocol": "static",
                "hosts": [{"name": "HA", "behind": "A"}, {"name": "HC", "behind": "C"}],
            }
        )
    )
    assert plan.lines_of("A")[-1] == "ip route 10.10.2.0/24 10.10.0.2"
    assert plan.lines_of("B")[-2:] == (
        "ip route 10.10.1.0/24 10.10.0.1",
        "ip route 10.10.2.0/24 10.10.0.6",
    )
    assert plan.lines_of("C")[-1] == "ip route 10.10.1.0/24 10.10.0.5"


def test_vpcs_hosts_and_31_bit_router_links() -> None:
    plan = plan_from_intent(_triangle(host_platform="vpcs", p2p_length=31, pool="172.16.0.0/20"))
    assert plan.lines_of("H2") == ("ip 172.16.2.10/24 172.16.2.1",)
    assert plan.address_of("R1:eth0") == "172.16.0.0/31"
    assert plan.address_of("R2:eth0") == "172.16.0.1/31"
    assert plan.address_of("R3:eth1") == "172.16.0.4/31"
    assert plan.node("H1") is not None
    assert plan.node("H1").platform is Platform.VPCS  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"links": [["R1", "R2"], ["R2", "R9"]]}, "links[1]: R9 is not one of the routers"),
        ({"links": [["R1", "R1"]]}, "links[0]: the link joins R1 to itself"),
        ({"hosts": [{"name": "R2", "behind": "R1"}]}, "hosts[0].name: R2 is named twice"),
        (
            {"hosts": [{"name": "H1", "behind": "R7"}]},
            "hosts[0].behind: R7 is not one of the routers",
        ),
        (
            {"links": [["R1", "R2"]]},
            "links: R3 cannot be reached from R1: every router needs a path to the others",
        ),
        ({"pool": "10.10.0.0/25"}, "pool: 10.10.0.0/25 has no free /24 left for H1's LAN"),
        ({"pool": "10.10.0.0/29"}, "pool: 10.10.0.0/29 has no free /30 left for the link R3 - R1"),
    ],
)
def test_an_intent_that_cannot_be_laid_out_says_why(change: dict[str, Any], problem: str) -> None:
    with pytest.raises(LabPlanError) as caught:
        plan_from_intent(_triangle(**change))
    assert problem in [str(p) for p in caught.value.problems]


# ------------------------------------------------------------------ relative plans
def _square() -> LabIntent:
    """The triangle with R4 between R2 and R3 (and a host behind it)."""
    return _triangle(
        routers=["R1", "R2", "R3", "R4"],
        links=[["R1", "R2"], ["R2", "R4"], ["R4", "R3"], ["R3", "R1"]],
        hosts=[{"name": f"H{n}", "behind": f"R{n}"} for n in (1, 2, 3, 4)],
    )


def test_a_plan_diffed_with_itself_builds_nothing() -> None:
    plan = plan_from_intent(_triangle())
    delta = diff(plan, plan)
    assert delta.empty
    assert delta.checks == plan.checks


def test_a_fourth_router_between_r2_and_r3_builds_only_the_difference() -> None:
    current = plan_from_intent(_triangle())
    wanted = plan_from_intent(_square(), keep=current)
    delta = diff(current, wanted)
    assert [n.name for n in delta.add_nodes] == ["R4", "H4"]
    assert delta.remove_nodes == ()
    assert delta.remove_links == (PlanLink(ends=("R2:eth1", "R3:eth0")),)
    assert delta.add_links == (
        PlanLink(ends=("R2:eth1", "R4:eth0")),
        PlanLink(ends=("R4:eth1", "R3:eth0")),
        PlanLink(ends=("R4:eth2", "H4:eth0")),
    )
    # R2 keeps its port, subnet and address on the new link: nothing to change on it
    assert wanted.address_of("R2:eth1") == current.address_of("R2:eth1") == "10.10.0.5/30"
    assert {c.node for c in delta.add_lines} == {"R3", "R4", "H4"}
    assert delta.add_lines[0] == DeviceConfig(
        node="R3",
        lines=(
            "interface eth0",
            "ip address 10.10.0.14/30",
            "exit",
            "router ospf",
            "network 10.10.0.12/30 area 0",
            "exit",
        ),
    )
    assert delta.remove_lines == (
        DeviceConfig(
            node="R3",
            lines=(
                "interface eth0",
                "ip address 10.10.0.6/30",
                "exit",
                "router ospf",
                "network 10.10.0.4/30 area 0",
                "exit",
            ),
        ),
    )
    assert wanted.lines_of("R4")[-2:] == ("network 10.10.4.0/24 area 0", "exit")
    assert "ospf router-id 4.4.4.4" in wanted.lines_of("R4")
    assert delta.add_lines[1].lines == wanted.lines_of("R4")
    assert delta.add_lines[2].lines == (
        "ip addr add 10.10.4.10/24 dev eth0",
        "ip route add default via 10.10.4.1",
    )
    assert delta.checks == wanted.checks
    # the kept nodes stay where they were drawn
    assert wanted.node("R2") == current.node("R2")


def test_a_node_of_another_platform_is_replaced_with_all_its_lines() -> None:
    current = plan_from_intent(_triangle())
    wanted = plan_from_intent(_triangle(host_platform="vpcs"), keep=current)
    delta = diff(current, wanted)
    assert [n.name for n in delta.add_nodes] == ["H1", "H2", "H3"]
    assert delta.remove_nodes == ("H1", "H2", "H3")
    assert [link.ends for link in delta.add_links] == [
        ("R1:eth2", "H1:eth0"),
        ("R2:eth2", "H2:eth0"),
        ("R3:eth2", "H3:eth0"),
    ]
    assert delta.remove_links == ()
    assert [(c.node, c.lines) for c in delta.add_lines] == [
        ("H1", ("ip 10.10.1.10/24 10.10.1.1",)),
        ("H2", ("ip 10.10.2.10/24 10.10.2.1",)),
        ("H3", ("ip 10.10.3.10/24 10.10.3.1",)),
    ]
    assert delta.remove_lines == ()


def test_a_removed_node_takes_its_links_and_a_changed_line_comes_in_its_block() -> None:
    current = plan_from_intent(_triangle())
    data = plan_data(current)
    data["nodes"] = [n for n in data["nodes"] if n["name"] != "H3"]
    data["links"] = [link for link in data["links"] if "H3" not in link]
    del data["addressing"]["H3:eth0"]
    del data["config"]["H3"]
    data["checks"] = []
    r1 = list(data["config"]["R1"])
    r1.insert(1, "description to R2")  # in eth0's block
    del r1[r1.index("interface eth1") + 2]  # eth1's point-to-point
    data["config"]["R1"] = [*r1, "ip route 0.0.0.0/0 10.10.0.2"]
    wanted = LabPlan.model_validate(data)
    delta = diff(current, wanted)
    assert delta.remove_nodes == ("H3",)
    assert delta.remove_links == (PlanLink(ends=("R3:eth2", "H3:eth0")),)
    assert delta.add_lines == (
        DeviceConfig(
            node="R1",
            lines=("interface eth0", "description to R2", "exit", "ip route 0.0.0.0/0 10.10.0.2"),
        ),
    )
    assert delta.remove_lines == (
        DeviceConfig(node="R1", lines=("interface eth1", "ip ospf network point-to-point", "exit")),
    )
    assert delta.checks == ()


def test_the_triangle_in_docs_is_the_laid_out_plan() -> None:
    text = (Path(__file__).resolve().parents[3] / "docs" / "labs.md").read_text(encoding="utf-8")
    block = text.split("```yaml\n", 1)[1].split("```", 1)[0]
    summary = "three FRR routers in a triangle running OSPF, a Linux host behind each"
    assert parse_plan(yaml.safe_load(block)) == plan_from_intent(_triangle(summary=summary))
