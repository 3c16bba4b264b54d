"""Input an attacker would send: each gets a 4xx with a clear message, never a 500.

The store is a real SQLite database and the authenticator the real GNS3 one where the
failure lived there (an integer SQLite cannot hold; a token httpx cannot encode).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from adapters.gns3 import Gns3Authenticator, Gns3Client
from adapters.sqlite import SqliteCheckpointStore
from copilot_core.testing import text_reply
from tests.api.conftest import OPEN, Service, run_service

#: Beyond what SQLite's integers hold (this overflowed), and beyond what JSON holds exactly.
TOO_BIG = 2**63
LARGEST = 2**53 - 1


@pytest.fixture
async def on_sqlite(tmp_path: Path) -> AsyncIterator[Service]:
    store = SqliteCheckpointStore(tmp_path)
    await store.open()
    try:
        async with run_service(store=store) as service:
            yield service
    finally:
        await store.close()


async def test_a_non_ascii_bearer_token_is_401_before_gns3_is_asked() -> None:
    # Nothing listens on port 9: a token that reached the GNS3 client would fail there.
    async with (
        Gns3Client("http://127.0.0.1:9", timeout=2) as gns3,
        run_service(authenticator=Gns3Authenticator(gns3)) as service,
        service.client(token=None) as client,
    ):
        responses = [
            await client.get(
                service.chat_url() + "/sessions",
                headers={"Authorization": f"Bearer {token}".encode()},
            )
            for token in ("tökén", "abc\u00a0def", "\u2603")
        ]
    for response in responses:
        assert response.status_code == 401, response.text
        assert response.json()["detail"] == (
            "Malformed bearer token: a GNS3 token is printable ASCII (letters, digits, "
            "punctuation) without spaces."
        )
        assert response.headers["www-authenticate"].startswith("Bearer")


@pytest.mark.parametrize("name", ["offset", "limit"])
@pytest.mark.parametrize("value", [TOO_BIG, LARGEST + 1])
async def test_a_session_list_query_integer_beyond_2_to_the_53_is_422(
    on_sqlite: Service, name: str, value: int
) -> None:
    async with on_sqlite.client() as client:
        response = await client.get(on_sqlite.chat_url() + "/sessions", params={name: value})
        largest = await client.get(on_sqlite.chat_url() + "/sessions", params={"offset": LARGEST})
    assert response.status_code == 422, response.text
    assert name in response.json()["detail"]
    assert largest.status_code == 200, largest.text
    assert largest.json() == []


@pytest.mark.parametrize("value", [TOO_BIG, LARGEST + 1])
async def test_a_history_cursor_beyond_2_to_the_53_is_422(on_sqlite: Service, value: int) -> None:
    on_sqlite.model.add(text_reply("hello"))
    async with on_sqlite.client() as client:
        created = await client.post(
            on_sqlite.chat_url() + "/stream", json={"message": "hi", "stream": False}
        )
        session = created.json()["session_id"]
        url = on_sqlite.chat_url() + f"/sessions/{session}/history"
        response = await client.get(url, params={"cursor": value})
        largest = await client.get(url, params={"cursor": LARGEST})
    assert response.status_code == 422, response.text
    assert "cursor" in response.json()["detail"]
    assert largest.status_code == 200, largest.text
    assert [m["role"] for m in largest.json()["messages"]] == ["user", "assistant"]


@pytest.mark.parametrize(
    "body",
    [
        "[" * 100_000 + "]" * 100_000,
        '{"message": "hi", "x": ' + "[" * 100_000 + "]" * 100_000 + "}",
        '{"message": ' + '{"a": ' * 5_000 + "1" + "}" * 5_000 + "}",
        '{"message": "hi", "x": ' + "[" * 500 + "]" * 500 + "}",
    ],
)
async def test_a_deeply_nested_json_body_is_400(service: Service, body: str) -> None:
    async with service.client() as client:
        response = await client.post(
            service.chat_url() + "/stream",
            content=body,
            headers={"Content-Type": "application/json"},
        )
    assert response.status_code == 400, response.text
    assert response.json()["detail"] == (
        "The JSON body is nested too deeply (at most 32 levels of arrays and objects)."
    )
    assert await service.store.list_sessions(OPEN, "u-alice") == []
    assert service.model.calls == []
