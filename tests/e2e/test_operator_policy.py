"""The operator's policy, end to end: ``gns3-copilot serve`` with a policy file, a real
gns3-server whose GNS3 group ``students`` holds a student, the scripted OpenAI server, and
the HTTP API and MCP endpoint over real HTTP on 127.0.0.1.

Settings stored before the policy existed (lab mode, approval ``never``) are kept in the
database: the service started with the policy runs them within it.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx
import httpx2
import pytest
from httpx_sse import connect_sse
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from adapters.gns3 import gns3_tools
from adapters.mcp._connection import FORBIDDEN
from copilot_core import CopilotMode
from tests.fakes.copilot_service import ServedCopilot, serve_copilot
from tests.fakes.gns3_server import RealGns3Server
from tests.fakes.openai_server import Reply, ScriptedOpenAIServer, ToolCallScript

pytestmark = [pytest.mark.timeout(900), pytest.mark.gns3]

READY_WITHIN = 240  # a loaded machine (several test runs at once) starts it slowly
API_KEY = "sk-policy-test"
TEACHING = CopilotMode.TEACHING_ASSISTANT.value
AUTOMATION = CopilotMode.LAB_AUTOMATION_ASSISTANT.value


@dataclass(frozen=True)
class People:
    admin: str  # a superadmin, in no group: the default rule
    student: str  # in the GNS3 group of students
    other: str  # a plain user in no group, with a rule of their own
    other_name: str
    group: str
    project: str


def _headers(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture(scope="module")
def llm() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer(api_key=API_KEY) as server:
        yield server


@pytest.fixture(scope="module")
def people(gns3_server: RealGns3Server) -> Iterator[People]:
    url, admin = gns3_server.url, gns3_server.token()
    suffix = uuid.uuid4().hex[:8]
    student = gns3_server.create_user(f"student-{suffix}", "a-long-password-1")
    other_name = f"other-{suffix}"
    other = gns3_server.create_user(other_name, "a-long-password-1")
    student_id = httpx.get(f"{url}/v3/access/users/me", headers=_headers(student)).json()["user_id"]
    group = f"students-{suffix}"
    made = httpx.post(f"{url}/v3/access/groups", json={"name": group}, headers=_headers(admin))
    assert made.status_code == 201, made.text
    group_id = made.json()["user_group_id"]
    joined = httpx.put(
        f"{url}/v3/access/groups/{group_id}/members/{student_id}", headers=_headers(admin)
    )
    assert joined.status_code == 204, joined.text
    project = gns3_server.new_project("policy", admin)
    roles = httpx.get(f"{url}/v3/access/roles", headers=_headers(admin)).json()
    role = next(r["role_id"] for r in roles if r["name"] == "User")
    granted = httpx.post(
        f"{url}/v3/access/acl",
        json={
            "ace_type": "user",
            "path": f"/projects/{project}",
            "propagate": True,
            "allowed": True,
            "user_id": student_id,
            "role_id": role,
        },
        headers=_headers(admin),
    )
    assert granted.status_code == 201, granted.text
    assert httpx.get(f"{url}/v3/projects/{project}", headers=_headers(student)).status_code == 200
    yield People(admin, student, other, other_name, group, project)
    httpx.delete(f"{url}/v3/projects/{project}", headers=_headers(admin), timeout=30)
    httpx.delete(f"{url}/v3/access/groups/{group_id}", headers=_headers(admin), timeout=30)


@pytest.fixture(scope="module")
def service(
    gns3_server: RealGns3Server,
    tmp_path_factory: pytest.TempPathFactory,
    people: People,
    llm: ScriptedOpenAIServer,
) -> Iterator[ServedCopilot]:
    root = tmp_path_factory.mktemp("policy")
    # Before the policy: the student and the admin store lab mode, the admin no approvals.
    with serve_copilot(gns3_server.url, root, ready_within=READY_WITHIN) as before:
        stored = ((people.student, "changes"), (people.admin, "never"), (people.other, "changes"))
        for token, approval in stored:
            with before.api(token) as api:
                stored = api.put("/llm-config", json=_llm(llm, AUTOMATION, approval))
                assert stored.status_code == 200, stored.text
    policy = Path(root / "policy.yaml")
    policy.write_text(
        "default:\n"
        "  min_approval: changes\n"
        "groups:\n"
        f"  {people.group}:\n"
        "    max_mode: teaching_assistant\n"
        "users:\n"
        f"  {people.other_name}:\n"
        "    llm_endpoints: [10.0.0.0/8, api.example.org]\n"
    )
    env = {
        "COPILOT_POLICY__FILE": str(policy),
        "COPILOT_GNS3__USERNAME": gns3_server.admin_username,
        "COPILOT_GNS3__PASSWORD": gns3_server.admin_password,
    }
    with serve_copilot(gns3_server.url, root, env, READY_WITHIN) as served:
        yield served


def _llm(llm: ScriptedOpenAIServer, mode: str, approval: str) -> dict[str, Any]:
    return {
        "provider": "openai",
        "model": "gpt-policy",
        "base_url": llm.base_url,
        "api_key": API_KEY,
        "copilot_mode": mode,
        "approval": approval,
    }


def _turn(
    api: httpx.Client, project: str, body: dict[str, Any], decision: str = "reject"
) -> list[dict[str, Any]]:
    """A streamed turn to its end, deciding every approval it asks with ``decision``."""
    events: list[dict[str, Any]] = []
    with connect_sse(api, "POST", f"/projects/{project}/chat/stream", json=body) as source:
        assert source.response.status_code == 200, source.response.read()
        for event in source.iter_sse():
            data = json.loads(event.data)
            events.append(data)
            if data["type"] == "approval_required":
                decided = api.post(
                    f"/projects/{project}/chat/sessions/{data['session_id']}"
                    f"/approvals/{data['approval_id']}",
                    json={"decision": decision},
                )
                assert decided.status_code == 200, decided.text
    return events


# ====================================================================== the policy
def test_each_user_is_told_what_the_policy_allows_them(
    service: ServedCopilot, people: People
) -> None:
    with service.api(people.student) as api:
        student = api.get("/policy").json()
    with service.api(people.other) as api:
        other = api.get("/policy").json()

    assert student["modes"] == [TEACHING]
    assert student["max_mode"] == TEACHING
    assert student["approvals"] == ["changes", "always"]
    assert other["modes"] == [TEACHING, AUTOMATION]
    assert other["approvals"] == ["changes", "always"]
    assert other["llm_endpoints"] == [["10.0.0.0/8", "api.example.org"]]
    assert student["llm_endpoints"] is None


# ============================================================================ chat
def test_a_message_asking_for_a_mode_above_the_users_is_refused(
    service: ServedCopilot, people: People, llm: ScriptedOpenAIServer
) -> None:
    asked = len(llm.requests)
    with service.api(people.student) as api:
        refused = api.post(
            f"/projects/{people.project}/chat/stream",
            json={"message": "configure R1", "copilot_mode": AUTOMATION},
        )
        sessions = api.get(f"/projects/{people.project}/chat/sessions").json()

    assert refused.status_code == 403, refused.text
    detail = refused.json()["detail"]
    assert f"group {people.group}" in detail
    assert f"at most '{TEACHING}'" in detail
    assert sessions == []
    assert len(llm.requests) == asked  # the model was never asked


def test_a_stored_mode_above_the_users_runs_at_the_highest_allowed(
    service: ServedCopilot, people: People, llm: ScriptedOpenAIServer
) -> None:
    llm.clear()
    llm.add(Reply(text="Here is what I see."), Reply(text="Looking"))
    with service.api(people.student) as api:
        events = _turn(api, people.project, {"message": "what is in my lab?"})
        sessions = api.get(f"/projects/{people.project}/chat/sessions").json()

    assert events[-1]["type"] == "done", events
    offered = [tool["function"]["name"] for tool in llm.requests[0].tools]
    teaching = [t.name for t in gns3_tools().offered(CopilotMode.TEACHING_ASSISTANT)]
    # (the compact set, the default: the everyday tools of teaching mode, none beyond it)
    assert "gns3_topology_reader" in offered and set(offered) <= set(teaching)
    assert "execute_multiple_device_config_commands" not in offered
    assert [s["copilot_mode"] for s in sessions] == [TEACHING]


def test_a_stored_approval_below_the_policys_is_raised_to_it(
    service: ServedCopilot, people: People, llm: ScriptedOpenAIServer
) -> None:
    llm.clear()
    create = {"nodes": [{"template_name": "VPCS", "name": "PCX"}]}
    llm.add(
        Reply(tool_calls=[ToolCallScript("create_gns3_node", create)]),
        Reply(text="I did not create it."),
        Reply(text="A node"),
    )
    with service.api(people.admin) as api:  # stored: approval never
        events = _turn(api, people.project, {"message": "add PCX"}, decision="reject")

    kinds = [e["type"] for e in events]
    assert "approval_required" in kinds, kinds  # never would have created it at once
    assert kinds[-1] == "done"


async def test_over_mcp_the_approval_setting_is_raised_to_the_policys(
    service: ServedCopilot, people: People, gns3_server: RealGns3Server
) -> None:
    with service.api(people.admin) as api:  # stored before the policy
        assert api.get("/llm-config").json()["approval"] == "never"
    url = f"{service.url}/v3/copilot/mcp?mode={AUTOMATION}"
    async with (
        httpx2.AsyncClient(headers=_headers(people.admin), timeout=60) as http,
        Client(streamable_http_client(url, http_client=http), mode="legacy") as client,
    ):
        result = await client.call_tool(
            "create_gns3_node",
            {"project": people.project, "nodes": [{"template_name": "VPCS", "name": "PCM"}]},
        )

    assert result.is_error
    (content,) = result.content
    assert "your approval setting is 'changes'" in getattr(content, "text", "")
    async with httpx.AsyncClient(headers=_headers(people.admin)) as gns3:
        nodes = (await gns3.get(f"{gns3_server.url}/v3/projects/{people.project}/nodes")).json()
    assert "PCM" not in [n["name"] for n in nodes]


# ======================================================================== settings
def test_settings_beyond_the_policy_are_refused_and_nothing_is_stored(
    service: ServedCopilot, people: People, llm: ScriptedOpenAIServer
) -> None:
    with service.api(people.student) as api:
        mode = api.put("/llm-config", json=_llm(llm, AUTOMATION, "changes"))
        kept = api.get("/llm-config").json()
    with service.api(people.admin) as api:
        never = api.put("/llm-config", json=_llm(llm, AUTOMATION, "never"))
        always = api.put("/llm-config", json=_llm(llm, AUTOMATION, "always"))

    assert mode.status_code == 403, mode.text
    assert f"at most '{TEACHING}'" in mode.json()["detail"]
    assert kept["copilot_mode"] == AUTOMATION  # as stored before the policy, unchanged
    assert never.status_code == 403, never.text
    assert "at least 'changes'" in never.json()["detail"]
    assert always.status_code == 200, always.text


# ============================================================================= MCP
def _initialize(service: ServedCopilot, token: str, **query: str) -> httpx.Response:
    return httpx.post(
        f"{service.url}/v3/copilot/mcp?{urlencode(query)}",
        json={
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "policy-test", "version": "1"},
            },
        },
        headers={**_headers(token), "Accept": "application/json, text/event-stream"},
        timeout=30,
    )


async def test_an_mcp_client_cannot_use_a_mode_above_the_users(
    service: ServedCopilot, people: People
) -> None:
    taught = _initialize(service, people.student, mode=TEACHING)
    other = _initialize(service, people.other, mode=AUTOMATION)
    url = f"{service.url}/v3/copilot/mcp?mode={AUTOMATION}"
    async with (
        httpx2.AsyncClient(headers=_headers(people.student), timeout=60) as http,
        Client(streamable_http_client(url, http_client=http), mode="legacy") as client,
    ):
        with pytest.raises(MCPError) as listed:  # the core's gate refuses; MCP maps it
            await client.list_tools()
        with pytest.raises(MCPError) as called:
            await client.call_tool("gns3_topology_reader", {"project": people.project})

    for refused in (listed.value, called.value):
        assert refused.error.code == FORBIDDEN
        assert f"group {people.group}" in refused.error.message
    assert taught.status_code == 200, taught.text
    assert other.status_code == 200, other.text


# =================================================================== LLM endpoints
def test_a_stored_endpoint_the_policy_no_longer_allows_is_not_used(
    service: ServedCopilot, people: People, llm: ScriptedOpenAIServer
) -> None:
    asked = len(llm.requests)
    with service.api(people.other) as api:  # stored before the policy: 127.0.0.1
        tested = api.post("/llm-config/test")
        models = api.get("/llm-config/models").json()

    assert tested.status_code == 403, tested.text
    assert "'127.0.0.1' is not allowed" in tested.json()["detail"]
    assert "10.0.0.0/8, api.example.org" in tested.json()["detail"]
    assert models["available"] is False
    assert "'127.0.0.1' is not allowed" in models["reason"]
    assert len(llm.requests) == asked  # nothing was sent to it


def test_an_endpoint_is_saved_only_when_the_policy_allows_its_host(
    service: ServedCopilot, people: People, llm: ScriptedOpenAIServer
) -> None:
    body = _llm(llm, TEACHING, "changes")
    with service.api(people.other) as api:
        literal = api.put("/llm-config", json={**body, "base_url": "http://127.0.0.1:9/v1"})
        named = api.put("/llm-config", json={**body, "base_url": "http://localhost:9/v1"})
        kept = api.get("/llm-config").json()
        allowed = api.put("/llm-config", json={**body, "base_url": "http://10.1.2.3:8000/v1"})

    for refused, host in ((literal, "127.0.0.1"), (named, "localhost")):
        assert refused.status_code == 403, refused.text
        detail = refused.json()["detail"]
        assert f"host {host!r} is not allowed" in detail
        assert f"user {people.other_name}" in detail
        assert "allowed: 10.0.0.0/8, api.example.org" in detail
    assert kept["base_url"] == llm.base_url  # nothing was stored
    assert allowed.status_code == 200, allowed.text
    assert allowed.json()["base_url"] == "http://10.1.2.3:8000/v1"


# ======================================================================== rollback
def test_a_user_kept_in_teaching_mode_cannot_roll_back(
    service: ServedCopilot, people: People
) -> None:
    with service.api(people.student) as api:
        (session,) = api.get(f"/projects/{people.project}/chat/sessions").json()
        refused = api.post(
            f"/projects/{people.project}/chat/sessions/{session['thread_id']}"
            f"/restore-points/{uuid.uuid4()}/rollback"
        )

    assert refused.status_code == 403, refused.text
    assert "Rolling back a change" in refused.json()["detail"]


def test_the_policy_file_is_checked_at_start_up(
    gns3_server: RealGns3Server, tmp_path: Path
) -> None:
    bad = tmp_path / "policy.yaml"
    bad.write_text("groups:\n  students:\n    max_mode: root\n")
    with (
        pytest.raises(AssertionError, match="max_mode") as refused,
        serve_copilot(gns3_server.url, tmp_path, {"COPILOT_POLICY__FILE": str(bad)}, READY_WITHIN),
    ):
        pass
    # The process ended at start-up, naming the setting: it did not run on, unready.
    assert "did not become ready" not in str(refused.value)
