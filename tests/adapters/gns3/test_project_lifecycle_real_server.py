"""GNS3's project lifecycle against a real gns3-server 3.0.6: a project deleted in GNS3
left its copilot database forever, a closed one kept its handles (issue 18, item 10).
The watcher reconciles at start and follows the controller's notifications while it runs."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from adapters.gns3 import Gns3Client, Gns3ProjectWatcher
from adapters.sqlite import SqliteCheckpointStore
from copilot_core import Session
from tests.adapters.gns3.conftest import eventually
from tests.fakes.gns3_server import RealGns3Server

pytestmark = [pytest.mark.gns3, pytest.mark.timeout(300)]

_names = itertools.count(1)
NOW = datetime(2026, 1, 1, tzinfo=UTC)


class StoreHandler:
    """What the service does (``entrypoints.lifecycle``), on the real store, recorded."""

    def __init__(self, store: SqliteCheckpointStore) -> None:
        self.store = store
        self.closed: list[str] = []
        self.deleted: list[str] = []

    async def project_closed(self, project_id: str) -> None:
        await self.store.close_project(project_id)
        self.closed.append(project_id)  # recorded once done: tests wait on these lists

    async def project_deleted(self, project_id: str) -> None:
        await self.store.remove_project(project_id)
        self.deleted.append(project_id)


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqliteCheckpointStore]:
    async with SqliteCheckpointStore(tmp_path / "data") as opened:
        yield opened


async def new_project(client: Gns3Client, token: str) -> str:
    project = await client.create_project(token, f"lifecycle-{next(_names)}")
    return str(project["project_id"])


async def with_a_session(store: SqliteCheckpointStore, project_id: str) -> None:
    await store.create_session(
        Session(thread_id=f"s-{project_id[:8]}", user_id="u1", project_id=project_id,
                title="a chat", created_at=NOW, updated_at=NOW)
    )  # fmt: skip


def watcher_for(
    gns3_client: Gns3Client,
    store: SqliteCheckpointStore,
    handler: StoreHandler,
    username: str = "admin",
    password: str = "admin",
) -> Gns3ProjectWatcher:
    return Gns3ProjectWatcher(
        gns3_client, handler, store.stored_projects, username=username, password=password
    )


async def test_reconcile_releases_closed_projects_and_removes_deleted_ones(
    gns3_client: Gns3Client, admin_token: str, store: SqliteCheckpointStore
) -> None:
    opened = await new_project(gns3_client, admin_token)
    closed = await new_project(gns3_client, admin_token)
    deleted = await new_project(gns3_client, admin_token)
    for project_id in (opened, closed, deleted):
        await with_a_session(store, project_id)
    await gns3_client.close_project(admin_token, closed)
    await gns3_client.delete_project(admin_token, deleted)
    assert set(store.open_projects) == {opened, closed, deleted}
    handler = StoreHandler(store)
    try:
        report = await watcher_for(gns3_client, store, handler).reconcile()
        assert (report.closed, report.deleted, report.unverified) == ([closed], [deleted], [])
        assert closed not in store.open_projects  # its handles are released
        assert await store.stored_projects() == sorted([opened, closed])
        assert not (store.data_dir / "projects" / deleted).exists()
        # The closed project's conversations are still there to read.
        assert [s.project_id for s in await store.list_sessions(closed, "u1")] == [closed]
        assert [s.project_id for s in await store.list_sessions(opened, "u1")] == [opened]
    finally:
        for project_id in (opened, closed):
            await gns3_client.delete_project(admin_token, project_id)


async def test_closing_and_deleting_in_gns3_are_followed_while_running(
    gns3_client: Gns3Client, admin_token: str, store: SqliteCheckpointStore
) -> None:
    closing = await new_project(gns3_client, admin_token)
    deleting = await new_project(gns3_client, admin_token)
    for project_id in (closing, deleting):
        await with_a_session(store, project_id)
    handler = StoreHandler(store)
    watcher = watcher_for(gns3_client, store, handler)
    running = asyncio.ensure_future(watcher.run())
    try:
        await asyncio.wait_for(watcher.connected.wait(), 10)
        await gns3_client.close_project(admin_token, closing)
        await eventually(lambda: closing in handler.closed, within=10)
        assert closing not in store.open_projects
        await gns3_client.delete_project(admin_token, deleting)
        await eventually(lambda: deleting in handler.deleted, within=10)
        assert not (store.data_dir / "projects" / deleting).exists()
        assert closing not in handler.deleted
    finally:
        running.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await running
        await gns3_client.delete_project(admin_token, closing)


async def test_an_account_that_is_not_superadmin_never_deletes_anything(
    gns3_server: RealGns3Server, gns3_client: Gns3Client, store: SqliteCheckpointStore
) -> None:
    """A plain user does not see other users' projects: they would look deleted."""
    username = f"watcher{next(_names)}"
    gns3_server.create_user(username, "watcher-password-1")
    invisible = "5b1c9a1e-0000-4000-8000-00000000abcd"  # stands for another user's project
    await with_a_session(store, invisible)
    handler = StoreHandler(store)
    report = await watcher_for(
        gns3_client, store, handler, username=username, password="watcher-password-1"
    ).reconcile()
    assert report.unverified == [invisible] and report.deleted == []
    assert handler.deleted == []
    assert await store.stored_projects() == [invisible]
