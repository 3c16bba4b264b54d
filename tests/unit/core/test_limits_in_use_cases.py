"""The user's limits travel with every core request and are applied once, by its use case:
a turn (its mode: refused when asked above, capped when it comes from the session), and
every tool call, through the gate (a mode above is refused before anything runs, an
approval setting below is raised). The rollback's check is in ``test_rollback``."""

from __future__ import annotations

import json
from contextlib import aclosing

import pytest

from copilot_core import (
    AbortToken,
    CopilotMode,
    ParsedToolCall,
    SessionKey,
    ToolContext,
    ToolGate,
    ToolResult,
)
from copilot_core.errors import PermissionDeniedError
from copilot_core.policy import UNLIMITED, UserLimits
from copilot_core.ports import ApprovalPolicy, ApprovalRequest, ChangePreview, ModelSelection
from copilot_core.testing import FakeToolExecutor, text_reply, tool_reply

from .conftest import ALICE, PROJECT, World, as_dict

TEACHING, LAB = CopilotMode.TEACHING_ASSISTANT, CopilotMode.LAB_AUTOMATION_ASSISTANT
STUDENT = UserLimits(max_mode=TEACHING, mode_rule="group students")
ASKED = UserLimits(min_approval=ApprovalPolicy.CHANGES, approval_rule="default")
REFUSAL = (
    "needs the copilot mode 'lab_automation_assistant', but the operator's policy (group "
    "students) allows at most 'teaching_assistant'; allowed: teaching_assistant."
)


def lab() -> FakeToolExecutor:
    return FakeToolExecutor().add(
        "set_ip",
        lambda args, ctx: "ok",
        changes=lambda args: ChangePreview("set an address", devices={"PC1": ["ip 10.0.0.9"]}),
    )


def context(
    mode: CopilotMode = LAB,
    limits: UserLimits = UNLIMITED,
    approval: ApprovalPolicy = ApprovalPolicy.NEVER,
) -> ToolContext:
    return ToolContext("p", "alice", "s", mode, AbortToken(), "t", approval=approval, limits=limits)


CALL = ParsedToolCall.parse("call-1", "set_ip", json.dumps({"address": "10.0.0.9/24"}))


async def first_step(gate: ToolGate, ctx: ToolContext) -> ApprovalRequest | ToolResult:
    async with aclosing(gate.exchange(CALL, ctx)) as flow:
        return await anext(flow)


# ======================================================================== the gate
async def test_the_gate_refuses_a_call_in_a_mode_above_the_callers_before_anything_runs() -> None:
    tools = lab()
    gate = ToolGate(tools)

    with pytest.raises(PermissionDeniedError) as refused:
        await first_step(gate, context(LAB, STUDENT))
    with pytest.raises(PermissionDeniedError):
        gate.offered(LAB, STUDENT)
    with pytest.raises(PermissionDeniedError):
        async with aclosing(gate.run([CALL], context(LAB, STUDENT))) as events:
            await anext(events)

    assert str(refused.value) == f"Calling the copilot's tools in this mode {REFUSAL}"
    assert tools.executed == []
    assert [spec.name for spec in gate.offered(TEACHING, STUDENT)] == ["set_ip"]


async def test_the_gate_raises_an_approval_setting_below_the_callers_least() -> None:
    gate = ToolGate(lab())

    asked = await first_step(gate, context(limits=ASKED))
    unasked = await first_step(gate, context(limits=UNLIMITED))

    assert isinstance(asked, ApprovalRequest) and asked.tool_name == "set_ip"
    assert isinstance(unasked, ToolResult) and unasked.output == "ok"
    assert gate.admit(context(limits=ASKED)).approval is ApprovalPolicy.CHANGES
    assert gate.admit(context(approval=ApprovalPolicy.ALWAYS, limits=ASKED)).approval is (
        ApprovalPolicy.ALWAYS
    )


# ======================================================================== a turn
async def test_a_turn_asking_for_a_mode_above_the_users_is_refused_and_stores_nothing() -> None:
    world = World()

    with pytest.raises(PermissionDeniedError) as refused:
        await world.service.start_turn(world.request(copilot_mode=LAB, limits=STUDENT))

    assert str(refused.value) == f"This message {REFUSAL}"
    assert await world.store.list_sessions(PROJECT, ALICE) == []
    assert world.model.calls == []


async def test_a_turns_calls_carry_the_limits_and_the_gate_raises_their_approval() -> None:
    world = World(tools=lab())
    world.selection = ModelSelection(world.model, approval=ApprovalPolicy.NEVER)
    world.model.add(tool_reply(("set_ip", {"address": "10.0.0.9/24"})), text_reply("done"))

    turn = await world.service.start_turn(world.request("set it", copilot_mode=LAB, limits=ASKED))
    kinds: list[str] = []
    async with aclosing(turn.subscribe()) as events:
        async for stamped in events:
            kinds.append(as_dict(stamped)["type"])  # type: ignore[arg-type]
            if kinds[-1] == "approval_required":  # "never" would have run it at once
                await world.service.abort(SessionKey(PROJECT, turn.session_id, ALICE))
    assert "approval_required" in kinds, kinds
    assert world.tools.executed == []  # aborted while it waited: nothing ran
