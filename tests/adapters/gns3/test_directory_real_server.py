"""The page's view of a project, read from a real gns3-server: nodes with their consoles,
links, a web UI address, and the project's notifications as they happen."""

from __future__ import annotations

import asyncio
from contextlib import aclosing

import pytest

from adapters.gns3 import Gns3Client, Gns3ClientDirectory

pytestmark = pytest.mark.gns3


async def test_topology_and_notifications_of_a_real_project(
    gns3_client: Gns3Client, admin_token: str, project_id: str
) -> None:
    directory = Gns3ClientDirectory(gns3_client, public_url="http://lab.example:3080/")
    templates = await gns3_client.templates(admin_token)
    vpcs = next(t["template_id"] for t in templates if t["name"] == "VPCS")
    seen: list[str] = []

    async def follow() -> None:
        async with aclosing(directory.notifications(admin_token, project_id)) as events:  # type: ignore[type-var]
            async for event in events:
                seen.append(str(event.get("action")))
                if "node.created" in seen:
                    return

    listener = asyncio.create_task(follow())
    await asyncio.sleep(0.5)  # the stream is open
    node = await gns3_client.create_node_from_template(admin_token, project_id, vpcs, x=10, y=20)
    await asyncio.wait_for(listener, 15)
    assert "node.created" in seen

    topology = await directory.topology(admin_token, project_id)
    [drawn] = topology["nodes"]
    assert drawn["node_id"] == node["node_id"] and (drawn["x"], drawn["y"]) == (10, 20)
    assert drawn["console_type"] == "telnet" and isinstance(drawn["console"], int)
    assert topology["links"] == [] and topology["project"]["project_id"] == project_id
    assert topology["web_ui"] == "http://lab.example:3080/static/web-ui"


async def test_projects_are_created_and_opened_with_gns3s_own_rules(
    gns3_client: Gns3Client, admin_token: str
) -> None:
    """A fresh GNS3 server is not a dead end for the page: a project is created (GNS3 opens
    it), a taken name is a conflict in GNS3's words, and a closed project is opened."""
    from copilot_core.errors import ConflictError, ProjectNotFoundError

    directory = Gns3ClientDirectory(gns3_client)
    name = f"from-the-page-{id(directory)}"
    created = await directory.create_project(admin_token, name)
    project_id = str(created["project_id"])
    try:
        assert (created["name"], created["status"]) == (name, "opened")
        with pytest.raises(ConflictError) as taken:
            await directory.create_project(admin_token, name)
        assert name in taken.value.message
        await gns3_client.close_project(admin_token, project_id)
        listed = {p["project_id"]: p["status"] for p in await directory.projects(admin_token)}
        assert listed[project_id] == "closed"
        opened = await directory.open_project(admin_token, project_id)
        assert opened["status"] == "opened"
        listed = {p["project_id"]: p["status"] for p in await directory.projects(admin_token)}
        assert listed[project_id] == "opened"
        with pytest.raises(ProjectNotFoundError):
            await directory.open_project(admin_token, "7d3f0c7e-1111-4222-8333-944455556666")
    finally:
        await gns3_client.delete_project(admin_token, project_id)
