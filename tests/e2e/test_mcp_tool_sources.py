"""MCP servers as the built-in agent's tool sources, end to end: ``gns3-copilot serve`` with
``COPILOT_MCP_SERVERS`` naming real MCP servers (the SDK-written fake of ``tests/fakes``
as a child process over stdio, and over HTTP), a real gns3-server, and the scripted LLM
speaking OpenAI's wire protocol. One declared server never starts."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.adapters.mcp.conftest import FAKE, ROOT, HttpFake
from tests.e2e.test_service_end_to_end import payloads, stream
from tests.fakes.copilot_service import ServedCopilot, serve_copilot
from tests.fakes.gns3_server import RealGns3Server
from tests.fakes.openai_server import Reply, ScriptedOpenAIServer, ToolCallScript

pytestmark = [pytest.mark.timeout(300), pytest.mark.gns3]

API_KEY = "sk-mcp-sources"
HEADER_SECRET = "header-secret-value"


@pytest.fixture(scope="module")
def llm() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer(api_key=API_KEY) as server:
        yield server


@pytest.fixture(scope="module")
def web_fake() -> Iterator[HttpFake]:
    fake = HttpFake(env={"FAKE_MCP_REQUIRE_HEADER": f"X-Api-Key:{HEADER_SECRET}"}).start()
    try:
        yield fake
    finally:
        fake.stop()


@pytest.fixture(scope="module")
def notes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("notes") / "notes.txt"


@pytest.fixture(scope="module")
def service(
    gns3_server: RealGns3Server,
    tmp_path_factory: pytest.TempPathFactory,
    web_fake: HttpFake,
    notes: Path,
) -> Iterator[ServedCopilot]:
    servers = [
        {
            "name": "lab",
            "transport": "stdio",
            "command": [*FAKE, "stdio"],
            "cwd": str(ROOT),
            "env": {"FAKE_MCP_NOTES": str(notes)},
            "tools": ["echo", "hang", "write_note"],
            "changing": ["write_note"],
            "timeout": 1,
        },
        {
            "name": "web",
            "transport": "http",
            "url": web_fake.url,
            "headers": {"X-Api-Key": HEADER_SECRET},
            "tools": ["echo"],
            "modes": ["lab_automation_assistant"],
        },
        {"name": "gone", "transport": "stdio", "command": ["/nonexistent/mcp"], "tools": ["*"]},
    ]
    env = {"COPILOT_MCP_SERVERS": json.dumps(servers)}
    with serve_copilot(gns3_server.url, tmp_path_factory.mktemp("svc"), env=env) as served:
        yield served


@pytest.fixture(scope="module")
def admin(gns3_server: RealGns3Server) -> str:
    return gns3_server.token()


@pytest.fixture(scope="module")
def project(gns3_server: RealGns3Server, admin: str) -> Iterator[str]:
    headers = {"Authorization": f"Bearer {admin}"}
    response = httpx.post(
        f"{gns3_server.url}/v3/projects",
        json={"name": f"mcp-src-{time.time_ns()}"},
        headers=headers,
    )
    assert response.status_code == 201, response.text
    project_id = str(response.json()["project_id"])
    yield project_id
    httpx.delete(f"{gns3_server.url}/v3/projects/{project_id}", headers=headers, timeout=30)


@pytest.fixture(scope="module")
def ready(service: ServedCopilot, admin: str, llm: ScriptedOpenAIServer) -> dict[str, Any]:
    """Admin's LLM settings stored; every reachable MCP server connected (bounded wait)."""
    with service.api(admin) as api:
        stored = api.put(
            "/llm-config",
            json={
                "provider": "openai",
                "model": "gpt-mcp",
                "base_url": llm.base_url,
                "api_key": API_KEY,
                "copilot_mode": "lab_automation_assistant",
            },
        )
        assert stored.status_code == 200, stored.text
        deadline = time.monotonic() + 30
        while True:
            capabilities = api.get("/capabilities").json()
            states = {s["name"]: s["state"] for s in capabilities["mcp_servers"]}
            if states["lab"] == "up" and states["web"] == "up" and states["gone"] == "down":
                return dict(capabilities)
            assert time.monotonic() < deadline, capabilities
            time.sleep(0.1)


def turn(api: httpx.Client, project: str, message: str) -> list[dict[str, Any]]:
    return payloads(stream(api, project, {"message": message}))


def test_capabilities_list_the_servers_their_tools_and_state_without_secrets(
    ready: dict[str, Any],
) -> None:
    servers = {s["name"]: s for s in ready["mcp_servers"]}

    assert ready["mcp"] is True
    assert servers["lab"]["tools"] == ["lab__echo", "lab__hang", "lab__write_note"]
    assert servers["lab"]["available"] is True
    assert servers["web"]["tools"] == ["web__echo"]
    assert servers["web"]["modes"] == ["lab_automation_assistant"]
    assert servers["gone"]["available"] is False
    assert servers["gone"]["problem"]
    assert HEADER_SECRET not in json.dumps(ready)


def test_the_agent_calls_an_mcp_tool_in_a_turn(
    service: ServedCopilot,
    ready: dict[str, Any],
    admin: str,
    project: str,
    llm: ScriptedOpenAIServer,
) -> None:
    llm.clear()
    llm.add(
        Reply(tool_calls=[ToolCallScript("lab__echo", {"text": "from the lab"})]),
        Reply(tool_calls=[ToolCallScript("web__echo", {"text": "over http"})]),
        Reply(text="Both servers answered."),
        Reply(text="MCP tools"),  # the title
    )
    first = len(llm.requests)
    with service.api(admin) as api:
        events = turn(api, project, "Use the MCP tools")

    ends = [e for e in events if e["type"] == "tool_end"]
    assert [(e["tool_name"], e["status"]) for e in ends] == [
        ("lab__echo", "success"),
        ("web__echo", "success"),
    ]
    assert json.loads(ends[0]["tool_output"])["result"] == {"echo": "from the lab"}
    assert json.loads(ends[1]["tool_output"])["result"] == {"echo": "over http"}
    assert events[-1]["type"] == "done"
    offered = {tool["function"]["name"] for tool in llm.requests[first].tools}
    assert {"lab__echo", "lab__hang", "web__echo", "gns3_topology_reader"} <= offered
    assert not any(name.startswith("gone__") for name in offered)
    answered = llm.requests[first + 1].messages[-1]
    assert answered["role"] == "tool" and "from the lab" in answered["content"]


def test_a_server_that_hangs_answers_unavailable_within_its_time_limit(
    service: ServedCopilot,
    ready: dict[str, Any],
    admin: str,
    project: str,
    llm: ScriptedOpenAIServer,
) -> None:
    llm.clear()
    # The tool never answers within the test's time: the server's 1 s limit (named in
    # the error) is what ends the call, and the turn goes on.
    llm.add(
        Reply(tool_calls=[ToolCallScript("lab__hang", {"seconds": 3600})]),
        Reply(text="The lab server did not answer."),
        Reply(text="Hang"),
    )
    with service.api(admin) as api:
        events = turn(api, project, "Wait for the lab")

    (end,) = [e for e in events if e["type"] == "tool_end"]
    assert end["status"] == "error"
    result = json.loads(end["tool_output"])
    assert result["unavailable"] is True
    assert "did not answer within 1 s" in result["error"]
    assert events[-1]["type"] == "done"


def test_a_changing_mcp_tool_waits_for_approval(
    service: ServedCopilot,
    ready: dict[str, Any],
    admin: str,
    project: str,
    llm: ScriptedOpenAIServer,
    notes: Path,
) -> None:
    llm.clear()
    llm.add(
        Reply(tool_calls=[ToolCallScript("lab__write_note", {"note": "approved note"})]),
        Reply(text="Noted."),
        Reply(text="Note"),
    )
    with service.api(admin) as api:
        events = turn(api, project, "Write a note")

    (asked,) = [e for e in events if e["type"] == "approval_required"]
    assert asked["tool_name"] == "lab__write_note"
    assert "write_note on the MCP server lab" in asked["preview"]["summary"]
    (end,) = [e for e in events if e["type"] == "tool_end"]
    assert end["status"] == "success"
    assert notes.read_text().splitlines() == ["approved note"]


def test_a_server_that_goes_down_degrades_to_unavailable_and_the_turn_goes_on(
    service: ServedCopilot,
    ready: dict[str, Any],
    admin: str,
    project: str,
    llm: ScriptedOpenAIServer,
    web_fake: HttpFake,
) -> None:
    web_fake.stop()
    llm.clear()
    llm.add(
        Reply(tool_calls=[ToolCallScript("web__echo", {"text": "anyone?"})]),
        Reply(text="The web server is down."),
        Reply(text="Down"),
    )
    with service.api(admin) as api:
        events = turn(api, project, "Call the web server")
        states = {s["name"]: s["state"] for s in api.get("/capabilities").json()["mcp_servers"]}

    (end,) = [e for e in events if e["type"] == "tool_end"]
    assert end["status"] == "error"
    assert json.loads(end["tool_output"])["unavailable"] is True
    assert [e for e in events if e["type"] == "content"]
    assert events[-1]["type"] == "done"
    assert states["web"] in {"down", "connecting"}
