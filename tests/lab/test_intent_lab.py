"""``verify_intent`` on the real router lab (PC1 – R1 – R2 – PC2, FRR 8.4 and Linux hosts):
OSPF Full between R1 and R2 and PC1 → PC2 pass, and each check kind is timed; after R2's
link to R1 is shut on R2's console, reachability fails at once and the adjacency is seen
lost within the dead interval, both with their evidence."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from adapters.gns3 import ConsoleRunner, Gns3Client, Gns3ToolExecutor
from copilot_core import CopilotMode, ParsedToolCall
from tests.adapters.gns3.conftest import make_context
from tests.lab.lab_project import LabProject
from tests.lab.test_frr_lab import ADDRESSES, PCS, topology

pytestmark = [pytest.mark.timeout(1500), pytest.mark.gns3, pytest.mark.slow]

FIGURES: dict[str, float] = {}
OSPF_FULL = {"kind": "ospf_neighbor", "node": "R1", "neighbor": "R2", "name": "R1-R2 Full"}
PC1_PC2 = {"kind": "reachability", "from": "PC1", "to": "PC2", "name": "PC1 reaches PC2"}
EACH_KIND: list[dict[str, Any]] = [
    OSPF_FULL,
    PC1_PC2,
    {"kind": "bgp_session", "node": "R1", "peer": "R2"},
    {"kind": "route", "node": "R1", "prefix": "10.0.2.0/24", "via": "R2", "protocol": "ospf"},
    {"kind": "interface", "node": "R2", "interface": "eth1"},
    {"kind": "config_line", "node": "R1", "line": "ip ospf network point-to-point"},
]


__all__ = ["topology"]  # the lab's PC1 – R1 – R2 – PC2, as test_frr_lab builds it


@pytest.fixture(scope="module")
def lab(topology: LabProject) -> Iterator[LabProject]:
    yield topology
    print("\nverify_intent figures:", {k: round(v, 2) for k, v in FIGURES.items()}, flush=True)


def verify(lab: LabProject, checks: list[dict[str, Any]], wait_s: float) -> dict[str, Any]:
    async def call() -> dict[str, Any]:
        async with Gns3Client(lab.lab.url, timeout=120.0) as client:
            tools = Gns3ToolExecutor(client, runner=ConsoleRunner(command_timeout=20.0))
            context = make_context(lab.project, lab.token, CopilotMode.TEACHING_ASSISTANT)
            arguments = json.dumps({"checks": checks, "wait_s": wait_s})
            result = await tools.execute(
                ParsedToolCall.parse("c1", "verify_intent", arguments), context
            )
            output: dict[str, Any] = result.output
            return output

    return asyncio.run(call())


def configure(lab: LabProject) -> None:
    runner = ConsoleRunner(command_timeout=20.0, wake_timeout=60.0)

    async def run() -> None:
        for name, (address, gateway) in PCS.items():
            done = await runner.run(
                lab.target(name),
                [f"ip addr add {address} dev eth0", f"ip route add default via {gateway}"],
            )
            assert done.error is None, done.error
        for name, lines in ADDRESSES.items():
            done = await runner.run(lab.target(name), lines, config_mode=True)
            assert done.error is None, done.error

    asyncio.run(run())


def test_ospf_full_and_pc1_to_pc2_pass_then_fail_with_evidence_after_r2s_link_is_shut(
    lab: LabProject,
) -> None:
    configure(lab)
    started = time.monotonic()
    held = verify(lab, [OSPF_FULL, PC1_PC2], 120)
    FIGURES["configured_to_intent_holding_s"] = time.monotonic() - started
    assert held["status"] == "pass", json.dumps(held, indent=1)
    ospf, ping = held["checks"]
    assert ospf["observed"]["state"] == "full"
    assert ospf["evidence"][0]["command"] == "show ip ospf neighbor"
    assert ping["observed"]["replies"] >= 1

    for check in EACH_KIND:  # each kind once, timed (one attempt: they all hold now)
        begun = time.monotonic()
        one = verify(lab, [check], 10)
        FIGURES[f"{check['kind']}_s"] = time.monotonic() - begun
        assert one["status"] == "pass", json.dumps(one, indent=1)

    shut = asyncio.run(
        ConsoleRunner(command_timeout=20.0).run(
            lab.target("R2"), ["interface eth1", "shutdown"], config_mode=True
        )
    )
    assert shut.error is None, shut.error
    cut = time.monotonic()
    broken = verify(lab, [PC1_PC2], 0)
    assert broken["status"] == "fail", json.dumps(broken, indent=1)
    (lost_ping,) = broken["checks"]
    assert lost_ping["observed"]["replies"] == 0
    assert lost_ping["evidence"][0]["node"] == "PC1"
    assert lost_ping["evidence"][0]["lines"], lost_ping

    gone = verify(lab, [{**OSPF_FULL, "state": "down", "name": "R1-R2 lost"}], 90)
    FIGURES["adjacency_lost_seen_after_s"] = time.monotonic() - cut
    assert gone["status"] == "pass", json.dumps(gone, indent=1)
    both = verify(lab, [OSPF_FULL, PC1_PC2], 0)
    assert both["status"] == "fail"
    assert [c["status"] for c in both["checks"]] == ["fail", "fail"]
    assert both["checks"][0]["observed"]["state"] in ("absent", "down")
    assert both["checks"][0]["evidence"][0]["command"] == "show ip ospf neighbor"
