"""A project's database that no one uses is closed after ``idle_timeout`` (issue 29: with
no GNS3 service account, a project deleted or closed in GNS3 kept its database open for
good); it reopens on next use with everything in it, and a database in use stays open."""

from __future__ import annotations

import asyncio
from pathlib import Path

from adapters.sqlite import SqliteCheckpointStore, SqliteStoreSettings
from tests.adapters.sqlite.conftest import project_id
from tests.adapters.sqlite.test_store import new_session

P1, P2 = project_id(1), project_id(2)


async def _until_closed(store: SqliteCheckpointStore, project: str, within: float) -> None:
    async with asyncio.timeout(within):
        while project in store.open_projects:
            await asyncio.sleep(0.05)


async def test_an_idle_database_is_closed_and_reopens_with_its_sessions(tmp_path: Path) -> None:
    async with SqliteCheckpointStore(
        tmp_path, settings=SqliteStoreSettings(idle_timeout=0.3)
    ) as store:
        await store.create_session(new_session("t1"))
        assert store.open_projects == (P1,)
        await _until_closed(store, P1, within=30)  # generous: a loaded machine
        found = await store.get_session(P1, "t1")
        assert found is not None and found.thread_id == "t1"
        assert store.open_projects == (P1,)


async def test_a_database_in_use_is_not_closed_while_it_is_used(tmp_path: Path) -> None:
    async with SqliteCheckpointStore(
        tmp_path, settings=SqliteStoreSettings(idle_timeout=0.2)
    ) as store:
        await store.create_session(new_session("t1"))
        await store.create_session(new_session("t2", project=P2))
        async with store._use(P1):  # held, as by a long read
            await _until_closed(store, P2, within=30)
            assert P1 in store.open_projects
        await _until_closed(store, P1, within=30)


async def test_without_an_idle_timeout_databases_stay_open(tmp_path: Path) -> None:
    async with SqliteCheckpointStore(
        tmp_path, settings=SqliteStoreSettings(idle_timeout=None)
    ) as store:
        await store.create_session(new_session("t1"))
        await asyncio.sleep(1.0)
        assert store.open_projects == (P1,)
