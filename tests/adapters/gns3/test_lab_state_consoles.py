"""``capture_lab_state`` and ``diff_lab_state`` over real telnet sockets: the emulated IOS,
EOS, Junos, FRR (its real captured output), VPCS and Linux consoles answer the commands a
capture sends, the parsers of ``verify_intent`` read them, and a change made on the
devices between two captures comes out of the diff in the network's terms. GNS3's REST
answers come from ``httpx.MockTransport``; a stopped node and a console that does not
answer are recorded as such."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest

from adapters.gns3 import ConsoleRunner, Gns3Client, Gns3ToolExecutor, Gns3ToolSettings
from adapters.gns3.lab._registry import CallScope
from adapters.gns3.model._lab_state import LabState
from adapters.gns3.tools._lab_capture import capture_lab_state, diff_lab_state
from copilot_core import CopilotMode, ParsedToolCall, ToolResult, ToolStatus
from copilot_core.ports import ToolProgress
from tests.adapters.gns3.conftest import make_context
from tests.adapters.gns3.intent_outputs import EOS, IOS, JUNOS
from tests.fakes.telnet_devices import (
    EmulatedAristaSwitch,
    EmulatedCiscoRouter,
    EmulatedDeviceLab,
    EmulatedFrr,
    EmulatedJunos,
    EmulatedLinux,
    EmulatedVpcs,
)

pytestmark = pytest.mark.timeout(120)

PROJECT = "3f2a9c1e-0000-4000-8000-0000000000bb"
TOKEN = "jwt-for-tests"
FRR_DATA = Path(__file__).parent / "data" / "frr"
KINDS = {
    "R1": "cisco_ios",
    "leaf1": "arista_eos",
    "vmx": "juniper_junos",
    "FRR1": "frr",
    "PC1": "vpcs",
    "PC2": "vpcs",
    "host1": "linux",
}


JUNOS_LINE = "set interfaces ge-0/0/1 unit 0 family inet address 10.0.12.1/30"


def frr_outputs() -> dict[str, str]:
    outputs = {}
    for path in FRR_DATA.glob("*.txt"):
        command, _, rest = path.read_text(encoding="utf-8").partition("\n")
        outputs[command.strip()] = rest
    return outputs


def closed_port() -> int:
    """A port on 127.0.0.1 where nothing listens (a console that does not answer)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def nodes_api(lab: EmulatedDeviceLab) -> httpx.MockTransport:
    nodes: list[dict[str, Any]] = [
        {
            "name": device.name,
            "node_id": f"node-{index}",
            "node_type": "vpcs" if isinstance(device, EmulatedVpcs) else "qemu",
            "status": "started",
            "console": device.port,
            "console_host": "127.0.0.1",
            "console_type": "telnet",
            "tags": [f"device_type:{KINDS[device.name]}"],
            "ports": [],
        }
        for index, device in enumerate(lab.devices.values())
    ]
    nodes += [
        {"name": "R9", "node_id": "node-r9", "node_type": "qemu", "status": "stopped",
         "console": 5009, "console_type": "telnet", "tags": ["device_type:cisco_ios"]},
        {"name": "R8", "node_id": "node-r8", "node_type": "qemu", "status": "started",
         "console": closed_port(), "console_host": "127.0.0.1", "console_type": "telnet",
         "tags": ["device_type:frr"]},
    ]  # fmt: skip

    def handle(request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if path == f"/v3/projects/{PROJECT}":
            return httpx.Response(200, json={"project_id": PROJECT, "status": "opened"})
        if path == f"/v3/projects/{PROJECT}/nodes":
            return httpx.Response(200, json=nodes)
        if path == f"/v3/projects/{PROJECT}/links":
            return httpx.Response(200, json=[])
        if path == "/v3/templates":
            return httpx.Response(200, json=[])
        return httpx.Response(404, json={"message": f"unexpected {path}"})

    return httpx.MockTransport(handle)


@pytest.fixture
async def lab() -> AsyncIterator[EmulatedDeviceLab]:
    r1 = EmulatedCiscoRouter("R1")
    leaf = EmulatedAristaSwitch("leaf1")
    vmx = EmulatedJunos("vmx")
    frr = EmulatedFrr("FRR1")
    pc1, pc2 = EmulatedVpcs("PC1", ping_delay=0.02), EmulatedVpcs("PC2", ping_delay=0.02)
    host = EmulatedLinux("host1", ping_delay=0.02)
    r1.shows.update(IOS)
    leaf.shows.update(EOS)
    vmx.shows.update(JUNOS)
    vmx.committed.append(JUNOS_LINE)
    frr.shows.update(frr_outputs())
    pc1.ip, pc1.gateway = "10.0.1.10/24", "10.0.1.1"
    pc2.ip, pc2.gateway = "10.0.2.10/24", "10.0.2.1"
    pc1.unreachable.add("10.0.0.5")  # PC1 does not reach host1
    async with EmulatedDeviceLab(r1, leaf, vmx, frr, pc1, pc2, host) as devices:
        yield devices


def executor(
    lab: EmulatedDeviceLab, command_timeout: float = 5.0, **settings: Any
) -> Gns3ToolExecutor:
    http = httpx.AsyncClient(transport=nodes_api(lab))
    runner = ConsoleRunner(
        command_timeout=command_timeout, recovery_timeout=2.0, connect_timeout=2.0
    )
    return Gns3ToolExecutor(
        Gns3Client("http://127.0.0.1:3080", http=http),
        runner=runner,
        settings=Gns3ToolSettings(**settings),
    )


async def call(
    tools: Gns3ToolExecutor,
    name: str,
    arguments: dict[str, Any],
    session: str = "session-1",
    progress: list[ToolProgress] | None = None,
) -> ToolResult:
    context = replace(
        make_context(PROJECT, TOKEN, CopilotMode.TEACHING_ASSISTANT), session_id=session
    )
    if progress is not None:
        context = replace(context, progress=progress.append)
    result = await tools.execute(ParsedToolCall.parse("c1", name, json.dumps(arguments)), context)
    json.dumps(result.output)
    return result


async def capture(tools: Gns3ToolExecutor) -> LabState:
    """A capture through the module (as a verified change makes one)."""
    scope = CallScope(make_context(PROJECT, TOKEN), TOKEN)
    return await capture_lab_state(tools.lab, scope)


# ------------------------------------------------------------------ the capture
async def test_a_capture_reads_every_platform_with_the_intent_parsers(
    lab: EmulatedDeviceLab,
) -> None:
    started = time.perf_counter()
    state = await capture(executor(lab))
    took = time.perf_counter() - started
    print(f"\ncapture of 9 emulated nodes: {took * 1000:.0f} ms")
    by = {node.name: node for node in state.nodes}
    assert [n.name for n in state.nodes] == sorted(by)

    frr = by["FRR1"]
    assert frr.reached and frr.unread == ()
    assert [(n.protocol, n.neighbor, n.state) for n in frr.neighbors or ()] == [
        ("ospf", "2.2.2.2", "full"),
        ("bgp", "10.0.12.2", "established"),
    ]
    assert {r.prefix: (r.protocol, r.via) for r in frr.routes or ()} == {
        "10.0.1.0/24": ("connected", ("eth0",)),
        "10.0.12.0/30": ("connected", ("eth1",)),
        "10.0.2.0/24": ("ospf", ("10.0.12.2",)),
    }
    assert "router ospf" in (frr.config or ())
    assert "frr version 8.4.4" not in (frr.config or ())  # changes by itself: not kept

    ios = by["R1"]
    gi = {i.name: (i.admin, i.link, i.addresses) for i in ios.interfaces or ()}
    assert gi == {
        "GigabitEthernet0/0": ("up", "up", ("192.0.2.1",)),
        "GigabitEthernet0/1": ("down", "down", ()),
    }
    assert {(n.protocol, n.neighbor, n.state) for n in ios.neighbors or ()} == {
        ("ospf", "2.2.2.2", "full"),
        ("ospf", "3.3.3.3", "init"),
        ("bgp", "10.0.12.2", "established"),
        ("bgp", "10.0.13.3", "idle"),
    }
    assert {r.prefix: r.protocol for r in ios.routes or ()}["10.0.2.0/24"] == "ospf"
    assert "hostname R1" in (ios.config or ())
    assert not any("Last configuration change" in line for line in ios.config or ())

    eos = by["leaf1"]
    assert {i.name: i.state for i in eos.interfaces or ()} == {
        "Ethernet1": "up",
        "Ethernet2": "down",
    }
    assert {(n.neighbor, n.state) for n in eos.neighbors or () if n.protocol == "bgp"} == {
        ("10.0.12.2", "established"),
        ("10.0.13.3", "active"),
    }

    junos = by["vmx"]
    assert {i.name: (i.state, i.addresses) for i in junos.interfaces or ()}["ge-0/0/1.0"] == (
        "up",
        ("10.0.12.1/30",),
    )
    assert junos.routes is None
    assert "no parser" in dict(junos.unread)["routes"]
    assert junos.config == (JUNOS_LINE,)  # ``set version`` is not configuration: not kept

    pc1 = by["PC1"]
    assert pc1.addresses == ["10.0.1.10"]
    assert pc1.neighbors is None and pc1.config is None
    assert {r.prefix: r.via for r in pc1.routes or ()} == {
        "0.0.0.0/0": ("10.0.1.1",),
        "10.0.1.0/24": ("e0",),
    }
    host = by["host1"]
    assert [(i.name, i.admin, i.link, i.addresses) for i in host.interfaces or ()] == [
        ("eth0", "up", "up", ("10.0.0.5/24",))
    ]
    assert {r.prefix: r.protocol for r in host.routes or ()} == {
        "0.0.0.0/0": "static",
        "10.0.0.0/24": "connected",
    }

    assert (by["R9"].reached, by["R9"].status) == (False, "stopped")
    assert "stopped" in str(by["R9"].reason)
    assert (by["R8"].reached, by["R8"].status) == (False, "started")
    assert "cannot connect" in str(by["R8"].reason)

    pairs = {(p.source, p.target): (p.reachable, p.replies) for p in state.reachability}
    assert pairs == {
        ("PC1", "PC2"): (True, 2),
        ("PC1", "host1"): (False, 0),
        ("PC2", "PC1"): (True, 2),
        ("PC2", "host1"): (True, 2),
        ("host1", "PC1"): (True, 2),
        ("host1", "PC2"): (True, 2),
    }
    assert lab["PC1"].received.count("ping 10.0.2.10 -c 2") == 1
    assert "ping -c 2 -W 2 10.0.1.10" in lab["host1"].received
    assert LabState.from_dict(json.loads(json.dumps(state.to_dict()))) == state


async def test_a_neighbour_is_named_by_the_node_whose_address_it_is(
    lab: EmulatedDeviceLab,
) -> None:
    frr = lab["FRR1"]
    assert isinstance(frr, EmulatedFrr)
    # R1's interface brief shows 192.0.2.1; make FRR1's OSPF neighbour that address
    frr.shows["show ip ospf neighbor"] = frr.shows["show ip ospf neighbor"].replace(
        "10.0.12.2       eth1", "192.0.2.1       eth1"
    )
    state = await capture(executor(lab))
    node = state.node("FRR1")
    assert node is not None
    (ospf,) = [n for n in node.neighbors or () if n.protocol == "ospf"]
    assert (ospf.address, ospf.peer_node) == ("192.0.2.1", "R1")


async def test_the_capture_sends_only_show_commands_and_pings_one_run_per_node(
    lab: EmulatedDeviceLab,
) -> None:
    before = {name: device.connections for name, device in lab.devices.items()}
    await capture(executor(lab))
    sent = {name: device.received for name, device in lab.devices.items()}
    shows = ["show ip interface brief", "show ip ospf neighbor", "show ip bgp summary",
             "show ip route", "show running-config"]  # fmt: skip
    assert sent == {
        "R1": ["enable", *shows, "disable"],  # running-config needs it, once for the run
        "leaf1": ["enable", *shows, "disable"],
        "vmx": ["show interfaces terse", "show ospf neighbor", "show bgp summary",
                "show configuration | display set"],
        "FRR1": ["vtysh", "show version",  # the console runner proves vtysh first
                 "show interface brief", "show ip ospf neighbor", "show bgp summary",
                 "show ip route", "show running-config", "exit"],
        "PC1": ["show ip", "ping 10.0.2.10 -c 2", "ping 10.0.0.5 -c 2"],
        "PC2": ["show ip", "ping 10.0.1.10 -c 2", "ping 10.0.0.5 -c 2"],
        "host1": ["ip -o link show", "ip -4 -o addr show", "ip -4 route show",
                  "ping -c 2 -W 2 10.0.1.10", "ping -c 2 -W 2 10.0.2.10"],
    }  # fmt: skip
    runs = {name: device.connections - before[name] for name, device in lab.devices.items()}
    assert runs == {"R1": 1, "leaf1": 1, "vmx": 1, "FRR1": 1, "PC1": 2, "PC2": 2, "host1": 2}


async def test_a_forbidden_command_is_not_sent_and_its_part_is_unread(
    lab: EmulatedDeviceLab, tmp_path: Path
) -> None:
    from adapters.gns3 import SkillLibrary

    (tmp_path / "forbidden_commands.txt").write_text("show running-config\n", encoding="utf-8")
    tools = executor(lab)
    tools.lab = replace(tools.lab, skills=SkillLibrary([tmp_path]))
    state = await capture(tools)
    frr = state.node("FRR1")
    assert frr is not None and frr.config is None
    assert "forbidden" in dict(frr.unread)["config"]
    assert "show running-config" not in lab["FRR1"].received


# ------------------------------------------------------------------ the diff
async def test_a_change_on_the_devices_comes_out_of_the_diff_in_the_networks_terms(
    lab: EmulatedDeviceLab,
) -> None:
    tools = executor(lab)
    first = await call(tools, "capture_lab_state", {})
    assert first.status is ToolStatus.SUCCESS, first.output
    state_id = first.output["state_id"]

    frr, pc1, host = lab["FRR1"], lab["PC1"], lab["host1"]
    assert isinstance(frr, EmulatedFrr)
    assert isinstance(pc1, EmulatedVpcs)
    assert isinstance(host, EmulatedLinux)
    outputs = frr_outputs()
    frr.shows["show ip ospf neighbor"] = outputs["show ip ospf neighbor"].splitlines()[0] + "\n"
    frr.shows["show ip route"] = "\n".join(
        line for line in outputs["show ip route"].splitlines() if "10.0.2.0/24" not in line
    )
    frr.shows["show interface brief"] = outputs["show interface brief"].replace(
        "eth1            up ", "eth1            down"
    )
    frr.shows["show running-config"] = outputs["show running-config"].replace(
        " ip ospf network point-to-point\n", " ip ospf network point-to-point\n shutdown\n"
    )
    pc1.unreachable.add("10.0.2.10")
    host.down.add("eth0")

    progress: list[ToolProgress] = []
    found = await call(tools, "diff_lab_state", {"from": state_id}, progress=progress)
    assert found.status is ToolStatus.SUCCESS, found.output
    diff = found.output
    assert diff["from"] == state_id and diff["to"] != state_id
    assert diff["adjacencies"] == [
        {"node": "FRR1", "protocol": "ospf", "neighbor": "2.2.2.2", "change": "lost",
         "before": "full", "after": "absent"},
    ]  # fmt: skip
    assert diff["routes"] == [
        {"node": "FRR1", "prefix": "10.0.2.0/24", "change": "removed", "protocol": "ospf",
         "via": ["10.0.12.2"]},
    ]  # fmt: skip
    assert diff["interfaces"] == [
        {"node": "FRR1", "interface": "eth1", "change": "down", "before": "up/up",
         "after": "down/down"},
        {"node": "host1", "interface": "eth0", "change": "down", "before": "up/up",
         "after": "down/down"},
    ]  # fmt: skip
    assert diff["reachability"] == [
        {"from": "PC1", "to": "PC2", "change": "lost", "address": "10.0.2.10"}
    ]
    assert diff["config"] == [{"node": "FRR1", "added": ["interface eth1 / shutdown"]}]
    assert "nodes" not in diff and "no_difference" not in diff
    assert diff["summary"] == (
        "1 adjacency lost, 1 route removed, 2 interfaces down, 1 PC pair lost reachability, "
        "configuration changed on FRR1"
    )
    assert any("reading the state" in p.text for p in progress)

    # the fresh capture was kept: from it to now, nothing changed
    again = await call(tools, "diff_lab_state", {"from": diff["to"], "to": "now"})
    assert again.output["no_difference"] is True
    assert again.output["summary"] == "no difference"
    assert set(again.output) <= {"from", "to", "no_difference", "summary", "not_compared"}


async def test_the_module_diff_of_a_capture_with_itself_is_no_difference(
    lab: EmulatedDeviceLab,
) -> None:
    tools = executor(lab)
    first, second = await capture(tools), await capture(tools)
    assert first.state_id != second.state_id
    assert diff_lab_state(first, first)["no_difference"] is True
    same = diff_lab_state(first, second)
    assert same.get("no_difference") is True, same


async def test_a_state_id_of_another_conversation_or_none_is_a_clear_error(
    lab: EmulatedDeviceLab,
) -> None:
    tools = executor(lab)
    mine = (await call(tools, "capture_lab_state", {}, session="session-1")).output["state_id"]
    theirs = await call(tools, "diff_lab_state", {"from": mine}, session="session-2")
    assert theirs.status is ToolStatus.ERROR
    assert f"unknown state id {mine!r}" in theirs.output["error"]
    assert "capture_lab_state again" in theirs.output["error"]
    made_up = await call(tools, "diff_lab_state", {"from": "s-1", "to": mine})
    assert made_up.status is ToolStatus.ERROR
    assert "unknown state id 's-1'" in made_up.output["error"]
    fine = await call(tools, "diff_lab_state", {"from": mine, "to": mine})
    assert fine.output["no_difference"] is True


async def test_the_capture_summary_counts_and_does_not_dump_the_facts(
    lab: EmulatedDeviceLab,
) -> None:
    result = await call(executor(lab), "capture_lab_state", {})
    summary = result.output
    assert set(summary) == {"state_id", "captured_at", "took_s", "nodes", "reachability"}
    rows = {row["node"]: row for row in summary["nodes"]}
    assert rows["FRR1"] == {
        "node": "FRR1", "kind": "frr", "interfaces": 5, "interfaces_up": 5,
        "addresses": ["10.0.1.1", "10.0.12.1"], "neighbors": 2, "adjacencies_up": 2,
        "routes": 3, "config_lines": 15,
    }  # fmt: skip
    assert rows["R9"] == {"node": "R9", "status": "stopped", "reason": rows["R9"]["reason"]}
    assert summary["reachability"] == {
        "pairs": 6,
        "reachable": 5,
        "unreachable": ["PC1 -> host1"],
        "not_measured": 0,
    }
    assert len(json.dumps(summary)) < 2500


async def test_the_two_tools_are_offered_in_every_mode_as_read_only(
    lab: EmulatedDeviceLab,
) -> None:
    tools = executor(lab)
    for mode in CopilotMode:
        specs = {s.name: s for s in tools.specs(mode)}
        for name in ("capture_lab_state", "diff_lab_state"):
            effect = specs[name].effect
            assert effect is not None
            assert effect.value == "read_only"
        params = specs["diff_lab_state"].parameters
        assert set(params["properties"]) == {"from", "to"}
        assert params["required"] == ["from"]


async def test_the_capture_is_bounded_by_the_call_budget(lab: EmulatedDeviceLab) -> None:
    pc1 = lab["PC1"]
    assert isinstance(pc1, EmulatedVpcs)
    # PC1's pings never end, and no command's own limit would end them within the test's
    # time: only the capture's budget can end the capture.
    pc1.ping_delay = 3600.0
    state = await capture(executor(lab, command_timeout=3600.0, call_budget=3.0))
    pairs = {(p.source, p.target): p for p in state.reachability}
    assert pairs[("PC1", "PC2")].reachable is not True
    assert pairs[("PC2", "PC1")].reachable is True
