"""Bad input (422, or 400 for a body that is not JSON; nothing stored), authentication
(401) and the project gate (404/409)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from copilot_core import Session
from copilot_core.testing import text_reply
from tests.api.conftest import ALICE, CLOSED, OPEN, UNKNOWN, Service

CLOSED_SESSION = "c105ed00-5e55-4000-8000-000000000001"


@pytest.mark.parametrize(
    ("body", "status", "words"),
    [
        ({}, 422, ["message"]),
        ({"message": ""}, 422, ["message"]),
        ({"message": "   "}, 422, ["message", "blank"]),
        ({"message": "x" * 32_001}, 422, ["message"]),
        ({"message": "x" * 1_001}, 422, ["limit is 1000"]),  # the chat service's own bound
        ({"message": "hi", "temperature": 2.5}, 422, ["temperature"]),
        ({"message": "hi", "temperature": -0.1}, 422, ["temperature"]),
        ({"message": "hi", "mode": "voice"}, 422, ["mode"]),
        ({"message": "hi", "copilot_mode": "god_mode"}, 422, ["copilot_mode"]),
        ({"message": "hi", "agent_id": "nobody"}, 404, ["Unknown agent 'nobody'", "copilot"]),
        ({"message": "hi", "session_id": UNKNOWN}, 404, [f"{UNKNOWN!r} was not found"]),
        ({"message": "hi", "surprise": 1}, 422, ["surprise"]),
        ({"message": 42}, 422, ["message"]),
        ({"message": "hi", "stream": "maybe"}, 422, ["stream"]),
    ],
)
async def test_bad_stream_bodies_get_a_clear_4xx_and_store_nothing(
    service: Service, body: dict[str, Any], status: int, words: list[str]
) -> None:
    async with service.client() as client:
        response = await client.post(service.chat_url() + "/stream", json=body)
    assert response.status_code == status, response.text
    detail = response.json()["detail"]
    for word in words:
        assert word in detail
    assert await service.store.list_sessions(OPEN, "u-alice") == []
    assert service.model.calls == []


async def test_invalid_json_is_400(service: Service) -> None:
    async with service.client() as client:
        response = await client.post(
            service.chat_url() + "/stream",
            content=b"{not json",
            headers={"Content-Type": "application/json"},
        )
    assert response.status_code == 400
    assert "detail" in response.json()


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Basic dXNlcjpwYXNz"},
        {"Authorization": "Bearer"},
        {"Authorization": "Bearer not-a-known-token"},
    ],
)
async def test_requests_without_a_valid_bearer_token_are_401(
    service: Service, headers: dict[str, str]
) -> None:
    async with service.client(token=None) as client:
        for method, path in [
            ("GET", service.chat_url() + "/sessions"),
            ("POST", service.chat_url() + "/stream"),
            ("GET", "/v3/copilot/llm-config"),
            ("GET", "/v3/copilot/capabilities"),
            ("GET", "/v3/copilot/agents"),
            ("POST", "/v3/copilot/reload/skills"),
        ]:
            response = await client.request(method, path, headers=headers, json={"message": "x"})
            assert response.status_code == 401, (method, path)
            detail = response.json()["detail"]
            assert "Bearer" in detail or "rejected" in detail
            assert "not-a-known-token" not in response.text


async def test_a_valid_token_is_checked_once_then_cached(service: Service) -> None:
    async with service.client() as client:
        for _ in range(3):
            assert (await client.get(service.chat_url() + "/sessions")).status_code == 200
    assert service.authenticator.calls == 1


async def test_rejected_tokens_are_not_cached(service: Service) -> None:
    async with service.client(token="late-token") as client:
        assert (await client.get("/v3/copilot/agents")).status_code == 401
        service.authenticator.principals["late-token"] = service.authenticator.principals[ALICE]
        assert (await client.get("/v3/copilot/agents")).status_code == 200


async def test_a_closed_project_is_409_and_an_unknown_one_404(service: Service) -> None:
    service.model.add(text_reply("never"))
    async with service.client() as client:
        closed = await client.post(service.chat_url(CLOSED) + "/stream", json={"message": "hi"})
        unknown = await client.post(service.chat_url(UNKNOWN) + "/stream", json={"message": "hi"})
        unknown_list = await client.get(service.chat_url(UNKNOWN) + "/sessions")
    assert closed.status_code == 409
    assert "is not opened" in closed.json()["detail"]
    assert unknown.status_code == 404 and unknown_list.status_code == 404
    assert f"{UNKNOWN!r} was not found" in unknown.json()["detail"]
    assert service.model.calls == []
    assert await service.store.list_sessions(CLOSED, "u-alice") == []


async def test_a_closed_project_s_sessions_can_be_listed_read_and_deleted(
    service: Service,
) -> None:
    """Closed in GNS3, its conversations are still the user's: reading and cleaning up work
    (they answered 409 even to DELETE: issue 18, item 10); new turns and changes do not."""
    now = datetime(2026, 1, 1, tzinfo=UTC)
    await service.store.create_session(
        Session(thread_id=CLOSED_SESSION, user_id="u-alice", project_id=CLOSED, title="old lab",
                created_at=now, updated_at=now)
    )  # fmt: skip
    async with service.client() as client:
        listed = await client.get(service.chat_url(CLOSED) + "/sessions")
        history = await client.get(service.chat_url(CLOSED) + f"/sessions/{CLOSED_SESSION}/history")
        renamed = await client.patch(
            service.chat_url(CLOSED) + f"/sessions/{CLOSED_SESSION}", json={"title": "new"}
        )
        deleted = await client.delete(service.chat_url(CLOSED) + f"/sessions/{CLOSED_SESSION}")
        again = await client.delete(service.chat_url(CLOSED) + f"/sessions/{CLOSED_SESSION}")
    assert listed.status_code == 200 and [s["thread_id"] for s in listed.json()] == [CLOSED_SESSION]
    assert history.status_code == 200 and history.json()["title"] == "old lab"
    assert renamed.status_code == 409
    assert deleted.status_code == 204
    assert again.status_code == 404
    assert await service.store.list_sessions(CLOSED, "u-alice") == []


async def test_unknown_routes_and_methods_answer_with_detail(service: Service) -> None:
    async with service.client() as client:
        missing = await client.get("/v3/copilot/nothing-here")
        wrong = await client.put(service.chat_url() + "/stream", json={})
    assert missing.status_code == 404
    assert "detail" in missing.json()
    assert wrong.status_code == 405
    assert "detail" in wrong.json()


async def test_authentication_comes_before_body_validation(service: Service) -> None:
    async with service.client(token=None) as client:
        response = await client.post(service.chat_url() + "/stream", json={"message": ""})
    assert response.status_code == 401
