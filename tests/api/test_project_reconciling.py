"""The routes' project gate acts on GNS3's word that a project is gone (its 404, which
it gives only to a caller with rights on the project): the project's conversations go
(or are archived) once, however many requests learn it at the same time; a plain
not-found (GNS3's 403: no rights) changes nothing. The real SQLite store and chat
service; a gate that answers as GNS3 would (its real answers are tested against
gns3-server in tests/adapters/gns3 and tests/e2e)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from adapters.sqlite import SqliteCheckpointStore, SqliteStoreSettings
from copilot_core import BuiltinAgent, Session
from copilot_core.bootstrap import build_chat_service
from copilot_core.errors import ProjectGoneError, ProjectNotFoundError, ProjectNotOpenedError
from copilot_core.testing import (
    FakeToolExecutor,
    FakeTopologySource,
    InMemoryCheckpointStore,
    SequentialIds,
    SteppingClock,
)
from entrypoints.lifecycle import (
    ProjectLifecycle,
    ReconcilingDirectory,
    project_lifecycle,
    reconciling_gate,
)

GONE = "7d3f0c7e-1111-4222-8333-944455556666"
HIDDEN = "7d3f0c7e-2222-4222-8333-944455556666"
NOW = datetime(2026, 1, 1, tzinfo=UTC)


class GnsLikeGate:
    """``gone``: GNS3 says they do not exist; ``hidden``: GNS3 refuses (no rights)."""

    def __init__(self, gone: set[str], hidden: set[str]) -> None:
        self.gone, self.hidden = gone, hidden

    async def require_open(self, project_id: str, credentials: str) -> None:
        await asyncio.sleep(0)
        if project_id in self.gone:
            raise ProjectGoneError(project_id)
        if project_id in self.hidden:
            raise ProjectNotFoundError(project_id)


@pytest.mark.parametrize("mode", ["delete", "archive"])
async def test_requests_that_learn_a_project_is_gone_remove_it_once(
    tmp_path: Path, mode: str
) -> None:
    async with SqliteCheckpointStore(tmp_path) as store:
        for project in (GONE, HIDDEN):
            await store.create_session(
                Session(thread_id="s1", user_id="u1", project_id=project, title="t",
                        created_at=NOW, updated_at=NOW)
            )  # fmt: skip
        clock, ids = SteppingClock(), SequentialIds()
        agent = BuiltinAgent(FakeToolExecutor(), FakeTopologySource(), clock=clock, ids=ids)
        chat = build_chat_service(store, {"copilot": agent}, models=None, clock=clock, ids=ids)
        gate = reconciling_gate(
            GnsLikeGate({GONE}, {HIDDEN}), project_lifecycle(chat, store, tmp_path, mode)
        )
        with capture_logs() as logs:
            asked = [gate.require_open(GONE, "token") for _ in range(5)]
            answers = await asyncio.gather(*asked, return_exceptions=True)
            with pytest.raises(ProjectNotFoundError) as hidden:
                await gate.require_open(HIDDEN, "token")
            with pytest.raises(ProjectGoneError):  # (gone, and nothing kept of it)
                await gate.require_open(GONE, "token")
        assert all(isinstance(answer, ProjectGoneError) for answer in answers)
        assert not isinstance(hidden.value, ProjectGoneError)
        assert await store.stored_projects() == [HIDDEN]
        assert await store.get_session(HIDDEN, "s1") is not None
    deleted = [entry for entry in logs if entry["event"] == "gns3_project_deleted"]
    assert len(deleted) == 1
    archived = sorted(p.name[:36] for p in (tmp_path / "archive").glob("*"))
    assert archived == ([GONE] if mode == "archive" else [])


async def test_without_the_per_project_store_the_gate_is_gns3s_own(tmp_path: Path) -> None:
    inner = GnsLikeGate({GONE}, set())
    clock, ids = SteppingClock(), SequentialIds()
    agent = BuiltinAgent(FakeToolExecutor(), FakeTopologySource(), clock=clock, ids=ids)
    store = InMemoryCheckpointStore()
    chat = build_chat_service(store, {"copilot": agent}, models=None, clock=clock, ids=ids)
    assert project_lifecycle(chat, store, tmp_path, "delete") is None
    assert reconciling_gate(inner, None) is inner


CLOSED = "7d3f0c7e-3333-4222-8333-944455556666"
OPEN = "7d3f0c7e-4444-4222-8333-944455556666"


def _open_files_under(root: Path) -> list[str]:
    """The files under ``root`` this process holds open (read from /proc/self/fd)."""
    held = []
    for fd in Path("/proc/self/fd").iterdir():
        try:
            target = fd.readlink()
        except OSError:  # closed while listing
            continue
        if target.is_relative_to(root):
            held.append(target.name)
    return sorted(held)


class ClosedProjectGate:
    """GNS3's answer for a project it has closed (no service account needed to learn it)."""

    async def require_open(self, project_id: str, credentials: str) -> None:
        await asyncio.sleep(0)
        if project_id == CLOSED:
            raise ProjectNotOpenedError(project_id)


class ListingDirectory:
    """The caller's project list as GNS3 gives it: ``CLOSED`` closed, ``OPEN`` opened."""

    async def projects(self, token: str) -> list[dict[str, str]]:
        return [
            {"project_id": CLOSED, "name": "closed", "status": "closed"},
            {"project_id": OPEN, "name": "open", "status": "opened"},
        ]


async def _store_with_sessions(store: SqliteCheckpointStore) -> None:
    for project in (CLOSED, OPEN):
        await store.create_session(
            Session(thread_id="s1", user_id="u1", project_id=project, title="t",
                    created_at=NOW, updated_at=NOW)
        )  # fmt: skip


def _lifecycle(store: SqliteCheckpointStore, data_dir: Path) -> ProjectLifecycle:
    clock, ids = SteppingClock(), SequentialIds()
    agent = BuiltinAgent(FakeToolExecutor(), FakeTopologySource(), clock=clock, ids=ids)
    chat = build_chat_service(store, {"copilot": agent}, models=None, clock=clock, ids=ids)
    lifecycle = project_lifecycle(chat, store, data_dir, "delete")
    assert lifecycle is not None
    return lifecycle


async def test_a_request_gns3_answers_closed_releases_the_projects_database(
    tmp_path: Path,
) -> None:
    async with SqliteCheckpointStore(
        tmp_path, settings=SqliteStoreSettings(idle_timeout=None)
    ) as store:
        await _store_with_sessions(store)
        closed_dir, open_dir = tmp_path / "projects" / CLOSED, tmp_path / "projects" / OPEN
        assert _open_files_under(closed_dir) and _open_files_under(open_dir)
        gate = reconciling_gate(ClosedProjectGate(), _lifecycle(store, tmp_path))
        with capture_logs() as logs, pytest.raises(ProjectNotOpenedError):
            await gate.require_open(CLOSED, "token")
        await gate.require_open(OPEN, "token")
        assert _open_files_under(closed_dir) == []
        assert _open_files_under(open_dir), "the open project's database stays open"
        with pytest.raises(ProjectNotOpenedError):  # again: nothing more to release
            await gate.require_open(CLOSED, "token")
        assert await store.get_session(CLOSED, "s1") is not None  # reopens when read
    closed = [entry for entry in logs if entry["event"] == "gns3_project_closed"]
    assert [entry["project_id"] for entry in closed] == [CLOSED]


async def test_a_project_list_showing_a_project_closed_releases_its_database(
    tmp_path: Path,
) -> None:
    async with SqliteCheckpointStore(
        tmp_path, settings=SqliteStoreSettings(idle_timeout=None)
    ) as store:
        await _store_with_sessions(store)
        directory = ReconcilingDirectory(ListingDirectory(), _lifecycle(store, tmp_path))
        listed = await directory.projects("token")
        assert [p["project_id"] for p in listed] == [CLOSED, OPEN]
        assert _open_files_under(tmp_path / "projects" / CLOSED) == []
        assert _open_files_under(tmp_path / "projects" / OPEN)


def test_the_default_idle_timeout_releases_an_unused_database_within_120_s() -> None:
    """What closes a closed project's database when no request tells: the idle sweep
    (every quarter of the timeout), so the bound is 1.25 x the default."""
    assert SqliteCheckpointStore(Path("unused")).idle_timeout is not None
    assert SqliteCheckpointStore(Path("unused")).idle_timeout * 1.25 <= 120
