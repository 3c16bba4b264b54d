"""Gns3Client against a real gns3-server 3.0.6."""

from __future__ import annotations

import asyncio

import pytest

from adapters.gns3 import Gns3Client
from copilot_core.errors import (
    AuthenticationError,
    Gns3Error,
    PermissionDeniedError,
    ProjectNotFoundError,
    ProjectNotOpenedError,
)
from tests.fakes.gns3_server import RealGns3Server

# The first test also pays for installing gns3-server into its venv (once, ~25–45 s).
pytestmark = [pytest.mark.gns3, pytest.mark.timeout(300)]


async def test_current_user_with_the_callers_token(gns3_client: Gns3Client, admin_token: str):
    me = await gns3_client.current_user(admin_token)
    assert me["username"] == "admin"
    assert me["is_superadmin"] is True


async def test_bad_token_is_an_authentication_error_without_the_token(gns3_client: Gns3Client):
    secret = "not.a-valid.jwt-secret-value"
    with pytest.raises(AuthenticationError) as caught:
        await gns3_client.current_user(secret)
    assert "Could not validate credentials" in caught.value.message
    assert secret not in str(caught.value)


async def test_authenticate_returns_a_working_token(
    gns3_client: Gns3Client, gns3_server: RealGns3Server
):
    token = await gns3_client.authenticate("admin", "admin")
    assert (await gns3_client.current_user(token))["username"] == "admin"
    with pytest.raises(AuthenticationError):
        await gns3_client.authenticate("admin", "wrong-password")


async def test_templates_include_the_builtins(gns3_client: Gns3Client, admin_token: str):
    names = {t["name"] for t in await gns3_client.templates(admin_token)}
    assert {"VPCS", "Ethernet switch", "Cloud"} <= names


async def test_opened_project_checks_status(
    gns3_client: Gns3Client, admin_token: str, project_id: str
):
    assert (await gns3_client.opened_project(admin_token, project_id))["status"] == "opened"
    await gns3_client.close_project(admin_token, project_id)
    with pytest.raises(ProjectNotOpenedError):
        await gns3_client.opened_project(admin_token, project_id)
    await gns3_client.open_project(admin_token, project_id)
    assert (await gns3_client.opened_project(admin_token, project_id))["status"] == "opened"


async def test_unknown_project_is_project_not_found(gns3_client: Gns3Client, admin_token: str):
    with pytest.raises(ProjectNotFoundError):
        await gns3_client.project(admin_token, "00000000-0000-0000-0000-000000000000")


async def test_nodes_links_and_gns3_error_messages(
    gns3_client: Gns3Client, admin_token: str, project_id: str
):
    vpcs = next(t for t in await gns3_client.templates(admin_token) if t["name"] == "VPCS")
    a = await gns3_client.create_node_from_template(admin_token, project_id, vpcs["template_id"])
    b = await gns3_client.create_node_from_template(
        admin_token, project_id, vpcs["template_id"], x=100
    )
    renamed = await gns3_client.update_node(admin_token, project_id, a["node_id"], name="Alice")
    assert renamed["name"] == "Alice"
    link = await gns3_client.create_link(
        admin_token, project_id, [(a["node_id"], 0, 0), (b["node_id"], 0, 0)]
    )
    assert {n["node_id"] for n in link["nodes"]} == {a["node_id"], b["node_id"]}
    with pytest.raises(Gns3Error, match="Port is already used") as used:
        await gns3_client.create_link(
            admin_token, project_id, [(a["node_id"], 0, 0), (b["node_id"], 0, 0)]
        )
    assert used.value.status_code == 409
    with pytest.raises(Gns3Error, match="not found"):
        await gns3_client.create_link(
            admin_token, project_id, [(a["node_id"], 0, 5), (b["node_id"], 0, 7)]
        )
    # No VPCS binary (nor uBridge) here: GNS3's own 409 message comes through.
    with pytest.raises(Gns3Error) as start:
        await gns3_client.node_action(admin_token, project_id, a["node_id"], "start")
    assert start.value.status_code == 409
    assert "VPCS" in start.value.message or "uBridge" in start.value.message
    with pytest.raises(Gns3Error, match="no running device on this link"):
        await gns3_client.start_capture(admin_token, project_id, link["link_id"], "x.pcap")
    with pytest.raises(Gns3Error, match="no active packet capture"):
        async for _ in gns3_client.capture_stream(admin_token, project_id, link["link_id"]):
            pass
    names = sorted(n["name"] for n in await gns3_client.nodes(admin_token, project_id))
    assert names == ["Alice", "PC2"]


async def test_notifications_report_node_creation(
    gns3_client: Gns3Client, admin_token: str, project_id: str
):
    vpcs = next(t for t in await gns3_client.templates(admin_token) if t["name"] == "VPCS")
    seen: list[str] = []

    async def follow() -> None:
        async for event in gns3_client.notifications(admin_token, project_id):
            seen.append(str(event.get("action")))
            if event.get("action") == "node.created":
                return

    watcher = asyncio.create_task(follow())
    await asyncio.sleep(0.5)
    await gns3_client.create_node_from_template(admin_token, project_id, vpcs["template_id"])
    async with asyncio.timeout(10):
        await watcher
    assert "node.created" in seen


async def test_another_user_cannot_read_the_project(
    gns3_client: Gns3Client, gns3_server: RealGns3Server, admin_token: str, project_id: str
):
    bob = gns3_server.create_user("bob-client", "bob-password-1")
    with pytest.raises(PermissionDeniedError, match="Permission denied"):
        await gns3_client.project(bob, project_id)
    with pytest.raises(PermissionDeniedError):
        await gns3_client.nodes(bob, project_id)
    assert project_id not in {p["project_id"] for p in await gns3_client.projects(bob)}


async def test_unreachable_server_is_a_gns3_error():
    async with Gns3Client("http://127.0.0.1:9", timeout=2.0) as client:
        with pytest.raises(Gns3Error, match="cannot be reached"):
            await client.templates("token")
