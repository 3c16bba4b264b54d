"""FRR's show output as rows, on real output captured from the router lab (data/frr)."""

from __future__ import annotations

from pathlib import Path

import pytest

from adapters.gns3.model._frr_parsing import parse_frr
from adapters.gns3.model._parsing import ShowParser

DATA = Path(__file__).parent / "data" / "frr"


def captured(name: str) -> tuple[str, str]:
    command, _, output = (DATA / f"{name}.txt").read_text().partition("\n")
    return command, output


def test_show_ip_route_gives_one_row_per_route_with_its_next_hop() -> None:
    rows = parse_frr(*captured("show_ip_route"))
    assert rows is not None
    assert len(rows) == 5
    ospf = [r for r in rows if r["code"] == "O" and r["selected"]]
    assert ospf == [
        {
            "code": "O",
            "selected": True,
            "fib": True,
            "prefix": "10.0.2.0/24",
            "distance": "110",
            "metric": "20",
            "nexthop": "10.0.12.2",
            "interface": "eth1",
            "uptime": "00:00:08",
        }
    ]
    connected = [r["prefix"] for r in rows if r["code"] == "C"]
    assert connected == ["10.0.1.0/24", "10.0.12.0/30"]
    assert all(r["nexthop"] == "directly connected" for r in rows if r["code"] == "C")


def test_show_ip_ospf_neighbor_gives_the_state_and_role_apart() -> None:
    assert parse_frr(*captured("show_ip_ospf_neighbor")) == [
        {
            "neighbor_id": "2.2.2.2",
            "priority": "1",
            "state": "Full",
            "role": "-",
            "up_time": "13.076s",
            "dead_time": "38.060s",
            "address": "10.0.12.2",
            "interface": "eth1",
            "retransmit": "0",
            "request": "0",
            "db_summary": "0",
        }
    ]


def test_show_ip_ospf_interface_gives_one_row_per_interface() -> None:
    rows = parse_frr(*captured("show_ip_ospf_interface"))
    assert rows is not None
    assert [(r["interface"], r["network_type"], r["state"], r["neighbors"]) for r in rows] == [
        ("eth0", "BROADCAST", "Waiting", "0"),
        ("eth1", "POINTOPOINT", "Point-To-Point", "1"),
    ]
    assert rows[1]["address"] == "10.0.12.1/30"
    assert rows[1]["area"] == "0.0.0.0"
    assert (rows[1]["cost"], rows[1]["hello"], rows[1]["dead"]) == ("10", "10", "40")


def test_show_bgp_summary_gives_each_neighbor_and_a_policy_block() -> None:
    rows = parse_frr(*captured("show_bgp_summary"))
    assert rows is not None
    assert len(rows) == 1
    row = rows[0]
    assert (row["afi"], row["router_id"], row["local_as"]) == ("IPv4 Unicast", "10.0.12.1", "65001")
    assert (row["neighbor"], row["remote_as"], row["up_down"]) == ("10.0.12.2", "65002", "00:00:21")
    assert row["state"] == "(Policy)" and row["prefixes_received"] == ""


def test_show_interface_brief_keeps_interfaces_without_addresses() -> None:
    rows = parse_frr(*captured("show_interface_brief"))
    assert rows is not None
    assert [(r["interface"], r["addresses"]) for r in rows] == [
        ("eth0", ["10.0.1.1/24"]),
        ("eth1", ["10.0.12.1/30"]),
        ("eth2", []),
        ("eth3", []),
        ("lo", []),
    ]
    assert {r["status"] for r in rows} == {"up"}


def test_show_running_config_is_split_into_sections() -> None:
    rows = parse_frr(*captured("show_running_config"))
    assert rows is not None
    sections = {r["section"]: r["lines"] for r in rows}
    assert list(sections) == [
        "global",
        "interface eth0",
        "interface eth1",
        "router bgp 65001",
        "router ospf",
    ]
    assert sections["router ospf"] == [
        "ospf router-id 1.1.1.1",
        "network 10.0.1.0/24 area 0",
        "network 10.0.12.0/30 area 0",
    ]
    assert sections["interface eth1"] == [
        "ip address 10.0.12.1/30",
        "ip ospf network point-to-point",
    ]
    assert "hostname R1" in sections["global"]


@pytest.mark.parametrize(
    ("command", "name"),
    [
        ("sh ip ro", "show_ip_route"),
        ("sh ip os nei", "show_ip_ospf_neighbor"),
        ("sh int br", "show_interface_brief"),
    ],
)
def test_abbreviations_are_parsed_as_vtysh_expands_them(command: str, name: str) -> None:
    assert parse_frr(command, captured(name)[1]) == parse_frr(*captured(name))


def test_other_commands_and_foreign_output_give_no_rows() -> None:
    assert parse_frr("show version", "FRRouting 8.4.4") is None
    assert parse_frr("show ip route", "% Unknown command: show ip rout") is None


def test_the_show_parser_hands_frr_to_its_own_parsers() -> None:
    command, output = captured("show_ip_ospf_neighbor")
    rows = ShowParser().parse("frr", command, output)
    assert rows is not None and rows[0]["state"] == "Full"
