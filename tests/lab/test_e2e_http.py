"""End to end on real routers, through the HTTP API: ``gns3-copilot serve`` (a subprocess on
127.0.0.1) against the router lab's gns3-server, with the scripted OpenAI-wire model.

One user, one session. The model builds PC1 – R1 – R2 – PC2 from the lab's templates, links
and starts it, configures addresses and OSPF on both routers through the console tool (each
change approved over the API, as the page does), asks until the adjacency is Full and R1 has
the route, pings PC2 from PC1 across both routers and reads ``show ip ospf neighbor`` as
parsed rows; then the user rolls R2's OSPF change back (restore-points API) and the adjacency
goes. What is asserted is what the devices said (the tools' results, read on their consoles,
and the test's own console reads), never the model's text. Figures are printed (``-s``).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from httpx_sse import connect_sse

from adapters.gns3 import ConsoleRunner
from tests.fakes.copilot_service import ServedCopilot
from tests.fakes.openai_server import Reply, ScriptedOpenAIServer, ToolCallScript
from tests.lab.conftest import API_KEY
from tests.lab.lab_project import STRAY_PROMPT, LabProject
from tests.lab.router_lab import HOST_TEMPLATE, ROUTER_TEMPLATE, RouterLab

pytestmark = [pytest.mark.timeout(1500), pytest.mark.gns3, pytest.mark.slow]

AUTOMATION = "lab_automation_assistant"
FIGURES: dict[str, float] = {}

ADDRESSES = {
    "R1": ["interface eth0", "ip address 10.0.1.1/24", "exit", "interface eth1",
           "ip address 10.0.12.1/30"],
    "R2": ["interface eth0", "ip address 10.0.2.1/24", "exit", "interface eth1",
           "ip address 10.0.12.2/30"],
}  # fmt: skip
HOSTS = {
    "PC1": ["ip addr add 10.0.1.10/24 dev eth0", "ip route add default via 10.0.1.1"],
    "PC2": ["ip addr add 10.0.2.10/24 dev eth0", "ip route add default via 10.0.2.1"],
}


def ospf(router_id: str, lan: str) -> list[str]:
    return ["interface eth1", "ip ospf network point-to-point", "exit", "router ospf",
            f"ospf router-id {router_id}", f"network {lan} area 0",
            "network 10.0.12.0/30 area 0"]  # fmt: skip


def call(name: str, arguments: dict[str, Any]) -> ToolCallScript:
    return ToolCallScript(name, arguments)


def show(device: str, *commands: str) -> ToolCallScript:
    configs = [{"device_name": device, "commands": list(commands)}]
    return call("execute_multiple_device_commands", {"device_configs": configs})


def configure(device: str, lines: list[str]) -> ToolCallScript:
    configs = [{"device_name": device, "config_commands": lines}]
    return call("execute_multiple_device_config_commands", {"device_configs": configs})


# ------------------------------------------------------------------ the session
@dataclass
class Turn:
    """One turn's SSE events (heartbeats left out) and when each tool ran."""

    events: list[dict[str, Any]]
    seconds: float
    tool_seconds: dict[str, float] = field(default_factory=dict)

    @property
    def asked(self) -> list[dict[str, Any]]:
        return [e for e in self.events if e["type"] == "approval_required"]

    def result(self, index: int) -> dict[str, Any]:
        """The ``index``-th tool's output (it must have succeeded)."""
        ends = [e for e in self.events if e["type"] == "tool_end"]
        end = ends[index]
        assert end["status"] == "success", end
        output: dict[str, Any] = json.loads(end["tool_output"])
        return output


def device(result: dict[str, Any], name: str) -> list[dict[str, Any]]:
    """One device's command outcomes in a console tool's result; each must be ok."""
    (entry,) = [r for r in result["results"] if r["device_name"] == name]
    assert entry["status"] == "success", entry
    outcomes: list[dict[str, Any]] = entry["output"]
    for outcome in outcomes:
        assert "error" not in outcome, outcome
        assert not STRAY_PROMPT.search(outcome["output"]), outcome
    return outcomes


class Chat:
    """The user at the page: sends a message, approves every change it is asked about."""

    def __init__(self, api: httpx.Client, llm: ScriptedOpenAIServer, project: str) -> None:
        self.api, self.llm, self.project = api, llm, project
        self.session_id: str | None = None

    def turn(self, message: str, *calls: ToolCallScript) -> Turn:
        replies: list[Reply] = [Reply(tool_calls=[c]) for c in calls]
        replies.append(Reply(text="Done: see the results above."))
        if self.session_id is None:
            replies.append(Reply(text="Routers lab"))  # the session's title
        self.llm.clear()
        self.llm.add(*replies)
        body: dict[str, Any] = {"message": message, "copilot_mode": AUTOMATION}
        if self.session_id is not None:
            body["session_id"] = self.session_id
        events: list[dict[str, Any]] = []
        began, starts = time.monotonic(), {}
        turn = Turn(events, 0.0)
        url = f"/projects/{self.project}/chat/stream"
        with connect_sse(self.api, "POST", url, json=body) as source:
            assert source.response.status_code == 200, source.response.read()
            for event in source.iter_sse():
                data = json.loads(event.data)
                if data["type"] == "heartbeat":
                    continue
                events.append(data)
                if data["type"] == "tool_start":
                    starts[data["tool_call_id"]] = time.monotonic()
                elif data["type"] == "tool_end" and data["tool_call_id"] in starts:
                    turn.tool_seconds[data["tool_call_id"]] = (
                        time.monotonic() - starts[data["tool_call_id"]]
                    )
                elif data["type"] == "approval_required":
                    decided = self.api.post(
                        f"/projects/{self.project}/chat/sessions/{data['session_id']}"
                        f"/approvals/{data['approval_id']}",
                        json={"decision": "approve"},
                    )
                    assert decided.status_code == 200, decided.text
        turn.seconds = time.monotonic() - began
        kinds = [e["type"] for e in events]
        assert kinds[-1] == "done" and "error" not in kinds, events[-5:]
        assert self.llm.remaining == 0, "the turn did not use its whole script"
        self.session_id = events[0]["session_id"]
        return turn


# ------------------------------------------------------------------ fixtures
@pytest.fixture(scope="module")
def lab_project(router_lab: RouterLab) -> Iterator[LabProject]:
    token = router_lab.server.token()
    project = LabProject(router_lab, token, router_lab.server.new_project("e2e-routers", token))
    try:
        yield project
    finally:
        project.delete()
        shown = {k: round(v, 2) for k, v in FIGURES.items()}
        print("\nrouter e2e figures:", shown, flush=True)


@pytest.fixture
def chat(
    service: ServedCopilot, llm: ScriptedOpenAIServer, lab_project: LabProject
) -> Iterator[Chat]:
    with service.api(lab_project.token) as api:
        api.timeout = httpx.Timeout(60.0)
        stored = api.put(
            "/llm-config",
            json={"provider": "openai", "model": "gpt-routers", "base_url": llm.base_url,
                  "api_key": API_KEY, "copilot_mode": AUTOMATION, "approval": "changes"},
        )  # fmt: skip
        assert stored.status_code == 200, stored.text
        yield Chat(api, llm, lab_project.project)


def read_console(
    lab: LabProject, name: str, commands: list[str], *, config_mode: bool = False
) -> list[str]:
    """The test's own console read (between turns: the service holds no console then);
    ``config_mode``: a colleague configuring the router outside the copilot."""
    runner = ConsoleRunner(command_timeout=20.0)
    done = asyncio.run(runner.run(lab.target(name), commands, config_mode=config_mode))
    assert done.error is None, done.error
    assert all(o.ok for o in done.outcomes), [o.to_dict() for o in done.outcomes]
    return [o.output for o in done.outcomes]


# ------------------------------------------------------------------ the test
def test_a_user_builds_a_routed_lab_pings_across_it_and_rolls_ospf_back(
    chat: Chat, lab_project: LabProject
) -> None:
    began = time.monotonic()
    built = chat.turn(
        "Build PC1 - R1 - R2 - PC2 with two Linux hosts and two FRR routers, and start it",
        call("create_gns3_node", {"nodes": [
            {"template_name": HOST_TEMPLATE, "name": "PC1"},
            {"template_name": HOST_TEMPLATE, "name": "PC2"},
            {"template_name": ROUTER_TEMPLATE, "name": "R1"},
            {"template_name": ROUTER_TEMPLATE, "name": "R2"},
        ]}),
        call("create_gns3_link", {"links": [
            {"node1": "PC1", "port1": "eth0", "node2": "R1", "port2": "eth0"},
            {"node1": "R1", "port1": "eth1", "node2": "R2", "port2": "eth1"},
            {"node1": "R2", "port1": "eth0", "node2": "PC2", "port2": "eth0"},
        ]}),
        call("start_gns3_node", {"node_names": ["PC1", "PC2", "R1", "R2"]}),
        call("wait_for_console", {"node_names": ["PC1", "PC2", "R1", "R2"], "timeout_s": 120}),
    )  # fmt: skip
    assert {"create_gns3_node", "create_gns3_link"} <= {a["tool_name"] for a in built.asked}
    for index in range(3):
        assert built.result(index)["status"] == "success", built.result(index)
    prompts = {r["device_name"]: r["output"]["prompt"] for r in built.result(3)["results"]}
    assert prompts == {"PC1": "root@PC1:/#", "PC2": "root@PC2:/#", "R1": "R1#", "R2": "R2#"}
    # GNS3's own record: four started Docker nodes, three links.
    nodes = lab_project.api("GET", "/nodes").json()
    assert sorted((n["name"], n["node_type"], n["status"]) for n in nodes) == [
        (name, "docker", "started") for name in ("PC1", "PC2", "R1", "R2")
    ]
    assert len(lab_project.api("GET", "/links").json()) == 3
    FIGURES["build_and_start_turn_s"] = built.seconds
    lab_started = time.monotonic()

    addressed = chat.turn(
        "Address the routers' interfaces and the PCs",
        call("execute_multiple_device_config_commands", {"device_configs": [
            {"device_name": name, "config_commands": lines} for name, lines in ADDRESSES.items()
        ]}),
        call("execute_multiple_device_commands", {"device_configs": [
            {"device_name": name, "commands": lines} for name, lines in HOSTS.items()
        ]}),
    )  # fmt: skip
    asked = {a["tool_name"]: a["preview"] for a in addressed.asked}
    assert set(asked) == {
        "execute_multiple_device_config_commands",
        "execute_multiple_device_commands",
    }
    assert set(asked["execute_multiple_device_config_commands"]["devices"]) == {"R1", "R2"}
    assert set(asked["execute_multiple_device_commands"]["devices"]) == {"PC1", "PC2"}
    for name in ADDRESSES:
        assert [o["command"] for o in device(addressed.result(0), name)] == ADDRESSES[name]
    for name in HOSTS:
        device(addressed.result(1), name)

    routed = chat.turn(
        "Run OSPF area 0 on R1 and on R2",
        configure("R1", ospf("1.1.1.1", "10.0.1.0/24")),
        configure("R2", ospf("2.2.2.2", "10.0.2.0/24")),
    )
    assert len(routed.asked) == 2
    device(routed.result(0), "R1")
    device(routed.result(1), "R2")
    r2_ospf_point = routed.result(1)["restore_point_id"]
    (r2_running,) = read_console(lab_project, "R2", ["show running-config"])
    assert "router ospf" in r2_running and "ospf router-id 2.2.2.2" in r2_running
    # A colleague adds a static route on R2 over its console: R2's undo must keep it.
    read_console(lab_project, "R2", ["ip route 10.77.0.0/16 Null0"], config_mode=True)

    # The model asks R1 (read-only: no approval) until the adjacency is Full and the route
    # to PC2's LAN is in R1's table.
    full_at = None
    rounds: list[float] = []
    deadline = time.monotonic() + 150
    while True:
        polled = chat.turn("Is OSPF up between R1 and R2?", show("R1", "show ip ospf neighbor",
                                                                  "show ip route"))  # fmt: skip
        assert not polled.asked
        rounds.extend(polled.tool_seconds.values())
        neighbors, routes = (o["parsed"] for o in device(polled.result(0), "R1"))
        if full_at is None and any(
            n["neighbor_id"] == "2.2.2.2" and n["state"] == "Full" for n in neighbors
        ):
            full_at = time.monotonic()
        if any(
            r["prefix"] == "10.0.2.0/24" and r["code"] == "O" and r["selected"] and r["fib"]
            for r in routes
        ):
            break
        assert time.monotonic() < deadline, f"no OSPF route on R1 within 150 s: {routes}"
        time.sleep(2)
    assert full_at is not None
    FIGURES["addresses_to_ospf_full_s"] = full_at - lab_started
    FIGURES["lab_start_to_ospf_full_s"] = full_at - began
    FIGURES["console_tool_round_trip_s_median"] = sorted(rounds)[len(rounds) // 2]

    # PC1 pings PC2 across both routers (the first probes may be lost to ARP: ask again).
    for _ in range(5):
        pinged = chat.turn("Ping PC2 from PC1", show("PC1", "ping -c 3 -W 1 10.0.2.10"))
        (ping,) = device(pinged.result(0), "PC1")
        if " 0% packet loss" in ping["output"]:
            break
    assert " 0% packet loss" in ping["output"], ping
    assert "64 bytes from 10.0.2.10" in ping["output"]

    both = chat.turn(
        "Show the OSPF neighbours of both routers",
        call("execute_multiple_device_commands", {"device_configs": [
            {"device_name": "R1", "commands": ["show ip ospf neighbor"]},
            {"device_name": "R2", "commands": ["show ip ospf neighbor"]},
        ]}),
    )  # fmt: skip
    seen = {
        name: [(n["neighbor_id"], n["state"], n["address"], n["interface"]) for n in rows]
        for name in ("R1", "R2")
        for rows in [device(both.result(0), name)[0]["parsed"]]
    }
    assert seen["R1"] == [("2.2.2.2", "Full", "10.0.12.2", "eth1")], seen
    assert seen["R2"] == [("1.1.1.1", "Full", "10.0.12.1", "eth1")], seen

    # "Undo this change" on R2's OSPF call: R2 is back to its addresses, R1 loses R2.
    assert chat.session_id is not None
    points = f"/projects/{chat.project}/chat/sessions/{chat.session_id}/restore-points"
    rolled = chat.api.post(f"{points}/{r2_ospf_point}/rollback", params={"use_snapshot": "false"})
    assert rolled.status_code == 200, rolled.text
    assert rolled.json()["status"] == "success", rolled.json()
    (r2,) = rolled.json()["results"]
    assert (r2["device_name"], r2["output"]["state"]) == ("R2", "as before the change"), r2
    (r2_running,) = read_console(lab_project, "R2", ["show running-config"])
    assert "router ospf" not in r2_running and "ip ospf network" not in r2_running, r2_running
    assert "ip route 10.77.0.0/16 Null0" in r2_running, r2_running  # the colleague's stays
    assert not any("10.77." in c for c in r2["output"]["commands_sent"]), r2
    assert "ip address 10.0.12.2/30" in r2_running and "ip address 10.0.2.1/24" in r2_running
    rolled_at = time.monotonic()
    while True:
        (neighbors,) = read_console(lab_project, "R1", ["show ip ospf neighbor"])
        if "2.2.2.2" not in neighbors:
            break
        assert time.monotonic() < rolled_at + 90, f"R1 still lists R2 90 s on:\n{neighbors}"
        time.sleep(2)
    FIGURES["rollback_to_adjacency_gone_s"] = time.monotonic() - rolled_at
    after = chat.turn("And now?", show("R1", "show ip ospf neighbor"))
    assert device(after.result(0), "R1")[0]["parsed"] == []
    FIGURES["e2e_test_s"] = time.monotonic() - began
