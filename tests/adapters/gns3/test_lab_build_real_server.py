"""``Gns3LabBuilder`` and the ``build_lab`` tool against a real gns3-server 3.0.6.

The server here has no VPCS binary (its starts are refused with GNS3's own 409) and no
Docker: what is proven is everything short of a console: nodes made from their templates
at their positions under the plan's names, links between the resolved port numbers, a
node the project already has kept, each start's refusal reported per node, and the build
run through the gate as ONE verified change: one approval whose card shows the nodes,
links, every device's lines and the checks; the checks failing (the PCs never start); the
build rolled back to the project as it was, read back from GNS3 (with a restore point
kept with the conversation, and without one: what the build made deleted). A plan the
planner refuses, or a plan that is not one, changes nothing. Configuration over consoles
is proven on the real router lab (``tests/lab/test_lab_build_lab.py``).

The planner is the test's (the GNS3 planner is written beside this): it resolves each
node to the server's VPCS template and each ``PCx:e0`` port to adapter 0, port 0, read
from the real server's templates.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import pytest

from adapters.gns3 import ConsoleRunner, Gns3Client, Gns3ToolExecutor
from adapters.gns3.labs import BUILD_TOOL, Gns3LabBuilder, LabBuildTools
from copilot_core import AbortToken, CopilotMode, ParsedToolCall, Session, ToolContext, ToolGate
from copilot_core.labs import (
    LabPlan,
    PlanProblem,
    PlanProblems,
    ResolvedNode,
    ResolvedPlan,
    ResolvedPort,
    parse_plan,
)
from copilot_core.ports import (
    ApprovalDecision,
    ApprovalPolicy,
    ApprovalRequest,
    ToolStatus,
    call_digest,
)
from copilot_core.testing import InMemoryCheckpointStore
from tests.adapters.gns3.conftest import TWO_PCS_PLAN as PLAN
from tests.adapters.gns3.conftest import make_context

pytestmark = [pytest.mark.gns3, pytest.mark.timeout(300)]

SESSION = "session-1"


class VpcsPlanner:
    """The test's ``LabPlanner``: every node is the server's VPCS, every port its e0."""

    def __init__(self, client: Gns3Client, refuse: bool = False) -> None:
        self.client = client
        self.refuse = refuse
        self.resolved = 0

    async def resolve(self, plan: LabPlan, context: ToolContext) -> ResolvedPlan | PlanProblems:
        self.resolved += 1
        if self.refuse:
            return PlanProblems((PlanProblem("nodes[0].template", "no template 'Nope'"),))
        templates = await self.client.templates(context.credentials or "")
        vpcs = next(str(t["template_id"]) for t in templates if t["name"] == "VPCS")
        ports = [ResolvedPort(end, 0, 0) for link in plan.links for end in link.ends]
        nodes = tuple(ResolvedNode(n.name, vpcs) for n in plan.nodes)
        return ResolvedPlan(plan, nodes, tuple(ports))

    async def current(self, context: ToolContext) -> LabPlan:
        raise NotImplementedError


@pytest.fixture
async def store(project_id: str) -> InMemoryCheckpointStore:
    store = InMemoryCheckpointStore()
    now = datetime.now(UTC)
    await store.create_session(
        Session(
            thread_id=SESSION, user_id="user-1", project_id=project_id, created_at=now,
            updated_at=now,
        )
    )  # fmt: skip
    return store


@pytest.fixture
async def executor(
    gns3_client: Gns3Client, store: InMemoryCheckpointStore
) -> AsyncIterator[Gns3ToolExecutor]:
    runner = ConsoleRunner(command_timeout=1.0)
    yield Gns3ToolExecutor(gns3_client, runner=runner, restore_points=store)
    await runner.aclose()


def context(project_id: str, token: str, *, session: str = SESSION) -> ToolContext:
    return ToolContext(
        project_id=project_id,
        user_id="user-1",
        session_id=session,
        mode=CopilotMode.LAB_AUTOMATION_ASSISTANT,
        abort=AbortToken(),
        credentials=token,
        approval=ApprovalPolicy.CHANGES,
    )


def build_call(plan: dict[str, Any], **extra: Any) -> ParsedToolCall:
    return ParsedToolCall.parse("call-1", BUILD_TOOL, json.dumps({"plan": plan, **extra}))


async def lab_of(client: Gns3Client, token: str, project_id: str) -> dict[str, Any]:
    nodes = await client.nodes(token, project_id)
    links = await client.links(token, project_id)
    return {
        "nodes": sorted((n["name"], n["x"], n["y"]) for n in nodes),
        "links": sorted(
            sorted(
                (next(n["name"] for n in nodes if n["node_id"] == e["node_id"]),
                 e["adapter_number"], e["port_number"])
                for e in link["nodes"]
            )
            for link in links
        ),
    }  # fmt: skip


async def test_the_builder_makes_every_node_at_its_place_and_links_the_resolved_ports(
    gns3_client: Gns3Client, admin_token: str, project_id: str, executor: Gns3ToolExecutor
) -> None:
    # A node the project already has under a plan name is kept, not made again.
    vpcs = next(t for t in await gns3_client.templates(admin_token) if t["name"] == "VPCS")
    kept = await gns3_client.create_node_from_template(
        admin_token, project_id, str(vpcs["template_id"]), x=150, y=-40
    )
    await gns3_client.update_node(admin_token, project_id, kept["node_id"], name="PCB")
    resolved = await VpcsPlanner(gns3_client).resolve(
        parse_plan(PLAN), make_context(project_id, admin_token)
    )
    assert isinstance(resolved, ResolvedPlan)
    said: list[str] = []

    async def progress(text: str) -> None:
        said.append(text)

    report = await Gns3LabBuilder(executor.lab).build(
        resolved, make_context(project_id, admin_token), progress
    )

    assert await lab_of(gns3_client, admin_token, project_id) == {
        "nodes": [("PCA", -150, 40), ("PCB", 150, -40)],
        "links": [[("PCA", 0, 0), ("PCB", 0, 0)]],
    }
    assert [(n.name, n.created) for n in report.nodes] == [("PCA", True), ("PCB", False)]
    assert report.nodes[1].node_id == kept["node_id"]
    assert [(k.ends, k.created) for k in report.links] == [("PCA:e0-PCB:e0", True)]
    # GNS3 refuses to start a VPCS here: each refusal is said, and no device is configured.
    assert not report.ok
    assert {p.split(" ")[0] for p in report.problems if "was not started" in p} == {"PCA", "PCB"}
    assert all("VPCS" in p or "uBridge" in p for p in report.problems if "not started" in p)
    assert [(d.name, d.configured) for d in report.devices] == [("PCA", False), ("PCB", False)]
    assert report.to_dict()["status"] == "partial_success"
    assert said[0] == "creating 1 node(s), keeping 1 the project has\n"
    assert "PCA: created\n" in said and "linking 1 port pair(s)\n" in said
    assert "configuring 2 device(s), 4 at a time\n" in said


async def test_a_build_whose_checks_fail_is_rolled_back_to_the_project_as_it_was(
    gns3_client: Gns3Client,
    admin_token: str,
    project_id: str,
    executor: Gns3ToolExecutor,
    store: InMemoryCheckpointStore,
) -> None:
    tools = LabBuildTools(executor.lab, VpcsPlanner(gns3_client), executor.probes)
    gate = ToolGate(tools, timeout=200)
    ctx = context(project_id, admin_token)
    assert [s.name for s in gate.specs(CopilotMode.LAB_AUTOMATION_ASSISTANT)] == [BUILD_TOOL]
    assert gate.specs(CopilotMode.TEACHING_ASSISTANT) == []

    flow = gate.exchange(build_call(PLAN, wait_s=2), ctx)
    asked = await anext(flow)
    assert isinstance(asked, ApprovalRequest)
    card = asked.preview
    assert card.topology == [
        "create node PCA (vpcs) at (-150, 40)",
        "create node PCB (vpcs) at (150, -40)",
        "link PCA:e0 - PCB:e0 (10.9.0.0/24)",
        "start 2 node(s)",
    ]
    assert dict(card.devices) == {"PCA": ["ip 10.9.0.1/24"], "PCB": ["ip 10.9.0.2/24"]}
    assert card.verification is not None
    assert card.verification["labels"] == ["PCA reaches PCB"]
    assert card.verification["on_fail"] == "rollback"
    assert await lab_of(gns3_client, admin_token, project_id) == {"nodes": [], "links": []}

    result = await flow.asend(ApprovalDecision(True, user_id="user-1"))
    await flow.aclose()

    assert result.status is ToolStatus.ERROR
    output = result.output
    verification = output["verification"]
    assert output["status"] == "rolled_back", output
    assert verification["after"]["status"] != "pass"
    assert [c["name"] for c in verification["after"]["checks"]] == ["PCA reaches PCB"]
    assert "PCA reaches PCB" in output["error"]
    assert verification["rolled_back"] is True, verification.get("rollback")
    assert verification["lab_now"] == {"nodes": [], "links": []}
    # What the build made, named in its own result; then GNS3 itself: nothing is left.
    assert [n["name"] for n in output["nodes"] if n["created"]] == ["PCA", "PCB"]
    assert output["restore_point_id"] is not None
    assert await lab_of(gns3_client, admin_token, project_id) == {"nodes": [], "links": []}
    (point,) = await store.restore_points(project_id, SESSION)
    assert point.rolled_back is not None and point.rolled_back.by == "verification"


async def test_without_a_restore_point_the_rollback_deletes_what_the_build_made(
    gns3_client: Gns3Client, admin_token: str, project_id: str, executor: Gns3ToolExecutor
) -> None:
    vpcs = next(t for t in await gns3_client.templates(admin_token) if t["name"] == "VPCS")
    other = await gns3_client.create_node_from_template(
        admin_token, project_id, str(vpcs["template_id"]), x=0, y=300
    )
    await gns3_client.update_node(admin_token, project_id, other["node_id"], name="Other")
    before = await lab_of(gns3_client, admin_token, project_id)
    tools = LabBuildTools(executor.lab, VpcsPlanner(gns3_client), executor.probes)
    # A call from no conversation the store keeps (an MCP client's): no restore point.
    ctx = context(project_id, admin_token, session="not-a-conversation")
    call = build_call(PLAN, wait_s=0)
    digest = call_digest(call.name, dict(call.arguments or {}))
    decision = ApprovalDecision(True, user_id="user-1", digest=digest)
    result = await ToolGate(tools, timeout=200).call(call, ctx, decision=decision)

    output = result.output
    assert output["status"] == "rolled_back", output
    assert output["restore_point_id"] is None
    assert output["restore_point_notes"][0].startswith("no restore point was taken")
    rollback = output["verification"]["rollback"]
    assert rollback["deleted"] == {"links": ["PCA:e0-PCB:e0"], "nodes": ["PCA", "PCB"]}
    assert await lab_of(gns3_client, admin_token, project_id) == before


async def test_a_plan_that_cannot_be_built_changes_nothing(
    gns3_client: Gns3Client, admin_token: str, project_id: str, executor: Gns3ToolExecutor
) -> None:
    ctx = context(project_id, admin_token)
    refusing = VpcsPlanner(gns3_client, refuse=True)
    gate = ToolGate(LabBuildTools(executor.lab, refusing, executor.probes), timeout=60)
    refused = await gate.call(build_call(PLAN), ctx)
    assert refused.status is ToolStatus.ERROR
    assert refused.output["problems"] == ["nodes[0].template: no template 'Nope'"]
    assert "nothing was done" in refused.output["error"]

    bad = {**PLAN, "links": ["PCA:e0-PCZ:e0"]}
    planner = VpcsPlanner(gns3_client)
    gate = ToolGate(LabBuildTools(executor.lab, planner, executor.probes), timeout=60)
    wrong = await gate.call(build_call(bad), ctx)
    assert wrong.status is ToolStatus.ERROR
    problems = wrong.output["problems"]
    assert "links[0]: PCZ is not a node of the plan (PCA, PCB)" in problems, wrong.output
    assert planner.resolved == 0  # a plan that is not one never reaches the server
    assert await lab_of(gns3_client, admin_token, project_id) == {"nodes": [], "links": []}
