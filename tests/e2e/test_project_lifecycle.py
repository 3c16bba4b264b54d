"""The service follows GNS3's project lifecycle (``COPILOT_GNS3_USERNAME``/``PASSWORD``):
at start, conversations of projects GNS3 no longer has are deleted, or archived with
``COPILOT_DELETED_PROJECTS=archive``; while it runs, a deletion in GNS3 is followed.
Against the real ``gns3-copilot serve`` and a real gns3-server."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest

from adapters.sqlite import SqliteCheckpointStore
from copilot_core import Session
from tests.fakes.copilot_service import serve_copilot
from tests.fakes.gns3_server import RealGns3Server

pytestmark = [pytest.mark.timeout(300), pytest.mark.gns3]

GONE = "7d3f0c7e-1111-4222-8333-944455556666"  # never existed in GNS3: deleted for sure
NOW = datetime(2026, 1, 1, tzinfo=UTC)


def seed(data_dir: Path, *project_ids: str) -> None:
    async def write() -> None:
        async with SqliteCheckpointStore(data_dir) as store:
            for project_id in project_ids:
                await store.create_session(
                    Session(thread_id="s1", user_id="u1", project_id=project_id, title="t",
                            created_at=NOW, updated_at=NOW)
                )  # fmt: skip

    asyncio.run(write())


def wait_for(predicate: object, within: float = 20.0) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return
        time.sleep(0.1)
    raise AssertionError("condition not met in time")


@pytest.mark.parametrize("mode", ["delete", "archive"])
def test_deleted_projects_are_cleaned_up_at_start_and_while_running(
    gns3_server: RealGns3Server, tmp_path: Path, mode: str
) -> None:
    token = gns3_server.token()
    headers = {"Authorization": f"Bearer {token}"}
    created = httpx.post(
        f"{gns3_server.url}/v3/projects", json={"name": f"lc-{mode}-{time.time_ns()}"},
        headers=headers, timeout=30,
    ).json()  # fmt: skip
    live = str(created["project_id"])
    data_dir = tmp_path / "data"
    seed(data_dir, GONE, live)
    env = {
        "COPILOT_GNS3_USERNAME": gns3_server.admin_username,
        "COPILOT_GNS3_PASSWORD": gns3_server.admin_password,
        "COPILOT_DELETED_PROJECTS": mode,
    }
    projects = data_dir / "projects"
    archive = data_dir / "archive"
    with serve_copilot(gns3_server.url, tmp_path, env=env) as copilot:
        wait_for(lambda: not (projects / GONE).exists())  # reconciled at start
        assert (projects / live).exists()
        deleted = httpx.delete(f"{gns3_server.url}/v3/projects/{live}", headers=headers, timeout=30)
        assert deleted.status_code == 204
        wait_for(lambda: not (projects / live).exists())  # followed while running
        log = copilot.log.read_text()
    assert "gns3_project_deleted" in log
    archived = sorted(p.name for p in archive.iterdir()) if archive.exists() else []
    if mode == "archive":
        assert sorted(name[:36] for name in archived) == sorted([GONE, live])
        for name in archived:  # the archived databases are whole and readable
            assert (archive / name / "gns3-copilot" / "copilot_checkpoints.db").is_file()
    else:
        assert archived == []
