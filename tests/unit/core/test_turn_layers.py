"""The turn engine in layers (issue 37): the runner mints the user's message once (the
stored message is the one the model reads), an approval's answer is one future (the
decision completes the very future the call waits on), and a remembered approval is
answered inside the gate."""

from __future__ import annotations

import asyncio
import json
from contextlib import aclosing
from typing import Any

from copilot_core import AbortToken, CopilotMode, ParsedToolCall, ToolContext, ToolGate, ToolStatus
from copilot_core._asking import TurnApprovals
from copilot_core._toolgate import TurnDecisions
from copilot_core.bootstrap import InMemoryTurnControlRelay
from copilot_core.events import (
    ApprovalNeeded,
    ApprovalRequiredEvent,
    ApprovalResolvedEvent,
    ToolEndEvent,
    WireEvent,
)
from copilot_core.ports import (
    ApprovalDecision,
    ApprovalPolicy,
    ApprovalRequest,
    ChangePreview,
    DecisionOutcome,
    Role,
    TurnControl,
    TurnInfo,
)
from copilot_core.testing import FakeToolExecutor, ScriptedLanguageModel, text_reply

from .conftest import World

PC1 = {"device": "PC1", "address": "10.0.0.9/24"}
PC2 = {"device": "PC2", "address": "10.0.0.10/24"}


# ------------------------------------------------------------- one user message
async def test_the_question_the_model_reads_is_the_one_the_store_keeps(world: World) -> None:
    world.title_model = ScriptedLanguageModel(default=text_reply("Title"))
    world.model.add(text_reply("Hi."))
    first = await world.turn("hello")
    world.model.add(text_reply("Again."))
    await world.turn("and again", session_id=first[0]["session_id"])

    stored = [m for m in await world.messages(str(first[0]["session_id"])) if m["role"] == "user"]
    read = [
        next(m for m in reversed(call.messages) if m.role is Role.USER)
        for call in world.model.calls
    ]
    assert [m["content"] for m in stored] == ["hello", "and again"]
    # One message each: the id and the time the model reads are the stored ones.
    assert [m.id for m in read] == [m["id"] for m in stored]
    assert [m.metadata["created_at"] for m in read] == [m["metadata"]["created_at"] for m in stored]


# -------------------------------------------------------- one future per approval
def request(arguments: dict[str, Any]) -> ApprovalRequest:
    return ApprovalRequest(
        "", "call-1", "set_ip", arguments, ChangePreview("set an address", devices={"PC1": []})
    )


class Published(list[WireEvent]):
    def resolved(self) -> list[ApprovalResolvedEvent]:
        return [e for e in self if isinstance(e, ApprovalResolvedEvent)]

    def approval_id(self) -> str:
        return next(e.approval_id for e in self if isinstance(e, ApprovalRequiredEvent))


async def test_a_decision_completes_the_very_future_the_call_waits_on() -> None:
    loop = asyncio.get_running_loop()
    relay = InMemoryTurnControlRelay()
    control = TurnControl()
    info = TurnInfo("turn-1", "p", "s", "alice")
    await relay.attach(info, control)
    published = Published()
    ids = iter(["ap-1", "ap-2"])
    approvals = TurnApprovals(
        control,
        lambda: next(ids),
        published.append,
        600.0,
        expect=lambda approval_id: relay.expect(info, approval_id),
    )
    needed = ApprovalNeeded(request(PC1), loop.create_future())
    await approvals.ask(needed)

    decision = ApprovalDecision(True, "alice")
    outcome = await relay.send_decision("p", "s", published.approval_id(), decision)
    # No hop in between: the call's own future holds the decision at once.
    assert outcome is DecisionOutcome.ACCEPTED
    assert needed.waiting.done() and needed.waiting.result() == decision
    await asyncio.sleep(0)  # its callback publishes the outcome
    assert [(e.approval_id, e.decision) for e in published.resolved()] == [("ap-1", "approve")]


async def test_a_call_cancelled_while_it_waits_resolves_its_approval_as_aborted() -> None:
    control = TurnControl()
    published = Published()
    approvals = TurnApprovals(control, lambda: "ap-1", published.append, 600.0)
    needed = ApprovalNeeded(request(PC1), asyncio.get_running_loop().create_future())
    waiting = asyncio.ensure_future(needed.decision())
    await approvals.ask(needed)
    await asyncio.sleep(0)

    waiting.cancel()  # the turn's abort cancels the gate's calls
    await asyncio.sleep(0)
    await asyncio.sleep(0)

    assert [(e.decision, e.reason) for e in published.resolved()] == [("reject", "aborted")]
    late = control.decide("ap-1", ApprovalDecision(True, "alice"))
    assert late is DecisionOutcome.ALREADY_DECIDED
    approvals.settle("aborted")  # the turn's end finds nothing left to resolve
    assert len(published.resolved()) == 1


# ---------------------------------------------------- the gate remembers decisions
def tools() -> FakeToolExecutor:
    return FakeToolExecutor().add(
        "set_ip",
        lambda args, ctx: "ok",
        changes=lambda args: ChangePreview("set an address", devices={args["device"]: []}),
    )


def context() -> ToolContext:
    return ToolContext("p", "alice", "s", CopilotMode.LAB_AUTOMATION_ASSISTANT, AbortToken(),
                       approval=ApprovalPolicy.CHANGES)  # fmt: skip


async def run_reply(
    gate: ToolGate,
    decided: TurnDecisions,
    call_id: str,
    arguments: dict[str, Any],
    answer: ApprovalDecision,
) -> tuple[list[ApprovalNeeded], ToolEndEvent]:
    """One reply with one call through ``gate.run``; each question answered ``answer``."""
    asked: list[ApprovalNeeded] = []
    ends: list[ToolEndEvent] = []
    call = ParsedToolCall.parse(call_id, "set_ip", json.dumps(arguments))
    async with aclosing(gate.run([call], context(), decided=decided)) as events:
        async for event in events:
            if isinstance(event, ApprovalNeeded):
                asked.append(event)
                event.answer(answer)
            elif isinstance(event, ToolEndEvent):
                ends.append(event)
    (end,) = ends
    return asked, end


async def test_the_gate_answers_an_identical_call_from_the_turns_decisions() -> None:
    fake = tools()
    gate = ToolGate(fake)
    decided = TurnDecisions()
    approve = ApprovalDecision(True, "alice")

    first, ran = await run_reply(gate, decided, "call-1", PC1, approve)
    # The model tries the same change again (keys in another order): not asked again.
    again, ran_again = await run_reply(
        gate, decided, "call-2", {"address": PC1["address"], "device": "PC1"}, approve
    )
    other, _ = await run_reply(gate, decided, "call-3", PC2, approve)

    assert [len(first), len(again), len(other)] == [1, 0, 1]
    assert ran.status == ran_again.status == ToolStatus.SUCCESS.value
    assert ran_again.metadata is not None and ran.metadata is not None
    assert ran_again.metadata["approval"] == ran.metadata["approval"]  # the user's decision
    assert [c.id for c in fake.executed] == ["call-1", "call-2", "call-3"]


async def test_a_lapsed_approval_is_not_remembered() -> None:
    gate = ToolGate(tools())
    decided = TurnDecisions()
    lapsed = ApprovalDecision(False, reason="timeout")

    first, end = await run_reply(gate, decided, "call-1", PC1, lapsed)
    again, _ = await run_reply(gate, decided, "call-2", PC1, ApprovalDecision(True, "alice"))

    assert end.status == ToolStatus.REJECTED.value
    assert [len(first), len(again)] == [1, 1]  # nobody decided: asked again
