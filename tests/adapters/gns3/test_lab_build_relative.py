"""A relative ``build_lab`` (issue 39): only the difference from the lab as it is built.

The undo of the lines a plan no longer has, by platform (FRR's negation in its block, a
Linux host's ``del``, none for a VPCS: refused naming the line), and the triangle made a
square ("R4 between R2 and R3"): R3 is sent exactly its lines undone then added, R1 and
R2 nothing.

Against a real gns3-server 3.0.6 (no VPCS binary, no Docker: the PCs never start, so the
checks fail and the build is rolled back): a project with PCA - PCB, the wanted lab PCA,
PCB - PCC. The approval card shows exactly the difference (PCC made, the link PCA - PCB
deleted, PCB - PCC made, PCA and PCB unchanged, only PCC's line); the build makes only
that (GNS3 read back mid-way by the rollback's ``observed``); the rollback puts the lab
back exactly (the deleted link made again, PCC gone). A plan that removes a node, a
VPCS line, or names a lab that changed since (``base``) is refused, nothing done. Built
without checks, its restore point keeps the devices that stay and get lines. A started
router whose console cannot be read is named (not taken for a blank one).
"""

from __future__ import annotations

import json
import socket
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from adapters.gns3 import ConsoleRunner, Gns3Client, Gns3ToolExecutor, Gns3ToolSettings
from adapters.gns3.lab import CallScope
from adapters.gns3.labs import BUILD_TOOL, LabBuildTools
from adapters.gns3.labs._relative import relative_build, undo_lines, unread_devices
from copilot_core import AbortToken, CopilotMode, ParsedToolCall, Session, ToolContext, ToolGate
from copilot_core.labs import (
    HostIntent,
    LabIntent,
    LabPlan,
    PlanProblems,
    Platform,
    ResolvedNode,
    ResolvedPlan,
    ResolvedPort,
    parse_plan,
    plan_fingerprint,
    plan_from_intent,
)
from copilot_core.ports import ApprovalDecision, ApprovalPolicy, ApprovalRequest, ToolStatus
from copilot_core.testing import InMemoryCheckpointStore
from tests.adapters.gns3.conftest import make_context
from tests.fakes.telnet_devices import EmulatedDeviceLab, EmulatedFrr

SESSION = "session-relative"
PORT = "Ethernet0"  # a VPCS' one port, as GNS3 names it
CURRENT: dict[str, Any] = {
    "nodes": [
        {"name": "PCA", "platform": "vpcs", "template": "VPCS", "x": -150, "y": 40},
        {"name": "PCB", "platform": "vpcs", "template": "VPCS", "x": 150, "y": -40},
    ],
    "links": [f"PCA:{PORT}-PCB:{PORT}"],
    "addressing": {f"PCA:{PORT}": "10.9.0.1/24", f"PCB:{PORT}": "10.9.0.2/24"},
    "config": {"PCA": ["ip 10.9.0.1/24"], "PCB": ["ip 10.9.0.2/24"]},
}
WANTED: dict[str, Any] = {
    "nodes": [*CURRENT["nodes"], {"name": "PCC", "platform": "vpcs", "x": 0, "y": 200}],
    "links": [f"PCB:{PORT}-PCC:{PORT}"],
    "addressing": {f"PCB:{PORT}": "10.9.0.2/24", f"PCC:{PORT}": "10.9.0.3/24"},
    "config": {**CURRENT["config"], "PCC": ["ip 10.9.0.3/24"]},
    "checks": [
        {"kind": "reachability", "from": "PCC", "to": "10.9.0.2", "name": "PCC reaches PCB"}
    ],
}


# ------------------------------------------------------------------ the lines undone
def test_frr_lines_are_undone_by_negation_in_their_block() -> None:
    removed = [
        "interface eth0", "ip address 10.10.0.6/30", "description old", "exit",
        "router bgp 65000", "neighbor 10.0.0.1 remote-as 1", "exit",
        "router ospf", "network 10.10.0.4/30 area 0", "exit",
        "ip route 0.0.0.0/0 10.0.0.1",
    ]  # fmt: skip
    wanted = ["interface eth0", "ip address 10.10.0.14/30", "exit", "router ospf", "exit"]
    commands, refused = undo_lines(Platform.FRR, removed, wanted)
    assert refused == []
    assert commands == [
        "interface eth0", "no ip address 10.10.0.6/30", "no description", "exit",
        "no router bgp 65000",  # the plan has no such block any more: it goes whole
        "router ospf", "no network 10.10.0.4/30 area 0", "exit",
        "no ip route 0.0.0.0/0 10.0.0.1",
    ]  # fmt: skip


def test_host_lines_are_undone_by_their_inverse_or_refused_by_name() -> None:
    linux = ["ip addr add 10.0.0.2/24 dev eth0", "ip route add default via 10.0.0.1", "sysctl x"]
    commands, refused = undo_lines(Platform.LINUX, linux, [])
    assert commands == ["ip addr del 10.0.0.2/24 dev eth0", "ip route del default via 10.0.0.1"]
    assert refused == ["'sysctl x' (no sound inverse on linux)"]
    commands, refused = undo_lines(Platform.VPCS, ["ip 10.9.0.1/24"], [])
    assert (commands, refused) == ([], ["'ip 10.9.0.1/24' (no sound inverse on vpcs)"])


def _resolved(plan: LabPlan) -> ResolvedPlan:
    ports = tuple(ResolvedPort(end, 0, 0) for link in plan.links for end in link.ends)
    return ResolvedPlan(plan, tuple(ResolvedNode(n.name, "tpl") for n in plan.nodes), ports)


def test_a_fourth_router_sends_r3_only_its_lines_undone_then_added() -> None:
    routers = ("R1", "R2", "R3")
    triangle = plan_from_intent(
        LabIntent(
            routers=routers,
            links=(("R1", "R2"), ("R2", "R3"), ("R3", "R1")),
            hosts=tuple(HostIntent(name=f"H{r[1]}", behind=r) for r in routers),
            pool="10.10.0.0/16",
        )
    )
    square = plan_from_intent(
        LabIntent(
            routers=(*routers, "R4"),
            links=(("R1", "R2"), ("R2", "R4"), ("R4", "R3"), ("R3", "R1")),
            hosts=tuple(HostIntent(name=f"H{r[1]}", behind=r) for r in (*routers, "R4")),
            pool="10.10.0.0/16",
        ),
        keep=triangle,
    )
    built = relative_build(triangle, _resolved(square))
    assert not isinstance(built, list), built
    assert built.base == plan_fingerprint(triangle)
    sent = {c.node: c.lines for c in built.resolved.plan.config}
    assert set(sent) == {"R3", "R4", "H4"}  # R1, R2 and the hosts there: nothing
    assert sent["R3"] == (
        "interface eth0", "no ip address 10.10.0.6/30", "exit",
        "router ospf", "no network 10.10.0.4/30 area 0", "exit",
        "interface eth0", "ip address 10.10.0.14/30", "exit",
        "router ospf", "network 10.10.0.12/30 area 0", "exit",
    )  # fmt: skip
    assert sent["R4"] == square.lines_of("R4")
    assert [link.ends for link in built.remove_links] == [("R2:eth1", "R3:eth0")]


def test_a_node_removed_or_a_vpcs_line_changed_is_refused_by_name() -> None:
    current = parse_plan(CURRENT)
    no_pcb = parse_plan({"nodes": CURRENT["nodes"][:1], "config": {"PCA": ["ip 10.9.0.1/24"]}})
    refused = relative_build(current, _resolved(no_pcb))
    assert isinstance(refused, list)
    assert refused[0].startswith("it removes (or replaces) node(s) PCB: a relative build")
    readdressed = parse_plan({**CURRENT, "config": {**CURRENT["config"], "PCA": ["ip 10.9.0.7/24"]},
                              "addressing": {}})  # fmt: skip
    refused = relative_build(current, _resolved(readdressed))
    assert refused == [
        "PCA: lines the plan no longer has cannot be undone: 'ip 10.9.0.1/24' (no sound "
        "inverse on vpcs)"
    ]


# ------------------------------------------------------------------ on a real gns3-server
class KnownLabPlanner:
    """The test's ``LabPlanner``: every node the server's VPCS, every port its first; the
    lab as it is, the test's ``CURRENT`` (what the project holds)."""

    def __init__(self, client: Gns3Client) -> None:
        self.client = client
        self.read = 0

    async def resolve(self, plan: LabPlan, context: ToolContext) -> ResolvedPlan | PlanProblems:
        templates = await self.client.templates(context.credentials or "")
        vpcs = next(str(t["template_id"]) for t in templates if t["name"] == "VPCS")
        ports = tuple(ResolvedPort(end, 0, 0) for link in plan.links for end in link.ends)
        return ResolvedPlan(plan, tuple(ResolvedNode(n.name, vpcs) for n in plan.nodes), ports)

    async def current(self, context: ToolContext) -> LabPlan:
        self.read += 1
        return parse_plan(CURRENT)


@pytest.fixture
async def executor(gns3_client: Gns3Client) -> AsyncIterator[Gns3ToolExecutor]:
    store = InMemoryCheckpointStore()
    runner = ConsoleRunner(command_timeout=1.0)
    yield Gns3ToolExecutor(gns3_client, runner=runner, restore_points=store)
    await runner.aclose()


def _context(project_id: str, token: str) -> ToolContext:
    return ToolContext(
        project_id=project_id, user_id="user-1", session_id=SESSION,
        mode=CopilotMode.LAB_AUTOMATION_ASSISTANT, abort=AbortToken(), credentials=token,
        approval=ApprovalPolicy.CHANGES,
    )  # fmt: skip


async def _lab(client: Gns3Client, token: str, project_id: str) -> dict[str, Any]:
    nodes = await client.nodes(token, project_id)
    names = {n["node_id"]: n["name"] for n in nodes}
    links = await client.links(token, project_id)
    return {
        "nodes": sorted((n["name"], n["x"], n["y"]) for n in nodes),
        "links": sorted(sorted(names[e["node_id"]] for e in k["nodes"]) for k in links),
    }


async def _the_current_lab(client: Gns3Client, token: str, project_id: str) -> None:
    vpcs = next(t for t in await client.templates(token) if t["name"] == "VPCS")
    made = []
    for node in CURRENT["nodes"]:
        new = await client.create_node_from_template(
            token, project_id, str(vpcs["template_id"]), x=node["x"], y=node["y"]
        )
        await client.update_node(token, project_id, new["node_id"], name=node["name"])
        made.append(str(new["node_id"]))
    await client.create_link(token, project_id, [(made[0], 0, 0), (made[1], 0, 0)])


@pytest.mark.gns3
@pytest.mark.timeout(300)
async def test_only_the_difference_is_shown_built_and_rolled_back_exactly(
    gns3_client: Gns3Client, admin_token: str, project_id: str, executor: Gns3ToolExecutor
) -> None:
    await _the_current_lab(gns3_client, admin_token, project_id)
    before = await _lab(gns3_client, admin_token, project_id)
    assert before["links"] == [["PCA", "PCB"]]
    store = executor.lab.restore_points
    assert isinstance(store, InMemoryCheckpointStore)
    now = datetime.now(UTC)
    await store.create_session(
        Session(thread_id=SESSION, user_id="user-1", project_id=project_id, created_at=now,
                updated_at=now)
    )  # fmt: skip
    planner = KnownLabPlanner(gns3_client)
    tools = LabBuildTools(executor.lab, planner, executor.probes)
    base = plan_fingerprint(parse_plan(CURRENT))
    arguments = {"plan": WANTED, "relative": True, "base": base, "wait_s": 2}
    call = ParsedToolCall.parse("call-rel", BUILD_TOOL, json.dumps(arguments))
    flow = ToolGate(tools, timeout=200).exchange(call, _context(project_id, admin_token))
    asked = await anext(flow)
    assert isinstance(asked, ApprovalRequest), asked
    card = asked.preview
    assert card.topology == [
        "create node PCC (vpcs) at (0, 200)",
        f"delete link PCA:{PORT} - PCB:{PORT}",
        f"link PCB:{PORT} - PCC:{PORT} (10.9.0.0/24)",
        "start 1 new node(s)",
        "unchanged: PCA, PCB",
    ]
    assert dict(card.devices) == {"PCC": ["ip 10.9.0.3/24"]}  # PCA, PCB: no line
    assert "only the difference" in card.summary and "PCC (new) +1" in card.summary
    assert await _lab(gns3_client, admin_token, project_id) == before  # nothing yet

    result = await flow.asend(ApprovalDecision(True, user_id="user-1"))
    await flow.aclose()
    output = result.output
    assert output["status"] == "rolled_back", output  # the PCs never start here
    assert [n["name"] for n in output["nodes"] if n["created"]] == ["PCC"]
    assert output["removed_links"][0]["link"] == f"PCA:{PORT}-PCB:{PORT}"
    assert [(k["link"], k["created"]) for k in output["links"]] == [
        (f"PCB:{PORT}-PCC:{PORT}", True)
    ]
    assert [d["name"] for d in output["devices"]] == ["PCC"]  # only its line was to send
    assert output["verification"]["rolled_back"] is True, output["verification"]
    assert await _lab(gns3_client, admin_token, project_id) == before  # the link made again
    assert planner.read == 1  # the lab read once: the card's difference is what ran


@pytest.mark.gns3
@pytest.mark.timeout(120)
async def test_a_lab_changed_since_its_plan_is_refused(
    gns3_client: Gns3Client, admin_token: str, project_id: str, executor: Gns3ToolExecutor
) -> None:
    tools = LabBuildTools(executor.lab, KnownLabPlanner(gns3_client), executor.probes)
    stale = "sha256:" + "0" * 64
    arguments = {"plan": WANTED, "relative": True, "base": stale}
    call = ParsedToolCall.parse("call-stale", BUILD_TOOL, json.dumps(arguments))
    refused = await ToolGate(tools, timeout=60).call(call, _context(project_id, admin_token))
    assert refused.status is ToolStatus.ERROR
    assert "the lab is not the one the plan was made against" in refused.output["error"]
    assert refused.output["base"] == plan_fingerprint(parse_plan(CURRENT))
    assert await _lab(gns3_client, admin_token, project_id) == {"nodes": [], "links": []}


@pytest.mark.gns3
@pytest.mark.timeout(300)
async def test_without_checks_the_restore_point_keeps_the_devices_that_stay_and_get_lines(
    gns3_client: Gns3Client, admin_token: str, project_id: str, executor: Gns3ToolExecutor
) -> None:
    await _the_current_lab(gns3_client, admin_token, project_id)
    store = executor.lab.restore_points
    assert isinstance(store, InMemoryCheckpointStore)
    now = datetime.now(UTC)
    await store.create_session(
        Session(thread_id=SESSION, user_id="user-1", project_id=project_id, created_at=now,
                updated_at=now)
    )  # fmt: skip
    planner = KnownLabPlanner(gns3_client)
    tools = LabBuildTools(executor.lab, planner, executor.probes)
    wanted = {**WANTED, "checks": [], "config": {**WANTED["config"], "PCB": ["ip 10.9.0.2/24",
              "ip 10.9.0.2/24 10.9.0.254"]}}  # fmt: skip
    arguments = {"plan": wanted, "relative": True}
    call = ParsedToolCall.parse("call-rel-unchecked", BUILD_TOOL, json.dumps(arguments))
    flow = ToolGate(tools, timeout=200).exchange(call, _context(project_id, admin_token))
    asked = await anext(flow)
    assert isinstance(asked, ApprovalRequest), asked
    assert dict(asked.preview.devices) == {
        "PCB": ["ip 10.9.0.2/24 10.9.0.254"],
        "PCC": ["ip 10.9.0.3/24"],
    }
    await flow.asend(ApprovalDecision(True, user_id="user-1"))
    await flow.aclose()
    (point,) = await store.restore_points(project_id, SESSION)
    assert set(point.kept.get("devices") or {}) == {"PCB"}, point.kept.get("devices")


# ------------------------------------------------------------------ a console not read
async def test_a_started_device_whose_console_cannot_be_read_is_named() -> None:
    """The export leaves a device it could not read without lines: a relative build must
    not take that for a blank device (it would send it every line again)."""
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    async with EmulatedDeviceLab(EmulatedFrr("R2", docker=True)) as devices:
        consoles = {"R1": closed, "R2": devices.devices["R2"].port}
        nodes = [
            {"node_id": f"n-{name}", "name": name, "node_type": "docker", "status": "started",
             "console": port, "console_host": "127.0.0.1", "console_type": "telnet",
             "tags": ["device_type:frr"], "x": 0, "y": 0, "ports": []}
            for name, port in consoles.items()
        ]  # fmt: skip

        def handle(request: httpx.Request) -> httpx.Response:
            path = request.url.path.removeprefix("/v3/projects/p-1")
            if path == "":
                return httpx.Response(200, json={"project_id": "p-1", "status": "opened"})
            answers = {"/nodes": nodes, "/links": [], "/v3/templates": []}
            return httpx.Response(200, json=answers.get(path, []))

        http = httpx.AsyncClient(transport=httpx.MockTransport(handle))
        runner = ConsoleRunner(command_timeout=5.0, recovery_timeout=1.0, connect_timeout=1.0)
        lab = Gns3ToolExecutor(
            Gns3Client("http://127.0.0.1:3080", http=http),
            runner=runner,
            settings=Gns3ToolSettings(poll_interval=0.05),
        ).lab
        try:
            current = parse_plan({"nodes": [{"name": "R1", "platform": "frr"},
                                            {"name": "R2", "platform": "frr"}]})  # fmt: skip
            scope = CallScope(make_context("p-1", "jwt"), "jwt")
            unread = await unread_devices(lab, scope, current)
        finally:
            await runner.aclose()
            await http.aclose()
    assert [u.split(" ")[0] for u in unread] == ["R1"], unread  # R2 reads: it is blank
