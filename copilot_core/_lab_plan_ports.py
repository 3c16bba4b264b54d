"""The port a lab plan reaches the GNS3 server through, and what it answers (no I/O here).

A :class:`~copilot_core.labs.LabPlan` is checked in the core against itself (names, ports
used twice, subnets, addresses, checks). What only the server knows is the tool source's:
:class:`LabPlanner` resolves a plan against the project's server (each node's template
exists and is of the node's platform, each port name exists on the node the template
makes, each device line is a well-formed change by the platform's grammar), answering a
:class:`ResolvedPlan` the build can run, or :class:`PlanProblems` named like the core's
(``nodes[1].template``, ``links[0]``, ``config.R1[3]``) for the model to act on; and
exports the project's lab as a plan (:meth:`LabPlanner.current`), which a relative plan
is diffed against and a user saves as a file. The GNS3 adapter implements it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from copilot_core._lab_plan import LabPlan, PlanProblem
from copilot_core._messages import FunctionCall
from copilot_core._tools import ToolContext
from copilot_core._verified_change import OnFail

__all__ = [
    "LabBuildCalls",
    "LabPlanner",
    "PlanProblems",
    "ResolvedNode",
    "ResolvedPlan",
    "ResolvedPort",
]


@dataclass(frozen=True, slots=True)
class ResolvedNode:
    """A node of the plan as the server will make it: from the template ``template_id``."""

    name: str
    template_id: str


@dataclass(frozen=True, slots=True)
class ResolvedPort:
    """A port of the plan (``R1:eth0``) as GNS3 numbers it on its node."""

    endpoint: str
    adapter_number: int
    port_number: int


@dataclass(frozen=True, slots=True)
class ResolvedPlan:
    """A plan the server can build: every node's template and every linked port found."""

    plan: LabPlan
    nodes: tuple[ResolvedNode, ...]
    ports: tuple[ResolvedPort, ...]


@dataclass(frozen=True, slots=True)
class PlanProblems:
    """Why the server cannot build a plan: each problem by the field of the plan's file."""

    problems: tuple[PlanProblem, ...]


class LabPlanner(Protocol):
    """A project's server as a lab plan needs it (see the module). Every method acts for
    ``context``'s caller (project, user, credentials) and stops when its abort fires."""

    async def resolve(self, plan: LabPlan, context: ToolContext) -> ResolvedPlan | PlanProblems:
        """The plan resolved against the server's templates, ports and device grammars,
        or every problem found (none are raised: a bad plan is an answer, not an error)."""
        ...

    async def current(self, context: ToolContext) -> LabPlan:
        """The project's lab as a plan (export): its nodes with their templates and
        positions, links by port name, interface addresses, each device's configuration
        lines; no checks (a lab does not say what it is meant to do)."""
        ...


class LabBuildCalls(Protocol):
    """A build in the tool source's own terms: the call its build tool takes (its name and
    arguments). A build the user approves outside a chat (``POST …/labs/build``) runs, and
    the session's history records, that same call, so the model of the next turn reads it
    as one of its tools' calls; the core never names the tool."""

    def build_call(
        self,
        plan: LabPlan,
        *,
        on_fail: OnFail = "rollback",
        wait_s: float | None = None,
        base: str | None = None,
    ) -> FunctionCall:
        """The call that builds ``plan`` (``on_fail`` and ``wait_s`` as the tool takes
        them; the tool's defaults are left out, so the plan alone is one call). ``base``:
        a relative build, of the difference between the lab whose export has that
        :func:`~copilot_core.labs.plan_fingerprint` and ``plan`` (only the difference
        is built; the call is bound to both)."""
        ...
