"""One rule, one place, over real HTTP (issue 37): the service as ``serve`` builds it, with
an operator's policy that keeps its user in teaching mode and asks them at least
``changes``. A turn, a rollback and an MCP tool call beyond it each answer the core's one
refusal (the web's 403, the MCP error ``FORBIDDEN``) in the same words; a standing-intent
run, which only reads, is within any policy and carries the user's limits to the lab."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import urlencode

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from adapters.mcp._connection import FORBIDDEN
from copilot_core import CopilotMode
from copilot_core.ports import ApprovalPolicy
from tests.api.conftest import OPEN
from tests.api.real_app import TOKEN, RealApp, real_app

TEACHING = CopilotMode.TEACHING_ASSISTANT
AUTOMATION = CopilotMode.LAB_AUTOMATION_ASSISTANT
#: The real app's caller is the GNS3 user ``user``.
POLICY = {"users": {"user": {"max_mode": TEACHING.value, "min_approval": "changes"}}}
#: What the refusal says, whichever use case refuses.
REFUSAL = (
    f"needs the copilot mode '{AUTOMATION.value}', but the operator's policy (user user) "
    f"allows at most '{TEACHING.value}'; allowed: {TEACHING.value}."
)


@pytest.fixture
async def app(tmp_path: Path) -> AsyncIterator[RealApp]:
    async with real_app(tmp_path / "data", policy=POLICY) as running:
        yield running


async def _mcp_refusals(app: RealApp) -> list[MCPError]:
    """Listing the tools and calling one on a connection in lab-automation mode."""
    query = urlencode({"mode": AUTOMATION.value, "project": OPEN})
    refusals: list[MCPError] = []
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60) as http,
        Client(
            streamable_http_client(f"{app.base_url}/v3/copilot/mcp?{query}", http_client=http),
            mode="legacy",
        ) as client,
    ):
        with pytest.raises(MCPError) as listed:
            await client.list_tools()
        refusals.append(listed.value)
        with pytest.raises(MCPError) as called:
            await client.call_tool("gns3_topology_reader", {})
        refusals.append(called.value)
    return refusals


async def test_a_turn_a_rollback_and_an_mcp_tool_call_answer_the_same_refusal(
    app: RealApp,
) -> None:
    async with app.client() as client:
        turn = await client.post(
            app.chat_url(),
            json={"message": "add a router", "copilot_mode": AUTOMATION.value, "stream": False},
        )
        session, point = uuid.uuid4(), uuid.uuid4()
        rollback = await client.post(
            f"/v3/copilot/projects/{OPEN}/chat/sessions/{session}/restore-points/{point}/rollback"
        )
    refusals = await _mcp_refusals(app)

    for response, what in ((turn, "This message"), (rollback, "Rolling back a change")):
        assert response.status_code == 403, response.text
        assert response.json() == {"detail": f"{what} {REFUSAL}", "code": "permission_denied"}
    for refusal in refusals:
        assert refusal.error.code == FORBIDDEN
        assert refusal.error.message == f"Calling the copilot's tools in this mode {REFUSAL}"
    assert await app.store.list_sessions(OPEN, "u1") == []  # the refused turn stored nothing


async def test_a_standing_intent_run_is_within_the_policy_and_carries_the_limits(
    app: RealApp,
) -> None:
    checks = [{"kind": "reachability", "from": "PC1", "to": "PC2"}]
    async with app.client() as client:
        stored = await client.put(f"/v3/copilot/projects/{OPEN}/intent", json={"checks": checks})
        run = await client.post(f"/v3/copilot/projects/{OPEN}/intent/run")

    assert stored.status_code == 200, stored.text
    assert run.status_code == 200, run.text
    assert run.json()["status"] == "pass"
    assert app.probes is not None
    (context,) = app.probes.contexts
    assert (context.mode, context.limits.max_mode) == (TEACHING, TEACHING)
    assert context.limits.min_approval is ApprovalPolicy.CHANGES
    assert context.limits.mode_rule == "user user"
