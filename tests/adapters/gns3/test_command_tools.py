"""The console tools end to end: executor → GNS3 API → telnet consoles of emulated devices.

GNS3 cannot start nodes on this machine (no uBridge), so the GNS3 API is answered by
``httpx.MockTransport`` describing *started* nodes whose consoles are the emulators.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from adapters.gns3 import ConsoleRunner, Gns3Client, Gns3ToolExecutor, SkillLibrary
from copilot_core import AbortToken, CopilotMode, ParsedToolCall, ToolResult, ToolStatus
from tests.adapters.gns3.conftest import eventually, make_context
from tests.fakes.telnet_devices import (
    EmulatedCiscoRouter,
    EmulatedDeviceLab,
    EmulatedVpcs,
)

TEACHING = CopilotMode.TEACHING_ASSISTANT
AUTOMATION = CopilotMode.LAB_AUTOMATION_ASSISTANT
PROJECT = "3f2a9c1e-0000-4000-8000-000000000001"
TOKEN = "jwt-for-tests"


def started_nodes_api(
    lab: EmulatedDeviceLab, extra: list[dict[str, Any]], capture: bytes
) -> httpx.MockTransport:
    """GNS3's answers for a project whose nodes are the emulated devices, all started."""
    nodes = []
    for index, device in enumerate(lab.devices.values()):
        vpcs = isinstance(device, EmulatedVpcs)
        nodes.append(
            {
                "name": device.name,
                "node_id": f"node-{index}",
                "node_type": "vpcs" if vpcs else "dynamips",
                "status": "started",
                "console": device.port,
                "console_host": "0.0.0.0",
                "console_type": "telnet",
                "template_id": "tpl-vpcs" if vpcs else "tpl-c7200",
                "ports": [
                    {"name": "Ethernet0", "short_name": "e0", "adapter_number": 0, "port_number": 0}
                ],
            }
        )
    nodes.extend(extra)

    def handle(request: httpx.Request) -> httpx.Response:
        assert request.headers["Authorization"] == f"Bearer {TOKEN}"
        path = request.url.path
        if path == f"/v3/projects/{PROJECT}":
            return httpx.Response(
                200, json={"project_id": PROJECT, "name": "lab", "status": "opened"}
            )
        if path == f"/v3/projects/{PROJECT}/nodes":
            return httpx.Response(200, json=nodes)
        if path == f"/v3/projects/{PROJECT}/links":
            ends = [
                {"node_id": n["node_id"], "adapter_number": 0, "port_number": 0} for n in nodes[:2]
            ]
            return httpx.Response(200, json=[{"link_id": "L1", "nodes": ends, "capturing": True}])
        if path == f"/v3/projects/{PROJECT}/links/L1/capture/stream":
            return httpx.Response(200, content=capture)
        if path == "/v3/templates":
            return httpx.Response(
                200,
                json=[
                    {"template_id": "tpl-vpcs", "name": "VPCS"},
                    {"template_id": "tpl-c7200", "name": "c7200"},
                ],
            )
        return httpx.Response(404, json={"message": f"unexpected {path}"})

    return httpx.MockTransport(handle)


@pytest.fixture
async def lab() -> AsyncIterator[EmulatedDeviceLab]:
    async with EmulatedDeviceLab(
        EmulatedVpcs("PC1"), EmulatedVpcs("PC2"), EmulatedCiscoRouter("R1")
    ) as devices:
        yield devices


def make_executor(
    lab: EmulatedDeviceLab,
    *,
    extra: list[dict[str, Any]] | None = None,
    skills: SkillLibrary | None = None,
    command_timeout: float = 1.0,
    capture: bytes = b"",
) -> Gns3ToolExecutor:
    http = httpx.AsyncClient(transport=started_nodes_api(lab, extra or [], capture))
    client = Gns3Client("http://127.0.0.1:3080", http=http)
    return Gns3ToolExecutor(
        client,
        runner=ConsoleRunner(command_timeout=command_timeout, recovery_timeout=1.0),
        skills=skills,
    )


async def run(
    executor: Gns3ToolExecutor,
    name: str,
    arguments: dict[str, Any],
    mode: CopilotMode = AUTOMATION,
    abort: AbortToken | None = None,
) -> ToolResult:
    call = ParsedToolCall.parse("call-1", name, json.dumps(arguments))
    result = await executor.execute(call, make_context(PROJECT, TOKEN, mode, abort))
    json.dumps(result.output)
    return result


def by_device(result: ToolResult) -> dict[str, dict[str, Any]]:
    return {item["device_name"]: item for item in result.output["results"]}


async def test_show_commands_on_three_devices(lab: EmulatedDeviceLab):
    result = await run(
        make_executor(lab),
        "execute_multiple_device_commands",
        {
            "device_configs": [
                {"device_name": "PC1", "commands": ["show ip"]},
                {"device_name": "PC2", "commands": ["show ip"]},
                {"device_name": "R1", "commands": ["show ip interface brief", "show version"]},
            ]
        },
        TEACHING,
    )
    assert result.status is ToolStatus.SUCCESS
    assert result.output["status"] == "success"
    devices = by_device(result)
    assert devices["PC2"]["output"][0]["output"].startswith("NAME        : PC2[1]")
    assert [o["command"] for o in devices["R1"]["output"]] == [
        "show ip interface brief",
        "show version",
    ]
    assert "GigabitEthernet0/0" in devices["R1"]["output"][0]["output"]
    assert set(devices["R1"]) == {"device_name", "status", "output", "prompt"}
    # Each device's own prompt, as its console printed it (the page heads its output so).
    assert (devices["PC1"]["prompt"], devices["R1"]["prompt"]) == ("PC1>", "R1>")  # user EXEC


async def test_forbidden_commands_are_blocked_and_the_rest_runs(lab: EmulatedDeviceLab):
    result = await run(
        make_executor(lab),
        "execute_multiple_device_commands",
        {
            "device_configs": [
                {
                    "device_name": "R1",
                    "commands": [
                        "TraceRoute 10.0.0.1",
                        "show version",
                        "debug ip packet",
                        "PING -f 10.0.0.1",
                    ],
                }
            ]
        },
    )
    r1 = by_device(result)["R1"]
    assert r1["status"] == "partial_success"
    assert [b["command"] for b in r1["blocked_commands"]] == [
        "TraceRoute 10.0.0.1",
        "debug ip packet",
        "PING -f 10.0.0.1",
    ]
    assert "'traceroute' commands are forbidden" in r1["blocked_commands"][0]["reason"]
    assert [o["command"] for o in r1["output"]] == ["show version"]
    assert lab["R1"].received == ["show version"]


async def test_teaching_mode_refuses_configuration_commands(lab: EmulatedDeviceLab):
    result = await run(
        make_executor(lab),
        "execute_multiple_device_commands",
        {
            "device_configs": [
                {
                    "device_name": "R1",
                    "commands": ["show version", "conf t", "write memory", "enable secret x"],
                },
                {"device_name": "PC1", "commands": ["ip 10.0.0.1/24 10.0.0.254", "save"]},
            ]
        },
        TEACHING,
    )
    devices = by_device(result)
    assert devices["R1"]["status"] == "partial_success"
    assert [b["command"] for b in devices["R1"]["blocked_commands"]] == [
        "conf t",
        "write memory",
        "enable secret x",
    ]
    assert (
        "teaching mode only runs read-only commands"
        in devices["R1"]["blocked_commands"][0]["reason"]
    )
    assert devices["PC1"]["status"] == "failed"
    assert devices["PC1"]["error"] == "every command was blocked"
    assert lab["R1"].received == ["show version"]
    assert lab["PC1"].received == []


async def test_lab_automation_show_tool_may_run_vpcs_configuration(lab: EmulatedDeviceLab):
    result = await run(
        make_executor(lab),
        "execute_vpcs_commands",
        {
            "device_configs": [
                {"device_name": "PC1", "commands": ["ip 10.0.0.1/24 10.0.0.254"]},
                {"device_name": "R1", "commands": ["show ip"]},
            ]
        },
    )
    devices = by_device(result)
    assert devices["PC1"]["status"] == "success"
    assert "PC1 : 10.0.0.1/24 gateway 10.0.0.254" in devices["PC1"]["output"][0]["output"]
    assert devices["R1"]["status"] == "failed"
    assert "not a VPCS" in devices["R1"]["error"]
    assert result.output["status"] == "partial_success"


async def test_config_commands_enter_and_leave_configuration_mode(lab: EmulatedDeviceLab):
    router = lab["R1"]
    assert isinstance(router, EmulatedCiscoRouter)
    result = await run(
        make_executor(lab),
        "execute_multiple_device_config_commands",
        {
            "device_configs": [
                {
                    "device_name": "R1",
                    "config_commands": [
                        "hostname Core1",
                        "interface Gi0/1",
                        "ip address 192.0.2.1 255.255.255.0",
                        "bogus line",
                    ],
                }
            ]
        },
    )
    r1 = by_device(result)["R1"]
    assert r1["status"] == "partial_success"
    assert [o.get("error") for o in r1["output"]] == [
        None,
        None,
        None,
        "the device rejected the command",
    ]
    assert router.name == "Core1"
    assert router.mode == "user"
    assert router.received[:2] == ["enable", "configure terminal"]
    assert router.received[-2:] == ["end", "disable"]


async def test_bad_arguments_are_results_that_say_what_exists(lab: EmulatedDeviceLab):
    no_console = {
        "name": "SW1",
        "node_id": "node-sw",
        "node_type": "ethernet_switch",
        "status": "started",
        "console": None,
        "console_type": "none",
        "console_host": "127.0.0.1",
        "ports": [],
    }
    executor = make_executor(lab, extra=[no_console])
    result = await run(
        executor,
        "execute_multiple_device_commands",
        {
            "device_configs": [
                {"device_name": "SW1", "commands": ["show"]},
                {"device_name": "R2", "commands": ["show version"]},
            ]
        },
    )
    devices = by_device(result)
    assert "SW1 has no telnet console" in devices["SW1"]["error"]
    assert (
        devices["R2"]["error"]
        == "No node named 'R2' in this project; existing nodes: PC1, PC2, R1, SW1."
    )
    assert result.status is ToolStatus.ERROR


async def test_invalid_arguments_name_each_field_and_run_nothing(lab: EmulatedDeviceLab):
    executor = make_executor(lab)
    empty = await run(
        executor,
        "execute_multiple_device_commands",
        {
            "device_configs": [
                {"device_name": "PC1", "commands": ["show ip"]},
                {"device_name": "PC2", "commands": ["  "]},
            ]
        },
    )
    assert empty.status is ToolStatus.ERROR
    assert empty.output["fields"] == [
        {"field": "device_configs.1.commands", "problem": "Value error, give at least one command"}
    ]
    assert (
        "device_configs.1.commands: Value error, give at least one command"
        in (empty.output["error"])
    )
    assert lab["PC1"].received == []  # nothing ran, not even the valid entry
    shape = await run(executor, "execute_multiple_device_commands", {"device_names": ["R1"]})
    assert shape.status is ToolStatus.ERROR
    assert {f["field"] for f in shape.output["fields"]} == {"device_configs", "device_names"}
    assert shape.output["expected"] == {
        "device_configs": [{"device_name": "R1", "commands": ["show ip interface brief"]}]
    }


async def test_a_cancelled_call_lets_go_of_the_console(lab: EmulatedDeviceLab):
    # On abort the core cancels the running tool's task; the executor does not watch the
    # abort token itself.
    router = lab["R1"]
    task = asyncio.create_task(
        run(
            make_executor(lab, command_timeout=30),
            "execute_multiple_device_commands",
            {
                "device_configs": [
                    {"device_name": "R1", "commands": ["ping 192.0.2.1 repeat 100000"]}
                ]
            },
            abort=AbortToken(),
        )
    )
    await eventually(lambda: router.busy)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await eventually(lambda: router.client_count == 0, within=1.0)


async def test_an_edited_forbidden_list_applies_after_reload(
    lab: EmulatedDeviceLab, tmp_path: Path
):
    skills = SkillLibrary([tmp_path])
    executor = make_executor(lab, skills=skills)
    args = {"device_configs": [{"device_name": "R1", "commands": ["show version"]}]}
    assert (await run(executor, "execute_multiple_device_commands", args)).output[
        "status"
    ] == "success"
    (tmp_path / "forbidden_commands.txt").write_text("# house rules\nshow version\n")
    assert skills.reload()["forbidden_commands"] == 1
    blocked = by_device(await run(executor, "execute_multiple_device_commands", args))["R1"]
    assert blocked["blocked_commands"][0]["command"] == "show version"
    assert lab["R1"].received == ["show version"]


async def test_analyze_summarises_the_links_capture_stream(lab: EmulatedDeviceLab):
    from tests.adapters.gns3.test_capture_analysis import FRAMES, pcap

    executor = make_executor(lab, capture=pcap(FRAMES))
    result = await run(
        executor,
        "packet_capture",
        {
            "action": "analyze",
            "node1": "PC2",
            "port1": "e0",
            "node2": "PC1",
            "port2": "Ethernet0",
            "seconds": 1,
        },
        TEACHING,
    )
    item = result.output["results"][0]
    assert item["status"] == "success"
    assert item["device_name"] == "PC2 e0 <-> PC1 Ethernet0"
    assert item["output"]["packets"] == 8
    assert item["output"]["icmp_echo"]["replied"] == 2
    assert item["output"]["seconds"] == 1.0


def booting_node_api(console_port: int, polls_until_started: int) -> httpx.MockTransport:
    """One VPCS that reports "started" only after a few polls following its start."""
    state = {"started": False, "polls": 0}

    def node() -> dict[str, Any]:
        status = "stopped"
        if state["started"]:
            state["polls"] += 1
            if state["polls"] > polls_until_started:
                status = "started"
        return {
            "name": "PC1",
            "node_id": "n1",
            "node_type": "vpcs",
            "status": status,
            "console": console_port,
            "console_host": "127.0.0.1",
            "console_type": "telnet",
            "ports": [],
        }

    def handle(request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if path == f"/v3/projects/{PROJECT}":
            return httpx.Response(200, json={"project_id": PROJECT, "status": "opened"})
        if path == f"/v3/projects/{PROJECT}/nodes":
            return httpx.Response(200, json=[{**node(), "status": "stopped"}])
        if path == f"/v3/projects/{PROJECT}/nodes/n1/start":
            assert json.loads(request.content) == {}  # GNS3 needs a JSON body
            state["started"] = True
            return httpx.Response(200, json=node())
        if path == f"/v3/projects/{PROJECT}/nodes/n1":
            return httpx.Response(200, json=node())
        if path in (f"/v3/projects/{PROJECT}/links", "/v3/templates"):
            return httpx.Response(200, json=[])
        return httpx.Response(404, json={"message": f"unexpected {path}"})

    return httpx.MockTransport(handle)


async def start_executor(transport: httpx.MockTransport, start_timeout: float) -> Gns3ToolExecutor:
    from adapters.gns3 import Gns3ToolSettings

    client = Gns3Client("http://127.0.0.1:3080", http=httpx.AsyncClient(transport=transport))
    return Gns3ToolExecutor(
        client, settings=Gns3ToolSettings(start_timeout=start_timeout, poll_interval=0.05)
    )


async def test_start_returns_once_started_without_touching_the_console(lab: EmulatedDeviceLab):
    """gns3-server 3.0.6 can leave a node's telnet proxy silent after a client that connects
    and leaves at once: starting a node never opens its console only to drop it."""
    executor = await start_executor(booting_node_api(lab["PC1"].port, 3), start_timeout=5)
    result = await run(executor, "start_gns3_node", {"node_names": ["PC1"]})
    assert result.output["results"] == [
        {
            "device_name": "PC1",
            "status": "success",
            "output": {"status": "started", "console": f"telnet://127.0.0.1:{lab['PC1'].port}"},
        }
    ]
    assert lab["PC1"].connections == 0


async def test_start_is_bounded_when_the_node_never_reports_started():
    executor = await start_executor(booting_node_api(9, 10_000), start_timeout=0.3)
    result = await run(executor, "start_gns3_node", {"node_names": ["PC1"]})
    item = result.output["results"][0]
    assert result.status is ToolStatus.ERROR
    assert item["error"].startswith("PC1 did not become ready within 0.3 s")


async def test_ios_syntax_on_a_vpcs_comes_back_with_the_vpcs_form(lab: EmulatedDeviceLab):
    result = await run(
        make_executor(lab, skills=SkillLibrary()),
        "execute_vpcs_commands",
        {
            "device_configs": [
                {
                    "device_name": "PC1",
                    "commands": [
                        "configure terminal",
                        "interface Gi0/0",
                        "ip address 10.0.0.1 255.255.255.0",
                    ],
                }
            ]
        },
    )
    pc1 = by_device(result)["PC1"]
    assert pc1["status"] == "failed"
    assert pc1["platform"] == "vpcs"
    hint = pc1["hint"]
    assert hint.startswith("This is VPCS.")
    assert "For 'ip address 10.0.0.1 255.255.255.0' use `ip 10.0.0.1/24 <gateway>` here." in hint
    assert "`ip <address>/<prefix> <gateway>`" in hint  # the VPCS skill's right form
    assert "no `configure terminal`" in hint


async def test_a_command_teaching_refuses_names_the_platform_and_its_form(
    lab: EmulatedDeviceLab,
):
    result = await run(
        make_executor(lab, skills=SkillLibrary()),
        "execute_multiple_device_commands",
        {
            "device_configs": [
                {"device_name": "R1", "commands": ["conf t"]},
                {"device_name": "PC2", "commands": ["show ip"]},
            ]
        },
        TEACHING,
    )
    devices = by_device(result)
    assert devices["R1"]["platform"] == "cisco_ios"
    assert devices["R1"]["hint"].startswith("This is Cisco IOS.")
    assert "`show ip interface brief`" in devices["R1"]["hint"]
    assert "hint" not in devices["PC2"]  # it succeeded: nothing to teach
