"""MCP sessions per user, end to end: ``gns3-copilot serve`` with a real gns3-server and
real GNS3 users, over the real HTTP MCP endpoint on 127.0.0.1.

One user can hold at most ``mcp.max_sessions_per_user`` sessions (one more: 429 with a
JSON-RPC error saying how many and when one expires); another user is never refused
because of them; a closed or expired session frees its place.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.fakes.copilot_service import ServedCopilot, serve_copilot
from tests.fakes.gns3_server import RealGns3Server

pytestmark = [pytest.mark.timeout(600), pytest.mark.gns3]
READY_WITHIN = 240  # a loaded machine (several test runs at once) starts it slowly

CAP = 3
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "cap-test", "version": "1"},
    },
}
PING = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
ACCEPT = {"Accept": "application/json, text/event-stream"}


@pytest.fixture(scope="module")
def capped(
    gns3_server: RealGns3Server, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServedCopilot]:
    env = {"COPILOT_MCP__MAX_SESSIONS_PER_USER": str(CAP)}
    with serve_copilot(
        gns3_server.url, tmp_path_factory.mktemp("mcp-cap"), env, READY_WITHIN
    ) as served:
        yield served


@pytest.fixture(scope="module")
def expiring(
    gns3_server: RealGns3Server, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServedCopilot]:
    env = {
        "COPILOT_MCP__MAX_SESSIONS_PER_USER": "1",
        "COPILOT_MCP__SESSION_IDLE_TIMEOUT": "1.5",
    }
    with serve_copilot(
        gns3_server.url, tmp_path_factory.mktemp("mcp-idle"), env, READY_WITHIN
    ) as served:
        yield served


def new_user(gns3: RealGns3Server) -> str:
    """A token of a new GNS3 user with no right on any project."""
    name = f"mcp-{uuid.uuid4().hex[:10]}"
    return gns3.create_user(name, "a-long-password-1")


def headers(token: str, session: str | None = None) -> dict[str, str]:
    found = {**ACCEPT, "Authorization": f"Bearer {token}"}
    if session is not None:
        found["Mcp-Session-Id"] = session
    return found


def open_session(service: ServedCopilot, token: str) -> httpx.Response:
    return httpx.post(
        f"{service.url}/v3/copilot/mcp", json=INITIALIZE, headers=headers(token), timeout=30
    )


def session_of(response: httpx.Response) -> str:
    assert response.status_code == 200, response.text
    return response.headers["mcp-session-id"]


def ping(service: ServedCopilot, token: str, session: str) -> httpx.Response:
    return httpx.post(
        f"{service.url}/v3/copilot/mcp", json=PING, headers=headers(token, session), timeout=30
    )


def error_of(response: httpx.Response) -> dict[str, Any]:
    body = response.json()
    assert body["jsonrpc"] == "2.0"
    error: dict[str, Any] = body["error"]
    return error


def test_one_user_at_the_cap_is_refused_and_told_how_many_and_when(
    capped: ServedCopilot, gns3_server: RealGns3Server
) -> None:
    alice = new_user(gns3_server)
    sessions = [session_of(open_session(capped, alice)) for _ in range(CAP)]

    refused = open_session(capped, alice)

    assert refused.status_code == 429, refused.text
    error = error_of(refused)
    assert f"You have {CAP} open MCP sessions" in error["message"]
    assert "expires" in error["message"]
    assert error["data"]["open_sessions"] == CAP
    assert error["data"]["max_sessions_per_user"] == CAP
    assert 0 < error["data"]["retry_after"] <= error["data"]["session_idle_timeout"]
    assert 1 <= int(refused.headers["retry-after"]) <= 600
    assert "mcp-session-id" not in refused.headers
    # Her sessions still work.
    for session in sessions:
        assert ping(capped, alice, session).status_code == 200


def test_another_user_is_never_refused_because_of_someone_elses_sessions(
    capped: ServedCopilot, gns3_server: RealGns3Server
) -> None:
    mallory, bob = new_user(gns3_server), new_user(gns3_server)
    attempts = [open_session(capped, mallory) for _ in range(CAP * 4)]

    assert [r.status_code for r in attempts].count(200) == CAP
    assert [r.status_code for r in attempts].count(429) == CAP * 3
    for _ in range(CAP):
        session_of(open_session(capped, bob))


def test_a_session_its_client_deletes_frees_its_place(
    capped: ServedCopilot, gns3_server: RealGns3Server
) -> None:
    carol = new_user(gns3_server)
    sessions = [session_of(open_session(capped, carol)) for _ in range(CAP)]
    assert open_session(capped, carol).status_code == 429

    deleted = httpx.delete(
        f"{capped.url}/v3/copilot/mcp", headers=headers(carol, sessions[0]), timeout=30
    )

    assert deleted.status_code == 200, deleted.text
    session_of(open_session(capped, carol))
    assert open_session(capped, carol).status_code == 429


async def test_the_official_client_gets_the_refusal(
    capped: ServedCopilot, gns3_server: RealGns3Server
) -> None:
    dave = new_user(gns3_server)
    for _ in range(CAP):
        session_of(open_session(capped, dave))

    with pytest.raises(BaseException) as raised:  # noqa: PT011 - the SDK raises a group
        async with (
            httpx2_client(dave) as http,
            Client(
                streamable_http_client(f"{capped.url}/v3/copilot/mcp", http_client=http),
                mode="legacy",
            ),
        ):
            pass

    assert (
        "429" in repr(raised.value)
        or "Too Many" in repr(raised.value)
        or ("open MCP sessions" in repr(raised.value))
    ), repr(raised.value)


def httpx2_client(token: str) -> Any:
    import httpx2

    return httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30)


def test_an_idle_session_expires_and_frees_its_place(
    expiring: ServedCopilot, gns3_server: RealGns3Server
) -> None:
    erin = new_user(gns3_server)
    first = session_of(open_session(expiring, erin))
    refused = open_session(expiring, erin)
    assert refused.status_code == 429
    assert error_of(refused)["data"]["retry_after"] <= 1.5

    deadline = time.monotonic() + 20
    while True:
        again = open_session(expiring, erin)
        if again.status_code == 200 or time.monotonic() > deadline:
            break
        assert again.status_code == 429, again.text
        time.sleep(0.2)

    session_of(again)
    assert ping(expiring, erin, first).status_code == 404  # the SDK closed it too
