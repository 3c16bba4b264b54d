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


async def _two_linked_pcs(client: Gns3Client, token: str, project_id: str) -> tuple[str, str, str]:
    vpcs = next(t for t in await client.templates(token) if t["name"] == "VPCS")
    a = await client.create_node_from_template(token, project_id, vpcs["template_id"])
    b = await client.create_node_from_template(token, project_id, vpcs["template_id"], x=100)
    link = await client.create_link(token, project_id, [(a["node_id"], 0, 0), (b["node_id"], 0, 0)])
    return str(a["node_id"]), str(b["node_id"]), str(link["link_id"])


async def test_link_filters_are_offered_per_link_and_replaced_as_a_whole(
    gns3_client: Gns3Client, admin_token: str, project_id: str
):
    _, _, link_id = await _two_linked_pcs(gns3_client, admin_token, project_id)
    offered = await gns3_client.available_filters(admin_token, project_id, link_id)
    types = {f["type"]: f for f in offered}
    assert set(types) == {"frequency_drop", "packet_loss", "delay", "corrupt", "bpf"}
    assert [p["name"] for p in types["delay"]["parameters"]] == ["Latency", "Jitter (-/+)"]
    assert types["packet_loss"]["parameters"][0]["maximum"] == 100
    assert types["bpf"]["parameters"][0]["type"] == "text"
    updated = await gns3_client.update_link(
        admin_token, project_id, link_id, filters={"packet_loss": [20], "delay": [100, 10]}
    )
    assert updated["filters"] == {"packet_loss": [20], "delay": [100, 10]}
    # GNS3 replaces the whole set, and checks neither names nor ranges (the tool must).
    updated = await gns3_client.update_link(
        admin_token, project_id, link_id, filters={"packet_loss": [250]}
    )
    assert updated["filters"] == {"packet_loss": [250]}
    await gns3_client.update_link(admin_token, project_id, link_id, suspend=True)
    read = await gns3_client.link(admin_token, project_id, link_id)
    assert (read["suspend"], read["filters"]) == (True, {"packet_loss": [250]})


async def test_drawings_are_created_moved_and_deleted(
    gns3_client: Gns3Client, admin_token: str, project_id: str
):
    svg = '<svg width="120" height="30"><text font-size="12">R1 &amp; R2</text></svg>'
    drawing = await gns3_client.create_drawing(
        admin_token, project_id, {"svg": svg, "x": 10, "y": -20, "z": 2}
    )
    assert (drawing["svg"], drawing["x"], drawing["y"]) == (svg, 10, -20)
    moved = await gns3_client.update_drawing(admin_token, project_id, drawing["drawing_id"], x=50)
    assert moved["x"] == 50
    assert [d["drawing_id"] for d in await gns3_client.drawings(admin_token, project_id)] == [
        drawing["drawing_id"]
    ]
    await gns3_client.delete_drawing(admin_token, project_id, drawing["drawing_id"])
    assert await gns3_client.drawings(admin_token, project_id) == []
    with pytest.raises(Gns3Error, match="doesn't exist") as gone:
        await gns3_client.delete_drawing(admin_token, project_id, drawing["drawing_id"])
    assert gone.value.status_code == 404


async def test_a_snapshot_restore_brings_the_project_back_under_new_ids(
    gns3_client: Gns3Client, admin_token: str, project_id: str
):
    a, _, link_id = await _two_linked_pcs(gns3_client, admin_token, project_id)
    snapshot = await gns3_client.create_snapshot(admin_token, project_id, "before")
    assert snapshot["name"] == "before"
    with pytest.raises(Gns3Error, match="already exists") as taken:
        await gns3_client.create_snapshot(admin_token, project_id, "before")
    assert taken.value.status_code == 409
    await gns3_client.update_node(admin_token, project_id, a, name="Renamed")
    await gns3_client.delete_link(admin_token, project_id, link_id)
    project = await gns3_client.restore_snapshot(admin_token, project_id, snapshot["snapshot_id"])
    assert project["status"] == "opened"
    nodes = await gns3_client.nodes(admin_token, project_id)
    assert sorted(n["name"] for n in nodes) == ["PC1", "PC2"]
    assert a not in {n["node_id"] for n in nodes}  # every id is new
    assert len(await gns3_client.links(admin_token, project_id)) == 1
    (listed,) = await gns3_client.snapshots(admin_token, project_id)
    assert listed["name"] == "before"
    assert listed["snapshot_id"] != snapshot["snapshot_id"]  # so is the snapshot's
    await gns3_client.delete_snapshot(admin_token, project_id, listed["snapshot_id"])
    assert await gns3_client.snapshots(admin_token, project_id) == []


async def test_node_files_are_read_and_written(
    gns3_client: Gns3Client, admin_token: str, project_id: str
):
    a, _, _ = await _two_linked_pcs(gns3_client, admin_token, project_id)
    startup = await gns3_client.node_file(admin_token, project_id, a, "startup.vpc")
    assert b"set pcname PC1" in startup
    await gns3_client.write_node_file(
        admin_token, project_id, a, "startup.vpc", b"set pcname PC1\nip 10.0.0.1/24\n"
    )
    assert await gns3_client.node_file(admin_token, project_id, a, "startup.vpc") == (
        b"set pcname PC1\nip 10.0.0.1/24\n"
    )
    with pytest.raises(Gns3Error) as missing:
        await gns3_client.node_file(admin_token, project_id, a, "no-such-file")
    assert missing.value.status_code == 404


async def test_every_node_of_a_project_is_stopped_or_refused_a_start_at_once(
    gns3_client: Gns3Client, admin_token: str, project_id: str
):
    await _two_linked_pcs(gns3_client, admin_token, project_id)
    await gns3_client.project_nodes_action(admin_token, project_id, "stop")
    with pytest.raises(Gns3Error) as start:
        await gns3_client.project_nodes_action(admin_token, project_id, "start")
    assert start.value.status_code == 409
    statuses = {n["status"] for n in await gns3_client.nodes(admin_token, project_id)}
    assert statuses == {"stopped"}


async def test_a_node_is_created_from_its_own_description_and_deleted(
    gns3_client: Gns3Client, admin_token: str, project_id: str
):
    node = await gns3_client.create_node(
        admin_token,
        project_id,
        {"name": "Back", "node_type": "vpcs", "compute_id": "local", "x": 5, "y": 6},
    )
    assert (node["name"], node["x"], node["y"], node["status"]) == ("Back", 5, 6, "stopped")
    await gns3_client.delete_node(admin_token, project_id, node["node_id"])
    with pytest.raises(Gns3Error) as gone:
        await gns3_client.delete_node(admin_token, project_id, node["node_id"])
    assert gone.value.status_code == 404
