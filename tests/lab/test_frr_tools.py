"""The copilot's GNS3 tools on real FRR routers: Docker templates offered like any other
(nodes created by template name, linked by the ports GNS3 names ``eth0``…), started without
touching the console, then show commands whose result carries FRR's rows beside the text."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import pytest

from adapters.gns3 import ConsoleRunner, Gns3Client, Gns3ToolExecutor
from copilot_core import CopilotMode, ParsedToolCall, ToolGate, ToolResult, ToolStatus
from copilot_core.ports import ApprovalPolicy
from tests.adapters.gns3.conftest import make_context
from tests.lab.router_lab import ROUTER_TEMPLATE, RouterLab

pytestmark = [pytest.mark.timeout(1500), pytest.mark.gns3, pytest.mark.slow]


@pytest.fixture
async def tools(router_lab: RouterLab) -> AsyncIterator[tuple[Gns3ToolExecutor, str, str]]:
    token = router_lab.server.token()
    project = router_lab.server.new_project("frr-tools", token)
    async with Gns3Client(router_lab.url, timeout=120.0) as client:
        executor = Gns3ToolExecutor(client, runner=ConsoleRunner(command_timeout=20.0))
        try:
            yield executor, project, token
        finally:
            await client.delete_project(token, project)


async def run(
    tools: tuple[Gns3ToolExecutor, str, str], name: str, arguments: dict[str, Any]
) -> ToolResult:
    executor, project, token = tools
    call = ParsedToolCall.parse("call-1", name, json.dumps(arguments))
    context = make_context(project, token, CopilotMode.LAB_AUTOMATION_ASSISTANT)
    result = await executor.execute(call, context)
    json.dumps(result.output)
    return result


async def test_two_frr_routers_by_template_name_linked_started_and_read_as_rows(
    tools: tuple[Gns3ToolExecutor, str, str],
) -> None:
    made = await run(
        tools,
        "create_gns3_node",
        {"nodes": [{"template_name": ROUTER_TEMPLATE}, {"template_name": ROUTER_TEMPLATE}]},
    )
    assert made.output["status"] == "success", made.output
    linked = await run(
        tools,
        "create_gns3_link",
        {"links": [{"node1": "R1", "port1": "eth1", "node2": "R2", "port2": "eth1"}]},
    )
    assert linked.output["status"] == "success", linked.output
    started = await run(tools, "start_gns3_node", {"node_names": ["R1", "R2"]})
    assert started.output["status"] == "success", started.output
    ready = await run(tools, "wait_for_console", {"node_names": ["R1", "R2"], "timeout_s": 120})
    assert ready.output["status"] == "success", ready.output
    assert {r["output"]["prompt"] for r in ready.output["results"]} == {"R1#", "R2#"}
    configured = await run(
        tools,
        "execute_multiple_device_config_commands",
        {
            "device_configs": [
                {
                    "device_name": "R1",
                    "config_commands": ["interface eth1", "ip address 10.9.0.1/30"],
                },
                {
                    "device_name": "R2",
                    "config_commands": ["interface eth1", "ip address 10.9.0.2/30"],
                },
            ]
        },
    )
    assert configured.output["status"] == "success", configured.output
    shown = await run(
        tools,
        "execute_multiple_device_commands",
        {"device_configs": [{"device_name": "R1", "commands": ["show interface brief"]}]},
    )
    assert shown.output["status"] == "success", shown.output
    outcome = shown.output["results"][0]["output"][0]
    assert "10.9.0.1/30" in outcome["output"]
    rows = {row["interface"]: row for row in outcome["parsed"]}
    assert rows["eth1"]["addresses"] == ["10.9.0.1/30"]
    assert set(rows) >= {"eth0", "eth1", "eth2", "eth3", "lo"}


async def test_no_spelling_of_a_change_gets_past_teaching_mode_or_approval_on_a_real_router(
    tools: tuple[Gns3ToolExecutor, str, str],
) -> None:
    """Issue 24's cases on a real FRR router, checked on its own console: abbreviated
    configuration (``conf t`` / ``int`` / ``ip addr``), ``wr`` and a change hidden behind
    read-only commands are refused in teaching mode, wait for approval under ``changes``
    (no one can approve here, so nothing runs), and the model's ``device_type`` cannot
    choose a looser grammar."""
    executor, project, token = tools
    made = await run(tools, "create_gns3_node", {"nodes": [{"template_name": ROUTER_TEMPLATE}]})
    assert made.output["status"] == "success", made.output
    started = await run(tools, "start_gns3_node", {"node_names": ["R1"]})
    assert started.output["status"] == "success", started.output
    ready = await run(tools, "wait_for_console", {"node_names": ["R1"], "timeout_s": 120})
    assert ready.output["status"] == "success", ready.output

    change = ["show interface brief", "conf t", "int eth2", "ip addr 10.66.0.1/30", "end", "wr"]
    spellings: list[dict[str, Any]] = [
        {"device_name": "R1", "commands": change},
        {"device_name": "R1", "commands": ["sh ip route", "wr mem"]},
        # The model claims a Linux shell, whose `ip addr` reads: R1 is FRR all the same.
        {"device_name": "R1", "commands": ["ip addr add 10.66.0.5/30"], "device_type": "linux"},
    ]
    gate = ToolGate(executor)
    for device in spellings:
        call = ParsedToolCall.parse(
            "call-t", "execute_multiple_device_commands", json.dumps({"device_configs": [device]})
        )
        teaching = make_context(project, token, CopilotMode.TEACHING_ASSISTANT)
        refused = await gate.call(call, teaching)
        # The read-only commands may run; every change is blocked, naming why.
        assert refused.output["status"] in {"partial_success", "failed"}, refused.output
        assert "teaching mode only runs read-only commands" in json.dumps(refused.output)
        lab = replace(
            make_context(project, token, CopilotMode.LAB_AUTOMATION_ASSISTANT),
            approval=ApprovalPolicy.CHANGES,
        )
        unapproved = await gate.call(call, lab)
        assert unapproved.status is not ToolStatus.SUCCESS, (device, unapproved.output)
        assert "approv" in json.dumps(unapproved.output).lower(), unapproved.output

    # R1's own console: no address was set, nothing was written.
    shown = await run(
        tools,
        "execute_multiple_device_commands",
        {"device_configs": [{"device_name": "R1", "commands": ["show running-config"]}]},
    )
    assert shown.output["status"] == "success", shown.output
    running = shown.output["results"][0]["output"][0]["output"]
    assert "hostname R1" in running or "R1" in running, running
    assert "10.66.0." not in running, running
