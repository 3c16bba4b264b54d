"""Verified changes on the real router lab (PC1 – R1 – R2 – PC2, FRR 8.4 and Linux hosts),
end to end through the HTTP API: ``gns3-copilot serve`` with the scripted OpenAI-wire model,
each change approved over the API as the page does.

The user's standing intent is "R1–R2 OSPF Full". A change that shuts R2's link to R1 with
``verify`` = PC1 reaches PC2 is approved (its approval card lists both checks), fails its
check, is rolled back, and PC1 reaches PC2 again (read on PC1's own console); a one-line
static route with a ``route`` check and a loopback advertised in OSPF with a ``route``
check on the other router pass and stay (read on the routers' consoles). What is asserted
is what the devices said, never the model's text. Figures are printed (``-s``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.fakes.copilot_service import ServedCopilot
from tests.fakes.openai_server import ScriptedOpenAIServer
from tests.lab.conftest import API_KEY
from tests.lab.lab_project import LabProject
from tests.lab.test_e2e_http import AUTOMATION, Chat, call, read_console
from tests.lab.test_frr_lab import topology
from tests.lab.test_intent_lab import configure as address_and_route

pytestmark = [pytest.mark.timeout(1500), pytest.mark.gns3, pytest.mark.slow]

__all__ = ["topology"]  # a fixture: the lab (the scripted model and the service: conftest)

FIGURES: dict[str, float] = {}
CONFIG_TOOL = "execute_multiple_device_config_commands"
OSPF_FULL = {"kind": "ospf_neighbor", "node": "R1", "neighbor": "R2", "name": "R1-R2 Full"}
PC1_PC2 = {"kind": "reachability", "from": "PC1", "to": "PC2", "name": "PC1 reaches PC2"}


def change(device: str, lines: list[str], **verification: Any) -> Any:
    configs = [{"device_name": device, "config_commands": lines}]
    return call(CONFIG_TOOL, {"device_configs": configs, **verification})


def ended(turn_events: list[dict[str, Any]], tool: str) -> dict[str, Any]:
    (end,) = [e for e in turn_events if e["type"] == "tool_end" and e["tool_name"] == tool]
    return end


@pytest.fixture(scope="module")
def chat(service: ServedCopilot, llm: ScriptedOpenAIServer, topology: LabProject) -> Iterator[Chat]:
    with service.api(topology.token) as api:
        api.timeout = httpx.Timeout(300.0)
        stored = api.put(
            "/llm-config",
            json={"provider": "openai", "model": "gpt-verified", "base_url": llm.base_url,
                  "api_key": API_KEY, "copilot_mode": AUTOMATION, "approval": "changes"},
        )  # fmt: skip
        assert stored.status_code == 200, stored.text
        yield Chat(api, llm, topology.project)
    print("\nverified change figures:", {k: round(v, 2) for k, v in FIGURES.items()}, flush=True)


def test_a_change_that_breaks_reachability_is_rolled_back_and_one_that_works_stays(
    chat: Chat, topology: LabProject
) -> None:
    address_and_route(topology)
    standing = chat.api.put(f"/projects/{chat.project}/intent", json={"checks": [OSPF_FULL]})
    assert standing.status_code == 200, standing.text
    held = chat.turn(
        "Does OSPF hold and does PC1 reach PC2?",
        call("verify_intent", {"checks": [OSPF_FULL, PC1_PC2], "wait_s": 150}),
    )
    assert json.loads(ended(held.events, "verify_intent")["tool_output"])["status"] == "pass"

    # 1. Shut R2's link to R1, with PC1 -> PC2 as the check: it fails, the change is undone.
    began = time.monotonic()
    broken = chat.turn(
        "Shut R2's eth1, PC1 must still reach PC2",
        change("R2", ["interface eth1", "shutdown"], verify=[PC1_PC2], verify_wait_s=45),
    )
    FIGURES["failed_change_rolled_back_transaction_s"] = time.monotonic() - began
    (asked,) = broken.asked
    card = asked["preview"]["verification"]
    assert [(c["kind"], c["from"], c["to"]) for c in card["checks"]] == [
        ("reachability", "PC1", "PC2")
    ], card
    assert [c["kind"] for c in card["standing"]] == ["ospf_neighbor"]
    assert card["on_fail"] == "rollback"
    end = ended(broken.events, CONFIG_TOOL)
    assert end["status"] == "error", end
    output = json.loads(end["tool_output"])
    verification = output["verification"]
    assert output["status"] == "rolled_back", output
    assert verification["before"]["status"] == "pass", verification["before"]
    assert verification["after"]["status"] == "fail"
    lost = {c["name"]: c for c in verification["after"]["checks"]}
    assert lost["PC1 reaches PC2"]["observed"]["replies"] == 0
    assert lost["PC1 reaches PC2"]["evidence"][0]["node"] == "PC1"
    assert verification["rolled_back"] is True
    assert verification["rollback"]["status"] == "success", verification["rollback"]
    assert verification["after_rollback"]["status"] == "pass", verification["after_rollback"]
    # What changed, in the network's terms: the adjacency and PC2's LAN lost while the
    # change stood; after the rollback no configuration line differs from before.
    diff = verification["diff"]
    assert any(
        a["node"] == "R1"
        and a["protocol"] == "ospf"
        and a["change"] == "lost"
        and a.get("peer_node") == "R2"
        for a in diff["adjacencies"]
    ), diff
    assert any(
        r["node"] == "R1" and r["prefix"] == "10.0.2.0/24" and r["change"] == "removed"
        for r in diff["routes"]
    ), diff
    assert {"node": "R2", "added": ["interface eth1 / shutdown"]} in diff["config"], diff
    undone = verification["diff_after_rollback"]
    assert "config" not in undone, undone
    print("\nafter the rollback:", undone["summary"], flush=True)
    # R2's own console: eth1 is not shut; PC1's own console: PC2 answers again.
    (r2_running,) = read_console(topology, "R2", ["show running-config"])
    block = r2_running.split("interface eth1", 1)[1].split("exit", 1)[0]
    assert "shutdown" not in block, r2_running
    for _ in range(5):
        (ping,) = read_console(topology, "PC1", ["ping -c 3 -W 1 10.0.2.10"])
        if " 0% packet loss" in ping:
            break
        time.sleep(2)
    assert " 0% packet loss" in ping, ping

    # 2. A one-line change with one check: a static route on R2, seen in R2's table.
    began = time.monotonic()
    static = chat.turn(
        "Add a discard route for 10.66.0.0/16 on R2",
        change(
            "R2",
            ["ip route 10.66.0.0/16 Null0"],
            verify=[
                {"kind": "route", "node": "R2", "prefix": "10.66.0.0/16", "protocol": "static"}
            ],
        ),
    )
    FIGURES["one_line_change_one_check_transaction_s"] = time.monotonic() - began
    output = json.loads(ended(static.events, CONFIG_TOOL)["tool_output"])
    assert output["verification"]["status"] == "pass", output["verification"]
    assert output["verification"]["rolled_back"] is False
    (r2_routes,) = read_console(topology, "R2", ["show ip route 10.66.0.0/16"])
    assert "10.66.0.0/16" in r2_routes, r2_routes

    # 3. A loopback on R1 advertised in OSPF, checked as a route on R2: it passes and stays.
    began = time.monotonic()
    loopback = chat.turn(
        "Add loopback 10.255.1.1/32 on R1 and advertise it",
        change(
            "R1",
            ["interface lo", "ip address 10.255.1.1/32", "exit", "router ospf",
             "network 10.255.1.1/32 area 0"],
            verify=[{"kind": "route", "node": "R2", "prefix": "10.255.1.1/32", "via": "R1",
                     "protocol": "ospf"}],
            verify_wait_s=90,
        ),
    )  # fmt: skip
    FIGURES["loopback_route_seen_transaction_s"] = time.monotonic() - began
    output = json.loads(ended(loopback.events, CONFIG_TOOL)["tool_output"])
    assert output["verification"]["status"] == "pass", output["verification"]
    (r2_routes,) = read_console(topology, "R2", ["show ip route 10.255.1.1/32"])
    assert "10.255.1.1/32" in r2_routes and "ospf" in r2_routes.lower(), r2_routes
    (r1_running,) = read_console(topology, "R1", ["show running-config"])
    assert "ip address 10.255.1.1/32" in r1_running, r1_running
