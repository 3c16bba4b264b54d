"""A lab built from a description on the real router lab (issue 39): ONE approval, ONE
verified change, proven on FRR routers and Linux hosts, then rolled back.

In an empty scratch project: ``plan_from_intent`` lays out three FRR routers in an OSPF
triangle with a Linux host behind each; the plan goes to ``build_lab`` through the gate
(resolved by :class:`~adapters.gns3.labs.Gns3LabPlanner` against the server), whose one
approval card shows the nodes, links, every device's lines and the checks. Approved, the
build runs: nodes, links, start, each device configured over its console; the plan's
checks hold. What is asserted is what the devices say through Docker, never the product:
every host pings every other, every OSPF adjacency is Full. The build is then rolled back
with its restore point (the user's undo) and GNS3 is read: no node, no link. Before that,
the built lab is exported as a plan file (``Gns3LabPlanner.current``, written as YAML and
read back): built in a second, empty project with the triangle's checks, the checks pass
again and that lab exports as the same plan (the round trip of a saved lab). Then "add a
fourth router between R2 and R3, with a host" is built relative to the triangle (only
the difference: R1 gets no line), proven, and rolled back to the triangle exactly.

A plan with a wrong mask on one link (R1's LAN interface configured /30 where its host
is in a /24) is built, fails its checks (H1 is cut off), and is rolled back: the failing
check is named, and GNS3 holds no node and no link again. Scratch projects are always
deleted. Figures are printed (``-s``).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
import yaml

from adapters.gns3 import ConsoleRunner, Gns3Client, Gns3ToolExecutor
from adapters.gns3.lab import CallScope
from adapters.gns3.labs import BUILD_TOOL, Gns3LabPlanner, LabBuildTools
from adapters.gns3.restore import roll_back
from copilot_core import AbortToken, CopilotMode, ParsedToolCall, Session, ToolContext, ToolGate
from copilot_core.labs import (
    HostIntent,
    LabIntent,
    diff,
    parse_plan,
    plan_data,
    plan_fingerprint,
    plan_from_intent,
)
from copilot_core.ports import (
    ApprovalDecision,
    ApprovalPolicy,
    ApprovalRequest,
    ToolProgress,
    ToolResult,
    ToolStatus,
)
from copilot_core.testing import InMemoryCheckpointStore
from tests.lab.lab_project import LabProject
from tests.lab.router_lab import HOST_TEMPLATE, ROUTER_TEMPLATE, RouterLab

pytestmark = [pytest.mark.timeout(1500), pytest.mark.gns3, pytest.mark.slow]

SESSION = "session-build"
FIGURES: dict[str, float] = {}
HOSTS = {"H1": "10.10.1.10", "H2": "10.10.2.10", "H3": "10.10.3.10"}


def triangle() -> dict[str, Any]:
    """The triangle's plan as a file holds it, the lab's templates named."""
    plan = plan_from_intent(
        LabIntent(
            summary="three FRR routers in a triangle running OSPF, a Linux host behind each",
            routers=("R1", "R2", "R3"),
            links=(("R1", "R2"), ("R2", "R3"), ("R3", "R1")),
            hosts=tuple(HostIntent(name=f"H{i}", behind=f"R{i}") for i in (1, 2, 3)),
            pool="10.10.0.0/16",
        )
    )
    data = plan_data(plan)
    for node in data["nodes"]:
        node["template"] = ROUTER_TEMPLATE if node["platform"] == "frr" else HOST_TEMPLATE
    return data


def wrong_mask() -> dict[str, Any]:
    """The triangle with R1's LAN interface configured /30: H1 (10.10.1.10/24) is then
    outside every subnet R1 and the others route to."""
    data = triangle()
    lines = data["config"]["R1"]
    lines[lines.index("ip address 10.10.1.1/24")] = "ip address 10.10.1.1/30"
    return data


@pytest.fixture
def scratch(router_lab: RouterLab) -> Iterator[LabProject]:
    token = router_lab.server.token()
    project = LabProject(router_lab, token, router_lab.server.new_project("build", token))
    try:
        yield project
    finally:
        project.delete()


class Built:
    """One ``build_lab`` call through the gate, approved, and what it streamed."""

    def __init__(self, lab: LabProject, after: Built | None = None) -> None:
        """``after``: a build of the same conversation (its store, its session)."""
        self.lab = lab
        self.store = after.store if after is not None else InMemoryCheckpointStore()
        self.after = after
        self.progress: list[str] = []
        self.card: Any = None
        self.point: Any = None

    async def run(self, plan: dict[str, Any], **options: Any) -> tuple[ToolResult, Any]:
        now = datetime.now(UTC)
        if self.after is None:
            await self.store.create_session(
                Session(
                    thread_id=SESSION, user_id="user-1", project_id=self.lab.project,
                    created_at=now, updated_at=now,
                )
            )  # fmt: skip
        async with Gns3Client(self.lab.lab.url, timeout=60.0) as client:
            runner = ConsoleRunner()
            try:
                executor = Gns3ToolExecutor(client, runner=runner, restore_points=self.store)
                tools = LabBuildTools(executor.lab, Gns3LabPlanner(executor.lab), executor.probes)
                context = ToolContext(
                    project_id=self.lab.project,
                    user_id="user-1",
                    session_id=SESSION,
                    mode=CopilotMode.LAB_AUTOMATION_ASSISTANT,
                    abort=AbortToken(),
                    credentials=self.lab.token,
                    approval=ApprovalPolicy.CHANGES,
                    progress=self._heard,
                )
                call = ParsedToolCall.parse(
                    "call-build", BUILD_TOOL, json.dumps({"plan": plan, **options})
                )
                flow = ToolGate(tools).exchange(call, context)  # the agent's time limit
                asked = await anext(flow)
                assert isinstance(asked, ApprovalRequest), asked
                self.card = asked.preview
                began = time.monotonic()
                result = await flow.asend(ApprovalDecision(True, user_id="user-1"))
                await flow.aclose()
                took = time.monotonic() - began
                points = await self.store.restore_points(self.lab.project, SESSION)
                (point,) = [p for p in points if self.after is None or p.id != self.after.point.id]
                self.point = point
                return result, (executor, point, took)
            finally:
                await runner.aclose()

    def _heard(self, progress: ToolProgress) -> None:
        self.progress.append(progress.text)


async def exported(lab: LabProject) -> dict[str, Any]:
    """The project's lab as a plan file holds it (``current``), written as YAML."""
    async with Gns3Client(lab.lab.url, timeout=60.0) as client:
        runner = ConsoleRunner(command_timeout=20.0)
        try:
            planner = Gns3LabPlanner(Gns3ToolExecutor(client, runner=runner).lab)
            context = ToolContext(
                project_id=lab.project, user_id="user-1", session_id=SESSION,
                mode=CopilotMode.LAB_AUTOMATION_ASSISTANT, abort=AbortToken(),
                credentials=lab.token,
            )  # fmt: skip
            return plan_data(await planner.current(context))
        finally:
            await runner.aclose()


def lab_now(lab: LabProject) -> tuple[list[str], int]:
    nodes = lab.api("GET", "/nodes").json()
    links = lab.api("GET", "/links").json()
    return sorted(n["name"] for n in nodes), len(links)


def test_the_triangle_is_built_in_one_approved_change_proven_and_rolled_back(
    scratch: LabProject, router_lab: RouterLab
) -> None:
    built = Built(scratch)
    result, (_, point, took) = asyncio.run(built.run(triangle(), wait_s=120))
    FIGURES["triangle_build_and_checks_s"] = took

    # The one card: the nodes and links, every device's lines, the checks that decide.
    card = built.card
    assert [t for t in card.topology if t.startswith("create node")] == [
        f"create node {n} ({p}, template {t}) at ({x}, {y})"
        for n, p, t, x, y in (
            ("R1", "frr", ROUTER_TEMPLATE, 0, -200),
            ("R2", "frr", ROUTER_TEMPLATE, 173, 100),
            ("R3", "frr", ROUTER_TEMPLATE, -173, 100),
            ("H1", "linux", HOST_TEMPLATE, 0, -380),
            ("H2", "linux", HOST_TEMPLATE, 329, 190),
            ("H3", "linux", HOST_TEMPLATE, -329, 190),
        )
    ]
    assert "link R1:eth0 - R2:eth0 (10.10.0.0/30)" in card.topology
    assert card.devices["H1"] == ["ip addr add 10.10.1.10/24 dev eth0",
                                  "ip route add default via 10.10.1.1"]  # fmt: skip
    assert "router ospf" in card.devices["R1"]
    assert len(card.verification["checks"]) == 15
    assert "H1 reaches H2" in card.verification["labels"]

    output = result.output
    assert result.status is ToolStatus.SUCCESS, output
    verification = output["verification"]
    assert verification["status"] == "pass", json.dumps(verification["after"], indent=1)[:4000]
    assert [d["name"] for d in output["devices"] if d["configured"]] == [
        "R1", "R2", "R3", "H1", "H2", "H3"
    ]  # fmt: skip
    assert output["restore_point_id"] == point.id
    FIGURES.update({f"stage_{k}_s": v for k, v in output["timings_s"].items()})
    FIGURES["checks_to_pass_s"] = verification["after"]["waited_s"]
    # Progress per stage and per device.
    heard = "".join(built.progress)
    for said in (
        "creating 6 node(s)",
        "linking 6 port pair(s)",
        "starting 6 node(s)",
        "R1: configured",
        "H3: configured",
        "checking 15 check(s) after the change",
    ):
        assert said in heard, heard[-3000:]  # fmt: skip

    # The devices themselves, read through Docker: every host pings every other, and
    # every router has two OSPF neighbours Full.
    for source in HOSTS:
        for target, address in HOSTS.items():
            if target != source:
                ping = scratch.docker(source, "ping", "-c", "2", "-W", "2", address, check=False)
                assert " 0% packet loss" in ping, (source, target, ping)
    for router in ("R1", "R2", "R3"):
        neighbours = scratch.vtysh(router, "show ip ospf neighbor")
        assert neighbours.count("Full/") == 2, (router, neighbours)

    # Saved as a file and built again in an empty project: the same checks pass, and the
    # rebuilt lab exports as the same plan.
    saved = yaml.safe_dump(asyncio.run(exported(scratch)), sort_keys=False)
    document = yaml.safe_load(saved)
    assert "checks" not in document or not document["checks"]  # a lab says no intent
    document["checks"] = triangle()["checks"]
    token = router_lab.server.token()
    again = LabProject(router_lab, token, router_lab.server.new_project("rebuild", token))
    try:
        rebuilt = Built(again)
        result, _ = asyncio.run(rebuilt.run(document, wait_s=120))
        output = result.output
        assert result.status is ToolStatus.SUCCESS, output
        assert output["verification"]["status"] == "pass", output["verification"]
        FIGURES["rebuilt_from_file_checks_s"] = output["verification"]["after"]["waited_s"]
        delta = diff(parse_plan(asyncio.run(exported(again))), parse_plan(yaml.safe_load(saved)))
        assert (delta.add_nodes, delta.remove_nodes) == ((), ()), delta
        assert (delta.add_links, delta.remove_links) == ((), ()), delta
        assert (delta.add_lines, delta.remove_lines) == ((), ()), delta
    finally:
        again.delete()

    # "Add R4 between R2 and R3, with a host": only the difference built, then undone.
    a_fourth_router_is_built_relative_and_rolled_back(scratch, built)

    # The user's undo of the build: the restore point's rollback; GNS3 is empty again.
    began = time.monotonic()
    undone = asyncio.run(undo(scratch, built))
    FIGURES["rollback_s"] = time.monotonic() - began
    assert undone.tool_status is ToolStatus.SUCCESS, undone.to_json()
    assert lab_now(scratch) == ([], 0)
    print("\nlab build figures:", {k: round(v, 2) for k, v in FIGURES.items()}, flush=True)


async def undo(lab: LabProject, built: Built) -> Any:
    """The user's undo of ``built``'s build: its restore point's rollback."""
    async with Gns3Client(lab.lab.url, timeout=60.0) as client:
        runner = ConsoleRunner()
        try:
            executor = Gns3ToolExecutor(client, runner=runner, restore_points=built.store)
            scope_context = ToolContext(
                project_id=lab.project, user_id="user-1", session_id=SESSION,
                mode=CopilotMode.LAB_AUTOMATION_ASSISTANT, abort=AbortToken(),
                credentials=lab.token,
            )  # fmt: skip
            (kept,) = [
                p
                for p in await built.store.restore_points(lab.project, SESSION)
                if p.id == built.point.id
            ]
            return await roll_back(
                executor.lab, CallScope(scope_context, lab.token), kept, use_snapshot=False
            )
        finally:
            await runner.aclose()


def devices_now(lab: LabProject) -> dict[str, str]:
    """Each triangle device's configuration, read through Docker."""
    read = {r: lab.vtysh(r, "show running-config") for r in ("R1", "R2", "R3")}
    for host in HOSTS:
        read[host] = lab.docker(host, "ip", "-4", "-o", "addr", "show") + lab.docker(
            host, "ip", "-4", "route", "show"
        )
    return read


def links_now(lab: LabProject) -> list[str]:
    return sorted(lab.snapshot().describe_link(k) for k in lab.api("GET", "/links").json())


def a_fourth_router_is_built_relative_and_rolled_back(scratch: LabProject, built: Built) -> None:
    """The triangle made a square relative to the lab as it is (``plan_lab relative``'s
    plan and ``base``): R4 and H4 made, the link R2 - R3 replaced by R2 - R4 - R3; R3
    sent only its lines undone and added, R1 none; proven through Docker, then the
    build's rollback puts every device back as it was (read back equal)."""
    before, links_before = devices_now(scratch), links_now(scratch)
    current = parse_plan(asyncio.run(exported(scratch)))
    square = plan_from_intent(
        LabIntent(
            routers=("R1", "R2", "R3", "R4"),
            links=(("R1", "R2"), ("R2", "R4"), ("R4", "R3"), ("R3", "R1")),
            hosts=tuple(HostIntent(name=f"H{i}", behind=f"R{i}") for i in (1, 2, 3, 4)),
            pool="10.10.0.0/16",
        ),
        keep=current,
    )
    data = plan_data(square)
    for node in data["nodes"]:
        node.setdefault("template", ROUTER_TEMPLATE if node["platform"] == "frr" else HOST_TEMPLATE)
    relative = Built(scratch, after=built)  # the same conversation: its restore points
    options = {"relative": True, "base": plan_fingerprint(current), "wait_s": 120}
    result, (_, point, took) = asyncio.run(relative.run(data, **options))
    FIGURES["relative_build_and_checks_s"] = took

    card = relative.card
    assert set(card.devices) == {"R3", "R4", "H4"}, (
        card.summary,
        list(card.topology),
        current.config,
        result.output,
    )
    assert card.devices["R3"][:3] == ["interface eth0", "no ip address 10.10.0.6/30", "exit"]
    assert "delete link R2:eth1 - R3:eth0" in card.topology, card.topology
    assert "unchanged: R1, R2, H1, H2, H3" in card.topology, card.topology
    output = result.output
    assert result.status is ToolStatus.SUCCESS, output
    assert output["verification"]["status"] == "pass", output["verification"]
    assert [d["name"] for d in output["devices"]] == ["R3", "R4", "H4"]
    assert [n["name"] for n in output["nodes"] if n["created"]] == ["R4", "H4"]
    heard = "".join(relative.progress)
    assert "R3: sending 12 line(s)" in heard, heard[-3000:]
    assert "R1: " not in heard and "R2: " not in heard, heard[-3000:]  # no console opened
    assert scratch.vtysh("R1", "show running-config") == before["R1"]  # R1 got no line
    hosts = {**HOSTS, "H4": "10.10.4.10"}
    for source in hosts:
        for target, address in hosts.items():
            if target != source:
                ping = scratch.docker(source, "ping", "-c", "2", "-W", "2", address, check=False)
                assert " 0% packet loss" in ping, (source, target, ping)
    for router in ("R1", "R2", "R3", "R4"):
        neighbours = scratch.vtysh(router, "show ip ospf neighbor")
        assert neighbours.count("Full/") == 2, (router, neighbours)

    began = time.monotonic()
    undone = asyncio.run(undo(scratch, relative))
    FIGURES["relative_rollback_s"] = time.monotonic() - began
    assert undone.tool_status is ToolStatus.SUCCESS, undone.to_json()
    assert lab_now(scratch) == (["H1", "H2", "H3", "R1", "R2", "R3"], 6)
    assert links_now(scratch) == links_before
    assert devices_now(scratch) == before
    assert point.tool_name == BUILD_TOOL


def test_a_plan_with_a_wrong_mask_fails_its_checks_and_is_rolled_back(
    scratch: LabProject,
) -> None:
    built = Built(scratch)
    result, (_, point, took) = asyncio.run(built.run(wrong_mask(), wait_s=40))
    FIGURES["wrong_mask_transaction_s"] = took
    assert "ip address 10.10.1.1/30" in built.card.devices["R1"]

    output = result.output
    assert result.status is ToolStatus.ERROR, output
    assert output["status"] == "rolled_back", output
    verification = output["verification"]
    # Built as planned (every line ran), and still not working: the checks say so.
    assert [d["name"] for d in output["devices"] if d["configured"]] == [
        "R1", "R2", "R3", "H1", "H2", "H3"
    ], output  # fmt: skip
    failed = {c["name"]: c for c in verification["after"]["checks"] if c["status"] != "pass"}
    assert "H1 reaches H2" in failed and "H2 reaches H1" in failed, sorted(failed)
    assert "H2 reaches H3" not in failed  # the rest of the lab works
    assert failed["H1 reaches H2"]["evidence"], failed["H1 reaches H2"]
    assert "H1 reaches H2" in output["error"]
    assert verification["rolled_back"] is True, verification.get("rollback")
    assert verification["lab_now"] == {"nodes": [], "links": []}
    assert lab_now(scratch) == ([], 0)
    assert point.rolled_back is not None and point.rolled_back.by == "verification"
    print("\nlab build figures:", {k: round(v, 2) for k, v in FIGURES.items()}, flush=True)
