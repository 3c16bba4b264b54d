"""A rollback's deletes go to GNS3 at once, bounded (issue 39).

GNS3 stops a running node as it deletes it (a Docker node: up to its stop timeout, about
6 s on the router lab), so a lab of six nodes deleted one at a time took 40 s to roll
back. The undo of a change (:func:`~adapters.gns3.restore._undo.carry_out`) and a build's
rollback without a restore point (``LabBuildSteps``) send a run of deletes together: the
links, then the nodes, at most :data:`~adapters.gns3.restore.DELETES_AT_ONCE` in flight.
Here each delete is held until as many as the bound allows are in flight: one at a time,
the first would wait for ever (the bounded wait fails the test); past the bound, more
would be in flight than allowed.
"""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

from adapters.gns3.labs._build import BuiltLink, BuiltNode, LabBuildReport
from adapters.gns3.labs._build_steps import LabBuildSteps
from adapters.gns3.restore import DELETES_AT_ONCE
from adapters.gns3.restore._undo import carry_out, plan_undo, record_change
from copilot_core.errors import Gns3Error
from tests.property.undo_world import MemoryPort, Op, Topology

NODES = DELETES_AT_ONCE + 2  # more than the bound: a second round


class Gate:
    """Holds each call until ``DELETES_AT_ONCE`` calls (or all that remain) are in flight;
    counts the most in flight at once and the order the calls ended in."""

    def __init__(self, calls: int) -> None:
        self.left = calls
        self.in_flight = 0
        self.most = 0
        self.full = asyncio.Event()

    async def through(self) -> None:
        self.in_flight += 1
        self.most = max(self.most, self.in_flight)
        if self.in_flight >= min(DELETES_AT_ONCE, self.left):
            self.full.set()
        await self.full.wait()
        self.in_flight -= 1
        self.left -= 1
        if self.in_flight == 0:  # the next round gathers again
            self.full.clear()


class GatedPort(MemoryPort):
    def __init__(self, topo: Topology, gate: Gate) -> None:
        super().__init__(topo)
        self.gate = gate

    async def delete_node(self, node_id: str) -> None:
        await self.gate.through()
        await super().delete_node(node_id)


def made_lab() -> tuple[Topology, Any]:
    """A change that made NODES nodes, linked in pairs: its record and the lab after it."""
    topo = Topology()
    before = topo.as_lists()
    for i in range(NODES):
        Op("create", f"n{i}", f"N{i}").apply(topo)
    for i in range(0, NODES, 2):
        Op("link", f"l{i}", ((f"n{i}", 0), (f"n{i + 1}", 0))).apply(topo)
    return topo, record_change(before, topo.as_lists(), {})


async def test_an_undo_deletes_the_nodes_a_change_made_together_within_the_bound() -> None:
    topo, record = made_lab()
    plan = plan_undo(record, topo.kept())
    gate = Gate(NODES)
    outcome = await asyncio.wait_for(carry_out(plan, GatedPort(topo, gate)), timeout=10)
    assert gate.most == DELETES_AT_ONCE
    assert topo.nodes == {} and topo.links == {}
    assert outcome.problems == [] and outcome.differences == []
    assert outcome.actions == plan.lines()  # said in the plan's order


async def test_a_delete_that_fails_is_said_and_the_others_are_done() -> None:
    topo, record = made_lab()
    plan = plan_undo(record, topo.kept())
    del topo.nodes["n3"]  # gone meanwhile: GNS3 answers 404
    outcome = await asyncio.wait_for(carry_out(plan, GatedPort(topo, Gate(NODES))), timeout=10)
    assert outcome.problems == ["could not delete node N3 (made by the change): no such node"]
    assert topo.nodes == {}
    assert outcome.actions == [
        line for line in plan.lines() if not line.startswith("delete node N3 ")
    ]


class Client:
    def __init__(self, gate: Gate) -> None:
        self.gate = gate
        self.deleted: list[str] = []

    async def delete_link(self, token: str, project: str, link_id: str) -> None:
        self.deleted.append(link_id)

    async def delete_node(self, token: str, project: str, node_id: str) -> None:
        await self.gate.through()
        if node_id == "missing":
            raise Gns3Error("no such node", 404)
        self.deleted.append(node_id)


async def test_a_build_without_a_restore_point_deletes_its_nodes_together() -> None:
    gate = Gate(NODES)
    client = Client(gate)
    heard: list[str] = []
    scope = SimpleNamespace(
        token="t", project_id="p", context=SimpleNamespace(report_progress=heard.append)
    )
    steps = LabBuildSteps(
        SimpleNamespace(client=client),
        None,
        None,
        scope,
        None,
        None,
        None,
        None,  # type: ignore[arg-type]
    )
    names = [f"N{i}" for i in range(NODES - 1)] + ["Gone"]
    report = LabBuildReport(
        nodes=tuple(
            BuiltNode(name, "missing" if name == "Gone" else f"n-{name}", True) for name in names
        ),
        links=(BuiltLink("N0:e0-N1:e0", "l-1", True),),
    )
    result = await asyncio.wait_for(steps._delete_what_was_made(report), timeout=10)
    assert gate.most == DELETES_AT_ONCE
    assert client.deleted[0] == "l-1"  # the links first
    assert result.output["deleted"] == {"links": ["N0:e0-N1:e0"], "nodes": names[:-1]}
    assert result.output["failed"] == ["Gone: no such node"]
    assert len([h for h in heard if h.startswith("deleting ")]) == NODES + 1
