"""The copilot as an MCP server, end to end: ``gns3-copilot serve`` as a subprocess with a
real gns3-server, and the official MCP client over real HTTP on 127.0.0.1.

Both protocol eras the SDK speaks are exercised: the 2025 revisions (``initialize``,
a session, approvals asked with an ``elicitation/create`` request) and 2026-07-28
(``server/discover``, no session, approvals asked with an ``input_required`` result).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import urlencode

import httpx
import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from adapters.gns3 import gns3_lab_tools
from copilot_core import CopilotMode
from tests.fakes.copilot_service import ServedCopilot, serve_copilot
from tests.fakes.gns3_server import RealGns3Server

pytestmark = [pytest.mark.timeout(300), pytest.mark.gns3]

TEACHING = CopilotMode.TEACHING_ASSISTANT
AUTOMATION = CopilotMode.LAB_AUTOMATION_ASSISTANT
ERAS = ["legacy", "auto"]  # auto: the client discovers 2026-07-28 and uses it


@pytest.fixture(scope="module")
def service(
    gns3_server: RealGns3Server, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServedCopilot]:
    with serve_copilot(gns3_server.url, tmp_path_factory.mktemp("mcp-service")) as served:
        yield served


@pytest.fixture(scope="module")
def admin(gns3_server: RealGns3Server) -> str:
    return gns3_server.token()


@pytest.fixture(scope="module")
def project(gns3_server: RealGns3Server, admin: str) -> Iterator[dict[str, str]]:
    name = f"mcp-e2e-{time.time_ns()}"
    headers = {"Authorization": f"Bearer {admin}"}
    response = httpx.post(f"{gns3_server.url}/v3/projects", json={"name": name}, headers=headers)
    assert response.status_code == 201, response.text
    project_id = str(response.json()["project_id"])
    yield {"id": project_id, "name": name}
    httpx.delete(f"{gns3_server.url}/v3/projects/{project_id}", headers=headers, timeout=30)


def set_approval(service: ServedCopilot, token: str, approval: str) -> None:
    """The caller's approval setting, stored with their LLM settings."""
    with service.api(token) as api:
        stored = api.put(
            "/llm-config",
            json={
                "provider": "openai",
                "model": "gpt-mcp",
                "base_url": "http://127.0.0.1:9/v1",
                "api_key": "sk-unused",
                "approval": approval,
            },
        )
        assert stored.status_code == 200, stored.text


def node_names(gns3: RealGns3Server, token: str, project_id: str) -> list[str]:
    response = httpx.get(
        f"{gns3.url}/v3/projects/{project_id}/nodes", headers={"Authorization": f"Bearer {token}"}
    )
    return sorted(node["name"] for node in response.json())


@asynccontextmanager
async def mcp(
    service: ServedCopilot,
    token: str,
    *,
    era: str = "auto",
    elicit: Any = None,
    **query: str,
) -> AsyncIterator[Client]:
    url = f"{service.url}/v3/copilot/mcp"
    if query:
        url += "?" + urlencode(query)
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as http,
        Client(
            streamable_http_client(url, http_client=http), mode=era, elicitation_callback=elicit
        ) as client,
    ):
        yield client


def output(result: types.CallToolResult) -> Any:
    (block,) = result.content
    assert isinstance(block, types.TextContent)
    return json.loads(block.text)


# ================================================================== authentication
def test_the_endpoint_answers_401_without_a_token_or_with_a_bad_one(
    service: ServedCopilot,
) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    headers = {"Accept": "application/json, text/event-stream"}
    url = f"{service.url}/v3/copilot/mcp"

    missing = httpx.post(url, json=body, headers=headers)
    bad = httpx.post(url, json=body, headers={**headers, "Authorization": "Bearer not-a-jwt"})

    for response in (missing, bad):
        assert response.status_code == 401, response.text
        assert response.headers["www-authenticate"].startswith("Bearer")
        assert response.json()["error"] == "invalid_token"
    assert "Missing credentials" in missing.json()["error_description"]
    assert "not-a-jwt" not in bad.text


async def test_the_official_client_cannot_connect_with_a_bad_token(service: ServedCopilot) -> None:
    with pytest.raises(BaseException):  # noqa: B017, PT011 - the SDK raises a group
        async with mcp(service, "not-a-jwt"):
            pass


def test_a_bad_mode_is_refused_with_the_reason(service: ServedCopilot, admin: str) -> None:
    response = httpx.post(
        f"{service.url}/v3/copilot/mcp?mode=chaos",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={"Authorization": f"Bearer {admin}"},
    )

    assert response.status_code == 400
    assert "mode must be one of" in response.json()["error_description"]


# ========================================================================== tools
@pytest.mark.parametrize("era", ERAS)
async def test_each_mode_lists_the_copilots_tools_with_their_schemas(
    service: ServedCopilot, admin: str, era: str
) -> None:
    registry = gns3_lab_tools()  # the service's: every GNS3 tool and plan_lab
    async with mcp(service, admin, era=era) as teaching:
        taught = (await teaching.list_tools()).tools
    async with mcp(service, admin, era=era, mode=AUTOMATION.value) as automation:
        automated = (await automation.list_tools()).tools

    # the GNS3 tools, build_lab (lab automation), then the troubleshooting drills' one tool
    drill = ["practice_drill"]
    assert [t.name for t in taught] == [t.name for t in registry.offered(TEACHING)] + drill
    assert [t.name for t in automated] == [
        *(t.name for t in registry.offered(AUTOMATION)),
        "build_lab",
        *drill,
    ]
    assert "execute_multiple_device_config_commands" not in {t.name for t in taught}
    create = next(t for t in taught if t.name == "create_gns3_node")
    assert create.input_schema["required"][0] == "project"
    assert "nodes" in create.input_schema["properties"]
    assert create.description


async def test_a_connection_can_fix_the_project(
    service: ServedCopilot, admin: str, project: dict[str, str]
) -> None:
    async with mcp(service, admin, project=project["name"]) as client:
        tools = (await client.list_tools()).tools
        result = await client.call_tool("gns3_topology_reader", {})

    assert all("project" not in t.input_schema["properties"] for t in tools)
    assert not result.is_error, result.content
    assert output(result)["project"]["name"] == project["name"]


@pytest.mark.parametrize("era", ERAS)
async def test_the_topology_reader_answers_by_project_id_and_by_name(
    service: ServedCopilot, admin: str, project: dict[str, str], era: str
) -> None:
    async with mcp(service, admin, era=era) as client:
        by_id = await client.call_tool("gns3_topology_reader", {"project": project["id"]})
        by_name = await client.call_tool("gns3_topology_reader", {"project": project["name"]})
        missing = await client.call_tool("gns3_topology_reader", {})

    assert not by_id.is_error, by_id.content
    assert output(by_id) == output(by_name)
    assert by_id.structured_content == output(by_id)
    assert output(by_id)["project"]["name"] == project["name"]
    assert missing.is_error
    assert "Name the GNS3 project" in output(missing)["error"]


async def test_teaching_mode_refuses_a_lab_automation_tool(
    service: ServedCopilot, admin: str, project: dict[str, str]
) -> None:
    async with mcp(service, admin) as client:
        result = await client.call_tool(
            "stop_gns3_node", {"project": project["id"], "node_names": ["PC1"]}
        )

    assert result.is_error
    assert "not available in teaching_assistant mode" in output(result)["error"]


async def test_another_users_project_is_not_found(
    service: ServedCopilot, gns3_server: RealGns3Server, project: dict[str, str]
) -> None:
    other = gns3_server.create_user(f"mcp-{time.time_ns() % 10**8}", "Other-password-1")
    async with mcp(service, other) as client:
        by_id = await client.call_tool("gns3_topology_reader", {"project": project["id"]})
        by_name = await client.call_tool("gns3_topology_reader", {"project": project["name"]})
        resources = (await client.list_resources()).resources
        with pytest.raises(MCPError, match="not found"):
            await client.read_resource(f"gns3://projects/{project['id']}/topology")

    assert by_id.is_error and by_name.is_error
    assert output(by_id)["error"] == f"GNS3 project {project['id']!r} was not found."
    assert output(by_name)["error"] == f"GNS3 project {project['name']!r} was not found."
    assert project["id"] not in json.dumps([str(r.uri) for r in resources])


# ===================================================================== approvals
@pytest.mark.parametrize("era", ERAS)
async def test_with_approval_never_a_node_is_created_in_gns3(
    service: ServedCopilot,
    admin: str,
    project: dict[str, str],
    gns3_server: RealGns3Server,
    era: str,
) -> None:
    set_approval(service, admin, "never")
    name = f"N{era[:3]}"
    async with mcp(service, admin, era=era) as client:
        result = await client.call_tool(
            "create_gns3_node",
            {"project": project["id"], "nodes": [{"template_name": "VPCS", "name": name}]},
        )

    assert not result.is_error, result.content
    assert output(result)["results"][0]["device_name"] == name
    assert name in node_names(gns3_server, admin, project["id"])


@pytest.mark.parametrize("era", ERAS)
async def test_with_approval_changes_a_client_without_elicitation_is_told_how_to_allow(
    service: ServedCopilot,
    admin: str,
    project: dict[str, str],
    gns3_server: RealGns3Server,
    era: str,
) -> None:
    set_approval(service, admin, "changes")
    name = f"R{era[:3]}"
    async with mcp(service, admin, era=era) as client:
        result = await client.call_tool(
            "create_gns3_node",
            {"project": project["id"], "nodes": [{"template_name": "VPCS", "name": name}]},
        )
        read = await client.call_tool("gns3_topology_reader", {"project": project["id"]})

    assert result.is_error
    refusal = output(result)
    assert refusal["status"] == "rejected"
    assert "does not support elicitation" in refusal["error"]
    assert "'never'" in refusal["error"] and "/v3/copilot/llm-config" in refusal["error"]
    assert name not in node_names(gns3_server, admin, project["id"])
    assert not read.is_error  # reads need no approval under "changes"


@pytest.mark.parametrize("era", ERAS)
async def test_an_eliciting_client_is_asked_and_its_answer_decides(
    service: ServedCopilot,
    admin: str,
    project: dict[str, str],
    gns3_server: RealGns3Server,
    era: str,
) -> None:
    set_approval(service, admin, "changes")
    asked: list[str] = []
    answers = [{"approve": True}, {"approve": False, "comment": "not now"}]

    async def elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content=answers.pop(0))

    approved, declined = f"A{era[:3]}", f"D{era[:3]}"
    async with mcp(service, admin, era=era, elicit=elicit) as client:
        created = await client.call_tool(
            "create_gns3_node",
            {"project": project["id"], "nodes": [{"template_name": "VPCS", "name": approved}]},
        )
        refused = await client.call_tool(
            "create_gns3_node",
            {"project": project["id"], "nodes": [{"template_name": "VPCS", "name": declined}]},
        )

    assert not created.is_error, created.content
    assert refused.is_error
    assert output(refused)["status"] == "rejected"
    assert output(refused)["comment"] == "not now"
    assert len(asked) == 2
    assert f"create {approved} from template VPCS" in asked[0]
    names = node_names(gns3_server, admin, project["id"])
    assert approved in names and declined not in names


# ===================================================== resources, prompts, metrics
async def test_resources_are_the_open_projects_topologies_and_the_skills(
    service: ServedCopilot, admin: str, project: dict[str, str]
) -> None:
    async with mcp(service, admin) as client:
        listed = {str(r.uri): r for r in (await client.list_resources()).resources}
        topology = await client.read_resource(f"gns3://projects/{project['id']}/topology")
        skill = await client.read_resource("gns3://skills/vpcs/basics")

    assert f"gns3://projects/{project['id']}/topology" in listed
    assert "gns3://skills/vpcs/basics" in listed
    (contents,) = topology.contents
    assert isinstance(contents, types.TextResourceContents)
    assert json.loads(contents.text)["project"]["name"] == project["name"]
    (text,) = skill.contents
    assert isinstance(text, types.TextResourceContents)
    assert text.mime_type == "text/markdown" and text.text.startswith("# ")


async def test_prompts_are_the_modes_system_prompts_with_the_topology(
    service: ServedCopilot, admin: str, project: dict[str, str]
) -> None:
    async with mcp(service, admin) as client:
        prompts = {p.name for p in (await client.list_prompts()).prompts}
        automation = await client.get_prompt(AUTOMATION.value, {"project": project["name"]})
        teaching = await client.get_prompt(TEACHING.value)

    assert prompts == {TEACHING.value, AUTOMATION.value}
    (message,) = automation.messages
    assert isinstance(message.content, types.TextContent)
    assert "Mode: lab automation assistant" in message.content.text
    assert project["name"] in message.content.text
    (taught,) = teaching.messages
    assert isinstance(taught.content, types.TextContent)
    assert "Mode: teaching assistant" in taught.content.text


async def test_mcp_tool_calls_are_logged_and_counted_like_chat_tool_calls(
    service: ServedCopilot, admin: str, project: dict[str, str]
) -> None:
    def metrics() -> str:
        return httpx.get(f"{service.url}/metrics").text

    def count() -> float:
        text = metrics()
        found = re.search(
            r'^copilot_tool_calls_total\{status="success",tool="gns3_topology_reader"\} (\S+)$',
            text,
            re.M,
        )
        return float(found.group(1)) if found else 0.0

    before = count()
    async with mcp(service, admin) as client:
        await client.call_tool("gns3_topology_reader", {"project": project["id"]})

    assert count() == before + 1
    assert 'copilot_tool_seconds_count{tool="gns3_topology_reader"}' in metrics()
    lines = [
        json.loads(line)
        for line in service.log.read_text().splitlines()
        if line.startswith("{") and '"mcp_tool_called"' in line
    ]
    mine = [line for line in lines if line.get("project_id") == project["id"]]
    assert mine, lines[-3:]
    assert {"user_id", "username", "tool", "status", "mode", "duration_ms"} <= mine[-1].keys()
    assert mine[-1]["username"] == "admin"
    assert admin not in service.log.read_text()


def test_an_mcp_session_belongs_to_the_user_who_opened_it(
    service: ServedCopilot, admin: str, gns3_server: RealGns3Server
) -> None:
    url = f"{service.url}/v3/copilot/mcp"
    accept = {"Accept": "application/json, text/event-stream"}
    opened = httpx.post(
        url,
        json={
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "1"},
            },
        },
        headers={**accept, "Authorization": f"Bearer {admin}"},
    )
    assert opened.status_code == 200, opened.text
    session = opened.headers["mcp-session-id"]
    other = gns3_server.create_user(f"mcps-{time.time_ns() % 10**8}", "Other-password-1")
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    headers = {**accept, "mcp-session-id": session, "mcp-protocol-version": "2025-11-25"}

    stolen = httpx.post(url, json=listing, headers={**headers, "Authorization": f"Bearer {other}"})
    own = httpx.post(url, json=listing, headers={**headers, "Authorization": f"Bearer {admin}"})

    assert stolen.status_code == 404
    assert own.status_code == 200
