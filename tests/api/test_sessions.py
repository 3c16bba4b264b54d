"""Session routes: list, history, rename, delete, pin/unpin; scoping by user."""

from __future__ import annotations

import pytest

from copilot_core.testing import text_reply
from tests.api.conftest import BOB, OPEN, UNKNOWN, Service


async def _new_session(service: Service, message: str = "hello") -> str:
    service.model.add(text_reply(f"answer to {message}"))
    async with service.client() as client:
        response = await client.post(
            service.chat_url() + "/stream", json={"message": message, "stream": False}
        )
    assert response.status_code == 200
    return str(response.json()["session_id"])


async def test_list_sessions_pinned_first_then_newest(service: Service) -> None:
    first = await _new_session(service, "first")
    second = await _new_session(service, "second")
    third = await _new_session(service, "third")
    async with service.client() as client:
        pinned = await client.put(service.chat_url() + f"/sessions/{first}/pin")
        assert pinned.status_code == 200
        assert pinned.json()["pinned"] is True
        listed = await client.get(service.chat_url() + "/sessions")
        paged = await client.get(service.chat_url() + "/sessions", params={"limit": 1, "offset": 1})
    assert listed.status_code == 200
    assert [s["thread_id"] for s in listed.json()] == [first, third, second]
    row = listed.json()[0]
    assert row["title"] == "Lab help"
    assert row["message_count"] == 2
    assert row["total_tokens"] == 15
    assert [s["thread_id"] for s in paged.json()] == [third]


async def test_unpin_moves_the_session_back(service: Service) -> None:
    first = await _new_session(service, "first")
    second = await _new_session(service, "second")
    async with service.client() as client:
        await client.put(service.chat_url() + f"/sessions/{first}/pin")
        unpinned = await client.delete(service.chat_url() + f"/sessions/{first}/pin")
        listed = await client.get(service.chat_url() + "/sessions")
    assert unpinned.status_code == 200
    assert unpinned.json()["pinned"] is False
    assert [s["thread_id"] for s in listed.json()] == [second, first]


async def test_history_is_openai_shaped_and_pages_with_a_cursor(service: Service) -> None:
    session_id = await _new_session(service, "one")
    service.model.add(text_reply("answer to two"))
    async with service.client() as client:
        await client.post(
            service.chat_url() + "/stream",
            json={"message": "two", "session_id": session_id, "stream": False},
        )
        full = await client.get(service.chat_url() + f"/sessions/{session_id}/history")
        newest = await client.get(
            service.chat_url() + f"/sessions/{session_id}/history", params={"limit": 2}
        )
        older = await client.get(
            service.chat_url() + f"/sessions/{session_id}/history",
            params={"limit": 2, "cursor": newest.json()["next_cursor"]},
        )
    body = full.json()
    assert body["thread_id"] == session_id
    assert [(m["role"], m["content"]) for m in body["messages"]] == [
        ("user", "one"),
        ("assistant", "answer to one"),
        ("user", "two"),
        ("assistant", "answer to two"),
    ]
    assert body["messages"][0]["metadata"]["created_at"]
    assert body["llm_calls"] == 2
    assert body["message_count"] == 4
    assert body["next_cursor"] is None
    assert [m["content"] for m in newest.json()["messages"]] == ["two", "answer to two"]
    assert [m["content"] for m in older.json()["messages"]] == ["one", "answer to one"]
    assert older.json()["next_cursor"] is None


async def test_rename_trims_and_validates_the_title(service: Service) -> None:
    session_id = await _new_session(service)
    async with service.client() as client:
        renamed = await client.patch(
            service.chat_url() + f"/sessions/{session_id}", json={"title": "  OSPF   lab "}
        )
        empty = await client.patch(
            service.chat_url() + f"/sessions/{session_id}", json={"title": ""}
        )
        blank = await client.patch(
            service.chat_url() + f"/sessions/{session_id}", json={"title": "   "}
        )
        long = await client.patch(
            service.chat_url() + f"/sessions/{session_id}", json={"title": "x" * 256}
        )
    assert renamed.status_code == 200
    assert renamed.json()["title"] == "OSPF lab"
    for response in (empty, blank, long):
        assert response.status_code == 422
        assert "title" in response.json()["detail"]
    stored = await service.store.get_session(OPEN, session_id)
    assert stored is not None
    assert stored.title == "OSPF lab"


async def test_delete_removes_the_session_and_its_messages(service: Service) -> None:
    session_id = await _new_session(service)
    async with service.client() as client:
        deleted = await client.delete(service.chat_url() + f"/sessions/{session_id}")
        again = await client.delete(service.chat_url() + f"/sessions/{session_id}")
        history = await client.get(service.chat_url() + f"/sessions/{session_id}/history")
    assert deleted.status_code == 204
    assert deleted.content == b""
    assert again.status_code == 404
    assert history.status_code == 404
    assert await service.store.get_session(OPEN, session_id) is None


@pytest.mark.parametrize(
    ("method", "suffix", "body"),
    [
        ("GET", "/history", None),
        ("PATCH", "", {"title": "mine now"}),
        ("DELETE", "", None),
        ("POST", "/abort", None),
        ("PUT", "/pin", None),
        ("DELETE", "/pin", None),
        ("GET", "/stream", None),
    ],
)
async def test_another_users_session_is_a_404_like_a_missing_one(
    service: Service, method: str, suffix: str, body: dict[str, str] | None
) -> None:
    session_id = await _new_session(service)
    async with service.client(token=BOB) as bob:
        theirs = await bob.request(
            method, service.chat_url() + f"/sessions/{session_id}{suffix}", json=body
        )
        missing = await bob.request(
            method, service.chat_url() + f"/sessions/{UNKNOWN}{suffix}", json=body
        )
        bob_list = await bob.get(service.chat_url() + "/sessions")
    assert theirs.status_code == missing.status_code == 404
    assert theirs.json()["detail"] == f"Session {session_id!r} was not found in this project."
    assert bob_list.json() == []
    stored = await service.store.get_session(OPEN, session_id)
    assert stored is not None
    assert stored.title == "Lab help"
    assert not stored.pinned


async def test_continuing_another_users_session_is_404_and_stores_nothing(
    service: Service,
) -> None:
    session_id = await _new_session(service)
    async with service.client(token=BOB) as bob:
        response = await bob.post(
            service.chat_url() + "/stream", json={"message": "hijack", "session_id": session_id}
        )
    assert response.status_code == 404
    page = await service.store.history(OPEN, session_id)
    assert [m.content for m in page.messages] == ["hello", "answer to hello"]


@pytest.mark.parametrize(
    ("params", "word"),
    [({"limit": 0}, "limit"), ({"limit": 5000}, "limit"), ({"offset": -1}, "offset")],
)
async def test_bad_list_parameters_are_422(
    service: Service, params: dict[str, int], word: str
) -> None:
    async with service.client() as client:
        response = await client.get(service.chat_url() + "/sessions", params=params)
    assert response.status_code == 422
    assert word in response.json()["detail"]
