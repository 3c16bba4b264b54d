"""Approvals: a change waits for its owner's decision; the model learns the outcome."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from copilot_core import ModelSelection, RunnerSettings, SessionKey, TurnHandle
from copilot_core.errors import ApprovalNotFoundError, ConflictError, SessionNotFoundError
from copilot_core.events import ApprovalRequiredEvent, TurnEvent
from copilot_core.ports import ApprovalPolicy, ChangePreview, Message, call_digest
from copilot_core.testing import text_reply, tool_reply

from .conftest import ALICE, BOB, PROJECT, World


def configure(args: dict[str, Any]) -> ChangePreview:
    device = str(args["device"])
    return ChangePreview("configure one device", devices={device: ["ip 10.0.0.1/24"]})


def lab(world: World, policy: ApprovalPolicy = ApprovalPolicy.CHANGES) -> list[dict[str, Any]]:
    """Tools: ``set_ip`` changes a device, ``show_ip`` reads one; both record their runs."""
    ran: list[dict[str, Any]] = []

    def set_ip(args: dict[str, Any], ctx: object) -> str:
        ran.append(args)
        return "ok"

    world.tools.add("set_ip", set_ip, changes=configure)
    world.tools.add("show_ip", lambda args, ctx: "10.0.0.1/24")
    world.selection = ModelSelection(world.model, approval=policy)
    return ran


async def next_approval(turn: TurnHandle) -> ApprovalRequiredEvent:
    async with asyncio.timeout(5):
        async for stamped in turn.subscribe():
            if isinstance(stamped.event, ApprovalRequiredEvent):
                return stamped.event
    raise AssertionError("no approval was asked for")


async def finish(turn: TurnHandle) -> list[TurnEvent]:
    async with asyncio.timeout(10):
        return [event async for event in turn.subscribe()]


async def saved(world: World, turn: TurnHandle) -> list[Message]:
    _, page = await world.service.history(SessionKey(PROJECT, turn.session_id, ALICE), limit=100)
    return page.messages


async def test_an_approved_change_runs_and_the_decision_is_kept_with_its_result(
    world: World,
) -> None:
    ran = lab(world)
    world.model.add(tool_reply(("set_ip", {"device": "PC1"})), text_reply("Done."), text_reply("T"))
    turn = await world.service.start_turn(world.request("give PC1 an address"))
    asked = await next_approval(turn)
    assert (asked.tool_name, asked.arguments) == ("set_ip", {"device": "PC1"})
    assert asked.preview == {
        "summary": "configure one device",
        "devices": {"PC1": ["ip 10.0.0.1/24"]},
        "topology": [],
    }
    assert ran == []  # nothing happens before the decision
    await world.service.decide(
        SessionKey(PROJECT, turn.session_id, ALICE), asked.approval_id, approve=True
    )
    events = await finish(turn)
    types = [e.type for e in events]
    assert types.index("approval_required") < types.index("approval_resolved")
    assert types.index("approval_resolved") < types.index("tool_end")
    assert ran == [{"device": "PC1"}]
    tool = (await saved(world, turn))[2]
    assert tool.content == "ok"
    assert tool.metadata["approval"] == {
        "decision": "approve",
        "by": ALICE,
        "comment": "",
        "reason": "decided",
        "digest": call_digest("set_ip", {"device": "PC1"}),  # what was approved
    }


async def test_a_rejected_change_is_not_made_and_the_model_is_told_why(world: World) -> None:
    ran = lab(world)
    world.model.add(
        tool_reply(("set_ip", {"device": "PC1"})),
        lambda messages, tools: text_reply(f"Understood: {messages[-1].content}"),
        text_reply("T"),
    )
    turn = await world.service.start_turn(world.request("give PC1 an address"))
    asked = await next_approval(turn)
    await world.service.decide(
        SessionKey(PROJECT, turn.session_id, ALICE),
        asked.approval_id,
        approve=False,
        comment="use .2",
    )
    events = await finish(turn)
    end = next(e.event for e in events if e.type == "tool_end")
    assert end.status == "rejected"  # type: ignore[union-attr]
    assert ran == []
    tool = (await saved(world, turn))[2]
    assert '"comment": "use .2"' in tool.content and "rejected" in tool.content
    assert tool.metadata["approval"]["decision"] == "reject"
    assert tool.metadata["approval"]["by"] == ALICE
    # The model saw the rejection and its comment in its next call.
    assert "use .2" in world.model.calls[1].messages[-1].content


async def test_a_second_decision_is_refused_and_only_the_owner_may_decide(world: World) -> None:
    lab(world)
    world.model.add(tool_reply(("set_ip", {"device": "PC1"})), text_reply("ok"), text_reply("T"))
    turn = await world.service.start_turn(world.request("change it"))
    asked = await next_approval(turn)
    with pytest.raises(SessionNotFoundError):
        await world.service.decide(
            SessionKey(PROJECT, turn.session_id, BOB), asked.approval_id, approve=True
        )
    with pytest.raises(ApprovalNotFoundError):
        await world.service.decide(
            SessionKey(PROJECT, turn.session_id, ALICE), "no-such", approve=True
        )
    await world.service.decide(
        SessionKey(PROJECT, turn.session_id, ALICE), asked.approval_id, approve=True
    )
    with pytest.raises(ConflictError):
        await world.service.decide(
            SessionKey(PROJECT, turn.session_id, ALICE), asked.approval_id, approve=False
        )
    await finish(turn)


async def test_an_unanswered_approval_lapses_as_rejected(world: World) -> None:
    lab(world)
    world.runner_settings = RunnerSettings(approval_timeout=0.05)
    world.model.add(tool_reply(("set_ip", {"device": "PC1"})), text_reply("ok"), text_reply("T"))
    turn = await world.service.start_turn(world.request("change it"))
    asked = await next_approval(turn)
    events = await finish(turn)
    resolved = next(e.event for e in events if e.type == "approval_resolved")
    assert (resolved.decision, resolved.reason) == ("reject", "timeout")  # type: ignore[union-attr]
    assert (await saved(world, turn))[2].metadata["approval"]["reason"] == "timeout"
    with pytest.raises((ConflictError, ApprovalNotFoundError)):
        await world.service.decide(
            SessionKey(PROJECT, turn.session_id, ALICE), asked.approval_id, approve=True
        )


async def test_abort_cancels_a_pending_approval(world: World) -> None:
    ran = lab(world)
    world.model.add(tool_reply(("set_ip", {"device": "PC1"})))
    turn = await world.service.start_turn(world.request("change it"))
    await next_approval(turn)
    assert await world.service.abort(SessionKey(PROJECT, turn.session_id, ALICE))
    events = await finish(turn)
    types = [e.type for e in events]
    assert types[-2:] == ["abort", "done"]
    assert "approval_resolved" in types
    assert ran == []
    history = await saved(world, turn)
    assert [m.role.value for m in history] == ["user", "assistant", "tool"]
    assert history[2].content == '{\n  "status": "aborted"\n}'


async def test_a_client_that_reattaches_after_the_request_sees_it_pending(world: World) -> None:
    lab(world)
    world.model.add(tool_reply(("set_ip", {"device": "PC1"})), text_reply("ok"), text_reply("T"))
    turn = await world.service.start_turn(world.request("change it"))
    asked = await next_approval(turn)
    state = await world.service.runner.attach(SessionKey(PROJECT, turn.session_id, ALICE))
    assert state is not None
    assert [e.event for e in state.pending] == [asked]
    # Heartbeats go on while the turn waits.
    async with asyncio.timeout(5):
        async for stamped in turn.subscribe(after=10_000, heartbeat=0.02):
            assert stamped.type == "heartbeat"
            break
    await world.service.decide(
        SessionKey(PROJECT, turn.session_id, ALICE), asked.approval_id, approve=True
    )
    await finish(turn)
    after = await world.service.runner.attach(SessionKey(PROJECT, turn.session_id, ALICE))
    assert after is not None and after.pending == ()


@pytest.mark.parametrize(
    ("policy", "asked_for"),
    [
        (ApprovalPolicy.NEVER, []),
        (ApprovalPolicy.CHANGES, ["set_ip"]),
        (ApprovalPolicy.ALWAYS, ["show_ip", "set_ip"]),
    ],
)
async def test_the_users_policy_decides_which_calls_wait(
    world: World, policy: ApprovalPolicy, asked_for: list[str]
) -> None:
    lab(world, policy)
    world.model.add(
        tool_reply(("show_ip", {"device": "PC1"}), ("set_ip", {"device": "PC1"})),
        text_reply("ok"),
        text_reply("T"),
    )
    turn = await world.service.start_turn(world.request("look, then change"))
    asked: list[str] = []
    async with asyncio.timeout(10):
        async for stamped in turn.subscribe():
            if isinstance(stamped.event, ApprovalRequiredEvent):
                asked.append(stamped.event.tool_name)
                await world.service.decide(
                    SessionKey(PROJECT, turn.session_id, ALICE),
                    stamped.event.approval_id,
                    approve=True,
                )
    assert sorted(asked) == sorted(asked_for)


async def test_the_executor_learns_that_a_call_was_approved_and_by_whom(world: World) -> None:
    world.tools.add("set_ip", lambda args, ctx: "ok", changes=configure)
    world.tools.add("show_ip", lambda args, ctx: "10.0.0.1/24")
    world.selection = ModelSelection(world.model, approval=ApprovalPolicy.CHANGES)
    world.model.add(
        tool_reply(("show_ip", {"device": "PC1"}), ("set_ip", {"device": "PC1"})),
        text_reply("ok"),
        text_reply("T"),
    )
    turn = await world.service.start_turn(world.request("look, then change"))
    asked = await next_approval(turn)
    await world.service.decide(
        SessionKey(PROJECT, turn.session_id, ALICE), asked.approval_id, approve=True
    )
    await finish(turn)
    seen = [clearance.approved for clearance in world.tools.clearances]
    assert seen[0] is None  # the read was not approved: it needed no approval
    approved = seen[1]
    assert approved is not None and approved.approve and approved.user_id == ALICE
