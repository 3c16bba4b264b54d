"""Restore-point routes over HTTP: the session owner lists them and rolls one back (through
the lab's ``RestorePoints``, with the click as its approval); anyone else gets 404."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from typing import Any

from copilot_core.ports import (
    RestorePoint,
    RollbackOptions,
    RollbackResult,
    RollbackStatus,
    RolledBackItem,
)
from copilot_core.testing import FakeRollback, text_reply
from tests.api.conftest import BOB, OPEN, UNKNOWN, Service, raw_events
from tests.api.test_approvals import until, with_a_changing_tool

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
P1 = "00000000-0000-4000-8000-0000000000a1"
P2 = "00000000-0000-4000-8000-0000000000a2"


async def _session(service: Service) -> str:
    service.model.add(text_reply("hello"))
    async with service.client() as client:
        response = await client.post(
            service.chat_url() + "/stream", json={"message": "hi", "stream": False}
        )
    assert response.status_code == 200
    return str(response.json()["session_id"])


def _point(session_id: str, point_id: str, seconds: int = 0) -> RestorePoint:
    return RestorePoint(
        id=point_id,
        project_id=OPEN,
        session_id=session_id,
        created_at=T0.replace(second=seconds),
        tool_call_id=f"call-{point_id}",
        tool_name="delete_gns3_node",
        summary="delete PC3",
        devices=("PC3",),
        topology=True,
        snapshot=f"copilot-{point_id}",
        kept={
            "devices": {
                "PC3": {"captured": True, "config": None},
                "R9": {"captured": False, "note": "no such node"},
            },
            "topology": {"nodes": [], "links": [], "drawings": []},
        },
    )


#: What the scripted lab's rollback answers: the topology as it was.
UNDONE = RollbackResult(
    RollbackStatus.SUCCESS, (RolledBackItem("topology", RollbackStatus.SUCCESS, {}),)
)


def _rollback_tool(service: Service) -> list[FakeRollback]:
    """The rollbacks the lab is asked for (each answered :data:`UNDONE`)."""
    service.restore.handler = lambda rollback: UNDONE
    return service.restore.rollbacks


async def test_the_owner_lists_restore_points_oldest_first(service: Service) -> None:
    session_id = await _session(service)
    await service.store.save_restore_point(_point(session_id, P1, 1))
    await service.store.save_restore_point(_point(session_id, P2, 2))
    url = service.chat_url() + f"/sessions/{session_id}/restore-points"
    async with service.client() as client:
        listed = await client.get(url)
        full = await client.get(url, params={"full": "true"})
    assert listed.status_code == 200
    assert listed.json() == [
        {
            "id": point_id,
            "created_at": f"2026-03-01T12:00:0{n}+00:00",
            "tool_call_id": f"call-{point_id}",
            "tool_name": "delete_gns3_node",
            "summary": "delete PC3",
            "devices": ["PC3"],
            "topology": True,
            "gns3_snapshot": f"copilot-{point_id}",
        }
        for n, point_id in ((1, P1), (2, P2))
    ]
    assert full.json()[0]["state"]["devices"]["R9"]["note"] == "no such node"


async def test_the_owner_rolls_a_restore_point_back_as_an_approved_change(
    service: Service,
) -> None:
    calls = _rollback_tool(service)
    session_id = await _session(service)
    await service.store.save_restore_point(_point(session_id, P1))
    url = service.chat_url() + f"/sessions/{session_id}/restore-points/{P1}/rollback"
    async with service.client() as client:
        rolled = await client.post(url, params={"use_snapshot": "true"})
        default = await client.post(url)
    assert rolled.status_code == 200, rolled.text
    first, second = calls
    assert first.taken is not None and second.taken is not None
    assert rolled.json() == {
        "tool_status": "success",
        "status": "success",
        "results": [{"device_name": "topology", "status": "success", "output": {}}],
        "rolled_back_to": {
            "restore_point": P1,
            "taken_at": "2026-03-01T12:00:00+00:00",
            "before": "delete PC3",
        },
        "restore_point_id": first.taken.id,
    }
    assert (first.point.id, first.options) == (P1, RollbackOptions(use_snapshot=True, force=False))
    # By default the change alone is undone: the snapshot would undo others' work too.
    assert second.options == RollbackOptions(use_snapshot=False, force=False)
    # The click is the approval: a restore point is taken first, as for any approved
    # change, for the call the history records; the rollback runs with the caller's GNS3
    # token, in their session.
    assert first.approval.approve and first.approval.user_id == "u-alice"
    assert first.taken.tool_call_id == first.tool_call_id
    ctx = first.context
    assert (ctx.session_id, ctx.project_id, ctx.credentials) == (session_id, OPEN, "token-alice")
    kept = await service.store.restore_points(OPEN, session_id)
    assert [point.id for point in kept] == [P1, first.taken.id, second.taken.id]
    assert default.status_code == 200


async def test_anyone_but_the_owner_gets_404_and_nothing_runs(service: Service) -> None:
    calls = _rollback_tool(service)
    session_id = await _session(service)
    await service.store.save_restore_point(_point(session_id, P1))
    base = service.chat_url() + f"/sessions/{session_id}/restore-points"
    async with service.client(BOB) as client:
        listed = await client.get(base)
        rolled = await client.post(base + f"/{P1}/rollback")
    assert (listed.status_code, rolled.status_code) == (404, 404)
    async with service.client() as client:
        unknown = await client.post(base + f"/{P2}/rollback")
        ghost = await client.get(service.chat_url() + f"/sessions/{UNKNOWN}/restore-points")
        not_an_id = await client.post(base + "/nope/rollback")
        bad = await client.post(base + f"/{P1}/rollback", params={"use_snapshot": "maybe"})
    assert unknown.status_code == 404
    assert unknown.json()["detail"] == f"There is no restore point {P2!r} in this session."
    assert ghost.status_code == 404
    assert (not_an_id.status_code, bad.status_code) == (422, 422)
    assert calls == []


async def test_a_rollback_waits_for_no_turn_it_is_refused_while_one_runs(
    service: Service,
) -> None:
    calls = _rollback_tool(service)
    with_a_changing_tool(service)
    async with (
        service.client() as client,
        client.stream(
            "POST", service.chat_url() + "/stream", json={"message": "address PC1"}
        ) as stream,
    ):
        session_id = stream.headers["x-session-id"]
        await until("approval_required", [], raw_events(stream))
        await service.store.save_restore_point(_point(session_id, P1))
        busy = await client.post(
            service.chat_url() + f"/sessions/{session_id}/restore-points/{P1}/rollback"
        )
        await client.post(service.chat_url() + f"/sessions/{session_id}/abort")
    assert busy.status_code == 409
    assert "already has a turn running" in busy.json()["detail"]
    assert calls == []


def _blocking_rollback(service: Service) -> tuple[asyncio.Event, asyncio.Event, list[Any]]:
    """A rollback that holds until ``release`` is set (``entered`` once it runs)."""
    entered, release = asyncio.Event(), asyncio.Event()
    calls: list[Any] = []

    async def rollback(asked: FakeRollback) -> RollbackResult:
        calls.append(asked)
        entered.set()
        await release.wait()
        return UNDONE

    service.restore.handler = rollback
    return entered, release, calls


async def test_two_rollbacks_at_once_one_runs_the_other_gets_409(service: Service) -> None:
    entered, release, calls = _blocking_rollback(service)
    session_id = await _session(service)
    await service.store.save_restore_point(_point(session_id, P1))
    url = service.chat_url() + f"/sessions/{session_id}/restore-points/{P1}/rollback"
    async with service.client() as client:
        first = asyncio.create_task(client.post(url))
        await asyncio.wait_for(entered.wait(), 10)
        second = await client.post(url)
        release.set()
        done = await asyncio.wait_for(first, 10)
    assert (done.status_code, second.status_code) == (200, 409)
    assert "has a rollback running" in second.json()["detail"]
    assert len(calls) == 1


async def test_a_turn_posted_while_a_rollback_runs_gets_409(service: Service) -> None:
    entered, release, _ = _blocking_rollback(service)
    session_id = await _session(service)
    await service.store.save_restore_point(_point(session_id, P1))
    url = service.chat_url() + f"/sessions/{session_id}/restore-points/{P1}/rollback"
    async with service.client() as client:
        rolling = asyncio.create_task(client.post(url))
        await asyncio.wait_for(entered.wait(), 10)
        turn = await client.post(
            service.chat_url() + "/stream",
            json={"message": "hi again", "session_id": session_id, "stream": False},
        )
        release.set()
        rolled = await asyncio.wait_for(rolling, 10)
    assert turn.status_code == 409, turn.text
    assert "has a rollback running" in turn.json()["detail"]
    assert rolled.status_code == 200


async def test_a_rollback_is_a_message_of_the_history_and_the_point_says_rolled_back(
    service: Service,
) -> None:
    calls = _rollback_tool(service)
    session_id = await _session(service)
    await service.store.save_restore_point(_point(session_id, P1))
    base = service.chat_url() + f"/sessions/{session_id}"
    async with service.client() as client:
        rolled = await client.post(base + f"/restore-points/{P1}/rollback")
        history = await client.get(base + "/history")
        listed = await client.get(base + "/restore-points")
        service.model.add(text_reply("noted"))
        after = await client.post(
            service.chat_url() + "/stream",
            json={"message": "what did I undo?", "session_id": session_id, "stream": False},
        )
    assert rolled.status_code == 200, rolled.text
    messages = history.json()["messages"]
    call, answer = messages[-2], messages[-1]
    assert call["role"] == "assistant" and call["tool_calls"][0]["function"]["name"] == (
        "restore_point"
    )
    assert answer["role"] == "tool" and answer["tool_call_id"] == call["tool_calls"][0]["id"]
    record = call["metadata"]["rollback"]
    assert record == {
        "restore_point_id": P1,
        "undoes_tool_call_id": f"call-{P1}",
        "by": "u-alice",
        "by_name": "alice",
        "status": "success",
    }
    assert "alice rolled back restore point" in call["content"]
    assert "created_at" in call["metadata"]
    point = listed.json()[0]
    assert point["rolled_back"]["status"] == "success"
    assert point["rolled_back"]["by"] == "u-alice"
    (asked,) = calls
    assert asked.taken is not None
    assert point["rolled_back"]["restore_point_id"] == asked.taken.id
    # The tool message is the result's JSON, for the model, with the click kept as its
    # approval and the restore point taken before the rollback.
    assert json.loads(answer["content"])["restore_point_id"] == asked.taken.id
    assert answer["metadata"]["approval"]["by"] == "u-alice"
    assert answer["metadata"]["restore_point_id"] == asked.taken.id
    assert json.loads(call["tool_calls"][0]["function"]["arguments"]) == {
        "action": "rollback",
        "restore_point_id": P1,
        "use_snapshot": False,
        "force": False,
    }
    # The conversation stays valid: the next turn runs on it.
    assert after.status_code == 200, after.text


async def test_a_closed_projects_restore_points_are_read_but_not_rolled_back(
    service: Service,
) -> None:
    _rollback_tool(service)
    session_id = await _session(service)
    await service.store.save_restore_point(_point(session_id, P1))
    service.gate.opened.discard(OPEN)
    service.gate.closed.add(OPEN)
    base = service.chat_url() + f"/sessions/{session_id}/restore-points"
    async with service.client() as client:
        listed = await client.get(base)
        rolled = await client.post(base + f"/{P1}/rollback")
    assert listed.status_code == 200 and len(listed.json()) == 1
    assert rolled.status_code == 409
