"""The gate runs a verified change: a tool source that gives ``ChangeSteps`` for a call has
its plan put on the approval card, and the gate, not the source's ``execute``, runs the
transaction over its steps, each step said as ``tool_progress``, the outcome made the
call's result once."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from copilot_core import (
    AbortToken,
    CopilotMode,
    ParsedToolCall,
    ToolContext,
    ToolGate,
    ToolResult,
)
from copilot_core.events import ApprovalNeeded, ToolEndEvent, ToolProgressEvent
from copilot_core.intent import (
    Check,
    CheckProbe,
    Observation,
    VerificationPlan,
    checks_adapter,
)
from copilot_core.ports import (
    ApprovalDecision,
    ApprovalPolicy,
    Assessment,
    ChangePreview,
    ChangeSteps,
    call_digest,
)
from copilot_core.testing import FakeToolExecutor, FakeWaitClock

ROUTE = checks_adapter.validate_python(
    [{"kind": "config_line", "node": "R1", "line": "ip route 10.9.0.0/16 Null0", "name": "route"}]
)[0]


@dataclass
class Lab:
    """A device whose one check holds once the change is made (unless ``breaks``)."""

    breaks: bool = False
    changed: bool = False
    log: list[str] = field(default_factory=list)

    async def observe(self, checks: Any) -> list[Observation]:
        self.log.append("check")
        holds = self.changed and not self.breaks
        return [Observation.passed({}) if holds else Observation.failed({}, "absent")] * len(checks)


@dataclass
class Steps:
    lab: Lab
    plan: VerificationPlan
    interval: float = 1.0

    @property
    def probe(self) -> CheckProbe:
        return self.lab

    async def restore_point(self) -> ToolResult | None:
        self.lab.log.append("restore point")
        return None

    async def apply(self) -> ToolResult:
        self.lab.log.append("apply")
        self.lab.changed = True
        return ToolResult({"status": "success", "restore_point_id": "rp-1"})

    async def roll_back(self) -> ToolResult | None:
        self.lab.log.append("roll back")
        self.lab.changed = False
        return ToolResult({"status": "success"})

    async def observed(self, rolled_back: bool) -> Mapping[str, Any]:
        return {"diff": {"rolled_back": rolled_back}}


class VerifyingTools(FakeToolExecutor):
    """Fake tools whose ``configure`` call is a verified change when it asks for checks."""

    def __init__(self, lab: Lab) -> None:
        super().__init__()
        self.lab = lab
        self.asked_for_steps: list[Assessment] = []
        self.add(
            "configure",
            lambda args, ctx: {"status": "success"},
            changes=lambda args: ChangePreview("configure R1", devices={"R1": ["ip route"]}),
        )

    async def change_steps(
        self, call: ParsedToolCall, context: ToolContext, assessment: Assessment
    ) -> ChangeSteps | None:
        self.asked_for_steps.append(assessment)
        checks: list[Check] = list(checks_adapter.validate_python((call.arguments or {})["verify"]))
        if not checks:
            return None
        return Steps(self.lab, VerificationPlan(tuple(checks), wait_s=3.0))


def configure(verify: list[Check]) -> ParsedToolCall:
    arguments = {"verify": [check.model_dump(by_alias=True) for check in verify]}
    return ParsedToolCall.parse("call-1", "configure", json.dumps(arguments))


def context() -> ToolContext:
    return ToolContext(
        "p",
        "alice",
        "s",
        CopilotMode.LAB_AUTOMATION_ASSISTANT,
        AbortToken(),
        "t",
        approval=ApprovalPolicy.CHANGES,
    )


async def run(lab: Lab, call: ParsedToolCall) -> tuple[VerifyingTools, list[Any]]:
    """The call through ``ToolGate.run`` (as the agent runs a reply's calls), approved."""
    tools = VerifyingTools(lab)
    gate = ToolGate(tools, wait_clock=FakeWaitClock(), progress_interval=0.0)
    events: list[Any] = []
    async for event in gate.run([call], context()):
        events.append(event)
        if isinstance(event, ApprovalNeeded):
            event.answer(ApprovalDecision(True, "alice"))
    return tools, events


async def test_the_card_shows_the_plan_and_the_gate_runs_the_steps_not_execute() -> None:
    lab = Lab()
    tools, events = await run(lab, configure([ROUTE]))

    needed = [e for e in events if isinstance(e, ApprovalNeeded)]
    assert len(needed) == 1
    card = needed[0].request.preview.to_dict()
    assert card["devices"] == {"R1": ["ip route"]}  # the source's preview, and the plan
    assert card["verification"]["labels"] == ["route"]
    assert card["verification"]["wait_s"] == 3.0
    assert tools.asked_for_steps[0].changes is True  # asked after the assessment
    assert tools.executed == []  # the source's execute never ran the change
    assert lab.log == ["check", "restore point", "apply", "check"]
    (end,) = [e for e in events if isinstance(e, ToolEndEvent)]
    assert end.status == "success"
    output = end.output
    assert output["restore_point_id"] == "rp-1"
    assert output["verification"]["status"] == "pass"
    assert output["verification"]["diff"] == {"rolled_back": False}
    assert end.metadata is not None and end.metadata["verification"] == "pass"
    digest = call_digest("configure", configure([ROUTE]).arguments or {})
    assert end.metadata["approval"]["digest"] == digest


async def test_each_step_is_an_event_of_the_turn_and_a_failed_check_rolls_back() -> None:
    lab = Lab(breaks=True)
    _, events = await run(lab, configure([ROUTE]))

    assert lab.log[:3] == ["check", "restore point", "apply"]
    assert "roll back" in lab.log and lab.log[-1] == "check"
    progress = "".join(e.text for e in events if isinstance(e, ToolProgressEvent))
    for step in (
        "before the change",
        "taking a restore point, then making the change",
        "after the change",
        "rolling it back",
        "after the rollback",
    ):
        assert step in progress, progress
    (end,) = [e for e in events if isinstance(e, ToolEndEvent)]
    assert end.status == "error"
    output = end.output
    assert output["status"] == "rolled_back" and output["verification"]["rolled_back"] is True
    assert output["verification"]["diff"] == {"rolled_back": True}


async def test_a_source_without_steps_for_the_call_runs_it_through_execute() -> None:
    lab = Lab()
    tools, events = await run(lab, configure([]))
    assert [c.name for c in tools.executed] == ["configure"]
    assert lab.log == []
    (end,) = [e for e in events if isinstance(e, ToolEndEvent)]
    assert end.status == "success" and "verification" not in end.output
