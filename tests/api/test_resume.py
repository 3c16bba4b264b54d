"""GET /chat/sessions/{id}/stream: re-attach with Last-Event-ID, replay, then live."""

from __future__ import annotations

import asyncio

from copilot_core import SessionKey
from copilot_core.testing import Hang, text_reply
from tests.api.conftest import (
    OPEN,
    UNKNOWN,
    RawEvent,
    Service,
    auth,
    collect_until_done,
    raw_events,
    run_service,
)

TEXT = "abcdefghijklmnopqrstuvwxyz0123456789"


def _seq(event: RawEvent) -> int:
    assert event.id is not None
    return int(event.id.rsplit(":", 1)[1])


async def test_reattach_with_last_event_id_misses_and_duplicates_nothing(service: Service) -> None:
    service.model.delay = 0.02
    service.model.add(text_reply(TEXT, chunk=1))
    async with service.client() as client:
        async with client.stream(
            "POST", service.chat_url() + "/stream", json={"message": "spell"}
        ) as first:
            session_id = first.headers["x-session-id"]
            seen: list[RawEvent] = []
            async for event in raw_events(first):
                seen.append(event)
                if len(seen) == 5:
                    break  # the connection drops here
        await asyncio.sleep(0.1)  # events keep coming while nobody listens
        last_id = seen[-1].id
        assert last_id is not None
        async with client.stream(
            "GET",
            service.chat_url() + f"/sessions/{session_id}/stream",
            headers={"Last-Event-ID": last_id},
        ) as resumed:
            assert resumed.status_code == 200
            rest = await collect_until_done(resumed)

    events = seen + rest
    assert [_seq(e) for e in events] == list(range(1, len(events) + 1))
    assert events[-1].type == "done"
    assert "".join(e.data["content"] for e in events if e.type == "content") == TEXT
    assert all(e.id and e.id.startswith(seen[0].id.split(":")[0]) for e in events if e.id)


async def test_reattach_without_last_event_id_replays_the_whole_turn(service: Service) -> None:
    service.model.add([*text_reply("abc", chunk=1)[:3], Hang(0.3), *text_reply("d", chunk=1)])
    async with service.client() as client:
        async with client.stream(
            "POST", service.chat_url() + "/stream", json={"message": "go"}
        ) as first:
            session_id = first.headers["x-session-id"]
            async for _ in raw_events(first):
                break
        async with client.stream(
            "GET", service.chat_url() + f"/sessions/{session_id}/stream"
        ) as resumed:
            events = await collect_until_done(resumed)
    assert [_seq(e) for e in events] == list(range(1, len(events) + 1))
    assert "".join(e.data["content"] for e in events if e.type == "content") == "abcd"


async def test_two_clients_follow_the_same_turn_and_abort_ends_both(service: Service) -> None:
    service.model.add([*text_reply("x")[:1], Hang()])
    async with (
        service.client() as client,
        service.client() as other,
        client.stream("POST", service.chat_url() + "/stream", json={"message": "go"}) as first,
    ):
        session_id = first.headers["x-session-id"]
        async with other.stream(
            "GET", service.chat_url() + f"/sessions/{session_id}/stream"
        ) as second:
            await client.post(service.chat_url() + f"/sessions/{session_id}/abort")
            a, b = await asyncio.gather(collect_until_done(first), collect_until_done(second))
    assert [e.type for e in a][-2:] == ["abort", "done"]
    assert [e.id for e in a] == [e.id for e in b]


async def test_reattach_when_nothing_runs_is_204(service: Service) -> None:
    service.model.add(text_reply("done already"))
    async with service.client() as client:
        reply = await client.post(
            service.chat_url() + "/stream", json={"message": "hi", "stream": False}
        )
        session_id = reply.json()["session_id"]
        # The turn just ended: a client that saw everything has nothing to get.
        first = await client.post(service.chat_url() + f"/sessions/{session_id}/abort")
        assert first.json()["aborted"] is False
        turn = await service.chat.attach(SessionKey(OPEN, session_id, "u-alice"))
        assert turn is not None
        everything = await client.get(
            service.chat_url() + f"/sessions/{session_id}/stream",
            headers={"Last-Event-ID": f"{turn.turn_id}:{turn.last_seq}"},
        )
        assert everything.status_code == 204
        # A client that missed the end of a just-finished turn still gets it.
        async with client.stream(
            "GET",
            service.chat_url() + f"/sessions/{session_id}/stream",
            headers={"Last-Event-ID": f"{turn.turn_id}:{turn.last_seq - 1}"},
        ) as tail:
            events = await collect_until_done(tail)
        assert [e.type for e in events] == ["done"]


async def test_reattach_after_the_retention_period_is_204() -> None:
    async with run_service(retention=0.0) as service, service.client() as client:
        service.model.add(text_reply("ok"))
        reply = await client.post(
            service.chat_url() + "/stream", json={"message": "hi", "stream": False}
        )
        session_id = reply.json()["session_id"]
        await asyncio.sleep(0.05)
        response = await client.get(service.chat_url() + f"/sessions/{session_id}/stream")
    assert response.status_code == 204
    assert response.content == b""


async def test_reattach_to_another_users_session_is_404(service: Service) -> None:
    service.model.add([*text_reply("x")[:1], Hang()])
    async with (
        service.client() as client,
        service.client(token=None) as bob,
        client.stream("POST", service.chat_url() + "/stream", json={"message": "go"}) as first,
    ):
        session_id = first.headers["x-session-id"]
        response = await bob.get(
            service.chat_url() + f"/sessions/{session_id}/stream", headers=auth("token-bob")
        )
        missing = await bob.get(
            service.chat_url() + f"/sessions/{UNKNOWN}/stream", headers=auth("token-bob")
        )
        await client.post(service.chat_url() + f"/sessions/{session_id}/abort")
        await collect_until_done(first)
    assert response.status_code == 404
    assert missing.status_code == 404


async def test_malformed_last_event_id_is_422(service: Service) -> None:
    service.model.add([*text_reply("x")[:1], Hang()])
    async with (
        service.client() as client,
        client.stream("POST", service.chat_url() + "/stream", json={"message": "go"}) as first,
    ):
        session_id = first.headers["x-session-id"]
        response = await client.get(
            service.chat_url() + f"/sessions/{session_id}/stream",
            headers={"Last-Event-ID": "garbage"},
        )
        await client.post(service.chat_url() + f"/sessions/{session_id}/abort")
        await collect_until_done(first)
    assert response.status_code == 422
    assert "Last-Event-ID" in response.json()["detail"]
