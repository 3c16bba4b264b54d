"""Checks decided from real FRR 8.4 output (captured from the router lab, R1 of
PC1 – R1 – R2 – PC2: OSPF Full with R2, an eBGP session without policy), and the kinds a
platform cannot answer, which are errors that say why."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from adapters.gns3.model._frr_parsing import parse_frr
from adapters.gns3.model._intent_compile import Plan, compile_check
from adapters.gns3.model._intent_reading import Output, addresses
from adapters.gns3.model._platforms import DeviceKind
from copilot_core.intent import CheckStatus, Observation, checks_adapter

DATA = Path(__file__).parent / "data" / "frr"
#: R2's addresses, as its ``show interface brief`` would list them.
R2 = {"R2": ["10.0.12.2", "10.0.2.1"]}


def captured(command: str) -> Output:
    for path in DATA.glob("*.txt"):
        first, _, rest = path.read_text(encoding="utf-8").partition("\n")
        if first.strip() == command:
            return Output(command, rest, parse_frr(command, rest))
    raise AssertionError(f"no captured output of {command!r}")


def decide(check: dict[str, Any], kind: DeviceKind = DeviceKind.FRR) -> Observation:
    (parsed,) = checks_adapter.validate_python([check])
    plan = compile_check(parsed, "R1", kind, R2)
    if isinstance(plan, Observation):
        return plan
    assert isinstance(plan, Plan)
    return plan.decide(captured(plan.command))


PASS, FAIL, ERROR = CheckStatus.PASS, CheckStatus.FAIL, CheckStatus.ERROR

CASES: list[tuple[dict[str, Any], CheckStatus, dict[str, Any]]] = [
    ({"kind": "ospf_neighbor", "node": "R1", "neighbor": "2.2.2.2"}, PASS, {"state": "full"}),
    ({"kind": "ospf_neighbor", "node": "R1", "neighbor": "10.0.12.2"}, PASS, {"interface": "eth1"}),
    ({"kind": "ospf_neighbor", "node": "R1", "neighbor": "R2"}, PASS, {"neighbor_id": "2.2.2.2"}),
    ({"kind": "ospf_neighbor", "node": "R1", "neighbor": "2.2.2.2", "state": "2way"}, FAIL,
     {"state": "full"}),
    ({"kind": "ospf_neighbor", "node": "R1", "neighbor": "3.3.3.3"}, FAIL, {"state": "absent"}),
    ({"kind": "ospf_neighbor", "node": "R1", "neighbor": "3.3.3.3", "state": "down"}, PASS,
     {"state": "absent"}),
    ({"kind": "bgp_session", "node": "R1", "peer": "10.0.12.2"}, PASS, {"state": "established"}),
    ({"kind": "bgp_session", "node": "R1", "peer": "R2"}, PASS, {"address": "10.0.12.2"}),
    ({"kind": "bgp_session", "node": "R1", "peer": "10.0.12.2", "state": "idle"}, FAIL,
     {"state": "established"}),
    ({"kind": "bgp_session", "node": "R1", "peer": "10.9.9.9"}, FAIL, {"state": "absent"}),
    ({"kind": "route", "node": "R1", "prefix": "10.0.2.0/24", "protocol": "ospf",
      "via": "10.0.12.2"}, PASS, {"code": "O", "via": ["10.0.12.2"]}),
    ({"kind": "route", "node": "R1", "prefix": "10.0.2.0/24", "via": "eth1"}, PASS,
     {"interfaces": ["eth1"]}),
    ({"kind": "route", "node": "R1", "prefix": "10.0.2.0/24", "via": "R2"}, PASS,
     {"present": True}),
    ({"kind": "route", "node": "R1", "prefix": "10.0.2.0/24", "via": "eth0"}, FAIL,
     {"present": True}),
    ({"kind": "route", "node": "R1", "prefix": "10.0.2.0/24", "protocol": "bgp"}, FAIL,
     {"code": "O"}),
    ({"kind": "route", "node": "R1", "prefix": "10.0.1.0/24", "protocol": "connected"}, PASS,
     {"code": "C"}),
    ({"kind": "route", "node": "R1", "prefix": "10.0.9.0/24"}, FAIL, {"present": False}),
    ({"kind": "route", "node": "R1", "prefix": "10.0.9.0/24", "present": False}, PASS,
     {"present": False}),
    ({"kind": "route", "node": "R1", "prefix": "10.0.2.0/24", "present": False}, FAIL,
     {"present": True}),
    ({"kind": "interface", "node": "R1", "interface": "eth1"}, PASS, {"state": "up"}),
    ({"kind": "interface", "node": "R1", "interface": "eth1", "state": "down"}, FAIL,
     {"state": "up"}),
    ({"kind": "interface", "node": "R1", "interface": "eth9"}, ERROR, {}),
    ({"kind": "config_line", "node": "R1", "line": "ip  ospf network point-to-point"}, PASS,
     {"present": True}),
    ({"kind": "config_line", "node": "R1", "line": "ip ospf cost 5"}, FAIL, {"present": False}),
    ({"kind": "config_line", "node": "R1", "line": "ip ospf cost 5", "present": False}, PASS,
     {"present": False}),
    ({"kind": "reachability", "from": "R1", "to": "10.0.2.10"}, ERROR, {}),
]  # fmt: skip


@pytest.mark.parametrize(("check", "status", "observed"), CASES)
def test_each_kind_is_decided_from_real_frr_output(
    check: dict[str, Any], status: CheckStatus, observed: dict[str, Any]
) -> None:
    seen = decide(check)
    assert seen.status is status, seen
    assert {key: seen.observed[key] for key in observed} == observed
    if status is not ERROR:
        (evidence,) = seen.evidence
        assert evidence.node == "R1"
        assert evidence.lines, "the deciding lines are quoted"
    else:
        assert seen.reason


def test_the_evidence_quotes_the_lines_that_decided() -> None:
    ospf = decide({"kind": "ospf_neighbor", "node": "R1", "neighbor": "2.2.2.2"})
    assert ospf.evidence[0].command == "show ip ospf neighbor"
    assert ospf.evidence[0].lines == (
        "2.2.2.2           1 Full/-          13.076s           38.060s 10.0.12.2       "
        "eth1:10.0.12.1                       0     0     0",
    )
    route = decide({"kind": "route", "node": "R1", "prefix": "10.0.2.0/24"})
    assert route.evidence[0].lines == (
        "O>* 10.0.2.0/24 [110/20] via 10.0.12.2, eth1, weight 1, 00:00:08",
    )
    config = decide({"kind": "config_line", "node": "R1", "line": "network 10.0.12.0/30 area 0"})
    assert config.evidence[0].lines == ("network 10.0.12.0/30 area 0",)


def test_a_frr_routers_addresses_come_from_its_interface_brief() -> None:
    brief = captured("show interface brief")
    assert addresses(DeviceKind.FRR, brief) == ["10.0.1.1", "10.0.12.1"]


@pytest.mark.parametrize(
    ("check", "kind", "says"),
    [
        ({"kind": "ospf_neighbor", "node": "PC1", "neighbor": "1.1.1.1"}, DeviceKind.VPCS, "vpcs"),
        ({"kind": "route", "node": "R1", "prefix": "10.0.0.0/8"}, DeviceKind.JUNIPER_JUNOS,
         "no parser"),
        ({"kind": "reachability", "from": "R1", "to": "10.0.0.1"}, DeviceKind.FRR, "count"),
        ({"kind": "config_line", "node": "X", "line": "x"}, DeviceKind.GENERIC, "generic"),
    ],
)  # fmt: skip
def test_a_check_a_platform_cannot_answer_is_an_error_that_says_why(
    check: dict[str, Any], kind: DeviceKind, says: str
) -> None:
    seen = decide(check, kind)
    assert seen.status is ERROR
    assert not seen.transient
    assert says in str(seen.reason)


def test_output_no_parser_reads_is_an_error_not_a_pass() -> None:
    (check,) = checks_adapter.validate_python(
        [{"kind": "ospf_neighbor", "node": "R1", "neighbor": "2.2.2.2"}]
    )
    plan = compile_check(check, "R1", DeviceKind.FRR, {})
    assert isinstance(plan, Plan)
    garbage = "% OSPF is not enabled\nsomething else"
    seen = plan.decide(Output(plan.command, garbage, parse_frr(plan.command, garbage)))
    assert seen.status is ERROR, seen
