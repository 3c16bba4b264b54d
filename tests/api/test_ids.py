"""Project and session ids are UUIDs, made canonical at the edge: every spelling of one
UUID reaches one database and one session; anything else is a 422 before any lookup."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from adapters.sqlite import SqliteCheckpointStore
from copilot_core.testing import text_reply
from tests.api.conftest import OPEN, UNKNOWN, Service, run_service


def spellings(canonical: str) -> list[str]:
    bare = canonical.replace("-", "")
    return [canonical, canonical.upper(), bare, bare.upper()]


@pytest.fixture
async def on_sqlite(tmp_path: Path) -> AsyncIterator[tuple[Service, Path]]:
    store = SqliteCheckpointStore(tmp_path)
    await store.open()
    try:
        async with run_service(store=store) as service:
            yield service, tmp_path
    finally:
        await store.close()


async def test_every_spelling_of_a_project_id_reaches_one_database(
    on_sqlite: tuple[Service, Path],
) -> None:
    service, data_dir = on_sqlite
    for n, project in enumerate(spellings(OPEN)):
        service.model.add(text_reply(f"answer {n}"))
        async with service.client() as client:
            response = await client.post(
                service.chat_url(project) + "/stream", json={"message": f"q{n}", "stream": False}
            )
        assert response.status_code == 200, response.text
    assert [path.name for path in (data_dir / "projects").iterdir()] == [OPEN]
    async with service.client() as client:
        listings = [
            (await client.get(service.chat_url(project) + "/sessions")).json()
            for project in spellings(OPEN)
        ]
    assert all(listing == listings[0] for listing in listings)
    assert len(listings[0]) == 4
    assert {session["project_id"] for session in listings[0]} == {OPEN}
    assert set(service.gate.opened) == {OPEN}  # the gate only ever saw the canonical id


async def test_every_spelling_of_a_session_id_reaches_one_session(service: Service) -> None:
    service.model.add(text_reply("first"), text_reply("second"))
    async with service.client() as client:
        created = await client.post(
            service.chat_url() + "/stream", json={"message": "one", "stream": False}
        )
        session = created.json()["session_id"]
        assert session == session.lower() and len(session) == 36
        upper, bare, bare_upper = spellings(session)[1:]
        again = await client.post(
            service.chat_url() + "/stream",
            json={"message": "two", "session_id": upper, "stream": False},
        )
        history = await client.get(service.chat_url() + f"/sessions/{bare}/history")
        renamed = await client.patch(
            service.chat_url() + f"/sessions/{bare_upper}", json={"title": "Spelled"}
        )
        pinned = await client.put(service.chat_url() + f"/sessions/{upper}/pin")
        aborted = await client.post(service.chat_url() + f"/sessions/{bare}/abort")
        listed = await client.get(service.chat_url() + "/sessions")
        deleted = await client.delete(service.chat_url() + f"/sessions/{bare_upper}")
        gone = await client.get(service.chat_url() + f"/sessions/{session}/history")
    assert again.json()["session_id"] == session
    assert [m["content"] for m in history.json()["messages"]] == ["one", "first", "two", "second"]
    assert renamed.json()["thread_id"] == session and renamed.json()["title"] == "Spelled"
    assert pinned.json()["pinned"] is True
    assert aborted.json() == {"status": "ok", "session_id": session, "aborted": False}
    assert [s["thread_id"] for s in listed.json()] == [session]
    assert deleted.status_code == 204
    assert gone.status_code == 404


@pytest.mark.parametrize(
    "bad",
    [
        "project-open",
        "a.b",
        "%20",
        "x" * 129,
        "0b1e2c3d4f504a6b8c7d9e0f1a2b3c4",  # 31 hex digits
        "0b1e2c3d-4f50-4a6b-8c7d-9e0f1a2b3c4d0",
        "0b1e2c3d-4f504a6b-8c7d-9e0f1a2b3c4d",  # hyphens in the wrong places
        "{0b1e2c3d-4f50-4a6b-8c7d-9e0f1a2b3c4d}",
        "urn:uuid:0b1e2c3d-4f50-4a6b-8c7d-9e0f1a2b3c4d",
        "0b1e2c3d-4f50-4a6b-8c7d-9e0f1a2b3c4g",
    ],
)
async def test_an_id_that_is_not_a_uuid_is_422_and_changes_nothing(
    service: Service, bad: str
) -> None:
    async with service.client() as client:
        project = await client.get(service.chat_url(bad) + "/sessions")
        session = await client.get(service.chat_url() + f"/sessions/{bad}/history")
        asked_in_path = len(service.gate.seen_credentials)
        in_body = await client.post(
            service.chat_url() + "/stream", json={"message": "hi", "session_id": bad}
        )
    assert project.status_code == 422, project.text
    assert "project_id" in project.json()["detail"]
    assert session.status_code == 422, session.text
    assert "session_id" in session.json()["detail"]
    assert asked_in_path == 0  # ids in the path are refused before GNS3 is asked
    assert in_body.status_code == 422, in_body.text
    assert "session_id" in in_body.json()["detail"]
    assert await service.store.list_sessions(OPEN, "u-alice") == []
    assert service.model.calls == []


async def test_an_unknown_session_in_any_spelling_is_404_with_its_canonical_id(
    service: Service,
) -> None:
    async with service.client() as client:
        response = await client.get(service.chat_url() + f"/sessions/{UNKNOWN.upper()}/history")
    assert response.status_code == 404
    assert response.json()["detail"] == f"Session {UNKNOWN!r} was not found in this project."
