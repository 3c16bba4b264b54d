"""An approval is bound to the exact arguments it was given for (their digest): the gate
runs nothing else under it, whoever drives the exchange."""

from __future__ import annotations

import json
from contextlib import aclosing
from typing import Any

from copilot_core import AbortToken, CopilotMode, ParsedToolCall, ToolContext, ToolGate, ToolStatus
from copilot_core.ports import (
    ApprovalDecision,
    ApprovalPolicy,
    ApprovalRequest,
    ChangePreview,
    ToolResult,
    call_digest,
)
from copilot_core.testing import FakeToolExecutor

PC1 = {"device": "PC1", "address": "10.0.0.9/24"}
OTHER = {"device": "PC1", "address": "10.0.0.77/24"}


def tools() -> FakeToolExecutor:
    return FakeToolExecutor().add(
        "set_ip",
        lambda args, ctx: "ok",
        changes=lambda args: ChangePreview("set an address", devices={"PC1": [args["address"]]}),
    )


def call(arguments: dict[str, Any]) -> ParsedToolCall:
    return ParsedToolCall.parse("call-1", "set_ip", json.dumps(arguments))


def context(policy: ApprovalPolicy = ApprovalPolicy.CHANGES) -> ToolContext:
    return ToolContext("p", "alice", "s", CopilotMode.LAB_AUTOMATION_ASSISTANT, AbortToken(), "t",
                       approval=policy)  # fmt: skip


async def exchange(
    gate: ToolGate, the_call: ParsedToolCall, answer: ApprovalDecision | None
) -> tuple[list[ApprovalRequest], ToolResult]:
    asked: list[ApprovalRequest] = []
    async with aclosing(gate.exchange(the_call, context())) as flow:
        step = await anext(flow)
        while isinstance(step, ApprovalRequest):
            asked.append(step)
            step = await flow.asend(answer)
        return asked, step


def test_the_digest_is_of_the_tool_and_its_canonical_arguments() -> None:
    assert call_digest("set_ip", {"b": 1, "a": "é"}) == call_digest("set_ip", {"a": "é", "b": 1})
    assert call_digest("set_ip", PC1) != call_digest("set_ip", OTHER)
    assert call_digest("set_ip", PC1) != call_digest("show_ip", PC1)
    assert call_digest("set_ip", PC1).startswith("sha256:") and len(call_digest("x", {})) == 71


async def test_the_request_carries_the_full_arguments_and_their_digest() -> None:
    fake = tools()
    approve = ApprovalDecision(True, "alice", digest=call_digest("set_ip", PC1))
    asked, result = await exchange(ToolGate(fake), call(PC1), approve)

    assert [(r.tool_name, dict(r.arguments), r.digest) for r in asked] == [
        ("set_ip", PC1, call_digest("set_ip", PC1))
    ]
    assert result.status is ToolStatus.SUCCESS
    assert [c.arguments for c in fake.executed] == [PC1]
    assert result.metadata is not None
    assert result.metadata["approval"]["digest"] == call_digest("set_ip", PC1)
    # The assessment made before asking travels with the call: assessed once.
    assert fake.clearances[0].assessment is not None
    assert fake.clearances[0].assessment.preview == ChangePreview(
        "set an address", devices={"PC1": ["10.0.0.9/24"]}
    )


async def test_a_decision_for_other_arguments_runs_nothing() -> None:
    fake = tools()
    for_other = ApprovalDecision(True, "alice", digest=call_digest("set_ip", OTHER))
    _, answered = await exchange(ToolGate(fake), call(PC1), for_other)
    made_before = await ToolGate(fake).call(call(PC1), context(), decision=for_other)
    unbound = await ToolGate(fake).call(call(PC1), context(), decision=ApprovalDecision(True))

    for result in (answered, made_before, unbound):
        assert result.status is ToolStatus.REJECTED
        assert "does not cover this call" in result.output["error"]
    assert fake.executed == []


async def test_a_decision_made_beforehand_runs_its_own_call_only() -> None:
    fake = tools()
    mine = ApprovalDecision(True, "alice", digest=call_digest("set_ip", PC1))
    ran = await ToolGate(fake).call(call(PC1), context(ApprovalPolicy.NEVER), decision=mine)
    other = await ToolGate(fake).call(call(OTHER), context(ApprovalPolicy.NEVER), decision=mine)

    assert ran.status is ToolStatus.SUCCESS
    assert fake.clearances[0].approved == mine
    assert other.status is ToolStatus.REJECTED
    assert [c.arguments for c in fake.executed] == [PC1]


async def test_a_call_that_must_wait_is_refused_when_no_one_can_decide() -> None:
    fake = tools()
    asked, result = await exchange(ToolGate(fake), call(PC1), None)
    direct = await ToolGate(fake).call(call(PC1), context())

    assert len(asked) == 1
    for refused in (result, direct):
        assert refused.status is ToolStatus.ERROR
        assert "no one can approve it here" in refused.output["error"]
    assert fake.executed == []


async def test_a_decision_sent_in_is_bound_by_the_gate_to_the_request_it_answers() -> None:
    # Whoever drives the exchange (the runner, the MCP endpoint, eval) sends the decision
    # as it came; the gate binds it to the card it answers, and checks it there.
    fake = tools()
    asked, result = await exchange(ToolGate(fake), call(PC1), ApprovalDecision(True, "alice"))

    assert result.status is ToolStatus.SUCCESS
    assert [c.arguments for c in fake.executed] == [PC1]
    assert fake.clearances[0].approved == ApprovalDecision(True, "alice", digest=asked[0].digest)
    assert result.metadata is not None
    assert result.metadata["approval"]["digest"] == call_digest("set_ip", PC1)
