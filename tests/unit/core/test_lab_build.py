"""``LabBuilds``: a shown plan built on the user's click, as the core runs it — the tool
source's build call (its ``LabBuildCalls``; the core names no tool) through a real
``ToolGate`` (here over the core's fake tool source and probes), bound to the plan shown,
the session held while it runs, recorded in the history. The GNS3 build itself is proven
over HTTP against the real server (``tests/api/test_lab_build_http.py``)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import pytest

from copilot_core import CopilotMode, Session, SessionKey, ToolGate
from copilot_core.bootstrap import InMemorySessionLeases
from copilot_core.errors import PermissionDeniedError, SessionBusyError
from copilot_core.intent import CheckProbe, VerificationPlan
from copilot_core.labs import (
    LabBuildRequest,
    LabBuilds,
    LabPlan,
    LabPlanError,
    PlanChangedError,
    PlanProblem,
    PlanProblems,
    ResolvedNode,
    ResolvedPlan,
    parse_plan,
    plan_data,
    plan_fingerprint,
)
from copilot_core.policy import UserLimits
from copilot_core.ports import (
    ChangePreview,
    FunctionCall,
    ToolContext,
    ToolProgress,
    ToolResult,
    call_digest,
)
from copilot_core.testing import (
    FakeCheckProbes,
    FakeToolExecutor,
    FakeWaitClock,
    InMemoryCheckpointStore,
    SequentialIds,
    SteppingClock,
)

PROJECT, SESSION, USER = "p-1", "s-1", "u-1"
KEY = SessionKey(PROJECT, SESSION, USER)
DOC: dict[str, Any] = {
    "nodes": [{"name": "PC1", "platform": "vpcs"}, {"name": "PC2", "platform": "vpcs"}],
    "links": ["PC1:e0-PC2:e0"],
    "addressing": {"PC1:e0": "10.0.0.1/24", "PC2:e0": "10.0.0.2/24"},
    "config": {"PC1": ["ip 10.0.0.1/24"], "PC2": ["ip 10.0.0.2/24"]},
    "checks": [{"kind": "reachability", "from": "PC1", "to": "10.0.0.2"}],
}


#: The build tool of this test's tool source: only the tool source names it.
BUILD = "build_the_lab"


class Calls:
    """The tool source's build call (``LabBuildCalls``)."""

    def build_call(
        self,
        plan: LabPlan,
        *,
        on_fail: str = "rollback",
        wait_s: float | None = None,
        base: str | None = None,
    ) -> FunctionCall:
        made = arguments(plan, on_fail, wait_s, base)
        return FunctionCall(name=BUILD, arguments=json.dumps(made))


def arguments(
    plan: LabPlan, on_fail: str = "rollback", wait_s: float | None = None, base: str | None = None
) -> Any:
    made: dict[str, Any] = {"plan": plan_data(plan)}
    if on_fail != "rollback":
        made["on_fail"] = on_fail
    if wait_s is not None:
        made["wait_s"] = wait_s
    if base is not None:
        made["relative"], made["base"] = True, base
    return made


class Planner:
    def __init__(self, problems: tuple[PlanProblem, ...] = ()) -> None:
        self.problems = problems

    async def resolve(self, plan: LabPlan, context: ToolContext) -> ResolvedPlan | PlanProblems:
        if self.problems:
            return PlanProblems(self.problems)
        return ResolvedPlan(plan, tuple(ResolvedNode(n.name, "tpl") for n in plan.nodes), ())

    async def current(self, context: ToolContext) -> LabPlan:
        raise NotImplementedError


class Steps:
    """A build as a verified change: applied, its checks answered by the fake probes."""

    def __init__(self, plan: VerificationPlan, probe: CheckProbe, context: ToolContext) -> None:
        self.plan, self.probe, self.interval = plan, probe, 0.0
        self.context = context

    async def restore_point(self) -> ToolResult | None:
        return None

    async def apply(self) -> ToolResult:
        self.context.report_progress("creating 2 node(s)\n")
        return ToolResult({"nodes": [{"name": "PC1", "created": True}]})

    async def roll_back(self) -> ToolResult | None:
        return ToolResult({"status": "success"})

    async def observed(self, rolled_back: bool) -> Mapping[str, Any]:
        return {}


class BuildTools(FakeToolExecutor):
    """``build_lab``: a verified change when the plan has checks, else built plainly."""

    async def change_steps(self, call: Any, context: ToolContext, assessment: Any) -> Any:
        plan = parse_plan(call.arguments["plan"])
        if not plan.checks:
            return None
        verification = VerificationPlan(plan.checks, (), call.arguments.get("on_fail", "rollback"))
        return Steps(verification, FakeCheckProbes().probe(context), context)


def built(arguments: dict[str, Any], context: ToolContext) -> ToolResult:
    context.report_progress("creating 2 node(s)\n")
    return ToolResult({"nodes": [{"name": "PC1", "created": True}]})


@pytest.fixture
async def world() -> dict[str, Any]:
    store, leases = InMemoryCheckpointStore(), InMemorySessionLeases()
    now = datetime.now(UTC)
    await store.create_session(
        Session(thread_id=SESSION, user_id=USER, project_id=PROJECT, created_at=now,
                updated_at=now)
    )  # fmt: skip
    tools = BuildTools().add(
        BUILD,
        built,
        modes=[CopilotMode.LAB_AUTOMATION_ASSISTANT],
        changes=lambda args: ChangePreview("build the lab"),
    )
    gate = ToolGate(tools, wait_clock=FakeWaitClock())
    builds = LabBuilds(
        gate, Planner(), Calls(), store, leases, clock=SteppingClock(), ids=SequentialIds()
    )
    return {"store": store, "leases": leases, "tools": tools, "builds": builds}


def request(doc: dict[str, Any], **extra: Any) -> LabBuildRequest:
    plan = parse_plan(doc)
    digest = call_digest(BUILD, arguments(plan))  # the plan alone, as its answer gives it
    return LabBuildRequest(KEY, plan, digest, credentials="token", **extra)


async def test_a_checked_plan_is_built_as_the_one_gated_call_and_recorded(
    world: dict[str, Any],
) -> None:
    said: list[ToolProgress] = []
    outcome = await world["builds"](request(DOC, on_fail="keep", progress=said.append))

    assert outcome.status == "pass"
    assert outcome.output["verification"]["status"] == "pass"
    assert "creating 2 node(s)\n" in [p.text for p in said]
    # The call that ran is the tool source's, with the plan and on_fail, approved by the click.
    made = arguments(parse_plan(DOC), on_fail="keep")
    assert set(made) == {"plan", "on_fail"} and made["on_fail"] == "keep"
    assert world["builds"].digest(parse_plan(DOC)) == call_digest(BUILD, {"plan": made["plan"]})
    assistant, tool = (await world["store"].history(PROJECT, SESSION)).messages
    assert assistant.tool_calls[0].function.name == BUILD
    assert json.loads(assistant.tool_calls[0].function.arguments) == made
    assert assistant.metadata["lab_build"]["status"] == "pass"
    assert tool.tool_call_id == outcome.call_id == assistant.tool_calls[0].id
    approval = tool.metadata["approval"]
    assert approval["decision"] == "approve" and approval["by"] == USER
    assert approval["digest"] == call_digest(BUILD, made)
    # The session is free again.
    claim = await world["leases"].claim(PROJECT, SESSION, "turn-after")
    await world["leases"].release(claim)


async def test_a_plan_without_checks_is_built_unchecked(world: dict[str, Any]) -> None:
    plain = {k: v for k, v in DOC.items() if k != "checks"}
    outcome = await world["builds"](request(plain))
    assert outcome.status == "unchecked"
    [call] = world["tools"].executed
    assert call.arguments == {"plan": arguments(parse_plan(plain))["plan"]}


async def test_nothing_is_built_when_refused(world: dict[str, Any]) -> None:
    builds: LabBuilds = world["builds"]
    other = parse_plan({**DOC, "nodes": [*DOC["nodes"][:1], {"name": "PC2", "platform": "vpcs",
                                                               "x": 5}]})  # fmt: skip
    with pytest.raises(PlanChangedError):
        await builds(LabBuildRequest(KEY, other, builds.digest(parse_plan(DOC))))
    with pytest.raises(PermissionDeniedError):
        await builds(request(DOC, limits=UserLimits(max_mode=CopilotMode.TEACHING_ASSISTANT)))
    claim = await world["leases"].claim(PROJECT, SESSION, "turn-1")
    with pytest.raises(SessionBusyError):
        await builds(request(DOC))
    await world["leases"].release(claim)
    refusing = LabBuilds(
        ToolGate(world["tools"]),
        Planner((PlanProblem("nodes[0].template", "no such template"),)),
        Calls(),
        world["store"],
        world["leases"],
        clock=SteppingClock(),
        ids=SequentialIds(),
    )
    with pytest.raises(LabPlanError) as refused:
        await refusing(request(DOC))
    assert [p.field for p in refused.value.problems] == ["nodes[0].template"]
    assert world["tools"].executed == []
    assert (await world["store"].history(PROJECT, SESSION)).messages == []


async def test_a_relative_build_is_bound_to_its_base_and_makes_the_relative_call(
    world: dict[str, Any],
) -> None:
    plan, base = parse_plan(DOC), plan_fingerprint(parse_plan(DOC))
    builds = world["builds"]
    assert builds.digest(plan, base) == call_digest(BUILD, arguments(plan, base=base))
    assert builds.digest(plan, base) != builds.digest(plan)
    # The plan's digest alone does not cover its relative build, nor another base's.
    with pytest.raises(PlanChangedError):
        await builds(LabBuildRequest(KEY, plan, builds.digest(plan), base=base))
    other = plan_fingerprint(None)
    with pytest.raises(PlanChangedError):
        await builds(LabBuildRequest(KEY, plan, builds.digest(plan, other), base=base))
    outcome = await builds(
        LabBuildRequest(KEY, plan, builds.digest(plan, base), base=base, credentials="token")
    )
    assert outcome.status == "pass"
    assistant, _ = (await world["store"].history(PROJECT, SESSION)).messages
    made = json.loads(assistant.tool_calls[0].function.arguments)
    assert (made["relative"], made["base"]) == (True, base)
    assert assistant.content.startswith(f"{USER} built the change to the lab")


def test_a_plans_fingerprint_is_its_data_whatever_the_order_of_its_keys() -> None:
    plan = parse_plan(DOC)
    assert plan_fingerprint(plan) == plan_fingerprint(parse_plan(dict(reversed(DOC.items()))))
    moved = {**DOC, "nodes": [{**DOC["nodes"][0], "x": 1}, *DOC["nodes"][1:]]}
    assert plan_fingerprint(parse_plan(moved)) != plan_fingerprint(plan)
    assert plan_fingerprint(None).startswith("sha256:") and len(plan_fingerprint(None)) == 71
