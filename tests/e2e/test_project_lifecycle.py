"""The service follows GNS3's project lifecycle. With a service account
(``COPILOT_GNS3_USERNAME``/``PASSWORD``): at start, conversations of projects GNS3 no
longer has are deleted, or archived with ``COPILOT_DELETED_PROJECTS=archive``; while it
runs, a deletion in GNS3 is followed. Without one: a project GNS3 says is gone (its 404,
given only to a caller with rights on it) is cleaned up on that request; a caller without
rights (GNS3's 403) changes nothing. Against the real ``gns3-copilot serve`` and a real
gns3-server."""

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
from tests.fakes.openai_server import Reply, ScriptedOpenAIServer

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


def test_without_a_service_account_a_project_gns3_says_is_gone_goes_on_its_next_request(
    gns3_server: RealGns3Server, tmp_path: Path
) -> None:
    admin = gns3_server.token()
    project = gns3_server.new_project("lc-gone", admin)
    name = f"lc-{time.time_ns()}"
    outsider = gns3_server.create_user(name, "Secret-password-1")  # no rights on it
    projects = tmp_path / "data" / "projects"
    with (
        ScriptedOpenAIServer([Reply(text="Your lab is empty."), Reply(text="Lab")]) as llm,
        serve_copilot(gns3_server.url, tmp_path) as copilot,
        copilot.api(admin) as api,
        copilot.api(outsider) as other,
    ):
        stored = api.put(
            "/llm-config", json={"provider": "openai", "model": "m", "base_url": llm.base_url}
        )
        assert stored.status_code == 200, stored.text
        turn = api.post(f"/projects/{project}/chat/stream", json={"message": "hi", "stream": False})
        assert turn.status_code == 200, turn.text
        assert (projects / project).is_dir()

        # Someone without rights on the project: GNS3 says 403, the copilot 404; nothing goes.
        assert other.get(f"/projects/{project}/chat/sessions").status_code == 404
        assert (projects / project).is_dir()
        assert len(api.get(f"/projects/{project}/chat/sessions").json()) == 1

        deleted = httpx.delete(
            f"{gns3_server.url}/v3/projects/{project}",
            headers={"Authorization": f"Bearer {admin}"},
            timeout=30,
        )
        assert deleted.status_code == 204
        assert (projects / project).is_dir()  # nothing follows GNS3 without an account
        gone = api.get(f"/projects/{project}/chat/sessions")
        assert gone.status_code == 404, gone.text
        assert not (projects / project).exists()  # reconciled before the answer
        again = api.get(f"/projects/{project}/chat/sessions")
        assert again.status_code == 404
        log = copilot.log.read_text()
    assert "gns3_project_watch_off" in log
    assert log.count("gns3_project_deleted") == 1
