"""The console tools on real labs (issue 13): abort, time limits, progress, parsed output,
honest node actions. GNS3's REST answers come from ``httpx.MockTransport`` (nodes cannot be
started here: no uBridge); the consoles are the telnet emulators on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import httpx
import pytest

from adapters.gns3 import ConsoleRunner, Gns3Client, Gns3ToolExecutor, Gns3ToolSettings
from copilot_core import CopilotMode, ParsedToolCall, ToolResult, ToolStatus
from copilot_core.ports import ToolProgress
from tests.adapters.gns3.conftest import eventually, make_context
from tests.adapters.gns3.test_command_tools import PROJECT, TOKEN, by_device, started_nodes_api
from tests.fakes.telnet_devices import (
    CTRL_C,
    EmulatedCiscoRouter,
    EmulatedDeviceLab,
    EmulatedGenericDevice,
    EmulatedVpcs,
)

AUTOMATION = CopilotMode.LAB_AUTOMATION_ASSISTANT


@pytest.fixture
async def lab() -> AsyncIterator[EmulatedDeviceLab]:
    async with EmulatedDeviceLab(
        EmulatedVpcs("PC1", ping_delay=0.1), EmulatedCiscoRouter("R1")
    ) as devices:
        yield devices


def executor_for(
    lab: EmulatedDeviceLab,
    *,
    command_timeout: float = 1.0,
    extra: list[dict[str, Any]] | None = None,
    settings: Gns3ToolSettings | None = None,
) -> Gns3ToolExecutor:
    http = httpx.AsyncClient(transport=started_nodes_api(lab, extra or [], b""))
    return Gns3ToolExecutor(
        Gns3Client("http://127.0.0.1:3080", http=http),
        runner=ConsoleRunner(command_timeout=command_timeout, recovery_timeout=2.0),
        settings=settings,
    )


async def call(
    executor: Gns3ToolExecutor,
    name: str,
    arguments: dict[str, Any],
    progress: list[ToolProgress] | None = None,
) -> ToolResult:
    context = make_context(PROJECT, TOKEN, AUTOMATION)
    if progress is not None:
        context = replace(context, progress=progress.append)
    result = await executor.execute(
        ParsedToolCall.parse("call-1", name, json.dumps(arguments)), context
    )
    json.dumps(result.output)
    return result


def commands(device: str, *lines: str, **extra: Any) -> dict[str, Any]:
    return {"device_configs": [{"device_name": device, "commands": list(lines)}], **extra}


async def test_abort_during_a_ping_leaves_the_pc_ready_for_the_next_command_at_once(
    lab: EmulatedDeviceLab,
):
    # Regression (issue 13, 1): closing the TCP connection does not stop a VPCS ping; the
    # next command in the next turn waited 15 s and failed "shows no vpcs prompt".
    pc = lab["PC1"]
    assert isinstance(pc, EmulatedVpcs)
    executor = executor_for(lab, command_timeout=30)
    person_reader, person = await asyncio.open_connection("127.0.0.1", pc.port)  # a person
    try:
        turn = asyncio.create_task(
            call(executor, "execute_vpcs_commands", commands("PC1", "ping 10.0.0.2 -c 30"))
        )
        await eventually(lambda: pc.probes >= 3)
        turn.cancel()  # what the core does to a running tool when the turn is aborted
        with pytest.raises(asyncio.CancelledError):
            await turn
        next_turn = await call(executor, "execute_vpcs_commands", commands("PC1", "show ip"))
        item = by_device(next_turn)["PC1"]
        assert item["status"] == "success", item
        assert item["output"][0]["output"].startswith("NAME        : PC1[1]")
        assert pc.interrupts == [CTRL_C]
        assert pc.probes < 10  # the ping was stopped, not waited out (30 x 0.1 s)
        seen = b""
        async with asyncio.timeout(2):  # the person's console saw the prompt come back
            while b"IP/MASK" not in seen:
                seen += await person_reader.read(4096)
        assert b"PC1> " in seen
    finally:
        person.close()


async def test_a_timed_out_command_returns_what_it_printed_and_the_rest_runs(
    lab: EmulatedDeviceLab,
):
    # Regression (issue 13, 2): a timeout threw away ~29 printed replies (output "").
    result = await call(
        executor_for(lab),
        "execute_vpcs_commands",
        commands("PC1", "ping 10.0.0.2 -c 30", "show ip", timeout_s=1),
    )
    pc1 = by_device(result)["PC1"]
    ping, show = pc1["output"]
    assert ping["timed_out"] is True
    assert ping["output"].count("icmp_seq=") >= 5
    assert ping["output"].splitlines()[0] == "84 bytes from 10.0.0.2 icmp_seq=1 ttl=64 time=0.5 ms"
    assert ping["error"].startswith("no prompt within 1 s: the command was interrupted")
    assert "timed_out" not in show and show["output"].startswith("NAME")
    assert pc1["status"] == "partial_success"
    assert pc1["error"].startswith("'ping 10.0.0.2 -c 30': no prompt within 1 s")


async def test_a_ping_with_a_count_gets_a_limit_that_fits_it(lab: EmulatedDeviceLab):
    pc = lab["PC1"]
    assert isinstance(pc, EmulatedVpcs)
    pc.ping_delay = 0.05  # 40 replies: 2 s, over the 1 s default limit
    result = await call(
        executor_for(lab, command_timeout=1.0),
        "execute_vpcs_commands",
        commands("PC1", "ping 10.0.0.2 -c 40"),
    )
    ping = by_device(result)["PC1"]["output"][0]
    assert "timed_out" not in ping
    assert ping["output"].count("icmp_seq=") == 40


async def test_timeout_s_is_bounded_by_the_servers_maximum(lab: EmulatedDeviceLab):
    executor = executor_for(lab, settings=Gns3ToolSettings(max_command_timeout=60))
    result = await call(executor, "execute_vpcs_commands", commands("PC1", "show ip", timeout_s=61))
    assert result.status is ToolStatus.ERROR
    assert result.output["fields"] == [
        {"field": "timeout_s", "problem": "Value error, at most 60 (this server's limit)"}
    ]
    assert lab["PC1"].received == []
    described = next(
        s for s in executor.specs(AUTOMATION) if s.name == "execute_multiple_device_commands"
    )
    assert "Each command may run 1 s unless timeout_s says otherwise (at most 60 s)" in (
        described.description
    )
    assert described.parameters["properties"]["timeout_s"]["maximum"] == 60


async def test_the_calls_time_budget_stops_commands_that_would_start_too_late(
    lab: EmulatedDeviceLab,
):
    result = await call(
        executor_for(lab, settings=Gns3ToolSettings(call_budget=0.6)),
        "execute_vpcs_commands",
        commands("PC1", "ping 10.0.0.2 -c 30", "show ip"),
    )
    ping, show = by_device(result)["PC1"]["output"]
    assert ping["timed_out"] is True
    assert show["error"] == "not run: the call's time budget was spent"


async def test_progress_streams_each_devices_output_while_it_runs(lab: EmulatedDeviceLab):
    progress: list[ToolProgress] = []
    result = await call(
        executor_for(lab),
        "execute_multiple_device_commands",
        {
            "device_configs": [
                {"device_name": "PC1", "commands": ["ping 10.0.0.2 -c 4"]},
                {"device_name": "R1", "commands": ["show version"]},
            ]
        },
        progress,
    )
    assert result.output["status"] == "success"
    by_source: dict[str | None, str] = {}
    for report in progress:
        by_source[report.device] = by_source.get(report.device, "") + report.text
    assert set(by_source) == {"PC1", "R1"}
    assert by_source["PC1"].count("icmp_seq=") == 4
    assert len([p for p in progress if p.device == "PC1"]) >= 2  # line by line
    final = by_device(result)["PC1"]["output"][0]["output"]
    assert by_source["PC1"].strip("\n") == final  # tool_end still has the whole output


async def test_show_commands_templates_know_come_back_as_rows(lab: EmulatedDeviceLab):
    result = await call(
        executor_for(lab),
        "execute_multiple_device_commands",
        commands("R1", "sh ip int br", "show version", "show running-config"),
    )
    brief, version, rejected = by_device(result)["R1"]["output"]
    assert brief["parsed"] == [
        {
            "interface": "GigabitEthernet0/0",
            "ip_address": "192.0.2.1",
            "status": "up",
            "proto": "up",
        },
        {
            "interface": "GigabitEthernet0/1",
            "ip_address": "unassigned",
            "status": "administratively down",
            "proto": "down",
        },
    ]
    assert brief["output"].startswith("Interface")  # the raw output stays
    assert version["parsed"][0]["version"] == "15.9(3)M4"
    assert "parsed" not in rejected  # a rejected command is not parsed


async def test_a_device_type_given_in_the_call_overrides_detection(lab: EmulatedDeviceLab):
    async with EmulatedDeviceLab(EmulatedGenericDevice("edge")) as more:
        edge = more["edge"]
        node = {
            "name": "edge",
            "node_id": "node-edge",
            "node_type": "qemu",
            "status": "started",
            "console": edge.port,
            "console_host": "127.0.0.1",
            "console_type": "telnet",
            "template_id": "tpl-unknown",
            "ports": [],
        }
        executor = executor_for(lab, extra=[node])
        refused = await call(executor, "execute_vpcs_commands", commands("edge", "show ip"))
        assert "edge is a generic device, not a VPCS" in by_device(refused)["edge"]["error"]
        bad = await call(
            executor,
            "execute_multiple_device_commands",
            {"device_configs": [{"device_name": "edge", "commands": ["x"], "device_type": "nxos"}]},
        )
        assert bad.output["fields"][0]["field"] == "device_configs.0.device_type"
        assert "unknown device type 'nxos'; known: vpcs, cisco_ios" in bad.output["error"]
        ran = await call(
            executor,
            "execute_multiple_device_commands",
            {
                "device_configs": [
                    {
                        "device_name": "edge",
                        "commands": ["/system identity print"],
                        "device_type": "generic",
                    }
                ]
            },
        )
        assert by_device(ran)["edge"]["output"][0]["output"] == "  name: edge"


# ---------------------------------------------------------------- honest node actions
def node_api(
    statuses: dict[str, list[str]], node_type: str = "vpcs", initial: str = "started"
) -> httpx.MockTransport:
    """One node whose status, read after each action, follows ``statuses[action]``
    (GNS3 answers every action 204, as 3.0.6 does for a VPCS suspend)."""
    state = {"status": initial}
    script: list[str] = []

    def node() -> dict[str, Any]:
        if script:
            state["status"] = script.pop(0)
        return {
            "name": "PC1",
            "node_id": "n1",
            "node_type": node_type,
            "status": state["status"],
            "console": None,
            "console_type": "none",
            "ports": [],
        }

    def handle(request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if path == f"/v3/projects/{PROJECT}":
            return httpx.Response(200, json={"project_id": PROJECT, "status": "opened"})
        if path == f"/v3/projects/{PROJECT}/nodes":
            return httpx.Response(200, json=[node()])
        if path.startswith(f"/v3/projects/{PROJECT}/nodes/n1/"):
            script.extend(statuses[path.rsplit("/", 1)[-1]])
            return httpx.Response(204)
        if path == f"/v3/projects/{PROJECT}/nodes/n1":
            return httpx.Response(200, json=node())
        if path in (f"/v3/projects/{PROJECT}/links", "/v3/templates"):
            return httpx.Response(200, json=[])
        return httpx.Response(404, json={"message": f"unexpected {path}"})

    return httpx.MockTransport(handle)


def node_executor(transport: httpx.MockTransport) -> Gns3ToolExecutor:
    client = Gns3Client("http://127.0.0.1:3080", http=httpx.AsyncClient(transport=transport))
    return Gns3ToolExecutor(
        client,
        settings=Gns3ToolSettings(poll_interval=0.02, action_settle=0.2, start_grace=0.2),
    )


async def test_suspending_a_started_vpcs_is_reported_as_failed_with_its_status():
    executor = node_executor(node_api({"suspend": ["started"]}))
    result = await call(executor, "suspend_gns3_node", {"node_names": ["PC1"]})
    assert result.status is ToolStatus.ERROR
    assert result.output["results"][0] == {
        "device_name": "PC1",
        "status": "failed",
        "output": {"status": "started"},
        "error": "GNS3 accepted the suspend, but PC1 is still 'started'. vpcs nodes cannot "
        "be suspended; stop it instead.",
    }


async def test_a_stop_is_followed_until_the_node_reports_it():
    executor = node_executor(node_api({"stop": ["started", "started", "stopped"]}, "qemu"))
    result = await call(executor, "stop_gns3_node", {"node_names": ["PC1"]})
    assert result.output["results"][0]["output"] == {"status": "stopped"}
    assert result.status is ToolStatus.SUCCESS


async def test_a_start_that_leaves_the_node_stopped_is_a_failure():
    stopped = node_executor(node_api({"start": ["stopped"] * 100}, "qemu", initial="stopped"))
    result = await call(stopped, "start_gns3_node", {"node_names": ["PC1"]})
    item = result.output["results"][0]
    assert result.status is ToolStatus.ERROR
    assert item["output"] == {"status": "stopped"}
    assert item["error"].startswith("GNS3 accepted the start, but PC1 is still 'stopped'")


async def test_the_template_index_is_read_on_first_use_or_when_warmed():
    executor = Gns3ToolExecutor(Gns3Client("http://127.0.0.1:9"))
    executor.specs(AUTOMATION)
    assert not executor.lab.parser.is_warm  # offering the tools loads nothing
    await executor.warm()  # what a service calls at start-up
    assert executor.lab.parser.is_warm
    await executor.client.aclose()
