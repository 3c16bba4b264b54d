"""Lab states read from real FRR output and from each platform's show output (pure), the
diff of two of them case by case, and where a conversation's states are kept."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from adapters.gns3.model._frr_parsing import parse_frr
from adapters.gns3.model._intent_reading import Output
from adapters.gns3.model._lab_state import (
    InterfaceState,
    LabState,
    LabStateStore,
    Neighbor,
    NodeState,
    Reachability,
    Route,
    UnknownStateError,
)
from adapters.gns3.model._lab_state_diff import config_paths, diff_lab_state
from adapters.gns3.model._lab_state_reading import node_state, reads_for
from adapters.gns3.model._platforms import DeviceKind
from adapters.gns3.tools._lab_state import bounded

DATA = Path(__file__).parent / "data" / "frr"
T0 = datetime(2026, 12, 2, 18, 0, tzinfo=UTC)


def captured() -> dict[str, str]:
    """R1's real FRR 8.4 output (PC1 – R1 – R2 – PC2, OSPF Full with R2), by command."""
    outputs = {}
    for path in DATA.glob("*.txt"):
        command, _, rest = path.read_text(encoding="utf-8").partition("\n")
        outputs[command.strip()] = rest
    return outputs


def frr_node(outputs: dict[str, str], name: str = "R1") -> NodeState:
    got: dict[str, Output | str] = {
        command: Output(command, text, parse_frr(command, text))
        for command, text in outputs.items()
    }
    return node_state(name, DeviceKind.FRR, got)


def state(state_id: str, *nodes: NodeState, pairs: tuple[Reachability, ...] = ()) -> LabState:
    return LabState(state_id, "p", T0, 1.0, tuple(sorted(nodes, key=lambda n: n.name)), pairs)


def router(name: str = "R1", **parts: Any) -> NodeState:
    return NodeState(name, "frr", "started", True, **parts)


# ------------------------------------------------------------------ reading real FRR output
def test_r1s_real_output_reads_as_its_interfaces_neighbours_routes_and_config() -> None:
    r1 = frr_node(captured())
    assert r1.unread == ()
    assert [(i.name, i.state, i.addresses) for i in r1.interfaces or ()][:2] == [
        ("eth0", "up", ("10.0.1.1/24",)),
        ("eth1", "up", ("10.0.12.1/30",)),
    ]
    assert r1.addresses == ["10.0.1.1", "10.0.12.1"]
    assert r1.neighbors == (
        Neighbor("ospf", "2.2.2.2", "full", "10.0.12.2", "eth1"),
        Neighbor("bgp", "10.0.12.2", "established", "10.0.12.2"),
    )
    # the OSPF route to a connected network is not installed (not selected): C is
    assert r1.routes == (
        Route("10.0.1.0/24", "connected", ("eth0",)),
        Route("10.0.12.0/30", "connected", ("eth1",)),
        Route("10.0.2.0/24", "ospf", ("10.0.12.2",)),
    )
    assert config_paths(r1.config or ())[4:7] == [
        "interface eth0",
        "interface eth0 / ip address 10.0.1.1/24",
        "interface eth1",
    ]


def test_r2s_link_shut_reads_as_a_lost_adjacency_a_removed_route_and_a_config_line() -> None:
    before = captured()
    after = dict(before)
    after["show ip ospf neighbor"] = before["show ip ospf neighbor"].splitlines()[0] + "\n"
    after["show ip route"] = "\n".join(
        line for line in before["show ip route"].splitlines() if "10.0.2.0" not in line
    )
    after["show running-config"] = before["show running-config"].replace(
        "router bgp 65001\n", "router bgp 65001\n neighbor 10.0.12.2 shutdown\n"
    )
    after["show bgp summary"] = before["show bgp summary"].replace("(Policy) (Policy)", "Idle  0")
    diff = diff_lab_state(state("a", frr_node(before)), state("b", frr_node(after)))
    assert diff["summary"] == ("2 adjacencies lost, 1 route removed, configuration changed on R1")
    assert diff["adjacencies"] == [
        {"node": "R1", "protocol": "bgp", "neighbor": "10.0.12.2", "change": "lost",
         "before": "established", "after": "idle"},
        {"node": "R1", "protocol": "ospf", "neighbor": "2.2.2.2", "change": "lost",
         "before": "full", "after": "absent"},
    ]  # fmt: skip
    assert diff["routes"] == [
        {"node": "R1", "prefix": "10.0.2.0/24", "change": "removed", "protocol": "ospf",
         "via": ["10.0.12.2"]}
    ]  # fmt: skip
    assert diff["config"] == [
        {"node": "R1", "added": ["router bgp 65001 / neighbor 10.0.12.2 shutdown"]}
    ]


def test_output_no_parser_reads_leaves_that_part_unread_with_why() -> None:
    outputs = captured()
    outputs["show ip route"] = "something else entirely"
    r1 = frr_node(outputs)
    assert r1.routes is None
    assert dict(r1.unread) == {"routes": "the output of 'show ip route' could not be parsed"}
    assert r1.neighbors is not None


@pytest.mark.parametrize(
    "said", ["% OSPF instance not found", "", "bgpd is not running", "% BGP inactive"]
)
def test_a_protocol_the_router_does_not_run_reads_as_no_neighbours(said: str) -> None:
    outputs = captured()
    outputs["show ip ospf neighbor"] = said
    assert [n.protocol for n in frr_node(outputs).neighbors or ()] == ["bgp"]


def test_a_command_without_output_is_unread_with_the_consoles_reason() -> None:
    got: dict[str, Output | str] = {"show interface brief": "the console of R1: timed out"}
    r1 = node_state("R1", DeviceKind.FRR, got)
    assert r1.interfaces is None and r1.neighbors is None
    assert dict(r1.unread)["interfaces"] == "the console of R1: timed out"
    assert set(dict(r1.unread)) == {r.part for r in reads_for(DeviceKind.FRR)}


# ------------------------------------------------------------------ other platforms' output
def test_junos_terse_with_a_further_address_on_its_own_line() -> None:
    text = """Interface               Admin Link Proto    Local                 Remote
ge-0/0/0                up    down
ge-0/0/0.0              up    down inet     10.0.13.1/30
                                   inet6    fe80::1/64
ge-0/0/1.0              up    up   inet     10.0.12.1/30
                                            10.0.12.5/30
lo0.0                   up    up   inet     1.1.1.1             --> 0/0
"""
    got: dict[str, Output | str] = {"show interfaces terse": Output("show interfaces terse", text)}
    vmx = node_state("vmx", DeviceKind.JUNIPER_JUNOS, got)
    assert [(i.name, i.admin, i.link, i.addresses) for i in vmx.interfaces or ()] == [
        ("ge-0/0/0", "up", "down", ()),
        ("ge-0/0/0.0", "up", "down", ("10.0.13.1/30",)),
        ("ge-0/0/1.0", "up", "up", ("10.0.12.1/30",)),
        ("lo0.0", "up", "up", ("1.1.1.1",)),
    ]


def test_a_linux_hosts_links_addresses_and_routes_as_iproute2_prints_them() -> None:
    links = (
        "1: lo: <LOOPBACK,UP,LOWER_UP> mtu 65536 qdisc noqueue state UNKNOWN mode DEFAULT "
        "group default qlen 1000\\    link/loopback 00:00:00:00:00:00 brd 00:00:00:00:00:00\n"
        "23: eth0@if24: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 qdisc noqueue state UP "
        "mode DEFAULT group default \\    link/ether 7a:1c:0e:5b:66:01 brd ff:ff:ff:ff:ff:ff "
        "link-netnsid 0\n"
        "25: eth1@if26: <NO-CARRIER,BROADCAST,MULTICAST,UP> mtu 1500 qdisc noqueue state DOWN "
        "mode DEFAULT group default \\    link/ether 7a:1c:0e:5b:66:02 brd ff:ff:ff:ff:ff:ff\n"
    )
    addresses = (
        "1: lo    inet 127.0.0.1/8 scope host lo\\       valid_lft forever preferred_lft forever\n"
        "23: eth0    inet 10.0.1.10/24 scope global eth0\\       valid_lft forever\n"
    )
    routes = (
        "default via 10.0.1.1 dev eth0 \n"
        "10.0.1.0/24 dev eth0 proto kernel scope link src 10.0.1.10 \n"
        "10.9.0.0/16 via 10.0.1.1 dev eth0 linkdown\n"
    )
    got: dict[str, Output | str] = {
        "ip -o link show": Output("ip -o link show", links),
        "ip -4 -o addr show": Output("ip -4 -o addr show", addresses),
        "ip -4 route show": Output("ip -4 route show", routes),
    }
    pc = node_state("PC1", DeviceKind.LINUX, got)
    assert [(i.name, i.admin, i.link, i.addresses) for i in pc.interfaces or ()] == [
        ("eth0", "up", "up", ("10.0.1.10/24",)),
        ("eth1", "up", "down", ()),
    ]
    assert pc.routes == (
        Route("0.0.0.0/0", "static", ("10.0.1.1",)),
        Route("10.0.1.0/24", "connected", ("eth0",)),
        Route("10.9.0.0/16", "static", ("10.0.1.1",)),
    )


def test_a_vpcs_without_an_address_has_an_interface_and_no_routes() -> None:
    text = "NAME        : PC1[1]\nIP/MASK     : 0.0.0.0/0\nGATEWAY     : 0.0.0.0\nDNS         : \n"
    pc = node_state("PC1", DeviceKind.VPCS, {"show ip": Output("show ip", text)})
    assert pc.interfaces == (InterfaceState("e0", None, None, ()),)
    assert pc.routes == () and pc.addresses == []


# ------------------------------------------------------------------ the diff, case by case
def test_routes_added_moved_and_changed_protocol() -> None:
    before = router(routes=(Route("10.0.2.0/24", "ospf", ("10.0.12.2",)),
                            Route("10.0.3.0/24", "ospf", ("10.0.12.2",))))  # fmt: skip
    after = router(routes=(Route("10.0.2.0/24", "ospf", ("10.0.13.3",)),
                           Route("10.0.3.0/24", "static", ("10.0.12.2",)),
                           Route("10.0.4.0/24", "bgp", ("10.0.12.2",))))  # fmt: skip
    diff = diff_lab_state(state("a", before), state("b", after))
    assert [(e["prefix"], e["change"]) for e in diff["routes"]] == [
        ("10.0.2.0/24", "moved"),
        ("10.0.3.0/24", "changed"),
        ("10.0.4.0/24", "added"),
    ]
    assert diff["routes"][0]["before"] == {"protocol": "ospf", "via": ["10.0.12.2"]}
    assert diff["routes"][0]["after"] == {"protocol": "ospf", "via": ["10.0.13.3"]}
    assert diff["summary"] == "1 route added, 1 route changed, 1 route moved"


def test_interfaces_down_up_unknown_added_removed_and_readdressed() -> None:
    before = router(interfaces=(
        InterfaceState("eth0", "up", "up", ("10.0.1.1/24",)),
        InterfaceState("eth1", "up", "up"),
        InterfaceState("eth2", "down", "down"),
        InterfaceState("eth3", "up", "up"),
        InterfaceState("eth4", "up", "up"),
    ))  # fmt: skip
    after = router(interfaces=(
        InterfaceState("eth0", "up", "up", ("10.0.1.9/24",)),
        InterfaceState("eth1", "up", "down"),
        InterfaceState("eth2", "up", "up"),
        InterfaceState("eth3", None, None),
        InterfaceState("eth5", "up", "up"),
    ))  # fmt: skip
    diff = diff_lab_state(state("a", before), state("b", after))
    assert [(e["interface"], e["change"]) for e in diff["interfaces"]] == [
        ("eth0", "addresses"),
        ("eth1", "down"),
        ("eth2", "up"),
        ("eth3", "changed"),  # its state is not known any more: neither up nor down
        ("eth4", "removed"),
        ("eth5", "added"),
    ]
    assert diff["interfaces"][1] == {
        "node": "R1", "interface": "eth1", "change": "down", "before": "up/up",
        "after": "up/down",
    }  # fmt: skip


def test_an_adjacency_gained_and_one_that_only_changed_state() -> None:
    before = router(neighbors=(Neighbor("ospf", "3.3.3.3", "init", peer_node="R3"),
                               Neighbor("ospf", "4.4.4.4", "init")))  # fmt: skip
    after = router(neighbors=(Neighbor("ospf", "3.3.3.3", "full", peer_node="R3"),
                              Neighbor("ospf", "4.4.4.4", "2way")))  # fmt: skip
    diff = diff_lab_state(state("a", before), state("b", after))
    assert diff["adjacencies"] == [
        {"node": "R1", "protocol": "ospf", "neighbor": "3.3.3.3", "change": "gained",
         "before": "init", "after": "full", "peer_node": "R3"},
        {"node": "R1", "protocol": "ospf", "neighbor": "4.4.4.4", "change": "changed",
         "before": "init", "after": "2way"},
    ]  # fmt: skip


def test_the_peer_node_named_is_the_same_both_ways() -> None:
    before = router(neighbors=(Neighbor("bgp", "10.0.12.2", "established", peer_node="R2"),))
    after = router(neighbors=(Neighbor("bgp", "10.0.12.2", "active", peer_node="R9"),))
    forth = diff_lab_state(state("a", before), state("b", after))
    back = diff_lab_state(state("b", after), state("a", before))
    assert forth["adjacencies"][0]["peer_node"] == back["adjacencies"][0]["peer_node"] == "R2"


def test_a_stopped_node_is_a_node_change_and_nothing_of_it_is_compared() -> None:
    before = router(routes=(Route("10.0.2.0/24", "ospf", ("10.0.12.2",)),))
    after = NodeState("R1", "frr", "stopped", False, "R1 is stopped; it must be started")
    silent = NodeState("R1", "frr", "started", False, "cannot connect")
    diff = diff_lab_state(state("a", before), state("b", after))
    assert diff["nodes"] == [{"node": "R1", "before": "started", "after": "stopped"}]
    assert set(diff) == {"from", "to", "summary", "nodes"}
    quiet = diff_lab_state(state("a", before), state("b", silent))
    assert quiet["nodes"][0]["after"] == "started, console not answering"
    gone = diff_lab_state(state("a", before), state("b"))
    assert gone["nodes"] == [{"node": "R1", "before": "started", "after": "absent"}]


def test_what_one_side_could_not_read_is_listed_not_reported_as_lost() -> None:
    neighbors = (Neighbor("ospf", "2.2.2.2", "full"), Neighbor("bgp", "10.0.12.2", "established"))
    before = router(neighbors=neighbors, routes=(Route("10.0.2.0/24", "ospf", ("10.0.12.2",)),))
    after = router(
        neighbors=neighbors[:1],
        routes=None,
        unread=(("bgp", "'show bgp summary' on R1: timed out"), ("routes", "no answer")),
    )
    diff = diff_lab_state(state("a", before), state("b", after))
    assert diff["no_difference"] is True
    assert diff["not_compared"] == [
        {"node": "R1", "what": "bgp neighbours",
         "why": "after: 'show bgp summary' on R1: timed out"},
        {"node": "R1", "what": "routes", "why": "after: no answer"},
    ]  # fmt: skip


def test_pc_pairs_lost_gained_readdressed_and_unmeasured() -> None:
    before = (
        Reachability("PC1", "PC2", "10.0.2.10", True, 2, 2),
        Reachability("PC2", "PC1", "10.0.1.10", False, 0, 2),
        Reachability("PC1", "PC3", "10.0.3.10", True, 2, 2),
        Reachability("PC3", "PC1", "10.0.1.10", None, reason="PC3 rejected 'ping'"),
    )
    after = (
        Reachability("PC1", "PC2", "10.0.2.99", False, 0, 2),
        Reachability("PC2", "PC1", "10.0.1.10", True, 2, 2),
        Reachability("PC3", "PC1", "10.0.1.10", True, 2, 2),
    )
    diff = diff_lab_state(state("a", pairs=before), state("b", pairs=after))
    assert diff["reachability"] == [
        {"from": "PC1", "to": "PC2", "change": "lost", "before_address": "10.0.2.10",
         "after_address": "10.0.2.99"},
        {"from": "PC2", "to": "PC1", "change": "gained", "address": "10.0.1.10"},
    ]  # fmt: skip
    assert diff["not_compared"] == [
        {"pair": "PC1 -> PC3", "why": "after: not measured"},
        {"pair": "PC3 -> PC1", "why": "before: PC3 rejected 'ping'"},
    ]
    assert "1 PC pair gained reachability, 1 PC pair lost reachability" in diff["summary"]


def test_configuration_lines_by_block_and_repeated_lines_counted() -> None:
    lines = ["hostname R1", "interface eth1", " ip address 10.0.12.1/30", "interface eth2",
             " shutdown"]  # fmt: skip
    changed = ["hostname R1", "interface eth1", " ip address 10.0.12.1/30", " shutdown",
               "interface eth2", " shutdown", " shutdown"]  # fmt: skip
    diff = diff_lab_state(
        state("a", router(config=tuple(lines))), state("b", router(config=tuple(changed)))
    )
    assert diff["config"] == [
        {"node": "R1", "added": ["interface eth1 / shutdown", "interface eth2 / shutdown"]}
    ]


def test_the_diff_given_to_the_model_is_bounded_per_category() -> None:
    many = tuple(Route(f"10.1.{n}.0/24", "static", ("10.0.0.1",)) for n in range(100))
    diff = diff_lab_state(state("a", router(routes=())), state("b", router(routes=many)))
    cut = bounded(diff, limit=40)
    assert len(cut["routes"]) == 40
    assert cut["routes_more"] == 60
    assert cut["summary"] == "100 routes added"
    assert bounded(diff, limit=100) == diff


# ------------------------------------------------------------------ where states are kept
KEY = ("project-1", "user-1", "session-1")


def test_a_conversation_keeps_its_last_states_and_never_another_conversations() -> None:
    store = LabStateStore(per_session=3, max_age=timedelta(minutes=30))
    states = [replace(state(f"s{n}"), state_id=f"s{n}") for n in range(5)]
    for n, kept in enumerate(states):
        store.put(KEY, kept, T0 + timedelta(seconds=n))
    assert store.ids(KEY) == ["s2", "s3", "s4"]
    assert store.get(KEY, "s4", T0) is states[4]
    with pytest.raises(UnknownStateError, match=r"unknown state id 's0'.*capture_lab_state again"):
        store.get(KEY, "s0", T0)
    for other in (("project-1", "user-1", "session-2"), ("project-2", "user-1", "session-1"),
                  ("project-1", "user-2", "session-1")):  # fmt: skip
        with pytest.raises(UnknownStateError):
            store.get(other, "s4", T0)


def test_a_state_older_than_the_bound_is_gone() -> None:
    store = LabStateStore(max_age=timedelta(minutes=30))
    store.put(KEY, state("s1"), T0)
    assert store.get(KEY, "s1", T0 + timedelta(minutes=29)).state_id == "s1"
    with pytest.raises(UnknownStateError):
        store.get(KEY, "s1", T0 + timedelta(minutes=31))
    assert store.ids(KEY) == []


def test_the_store_keeps_at_most_so_many_conversations() -> None:
    store = LabStateStore(sessions=2)
    for n in range(3):
        store.put(("p", "u", f"s{n}"), state(f"x{n}"), T0)
    assert [store.ids(("p", "u", f"s{n}")) for n in range(3)] == [[], ["x1"], ["x2"]]
