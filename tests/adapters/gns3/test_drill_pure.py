"""The pure parts of the GNS3 drill lab: whether a project fits a fault's lab shape and where
its links are (``drills._fit``), and comparing two captures, judging constraints and planning
a host's restore (``_drill_state``); the sized reachability probe a host's MTU fault needs."""

from __future__ import annotations

from typing import Any

import pytest

from adapters.gns3 import load_fault_catalog
from adapters.gns3.drills._fit import find_shape_link, fit_problems
from adapters.gns3.lab._snapshot import LabSnapshot
from adapters.gns3.model._drill_state import (
    differences,
    host_differences,
    host_plan,
    judge_constraints,
    link_fields,
    link_updates,
    parse_host,
    parse_nft,
)
from adapters.gns3.model._grammar import judge
from adapters.gns3.model._intent_compile import Plan, compile_check
from adapters.gns3.model._platforms import DeviceKind
from adapters.gns3.restore._undo.judged import refusal
from copilot_core.faults import (
    AddressesUnchanged,
    ConfigUnchanged,
    Constraint,
    LabShape,
    NoNewStaticRoute,
    TopologyUnchanged,
)
from copilot_core.intent import CheckStatus, Observation, checks_adapter

JSON = dict[str, Any]
KINDS = {"R1": "frr", "R2": "frr", "PC1": "linux", "PC2": "linux"}


@pytest.fixture(scope="module")
def shape() -> LabShape:
    fault = load_fault_catalog().get("ospf-hello-mismatch")
    assert fault is not None
    return fault.lab


def node(name: str, status: str = "started", kind: str | None = None, ports: int = 2) -> JSON:
    return {
        "name": name,
        "node_id": f"id-{name}",
        "node_type": "docker",
        "status": status,
        "console": 5000,
        "tags": [f"device_type:{kind or KINDS[name]}"],
        "ports": [
            {"name": f"eth{i}", "short_name": f"eth{i}", "adapter_number": i, "port_number": 0}
            for i in range(ports)
        ],
    }


def link(a: str, ai: int, b: str, bi: int) -> JSON:
    return {
        "link_id": f"{a}{ai}-{b}{bi}",
        "nodes": [
            {"node_id": f"id-{a}", "adapter_number": ai, "port_number": 0},
            {"node_id": f"id-{b}", "adapter_number": bi, "port_number": 0},
        ],
    }


def lab(nodes: list[JSON] | None = None, links: list[JSON] | None = None) -> LabSnapshot:
    return LabSnapshot(
        {"project_id": "p"},
        nodes if nodes is not None else [node("R1"), node("R2"), node("PC1"), node("PC2")],
        links if links is not None else [link("PC1", 0, "R1", 0), link("R1", 1, "R2", 1),
                                         link("R2", 0, "PC2", 0)],
    )  # fmt: skip


# ------------------------------------------------------------------ fit
def test_the_lab_the_shape_describes_fits(shape: LabShape) -> None:
    assert fit_problems(shape, lab()) == ()


def test_what_the_lab_lacks_is_said_in_sentences_a_student_can_act_on(shape: LabShape) -> None:
    nodes = [node("R1", kind="cisco_ios"), node("R2", status="stopped"), node("PC1", ports=0)]
    assert fit_problems(shape, lab(nodes, [])) == (
        "R1 is a cisco_ios device, not a FRR",
        "R2 is stopped: start it",
        "PC1 has no interface eth0",
        "no Linux host node named PC2",
    )


def test_a_missing_link_is_named_by_its_ends(shape: LabShape) -> None:
    assert fit_problems(shape, lab(links=[link("PC1", 0, "R1", 0), link("R2", 0, "PC2", 0)])) == (
        "R1 eth1 is not linked to R2 eth1",
    )


def test_a_link_between_other_ports_does_not_count(shape: LabShape) -> None:
    links = [link("PC1", 0, "R1", 0), link("R1", 1, "R2", 0), link("R2", 1, "PC2", 0)]
    missing = fit_problems(shape, lab(links=links))
    assert missing == ("R1 eth1 is not linked to R2 eth1", "R2 eth0 is not linked to PC2 eth0")


def test_a_shape_link_is_found_whichever_end_comes_first() -> None:
    snapshot = lab()
    assert find_shape_link(snapshot, ("R2:eth1", "R1:eth1"))["link_id"] == "R11-R21"  # type: ignore[index]
    assert find_shape_link(snapshot, ("R1:eth0", "R2:eth0")) is None
    assert find_shape_link(snapshot, ("R9:eth0", "R2:eth0")) is None


# ------------------------------------------------------------------ hosts
LINKS = (
    "1: lo: <LOOPBACK,UP,LOWER_UP> mtu 65536 qdisc noqueue state UNKNOWN mode DEFAULT\n"
    "2: eth0@if9: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu {mtu} qdisc noqueue state UP mode DEFAULT"
)
RULES = (
    "0:\tfrom all lookup local\n{extra}32766:\tfrom all lookup main\n"
    "32767:\tfrom all lookup default"
)


def host(
    mtu: int = 1500, extra: str = "", iptables: str = "bash: iptables: command not found"
) -> JSON:
    return parse_host([LINKS.format(mtu=mtu), RULES.format(extra=extra), iptables])


def test_a_host_is_read_as_its_mtus_rules_and_iptables_rules() -> None:
    read = host(68, "100:\tfrom all to 10.0.1.0/24 prohibit\n", "-P INPUT ACCEPT\n-A INPUT -j DROP")
    assert read == {
        "links": {"eth0": {"mtu": 68, "up": True}},
        "rules": [
            "0: from all lookup local",
            "100: from all to 10.0.1.0/24 prohibit",
            "32766: from all lookup main",
            "32767: from all lookup default",
        ],
        "iptables": ["-P INPUT ACCEPT", "-A INPUT -j DROP"],
        "nftables": None,
    }
    assert host()["iptables"] is None  # not installed: nothing to compare


def test_a_host_is_planned_back_and_every_line_is_one_plain_command() -> None:
    saved = host(1500, "", "-P INPUT ACCEPT\n-A INPUT -s 10.0.9.0/24 -j ACCEPT")
    now = host(68, "100:\tfrom all to 10.0.1.0/24 prohibit\n",
               "-P INPUT DROP\n-A INPUT -p icmp -m icmp --icmp-type 8 -j DROP")  # fmt: skip
    plan = host_plan(saved, now)
    assert plan == [
        "ip link set dev eth0 mtu 1500",
        "ip rule del from all to 10.0.1.0/24 prohibit pref 100",
        "iptables -D INPUT -p icmp -m icmp --icmp-type 8 -j DROP",
        "iptables -P INPUT ACCEPT",
        "iptables -A INPUT -s 10.0.9.0/24 -j ACCEPT",
    ]
    assert [refusal(line, DeviceKind.LINUX, config=False) for line in plan] == [None] * len(plan)
    assert host_plan(saved, saved) == []
    assert host_differences("PC2", saved, now) == [
        "PC2 eth0: mtu 68 (was 1500)",
        "PC2 ip rule 100: from all to 10.0.1.0/24 prohibit: present now, absent then",
        "PC2 iptables -P INPUT DROP: present now, absent then",
        "PC2 iptables -A INPUT -p icmp -m icmp --icmp-type 8 -j DROP: present now, absent then",
        "PC2 iptables -P INPUT ACCEPT: absent now, present then",
        "PC2 iptables -A INPUT -s 10.0.9.0/24 -j ACCEPT: absent now, present then",
    ]


#: ``nft list ruleset`` on a host with the catalog's nft fault and a table iptables-nft made.
NFT = """table ip filter {
	chain INPUT {
		type filter hook input priority filter; policy accept;
		meta l4proto icmp counter packets 3 bytes 252 drop
	}
}
table inet lab {
	chain input {
		type filter hook input priority filter; policy accept;
		ip saddr 10.0.1.0/24 drop
	}
}
"""


def test_nftables_tables_are_read_but_iptables_nft_s_own() -> None:
    """iptables' tables are ``iptables -S``'s part (nft cannot always print their rules
    back as input); an empty ruleset is read, a missing or refused nft is not."""
    assert parse_nft(NFT) == {
        "inet lab": [
            "chain input {",
            "type filter hook input priority filter; policy accept;",
            "ip saddr 10.0.1.0/24 drop",
            "}",
        ]
    }
    assert parse_nft("") == {}
    assert parse_nft("bash: nft: command not found") is None
    assert parse_nft("Error: Operation not permitted\nnetlink: Error: cannot list") is None
    assert host()["nftables"] is None  # an older read without nft: nothing to compare


def test_an_nftables_table_added_since_is_deleted_and_one_changed_is_named() -> None:
    iptables = "-P INPUT ACCEPT"
    saved = parse_host([LINKS.format(mtu=1500), RULES.format(extra=""), iptables, ""])
    now = parse_host([LINKS.format(mtu=1500), RULES.format(extra=""), iptables, NFT])
    plan = host_plan(saved, now)
    assert plan == ["nft delete table inet lab"]
    assert [refusal(line, DeviceKind.LINUX, config=False) for line in plan] == [None]
    assert host_differences("PC2", saved, now) == [
        "PC2 nftables table inet lab: present now, absent then"
    ]
    assert host_differences("PC2", now, now) == []
    # a table of the checkpoint that changed is not rebuilt (its text needs braces and
    # quotes no undo line may hold): the comparison names it, the plan leaves it alone
    changed = parse_host([LINKS.format(mtu=1500), RULES.format(extra=""), iptables,
                          NFT.replace("10.0.1.0/24", "10.0.9.0/24")])  # fmt: skip
    assert host_plan(now, changed) == []
    assert host_differences("PC2", now, changed) == ["PC2 nftables table inet lab: changed"]
    unread = parse_host([LINKS.format(mtu=1500), RULES.format(extra=""), iptables])
    assert host_differences("PC2", saved, unread) == ["PC2 nftables: read on one side only"]
    assert host_plan(unread, now) == []  # what was not read is not planned


def test_a_sized_reachability_check_pings_without_fragmenting_from_a_linux_host_only() -> None:
    """An MTU smaller than the path's shows only with a probe that must not be fragmented."""
    check = checks_adapter.validate_python(
        [{"kind": "reachability", "from": "PC2", "to": "10.0.1.10", "size": 1472}]
    )[0]
    plan = compile_check(check, "PC2", DeviceKind.LINUX, {})
    assert isinstance(plan, Plan)
    assert plan.command == "ping -c 3 -W 2 -s 1472 -M do 10.0.1.10"
    assert not judge(plan.command, DeviceKind.LINUX).changes
    said = compile_check(check, "PC2", DeviceKind.VPCS, {})
    assert isinstance(said, Observation) and said.status is CheckStatus.ERROR
    assert "only a Linux host's ping sets one" in (said.reason or "")


def test_a_rule_deleted_since_is_added_back_with_its_preference() -> None:
    saved = host(extra="100:\tfrom all to 10.0.1.0/24 prohibit\n")
    assert host_plan(saved, host()) == ["ip rule add from all to 10.0.1.0/24 prohibit pref 100"]


def test_a_link_is_put_back_with_its_whole_filter_set_and_suspension() -> None:
    saved = {"filters": {"delay": [10]}, "suspend": False}
    assert link_fields(saved, saved) == {}
    assert link_fields(saved, {"filters": {"delay": [10], "packet_loss": [95]}}) == {
        "filters": {"delay": [10]}
    }
    assert link_fields(saved, {"filters": {"delay": [10]}, "suspend": True}) == {"suspend": False}


def test_leaving_the_last_filter_or_resuming_sends_a_neutral_filter_first() -> None:
    """GNS3 3.0's compute keeps a link's old filters when it is sent none: a link that
    leaves its last filter (or is resumed: a suspension is a ``frequency_drop -1``) gets a
    filter that drops nothing, which the compute applies, then none again."""
    neutral = {"filters": {"frequency_drop": [2**31 - 1]}}
    lossy = {"filters": {"packet_loss": [95]}, "suspend": False}
    assert link_updates(lossy, {"filters": {}}) == [{"filters": {}}, neutral, {"filters": {}}]
    suspended = {"filters": {}, "suspend": True}
    assert link_updates(suspended, {"suspend": False}) == [
        {"suspend": False},
        neutral,
        {"filters": {}},
    ]
    assert link_updates(suspended, {"suspend": True}) == [{"suspend": True}]
    assert link_updates(lossy, {"filters": {"packet_loss": [50]}}) == [
        {"filters": {"packet_loss": [50]}}
    ]
    clean = {"filters": {}, "suspend": False}
    assert link_updates(clean, {"filters": {"packet_loss": [95]}}) == [
        {"filters": {"packet_loss": [95]}}
    ]
    assert link_updates(clean, {}) == []


# ------------------------------------------------------------------ comparing captures
def capture(
    *,
    r1_config: tuple[str, ...] = ("router ospf", " network 10.0.12.0/30 area 0"),
    r2_eth0: str = "10.0.2.1/24",
    pc1_routes: tuple[str, ...] = ("default via 10.0.1.1 dev eth0",),
    pc2_mtu: int = 1500,
    loss: bool = False,
    links: tuple[str, ...] = ("R1 eth1 <-> R2 eth1",),
) -> JSON:
    def frr(name: str, address: str, config: tuple[str, ...]) -> JSON:
        return {"name": name, "kind": "frr", "status": "started", "reached": True,
                "interfaces": [{"name": "eth0", "admin": "up", "link": "up",
                                "addresses": [address]}],
                "neighbors": [], "routes": [], "config": list(config), "unread": {}}  # fmt: skip

    lab_state = {
        "state_id": "s", "project_id": "p", "captured_at": "2026-01-01T00:00:00+00:00",
        "took_s": 1.0,
        "nodes": [frr("R1", "10.0.1.1/24", r1_config), frr("R2", r2_eth0, ())],
    }  # fmt: skip
    return {
        "lab": lab_state,
        "devices": {"PC1": {"node_id": "id-PC1", "kind": "linux",
                            "config": {"addresses": [["eth0", "10.0.1.10/24"]],
                                       "routes": list(pc1_routes)}}},
        "hosts": {"PC2": {"links": {"eth0": {"mtu": pc2_mtu, "up": True}}, "rules": [],
                          "iptables": None}},
        "links": {"R1:eth1 - R2:eth1": {"filters": {"packet_loss": [95]} if loss else {},
                                         "suspend": False}},
        "topology": {"nodes": ["PC1", "PC2", "R1", "R2"], "links": list(links)},
    }  # fmt: skip


def test_the_same_capture_has_no_difference() -> None:
    assert differences(capture(), capture()) == []


def test_every_part_a_drill_keeps_shows_in_the_differences_by_node_and_line() -> None:
    after = capture(
        r1_config=("router ospf", " network 10.0.12.0/30 area 1"),
        r2_eth0="10.0.20.1/24",
        pc1_routes=(),
        pc2_mtu=68,
        loss=True,
        links=(),
    )
    assert differences(capture(), after) == [
        "R2 interface eth0: addresses (before ['10.0.2.1/24'], after ['10.0.20.1/24'])",
        "R1 config + router ospf / network 10.0.12.0/30 area 1",
        "R1 config - router ospf / network 10.0.12.0/30 area 0",
        "PC1 route default via 10.0.1.1 dev eth0: absent now, present then",
        "PC2 eth0: mtu 68 (was 1500)",
        "link R1:eth1 - R2:eth1: filters {} then",
        "link R1 eth1 <-> R2 eth1: removed",
    ]


def test_constraints_are_judged_on_the_comparison_with_evidence() -> None:
    constraints: list[Constraint] = [
        NoNewStaticRoute(kind="no_new_static_route", node="R1"),
        NoNewStaticRoute(kind="no_new_static_route", node="PC1"),
        AddressesUnchanged(kind="addresses_unchanged", node="R2"),
        AddressesUnchanged(kind="addresses_unchanged", node="R1"),
        ConfigUnchanged(kind="config_unchanged", node="R1"),
        ConfigUnchanged(kind="config_unchanged", node="PC2"),
        TopologyUnchanged(kind="topology_unchanged"),
    ]
    after = capture(
        r1_config=("router ospf", " network 10.0.12.0/30 area 0", "ip route 10.0.2.0/24 10.0.12.2"),
        r2_eth0="10.0.20.1/24",
        pc1_routes=("default via 10.0.1.1 dev eth0", "10.0.2.0/24 via 10.0.1.1 dev eth0"),
        pc2_mtu=9000,
    )
    judged = judge_constraints(constraints, capture(), after)
    assert [(r.held, r.evidence) for r in judged] == [
        (False, "R1 gained ip route 10.0.2.0/24 10.0.12.2"),
        (False, "PC1 gained ip route 10.0.2.0/24 via 10.0.1.1 dev eth0"),
        (False, "R2's addresses changed: eth0 ['10.0.20.1/24'] (was ['10.0.2.1/24'])"),
        (True, "R1's addresses are as before"),
        (False, "R1's configuration changed: R1 config + ip route 10.0.2.0/24 10.0.12.2"),
        (False, "PC2's configuration changed: PC2 eth0: mtu 9000 (was 1500)"),
        (True, "no node or link added or removed"),
    ]
    assert all(r.held for r in judge_constraints(constraints, capture(), capture()))
