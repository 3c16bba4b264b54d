"""Lab plans on the real router lab (issue 39): the triangle plan resolved against the
real FRR and Linux host templates, its nodes made from the resolved templates and linked
by the resolved port numbers (the ports GNS3 really gives are the oracle of what the
planner told from the templates), every device configured with the plan's lines through
Docker (the test's own path, never the product's), then the lab exported by the planner:
the same nodes, templates, positions, links, addresses and lines, a plan that reads back
from its YAML the same, resolves again, and against which the plan asks to build nothing.

Run through the lock: ``flock /tmp/router-lab.lock .tox/routers/bin/pytest --router-lab
-p no:cacheprovider -s tests/lab/test_lab_plan_lab.py``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
import yaml

from adapters.gns3 import ConsoleRunner, Gns3Client, Gns3LabPlanner, Gns3ToolExecutor
from copilot_core.labs import (
    HostIntent,
    LabIntent,
    LabPlan,
    ResolvedPlan,
    diff,
    parse_plan,
    plan_data,
    plan_from_intent,
)
from tests.adapters.gns3.conftest import make_context
from tests.lab.lab_project import LabProject
from tests.lab.router_lab import HOST_TEMPLATE, ROUTER_TEMPLATE, RouterLab

pytestmark = [pytest.mark.timeout(1500), pytest.mark.gns3, pytest.mark.slow]

TRIANGLE = LabIntent(
    summary="three FRR routers in a triangle running OSPF, a Linux host behind each",
    routers=("R1", "R2", "R3"),
    links=(("R1", "R2"), ("R2", "R3"), ("R3", "R1")),
    hosts=tuple(HostIntent(name=f"H{n}", behind=f"R{n}") for n in (1, 2, 3)),
)


def with_templates(plan: LabPlan) -> LabPlan:
    data = plan_data(plan)
    for node in data["nodes"]:
        node["template"] = ROUTER_TEMPLATE if node["platform"] == "frr" else HOST_TEMPLATE
    return parse_plan(data)


@pytest.fixture
async def scratch(router_lab: RouterLab) -> AsyncIterator[tuple[Gns3Client, LabProject]]:
    token = router_lab.server.token()
    project = LabProject(router_lab, token, router_lab.server.new_project("lab-plan", token))
    async with Gns3Client(router_lab.url, timeout=120.0) as client:
        try:
            yield client, project
        finally:
            await asyncio.to_thread(project.delete)


async def build_by_hand(client: Gns3Client, lab: LabProject, resolved: ResolvedPlan) -> None:
    """The resolved plan made with GNS3's REST API and Docker, as a person would: nodes
    from the resolved templates, links by the resolved numbers (each checked against the
    ports GNS3 gave the node), every device's lines, then FRR is waited for."""
    plan = resolved.plan
    ids: dict[str, str] = {}
    for node, made in zip(plan.nodes, resolved.nodes, strict=True):
        created = await client.create_node_from_template(
            lab.token, lab.project, made.template_id, x=node.x, y=node.y
        )
        await client.update_node(lab.token, lab.project, str(created["node_id"]), name=node.name)
        ids[node.name] = str(created["node_id"])
        given = {p["name"]: (p["adapter_number"], p["port_number"]) for p in created["ports"]}
        for port in resolved.ports:
            name, _, wanted = port.endpoint.partition(":")
            if name == node.name:
                assert given[wanted] == (port.adapter_number, port.port_number), given
    numbers = {p.endpoint: (p.adapter_number, p.port_number) for p in resolved.ports}
    for link in plan.links:
        await client.create_link(
            lab.token,
            lab.project,
            [(ids[end.partition(":")[0]], *numbers[end]) for end in link.ends],
        )
    assert lab.api("POST", "/nodes/start").status_code in (200, 204)
    for node in plan.nodes:
        if node.role == "router":
            await asyncio.to_thread(lab.wait_for_vtysh, node.name)
    for config in plan.config:
        node = plan.node(config.node)
        assert node is not None
        if node.role == "router":
            await asyncio.to_thread(lab.vtysh, config.node, "configure terminal", *config.lines)
        else:
            for line in config.lines:
                await asyncio.to_thread(lab.docker, config.node, "sh", "-c", line)


async def test_a_triangle_resolves_on_the_real_templates_and_exports_as_built(
    scratch: tuple[Gns3Client, LabProject],
) -> None:
    client, lab = scratch
    planner = Gns3LabPlanner(
        Gns3ToolExecutor(client, runner=ConsoleRunner(command_timeout=20.0)).lab
    )
    context = make_context(lab.project, lab.token)
    wanted = with_templates(plan_from_intent(TRIANGLE))

    resolved = await planner.resolve(wanted, context)
    assert isinstance(resolved, ResolvedPlan), resolved
    assert {n.template_id for n in resolved.nodes} == set(lab.lab.templates.values())
    await build_by_hand(client, lab, resolved)

    current = await planner.current(context)

    print("\nexported:\n" + yaml.safe_dump(plan_data(current), sort_keys=False), flush=True)
    assert sorted((n.name, n.platform, n.template, n.x, n.y) for n in current.nodes) == sorted(
        (n.name, n.platform, n.template, n.x, n.y) for n in wanted.nodes
    )
    assert {link.key() for link in current.links} == {link.key() for link in wanted.links}
    assert set(current.addressing) == set(wanted.addressing)
    for config in wanted.config:
        exported = current.lines_of(config.node)
        for line in config.lines:
            assert line in exported, (config.node, line, exported)
    assert current.checks == ()
    # the file: written as YAML and read back, the same plan; resolved again as it is
    assert (
        parse_plan(yaml.safe_load(yaml.safe_dump(plan_data(current), sort_keys=False))) == current
    )
    assert isinstance(await planner.resolve(current, context), ResolvedPlan)
    # and the lab it describes is the lab the plan wanted: nothing to add or remove
    delta = diff(current, wanted)
    assert delta.add_nodes == () and delta.remove_nodes == ()
    assert delta.add_links == () and delta.remove_links == ()
    assert delta.add_lines == (), delta.add_lines
    assert delta.remove_lines == (), delta.remove_lines  # the box's own lines are not the lab's
