"""Approvals over HTTP: the stream pauses on approval_required, the owner decides with
POST …/approvals/{approval_id}, a client that re-attaches sees a pending approval again."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from copilot_core.ports import ChangePreview, call_digest
from copilot_core.testing import text_reply, tool_reply
from tests.api.conftest import BOB, RawEvent, Service, raw_events

PC1 = {"device_configs": [{"device_name": "PC1", "config_commands": ["ip 10.0.0.1/24"]}]}


def with_a_changing_tool(service: Service) -> list[dict[str, Any]]:
    ran: list[dict[str, Any]] = []

    def configure(args: dict[str, Any], ctx: object) -> dict[str, str]:
        ran.append(args)
        return {"PC1": "ok"}

    service.tools.add(
        "execute_multiple_device_config_commands",
        configure,
        changes=lambda args: ChangePreview(
            "configure PC1", devices={"PC1": args["device_configs"][0]["config_commands"]}
        ),
    )
    service.model.add(
        tool_reply(("execute_multiple_device_config_commands", PC1)), text_reply("PC1 is set.")
    )
    return ran


async def until(kind: str, events: list[RawEvent], stream: AsyncIterator[RawEvent]) -> RawEvent:
    """Read ``stream`` into ``events`` up to the first event of type ``kind``."""
    async for event in stream:
        events.append(event)
        if event.type == kind:
            return event
    raise AssertionError(f"the stream ended without {kind}")


async def test_the_stream_pauses_until_the_owner_approves(service: Service) -> None:
    ran = with_a_changing_tool(service)
    url = service.chat_url()
    async with (
        service.client() as client,
        client.stream("POST", url + "/stream", json={"message": "address PC1"}) as stream,
    ):
        session_id = stream.headers["x-session-id"]
        events: list[RawEvent] = []
        reader = raw_events(stream)
        asked = await until("approval_required", events, reader)
        approval = asked.data
        assert approval["tool_name"] == "execute_multiple_device_config_commands"
        assert approval["preview"]["devices"] == {"PC1": ["ip 10.0.0.1/24"]}
        assert approval["arguments"] == PC1
        assert ran == []
        decision_url = f"{url}/sessions/{session_id}/approvals/{approval['approval_id']}"
        async with service.client(BOB) as bob:
            other = await bob.post(decision_url, json={"decision": "approve"})
        assert other.status_code == 404
        bad = await client.post(decision_url, json={"decision": "maybe"})
        assert bad.status_code == 422
        decided = await client.post(decision_url, json={"decision": "approve", "comment": "go"})
        assert decided.status_code == 200, decided.text
        assert decided.json() == {
            "status": "ok",
            "approval_id": approval["approval_id"],
            "decision": "approve",
        }
        again = await client.post(decision_url, json={"decision": "reject"})
        assert again.status_code == 409
        await until("done", events, reader)
        history = (await client.get(f"{url}/sessions/{session_id}/history")).json()
    types = [e.type for e in events]
    assert types[-1] == "done"
    resolved = next(e.data for e in events if e.type == "approval_resolved")
    assert (resolved["decision"], resolved["by"], resolved["comment"]) == (
        "approve",
        "u-alice",
        "go",
    )
    assert ran == [PC1]
    tool = history["messages"][2]
    assert tool["metadata"]["approval"]["decision"] == "approve"
    assert tool["metadata"]["approval"]["by"] == "u-alice"


async def test_a_client_that_reattaches_after_the_request_sees_it_again(service: Service) -> None:
    with_a_changing_tool(service)
    url = service.chat_url()
    async with service.client() as client:
        async with client.stream("POST", url + "/stream", json={"message": "address PC1"}) as s:
            session_id = s.headers["x-session-id"]
            asked = await until("approval_required", [], raw_events(s))
        assert asked.id is not None
        async with client.stream(
            "GET",
            f"{url}/sessions/{session_id}/stream",
            headers={"Last-Event-ID": asked.id},
        ) as resumed:
            reader = raw_events(resumed)
            first = await anext(reader)
            assert first.type == "approval_required"
            assert first.data["approval_id"] == asked.data["approval_id"]
            reject = await client.post(
                f"{url}/sessions/{session_id}/approvals/{asked.data['approval_id']}",
                json={"decision": "reject", "comment": "not now"},
            )
            assert reject.status_code == 200
            rest: list[RawEvent] = []
            await until("done", rest, reader)
    end = next(e.data for e in rest if e.type == "tool_end")
    assert end["status"] == "rejected"
    assert "not now" in end["tool_output"]


async def test_gaia_clients_get_the_pause_as_statuses(service: Service) -> None:
    with_a_changing_tool(service)
    url = service.chat_url()
    async with (
        service.client() as client,
        client.stream(
            "POST", url + "/stream?protocol=gaia", json={"message": "address PC1"}
        ) as stream,
    ):
        session_id = stream.headers["x-session-id"]
        seen: list[RawEvent] = []
        async for event in raw_events(stream):
            seen.append(event)
            if event.data.get("status") == "approval_required":
                decision = await client.post(
                    f"{url}/sessions/{session_id}/approvals/{event.data['approval_id']}",
                    json={"decision": "approve"},
                )
                assert decision.status_code == 200
            if event.type == "done":
                break
    statuses = [e.data["status"] for e in seen if e.type == "status"]
    assert "approval_required" in statuses and "approval_resolved" in statuses
    asked = next(e.data for e in seen if e.data.get("status") == "approval_required")
    assert asked["message"].startswith("Approve execute_multiple_device_config_commands?")
    assert asked["preview"]["devices"] == {"PC1": ["ip 10.0.0.1/24"]}


async def test_a_decision_is_bound_to_the_arguments_it_was_shown(service: Service) -> None:
    ran = with_a_changing_tool(service)
    url = service.chat_url()
    async with (
        service.client() as client,
        client.stream("POST", url + "/stream", json={"message": "address PC1"}) as stream,
    ):
        session_id = stream.headers["x-session-id"]
        events: list[RawEvent] = []
        reader = raw_events(stream)
        approval = (await until("approval_required", events, reader)).data
        digest = call_digest("execute_multiple_device_config_commands", PC1)
        assert approval["digest"] == digest  # of the full arguments the card shows
        assert approval["arguments"] == PC1
        decision_url = f"{url}/sessions/{session_id}/approvals/{approval['approval_id']}"
        other = call_digest("execute_multiple_device_config_commands", {"device_configs": []})
        refused = await client.post(decision_url, json={"decision": "approve", "digest": other})
        assert refused.status_code == 409, refused.text
        assert "other arguments" in refused.json()["detail"]
        assert ran == []  # nothing ran, and the approval still waits
        decided = await client.post(decision_url, json={"decision": "approve", "digest": digest})
        assert decided.status_code == 200, decided.text
        await until("done", events, reader)
        history = (await client.get(f"{url}/sessions/{session_id}/history")).json()
    assert ran == [PC1]
    assert history["messages"][2]["metadata"]["approval"]["digest"] == digest
