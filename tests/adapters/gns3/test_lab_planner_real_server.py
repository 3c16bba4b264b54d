"""Gns3LabPlanner and the plan_lab tool against a real gns3-server 3.0.6.

The server has the built-in VPCS template; the FRR and Linux host templates are Docker
templates made here as the router lab makes them (a template is stored without Docker;
only a node of it needs Docker, so ports of Docker nodes are compared with real nodes on
the router lab, tests/lab/test_lab_plan_lab.py). A VPCS' ports are compared with a real
node's here.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import httpx
import pytest

from adapters.gns3 import ConsoleRunner, Gns3Client, Gns3LabPlanner, Gns3ToolExecutor
from adapters.gns3.labs import gns3_lab_tools
from copilot_core import CopilotMode, ParsedToolCall, ToolStatus
from copilot_core.errors import AuthenticationError
from copilot_core.labs import (
    HostIntent,
    LabIntent,
    LabPlan,
    PlanProblems,
    Platform,
    ResolvedPlan,
    parse_plan,
    plan_data,
    plan_from_intent,
)
from tests.adapters.gns3.conftest import make_context
from tests.fakes.gns3_server import RealGns3Server

pytestmark = [pytest.mark.gns3, pytest.mark.timeout(300)]

TRIANGLE = LabIntent(
    routers=("R1", "R2", "R3"),
    links=(("R1", "R2"), ("R2", "R3"), ("R3", "R1")),
    hosts=(HostIntent(name="H1", behind="R1"), HostIntent(name="H2", behind="R2")),
)


@pytest.fixture(scope="module")
def templates(gns3_server: RealGns3Server) -> dict[str, str]:
    """An FRR router template (4 adapters) and a Linux host template (1), as the router
    lab makes them: name -> template id."""
    token = gns3_server.token()
    suffix = uuid.uuid4().hex[:6]
    made: dict[str, str] = {}
    for name, image, adapters in (
        (f"FRR 8.4 {suffix}", "frr-lab:8.4-2", 4),
        (f"Linux host {suffix}", "linux-host:bookworm", 1),
    ):
        answer = httpx.post(
            f"{gns3_server.url}/v3/templates",
            json={
                "name": name,
                "template_type": "docker",
                "image": image,
                "adapters": adapters,
                "console_type": "telnet",
                "compute_id": "local",
            },
            headers={"Authorization": f"Bearer {token}"},
            timeout=30,
        )
        assert answer.status_code == 201, answer.text
        made[name] = str(answer.json()["template_id"])
    return made


def names(templates: dict[str, str]) -> tuple[str, str]:
    frr = next(n for n in templates if n.startswith("FRR"))
    host = next(n for n in templates if n.startswith("Linux"))
    return frr, host


def planner(client: Gns3Client) -> Gns3LabPlanner:
    return Gns3LabPlanner(Gns3ToolExecutor(client, runner=ConsoleRunner(command_timeout=1.0)).lab)


def with_templates(plan: LabPlan, frr: str, host: str) -> LabPlan:
    data = plan_data(plan)
    for node in data["nodes"]:
        node["template"] = frr if node["platform"] == "frr" else host
    return parse_plan(data)


# ------------------------------------------------------------------ resolve
async def test_a_triangle_resolves_to_the_servers_templates_and_port_numbers(
    gns3_client: Gns3Client, admin_token: str, project_id: str, templates: dict[str, str]
) -> None:
    frr, host = names(templates)
    plan = with_templates(plan_from_intent(TRIANGLE), frr, host)

    resolved = await planner(gns3_client).resolve(plan, make_context(project_id, admin_token))

    assert isinstance(resolved, ResolvedPlan), resolved
    assert {n.name: n.template_id for n in resolved.nodes} == {
        "R1": templates[frr],
        "R2": templates[frr],
        "R3": templates[frr],
        "H1": templates[host],
        "H2": templates[host],
    }
    ports = {p.endpoint: (p.adapter_number, p.port_number) for p in resolved.ports}
    # a Docker node's ports are eth0.. one per adapter: ethN is adapter N, port 0
    assert ports["R1:eth0"] == (0, 0) and ports["R1:eth2"] == (2, 0)
    assert ports["H2:eth0"] == (0, 0)
    assert len(ports) == 2 * len(plan.links)
    assert resolved.plan == plan


async def test_a_node_without_a_template_gets_the_servers_one_for_its_platform(
    gns3_client: Gns3Client, admin_token: str, project_id: str, templates: dict[str, str]
) -> None:
    intent = TRIANGLE.model_copy(update={"host_platform": Platform.VPCS})
    plan = plan_from_intent(intent)  # no template named anywhere

    resolved = await planner(gns3_client).resolve(plan, make_context(project_id, admin_token))

    assert isinstance(resolved, ResolvedPlan), resolved
    chosen = {n.name: n.template for n in resolved.plan.nodes}
    assert chosen["H1"] == "VPCS"
    frr = [t["name"] for t in await gns3_client.templates(admin_token) if "FRR" in t["name"]]
    assert chosen["R1"] == min(frr)  # the server's first FRR template, by name
    ports = {p.endpoint: (p.adapter_number, p.port_number) for p in resolved.ports}
    assert ports["H1:eth0"] == (0, 0)  # eth0 abbreviates a VPCS' Ethernet0


async def test_a_vpcs_port_resolves_to_the_numbers_of_the_node_gns3_makes(
    gns3_client: Gns3Client, admin_token: str, project_id: str
) -> None:
    plan = parse_plan(
        {
            "nodes": [{"name": "PC1", "platform": "vpcs"}, {"name": "PC2", "platform": "vpcs"}],
            "links": ["PC1:Ethernet0-PC2:e0"],
        }
    )
    resolved = await planner(gns3_client).resolve(plan, make_context(project_id, admin_token))
    assert isinstance(resolved, ResolvedPlan), resolved

    vpcs = next(t for t in await gns3_client.templates(admin_token) if t["template_type"] == "vpcs")
    node = await gns3_client.create_node_from_template(
        admin_token, project_id, str(vpcs["template_id"]), x=0, y=0
    )
    real = {(p["name"], p["adapter_number"], p["port_number"]) for p in node["ports"]}
    for port in resolved.ports:
        assert ("Ethernet0", port.adapter_number, port.port_number) in real
    assert resolved.nodes[0].template_id == str(vpcs["template_id"])


async def test_every_problem_is_named_by_the_field_of_the_plan(
    gns3_client: Gns3Client, admin_token: str, project_id: str, templates: dict[str, str]
) -> None:
    frr, host = names(templates)
    plan = parse_plan(
        {
            "nodes": [
                {"name": "R1", "platform": "frr", "template": frr},
                {"name": "R2", "platform": "frr", "template": host},  # a Linux host's
                {"name": "H1", "platform": "linux", "template": "No such template"},
                {"name": "H2", "platform": "linux", "template": host},
            ],
            "links": ["R1:eth0-R2:eth0", "R1:eth9-H2:eth0", "H2:e0-R1:eth1"],
            "addressing": {"R1:eth0": "10.0.0.1/30"},
            "config": {
                "R1": ["interface eth0", "ip address 10.0.0.1/30", "exit", "reload"],
                "H2": ["ip addr add 10.0.1.10/24 dev eth0", "show ip route"],
            },
            "checks": [
                {"kind": "ospf_neighbor", "node": "H2", "neighbor": "1.1.1.1"},
                {"kind": "reachability", "from": "H2", "to": "R1"},
            ],
        }
    )

    answer = await planner(gns3_client).resolve(plan, make_context(project_id, admin_token))

    assert isinstance(answer, PlanProblems)
    said = {p.field: p.message for p in answer.problems}
    assert set(said) == {
        "nodes[1].template",
        "nodes[2].template",
        "links[1]",
        "links[2]",
        "config.R1[3]",
        "config.H2[1]",
        "checks[0]",
    }, said
    assert (
        f"{host!r} makes linux nodes, not frr; templates for frr nodes: {frr}"
        in (said["nodes[1].template"])
    )
    assert "no template 'No such template'" in said["nodes[2].template"]
    assert "R1 has no port eth9" in said["links[1]"] and "eth3" in said["links[1]"]
    assert "H2:e0 is the port H2:eth0" in said["links[2]"] or "already" in said["links[2]"]
    assert "reload" in said["config.R1[3]"]
    assert "show ip route" in said["config.H2[1]"]
    assert "H2 (linux) cannot answer it" in said["checks[0]"]


async def test_resolving_needs_the_callers_gns3_credentials(
    gns3_client: Gns3Client, project_id: str
) -> None:
    plan = parse_plan({"nodes": [{"name": "PC1", "platform": "vpcs"}]})
    with pytest.raises(AuthenticationError):
        await planner(gns3_client).resolve(plan, make_context(project_id, None))


# ------------------------------------------------------------------ current
async def build_vpcs_pair(client: Gns3Client, token: str, project_id: str) -> None:
    vpcs = next(t for t in await client.templates(token) if t["template_type"] == "vpcs")
    made = []
    for name, x in (("PC1", -150), ("PC2", 150)):
        node = await client.create_node_from_template(
            token, project_id, str(vpcs["template_id"]), x=x, y=40
        )
        await client.update_node(token, project_id, str(node["node_id"]), name=name)
        made.append(str(node["node_id"]))
    await client.create_link(token, project_id, [(made[0], 0, 0), (made[1], 0, 0)])


async def test_the_projects_lab_exports_as_a_plan_that_reads_back_and_resolves(
    gns3_client: Gns3Client, admin_token: str, project_id: str
) -> None:
    await build_vpcs_pair(gns3_client, admin_token, project_id)
    context = make_context(project_id, admin_token)

    current = await planner(gns3_client).current(context)

    assert [(n.name, n.platform, n.template, n.x, n.y) for n in current.nodes] == [
        ("PC1", Platform.VPCS, "VPCS", -150, 40),
        ("PC2", Platform.VPCS, "VPCS", 150, 40),
    ]
    assert [link.ends for link in current.links] == [("PC1:Ethernet0", "PC2:Ethernet0")]
    assert current.config == () and current.checks == ()  # stopped: nothing to read
    written = json.loads(json.dumps(plan_data(current)))
    assert parse_plan(written) == current
    resolved = await planner(gns3_client).resolve(current, context)
    assert isinstance(resolved, ResolvedPlan), resolved


# ------------------------------------------------------------------ the tool
def call(arguments: dict[str, Any]) -> ParsedToolCall:
    return ParsedToolCall.parse("call-1", "plan_lab", json.dumps(arguments))


@pytest.fixture
def executor(gns3_client: Gns3Client) -> Gns3ToolExecutor:
    return Gns3ToolExecutor(
        gns3_client, runner=ConsoleRunner(command_timeout=1.0), registry=gns3_lab_tools()
    )


def test_plan_lab_is_offered_in_lab_automation_only_and_reads_only(
    executor: Gns3ToolExecutor,
) -> None:
    automation = {s.name: s for s in executor.specs(CopilotMode.LAB_AUTOMATION_ASSISTANT)}
    teaching = {s.name for s in executor.specs(CopilotMode.TEACHING_ASSISTANT)}
    assert "plan_lab" in automation and "plan_lab" not in teaching
    spec = automation["plan_lab"]
    assert spec.effect.value == "read_only" and not spec.mutates_topology
    assert not spec.everyday and "plan" in spec.cues  # the compact set brings it by its cues
    assert {"intent", "plan", "relative"} <= set(spec.parameters["properties"])


async def test_plan_lab_answers_the_resolved_plan_and_changes_nothing(
    executor: Gns3ToolExecutor,
    gns3_client: Gns3Client,
    admin_token: str,
    project_id: str,
    templates: dict[str, str],
) -> None:
    frr, host = names(templates)
    context = make_context(project_id, admin_token)
    arguments = {
        "intent": TRIANGLE.model_dump(mode="json"),
        "router_template": frr,
        "host_template": host,
    }
    assessed = await executor.assess(call(arguments), context)
    result = await executor.execute(call(arguments), context)

    assert not assessed.changes
    assert result.status is ToolStatus.SUCCESS, result.output
    assert parse_plan(result.output["plan"]) == with_templates(
        plan_from_intent(TRIANGLE), frr, host
    )
    assert result.output["templates"]["R2"] == templates[frr]
    assert result.output["ports"]["R3:eth1"] == [1, 0]
    assert await gns3_client.nodes(admin_token, project_id) == []


async def test_plan_lab_names_every_problem_for_the_model_to_fix(
    executor: Gns3ToolExecutor, admin_token: str, project_id: str, templates: dict[str, str]
) -> None:
    context = make_context(project_id, admin_token)
    bad_intent = {"intent": {"routers": ["R1"], "hosts": [{"name": "H1", "behind": "R9"}]}}
    bad_plan = {
        "plan": {
            "nodes": [{"name": "R1", "platform": "frr", "template": "Cisco 7200"}],
            "config": {"R1": ["router ospf", "ospf router-id 1.1.1.1", "exit"]},
        }
    }
    neither: dict[str, Any] = {"relative": True}

    intent = await executor.execute(call(bad_intent), context)
    plan = await executor.execute(call(bad_plan), context)
    empty = await executor.execute(call(neither), context)

    assert intent.status is ToolStatus.ERROR
    assert intent.output["problems"] == [
        {"field": "hosts[0].behind", "problem": "R9 is not one of the routers"}
    ]
    assert plan.status is ToolStatus.ERROR
    assert [p["field"] for p in plan.output["problems"]] == ["nodes[0].template"]
    assert "no template 'Cisco 7200'" in plan.output["error"]
    assert empty.status is ToolStatus.ERROR
    assert "either intent" in empty.output["error"]


async def test_plan_lab_relative_says_what_a_build_would_add(
    executor: Gns3ToolExecutor, gns3_client: Gns3Client, admin_token: str, project_id: str
) -> None:
    await build_vpcs_pair(gns3_client, admin_token, project_id)
    context = make_context(project_id, admin_token)
    plan = {
        "nodes": [
            {"name": "PC1", "platform": "vpcs", "template": "VPCS", "x": -150, "y": 40},
            {"name": "PC2", "platform": "vpcs", "template": "VPCS", "x": 150, "y": 40},
            {"name": "PC3", "platform": "vpcs"},
        ],
        "links": ["PC1:Ethernet0-PC2:Ethernet0"],
        "config": {"PC3": ["ip 10.0.0.3/24"]},
    }

    result = await executor.execute(call({"plan": plan, "relative": True}), context)

    assert result.status is ToolStatus.SUCCESS, result.output
    change = result.output["change"]
    assert change["add_nodes"] == ["PC3"] and change["remove_nodes"] == []
    assert change["add_links"] == [] and change["add_lines"] == {"PC3": ["ip 10.0.0.3/24"]}
