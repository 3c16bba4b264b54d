"""The MCP endpoint on device consoles: forbidden commands are blocked, teaching mode's rule
holds, and a command's output streams as MCP progress.

Nodes cannot be started on this machine's gns3-server (no uBridge), so GNS3's REST
answers come from ``httpx.MockTransport`` (a project whose nodes are started) and the
consoles are the telnet emulators on 127.0.0.1. Everything else is real: the web app
with the MCP endpoint mounted, on uvicorn, and the official MCP client over HTTP.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any, cast

import httpx
import httpx2
import mcp_types as types
import pytest
import uvicorn
from litestar import Litestar
from litestar.types import ASGIApp
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from adapters.gns3 import (
    ConsoleRunner,
    Gns3Client,
    Gns3ProjectGate,
    Gns3ToolExecutor,
    Gns3TopologySource,
)
from adapters.mcp import McpEndpoint, McpServerDependencies, ToolCallRecord
from adapters.web import create_web_app
from adapters.web.testing import StaticAuthenticator
from copilot_core import ToolGate
from copilot_core.ports import ApprovalPolicy, Principal
from tests.adapters.gns3.test_command_tools import PROJECT, TOKEN, started_nodes_api
from tests.fakes.copilot_service import free_port
from tests.fakes.telnet_devices import EmulatedCiscoRouter, EmulatedDeviceLab, EmulatedVpcs

pytestmark = pytest.mark.timeout(60)


class OneProject:
    async def projects(self, token: str) -> Sequence[Mapping[str, Any]]:
        return [{"project_id": PROJECT, "name": "lab", "status": "opened"}]


class RecordingObserver:
    def __init__(self) -> None:
        self.records: list[ToolCallRecord] = []

    def tool_called(self, record: ToolCallRecord) -> None:
        self.records.append(record)


@contextlib.asynccontextmanager
async def served(lab: EmulatedDeviceLab, observer: RecordingObserver) -> AsyncIterator[str]:
    gns3 = Gns3Client(
        "http://127.0.0.1:3080", http=httpx.AsyncClient(transport=started_nodes_api(lab, [], b""))
    )
    endpoint = McpEndpoint()

    async def never(user_id: str) -> ApprovalPolicy:
        return ApprovalPolicy.NEVER

    endpoint.install(
        McpServerDependencies(
            tools=ToolGate(Gns3ToolExecutor(gns3, runner=ConsoleRunner(command_timeout=2.0))),
            authenticator=StaticAuthenticator({TOKEN: Principal("u1", "teacher")}),
            projects=Gns3ProjectGate(gns3),
            directory=OneProject(),
            topology=Gns3TopologySource(gns3),
            approval=never,
            observers=(observer,),
        )
    )

    @contextlib.asynccontextmanager
    async def lifespan(app: Litestar) -> AsyncIterator[None]:
        async with endpoint.running():
            yield

    app = create_web_app(lifespan=[lifespan], mounts={"/v3/copilot/mcp": cast(ASGIApp, endpoint)})
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    task = asyncio.create_task(server.serve())
    try:
        async with asyncio.timeout(10):
            while not server.started:
                await asyncio.sleep(0.02)
        yield f"http://127.0.0.1:{port}/v3/copilot/mcp"
    finally:
        server.should_exit = True
        await task


@contextlib.asynccontextmanager
async def client(url: str, *, era: str = "auto", **query: str) -> AsyncIterator[Client]:
    if query:
        url += "?" + "&".join(f"{k}={v}" for k, v in query.items())
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30) as http,
        Client(streamable_http_client(url, http_client=http), mode=era) as connected,
    ):
        yield connected


@pytest.fixture
async def lab() -> AsyncIterator[EmulatedDeviceLab]:
    async with EmulatedDeviceLab(EmulatedVpcs("PC1"), EmulatedCiscoRouter("R1")) as devices:
        yield devices


def devices(result: types.CallToolResult) -> dict[str, Any]:
    (block,) = result.content
    assert isinstance(block, types.TextContent)
    return {d["device_name"]: d for d in json.loads(block.text)["results"]}


@pytest.mark.parametrize("era", ["legacy", "auto"])
async def test_a_forbidden_command_is_blocked_and_never_reaches_the_console(
    lab: EmulatedDeviceLab, era: str
) -> None:
    observer = RecordingObserver()
    async with served(lab, observer) as url, client(url, era=era, project="lab") as mcp:
        result = await mcp.call_tool(
            "execute_multiple_device_commands",
            {
                "device_configs": [
                    {"device_name": "R1", "commands": ["show version", "debug ip packet"]}
                ]
            },
        )

    r1 = devices(result)["R1"]
    assert r1["status"] == "partial_success"
    assert [b["command"] for b in r1["blocked_commands"]] == ["debug ip packet"]
    assert "forbidden" in r1["blocked_commands"][0]["reason"]
    assert lab["R1"].received == ["show version"]
    (record,) = observer.records
    assert (record.tool, record.status, record.project_id) == (
        "execute_multiple_device_commands",
        "success",
        PROJECT,
    )
    assert (record.username, record.mode) == ("teacher", "teaching_assistant")


async def test_teaching_mode_blocks_configuration_commands_over_mcp(
    lab: EmulatedDeviceLab,
) -> None:
    async with served(lab, RecordingObserver()) as url, client(url, project=PROJECT) as mcp:
        result = await mcp.call_tool(
            "execute_multiple_device_commands",
            {"device_configs": [{"device_name": "R1", "commands": ["conf t"]}]},
        )

    r1 = devices(result)["R1"]
    assert r1["error"] == "every command was blocked"
    assert "teaching mode only runs read-only commands" in r1["blocked_commands"][0]["reason"]
    assert lab["R1"].received == []


async def test_a_running_commands_output_arrives_as_progress(lab: EmulatedDeviceLab) -> None:
    seen: list[str] = []

    async def progress(value: float, total: float | None, message: str | None) -> None:
        seen.append(message or "")

    async with (
        served(lab, RecordingObserver()) as url,
        client(url, era="legacy", mode="lab_automation_assistant", project="lab") as mcp,
    ):
        result = await mcp.call_tool(
            "execute_vpcs_commands",
            {"device_configs": [{"device_name": "PC1", "commands": ["ping 10.0.0.2 -c 3"]}]},
            progress_callback=progress,
        )

    assert devices(result)["PC1"]["status"] == "success", result.content
    assert any(text.startswith("PC1: ") for text in seen), seen
    assert "icmp_seq" in "".join(seen)


async def test_teaching_mode_refuses_abbreviated_vpcs_changes_over_mcp(
    lab: EmulatedDeviceLab,
) -> None:
    pc1 = lab["PC1"]
    assert isinstance(pc1, EmulatedVpcs)
    commands = ["i 10.0.0.61/24", "write", "se pcname TAUGHT", "@ip 10.0.0.62/24"]
    async with served(lab, RecordingObserver()) as url, client(url, project=PROJECT) as mcp:
        result = await mcp.call_tool(
            "execute_multiple_device_commands",
            {"device_configs": [{"device_name": "PC1", "commands": [*commands, "show ip"]}]},
        )

    item = devices(result)["PC1"]
    assert [b["command"] for b in item["blocked_commands"]] == commands
    assert "IP/MASK     : 0.0.0.0/0" in item["output"][0]["output"]  # on PC1's own console
    assert (pc1.ip, pc1.name, pc1.saves, pc1.received) == ("0.0.0.0/0", "PC1", 0, ["show ip"])
