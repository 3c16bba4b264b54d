"""POST /chat/stream: SSE shape, ids, heartbeat, done-after-save, stream=false, busy, abort."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx
import pytest
from httpx_sse import aconnect_sse

from adapters.sqlite import SqliteCheckpointStore
from copilot_core import SessionKey, ToolContext, TurnRequest
from copilot_core.testing import Hang, text_reply, tool_reply
from tests.api.conftest import (
    ALICE,
    OPEN,
    Service,
    collect_until_done,
    raw_events,
    run_service,
)


async def test_stream_sends_sse_events_with_type_session_id_and_turn_ids(service: Service) -> None:
    service.model.add(text_reply("Hello from the lab", chunk=5))
    async with (
        service.client() as client,
        client.stream("POST", service.chat_url() + "/stream", json={"message": "hi"}) as response,
    ):
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        assert response.headers["cache-control"].startswith("no-cache")
        assert response.headers["x-accel-buffering"] == "no"
        session_id = response.headers["x-session-id"]
        turn_id = response.headers["x-turn-id"]
        events = await collect_until_done(response)

    assert [e.type for e in events] == ["content"] * 4 + ["done"]
    assert "".join(e.data["content"] for e in events[:-1]) == "Hello from the lab"
    assert all(e.data["session_id"] == session_id for e in events)
    assert [e.id for e in events] == [f"{turn_id}:{seq}" for seq in range(1, 6)]


async def test_stream_read_with_httpx_sse_ends_with_done(service: Service) -> None:
    service.model.add(text_reply("Hi!"))
    async with (
        service.client() as client,
        aconnect_sse(
            client, "POST", service.chat_url() + "/stream", json={"message": "hello"}
        ) as source,
    ):
        types = [json.loads(sse.data)["type"] async for sse in source.aiter_sse()]
    assert types[-1] == "done"
    assert "content" in types


async def test_tool_calls_stream_tool_call_start_and_end_events(service: Service) -> None:
    service.tools.add("gns3_topology_reader", lambda args, ctx: {"nodes": ["R1"], "é": "ü"})
    service.model.add(
        tool_reply(("gns3_topology_reader", {"project": "lab"}), ids=["call_A"]),
        text_reply("There is one router."),
    )
    async with (
        service.client() as client,
        client.stream("POST", service.chat_url() + "/stream", json={"message": "topo?"}) as r,
    ):
        events = await collect_until_done(r)
    types = [e.type for e in events]
    assert types.index("tool_call") < types.index("tool_start") < types.index("tool_end")
    calls = [e.data["tool_call"] for e in events if e.type == "tool_call"]
    assert calls[-1]["function"]["complete"] is True
    assert json.loads(calls[-1]["function"]["arguments"]) == {"project": "lab"}
    start = next(e for e in events if e.type == "tool_start")
    assert start.data["tool_call_id"] == "call_A"
    end = next(e for e in events if e.type == "tool_end")
    assert json.loads(end.data["tool_output"]) == {"nodes": ["R1"], "é": "ü"}
    assert "ü" in end.data["tool_output"]  # ensure_ascii=False


async def test_a_complete_call_carries_its_plain_title_and_the_history_keeps_it(
    service: Service,
) -> None:
    service.tools.add(
        "gns3_topology_reader",
        lambda args, ctx: {"nodes": ["R1"]},
        title=lambda args: "Read the lab's topology",
    )
    service.tools.add("get_templates", lambda args, ctx: [])  # names no call: no title
    service.model.add(
        tool_reply(("gns3_topology_reader", {}), ("get_templates", {}), ids=["call_A", "call_B"]),
        text_reply("One router."),
    )
    async with (
        service.client() as client,
        client.stream("POST", service.chat_url() + "/stream", json={"message": "topo?"}) as r,
    ):
        session_id = r.headers["x-session-id"]
        events = await collect_until_done(r)
        history = (await client.get(f"{service.chat_url()}/sessions/{session_id}/history")).json()
    calls = [e.data for e in events if e.type == "tool_call"]
    complete = {
        c["tool_call"]["id"]: c for c in calls if c["tool_call"]["function"].get("complete")
    }
    assert complete["call_A"]["title"] == "Read the lab's topology"
    assert "title" not in complete["call_B"]  # (absent, as older clients know the event)
    assert all("title" not in c for c in calls if not c["tool_call"]["function"].get("complete"))
    kept = {m["tool_call_id"]: m["metadata"] for m in history["messages"] if m["role"] == "tool"}
    assert kept["call_A"]["title"] == "Read the lab's topology"
    assert "title" not in kept["call_B"]


async def test_done_arrives_after_the_turn_is_saved_and_names_the_answer(service: Service) -> None:
    service.model.add(text_reply("Saved answer"))
    async with (
        service.client() as client,
        client.stream("POST", service.chat_url() + "/stream", json={"message": "save?"}) as r,
    ):
        session_id = r.headers["x-session-id"]
        async for event in raw_events(r):
            if event.type == "done":
                # Checked while the stream is still open: the save happened first.
                page = await service.store.history(OPEN, session_id)
                session = await service.store.get_session(OPEN, session_id)
                assert page.messages[-1].id == event.data["message_id"]
                assert page.messages[-1].content == "Saved answer"
                assert session is not None
                assert session.message_count == 2
                break
        else:
            raise AssertionError("no done event")


async def test_stream_false_returns_one_json_object(service: Service) -> None:
    service.model.add(text_reply("One shot"))
    async with service.client() as client:
        response = await client.post(
            service.chat_url() + "/stream", json={"message": "hi", "stream": False}
        )
    assert response.status_code == 200
    body = response.json()
    assert body["content"] == "One shot"
    assert [m["role"] for m in body["messages"]] == ["user", "assistant"]
    assert body["message_id"] == body["messages"][-1]["id"]
    assert body["stats"] == {
        "messages": 2,
        "llm_calls": 1,
        "input_tokens": 10,
        "output_tokens": 5,
        "total_tokens": 15,
    }
    stored = await service.store.get_session(OPEN, body["session_id"])
    assert stored is not None
    assert stored.user_id == "u-alice"


async def test_second_turn_continues_the_session(service: Service) -> None:
    service.model.add(text_reply("first"), text_reply("second"))
    async with service.client() as client:
        first = await client.post(
            service.chat_url() + "/stream", json={"message": "one", "stream": False}
        )
        session_id = first.json()["session_id"]
        second = await client.post(
            service.chat_url() + "/stream",
            json={"message": "two", "session_id": session_id, "stream": False},
        )
    assert second.json()["session_id"] == session_id
    page = await service.store.history(OPEN, session_id)
    assert [m.content for m in page.messages] == ["one", "first", "two", "second"]
    # The second call saw the whole conversation (the lab's state comes before the latest).
    user = [m.content for m in service.model.calls[1].messages if m.role.value == "user"]
    assert [text.rsplit("</lab>\n\n", 1)[-1] for text in user] == [
        "one",
        "two",
    ]


async def test_temperature_override_reaches_the_model_provider(service: Service) -> None:
    service.model.add(text_reply("warm"))
    async with service.client() as client:
        response = await client.post(
            service.chat_url() + "/stream",
            json={"message": "hi", "stream": False, "temperature": 1.5},
        )
    assert response.status_code == 200
    assert service.models.overrides[-1].temperature == 1.5


async def test_heartbeat_is_sent_during_a_quiet_turn_without_an_id() -> None:
    async with run_service(heartbeat=0.05) as service:
        service.model.add([*text_reply("a")[:1], Hang(0.4), *text_reply("b")])
        async with (
            service.client() as client,
            client.stream("POST", service.chat_url() + "/stream", json={"message": "x"}) as r,
        ):
            events = await collect_until_done(r)
    heartbeats = [e for e in events if e.type == "heartbeat"]
    assert len(heartbeats) >= 2
    assert all(e.id is None for e in heartbeats)
    assert all(e.data["session_id"] for e in heartbeats)
    numbered = [e for e in events if e.type != "heartbeat"]
    assert all(e.id is not None for e in numbered)
    assert [int(e.id.rsplit(":", 1)[1]) for e in numbered if e.id] == list(
        range(1, len(numbered) + 1)
    )


async def test_second_stream_on_a_busy_session_gets_409(service: Service) -> None:
    service.model.add([*text_reply("start")[:1], Hang()])
    async with (
        service.client() as client,
        client.stream("POST", service.chat_url() + "/stream", json={"message": "long"}) as first,
    ):
        session_id = first.headers["x-session-id"]
        busy = await client.post(
            service.chat_url() + "/stream",
            json={"message": "again", "session_id": session_id},
        )
        assert busy.status_code == 409
        assert "already has a turn running" in busy.json()["detail"]
        aborted = await client.post(service.chat_url() + f"/sessions/{session_id}/abort")
        assert aborted.json() == {"status": "ok", "session_id": session_id, "aborted": True}
        events = await collect_until_done(first)
    assert [e.type for e in events][-2:] == ["abort", "done"]
    page = await service.store.history(OPEN, session_id)
    assert [m.content for m in page.messages if m.role.value == "user"] == ["long"]


async def test_abort_mid_stream_ends_the_stream_and_keeps_the_partial_answer(
    service: Service,
) -> None:
    service.tools.add("slow_tool", lambda args, ctx: asyncio.sleep(30))
    service.model.add(tool_reply(("slow_tool", {}), text="Checking", ids=["call_S"]))
    async with service.client() as client:
        async with client.stream(
            "POST", service.chat_url() + "/stream", json={"message": "run it"}
        ) as r:
            session_id = r.headers["x-session-id"]
            events = []
            async for event in raw_events(r):
                events.append(event)
                if event.type == "tool_start":
                    abort = await client.post(service.chat_url() + f"/sessions/{session_id}/abort")
                    assert abort.status_code == 200
                if event.type == "done":
                    break
        not_running = await client.post(service.chat_url() + f"/sessions/{session_id}/abort")
    types = [e.type for e in events]
    assert "abort" in types
    assert types[-1] == "done"
    end = next(e for e in events if e.type == "tool_end")
    assert json.loads(end.data["tool_output"]) == {"status": "aborted"}
    page = await service.store.history(OPEN, session_id)
    assert [m.role.value for m in page.messages] == ["user", "assistant", "tool"]
    assert page.messages[1].content == "Checking"
    assert not_running.json()["aborted"] is False


async def test_client_disconnect_does_not_abort_the_turn(service: Service) -> None:
    service.model.delay = 0.02
    service.model.add(text_reply("a fairly long answer that keeps streaming", chunk=2))
    async with (
        service.client() as client,
        client.stream("POST", service.chat_url() + "/stream", json={"message": "go"}) as r,
    ):
        session_id = r.headers["x-session-id"]
        async for event in raw_events(r):
            assert event.type == "content"
            break  # hang up after the first event
    turn = await service.chat.attach(SessionKey(OPEN, session_id, "u-alice"))
    assert turn is not None
    result = await asyncio.wait_for(turn.wait(), 10)
    assert not result.aborted
    assert result.content == "a fairly long answer that keeps streaming"
    page = await service.store.history(OPEN, session_id)
    assert page.messages[-1].content == result.content


@pytest.mark.parametrize("follow", ["started", "re-attached"])
async def test_client_disconnect_aborts_through_the_chat_service_when_configured(
    tmp_path: Path, follow: str
) -> None:
    # A real SQLite store: the chat service's abort reads the session (an await that
    # really suspends) while the response task is being cancelled by the hang-up.
    async with (
        SqliteCheckpointStore(tmp_path) as store,
        run_service(abort_on_disconnect=True, store=store) as service,
        service.client() as client,
    ):
        service.model.add([*text_reply("partial")[:1], Hang()])
        if follow == "started":  # the client that asked hangs up
            stream = client.stream("POST", service.chat_url() + "/stream", json={"message": "go"})
        else:  # a client that re-attached to a turn started elsewhere hangs up
            started = await service.chat.start_turn(TurnRequest(OPEN, "u-alice", "go"))
            url = f"{service.chat_url()}/sessions/{started.session_id}/stream"
            stream = client.stream("GET", url)
        async with stream as r:
            assert r.status_code == 200
            session_id = r.headers["x-session-id"]
            async for _ in raw_events(r):
                break  # hang up after the first event
        turn = await service.chat.attach(SessionKey(OPEN, session_id, "u-alice"))
        assert turn is not None
        result = await asyncio.wait_for(turn.wait(), 10)
        assert result.aborted
        assert result.content == "part"
        assert [event.type async for event in turn.subscribe()][-2:] == ["abort", "done"]
        page = await store.history(OPEN, session_id)
        incomplete = page.messages[-1].metadata["incomplete"]
    assert incomplete == {"reason": "aborted", "message": "the client disconnected"}


async def test_llm_not_configured_is_a_409_that_says_how() -> None:
    async with run_service(configured=False) as service, service.client() as client:
        response = await client.post(service.chat_url() + "/stream", json={"message": "hi"})
        assert response.status_code == 409
        assert response.json()["code"] == "llm_not_configured"
        assert "PUT /v3/copilot/llm-config" in response.json()["detail"]
        assert await service.store.list_sessions(OPEN, "u-alice") == []


async def test_llm_failure_mid_stream_is_an_error_event_and_the_turn_is_saved(
    service: Service,
) -> None:
    from copilot_core.errors import LLMStreamInterruptedError

    service.model.add([*text_reply("Half an ans", chunk=4)[:3], LLMStreamInterruptedError("cut")])
    async with (
        service.client() as client,
        client.stream("POST", service.chat_url() + "/stream", json={"message": "q"}) as r,
    ):
        session_id = r.headers["x-session-id"]
        events = await collect_until_done(r)
    types = [e.type for e in events]
    assert "error" in types
    assert types[-1] == "done"
    page = await service.store.history(OPEN, session_id)
    assert page.messages[0].content == "q"


async def test_unauthenticated_stream_is_401_and_stores_nothing(service: Service) -> None:
    async with service.client(token=None) as client:
        response = await client.post(service.chat_url() + "/stream", json={"message": "hi"})
    assert response.status_code == 401
    assert response.headers["www-authenticate"].startswith("Bearer")
    assert await service.store.list_sessions(OPEN, "u-alice") == []
    assert service.model.calls == []


async def test_token_reaches_the_project_gate_in_memory(service: Service) -> None:
    service.model.add(text_reply("ok"))
    async with service.client() as client:
        await client.post(service.chat_url() + "/stream", json={"message": "hi", "stream": False})
    assert service.gate.seen_credentials == [ALICE]


async def test_new_stream_request_survives_a_reused_client(service: Service) -> None:
    service.model.add(text_reply("one"), text_reply("two"))
    async with httpx.AsyncClient(
        base_url=service.base_url, headers={"Authorization": f"Bearer {ALICE}"}
    ) as client:
        for _ in range(2):
            async with client.stream(
                "POST", service.chat_url() + "/stream", json={"message": "x"}
            ) as r:
                events = await collect_until_done(r)
                assert events[-1].type == "done"


async def test_tools_run_with_the_callers_token_and_ids(service: Service) -> None:
    seen: list[tuple[str | None, str, str, str]] = []

    def record(args: dict[str, object], ctx: ToolContext) -> str:
        seen.append((ctx.credentials, ctx.user_id, ctx.project_id, ctx.mode.value))
        return "ok"

    service.tools.add("gns3_topology_reader", record)
    service.model.add(tool_reply(("gns3_topology_reader", {})), text_reply("done"))
    async with service.client() as client:
        response = await client.post(
            service.chat_url() + "/stream",
            json={"message": "go", "stream": False, "copilot_mode": "lab_automation_assistant"},
        )
    assert response.status_code == 200
    assert seen == [(ALICE, "u-alice", OPEN, "lab_automation_assistant")]
    stored = await service.store.history(OPEN, response.json()["session_id"])
    assert ALICE not in repr(stored.messages)


async def test_gns3_failure_in_a_tool_is_reported_and_the_turn_saved(service: Service) -> None:
    from copilot_core.errors import Gns3Error

    def broken(args: dict[str, object], ctx: ToolContext) -> None:
        raise Gns3Error("GNS3 answered 500: node not found", 500)

    service.tools.add("create_gns3_node", broken)
    service.model.add(
        tool_reply(("create_gns3_node", {"name": "R3"}), ids=["call_N"]),
        text_reply("The node could not be created."),
    )
    async with (
        service.client() as client,
        client.stream("POST", service.chat_url() + "/stream", json={"message": "add R3"}) as r,
    ):
        session_id = r.headers["x-session-id"]
        events = await collect_until_done(r)
    end = next(e for e in events if e.type == "tool_end")
    assert end.data["status"] == "error"
    assert "node not found" in end.data["tool_output"]
    assert events[-1].type == "done"
    page = await service.store.history(OPEN, session_id)
    assert [m.role.value for m in page.messages] == ["user", "assistant", "tool", "assistant"]
