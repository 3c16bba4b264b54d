"""The chat's ``plan_lab`` tool: a lab described, laid out and checked as one plan, built
nowhere (read-only: it changes nothing).

"Three FRR routers in a triangle running OSPF, a host behind each, addresses from
10.10.0.0/16" is one call with an ``intent`` (routers, router links, hosts, ``ospf`` or
``static``, the pool; :func:`~copilot_core.labs.plan_from_intent` lays out the ports,
subnets, every device's lines and the checks), or with a ``plan`` (a plan document: the
YAML file's schema as JSON, ``docs/labs.md``). Either is then resolved against the
server (:class:`~adapters.gns3.labs.Gns3LabPlanner`: templates, ports, each line judged
by its platform's grammar). The answer is the resolved plan — nodes with their
templates, links, each device's lines, the checks that will decide the build — or every
problem by the field of the plan (or of the intent) and what is wrong, for the model to
fix and call again. ``relative`` plans against the lab as it is: an intent keeps what
the current lab has, and the answer says what a build would add and remove, and the
lab's fingerprint (``change.base``) a relative ``build_lab`` is bound to.

A tool of the GNS3 registry (:func:`lab_tools`): its handler builds the planner on the
registry's own :class:`~adapters.gns3.LabAccess`. It lives with the planner, above the
tools; :func:`~adapters.gns3.labs.gns3_lab_tools` is the registry with it.
"""

from __future__ import annotations

from contextlib import suppress
from typing import Any

from pydantic import Field, model_validator

from adapters.gns3.lab import (
    AUTOMATION_ONLY,
    CallScope,
    Gns3Tool,
    LabAccess,
    ToolArguments,
    ToolRegistry,
)
from adapters.gns3.labs._planner import Gns3LabPlanner
from adapters.gns3.labs._relative import named_as_the_lab
from adapters.gns3.tools import gns3_tools
from copilot_core import ToolResult
from copilot_core.errors import NotFoundError
from copilot_core.labs import (
    LabIntent,
    LabPlan,
    LabPlanError,
    PlanDelta,
    PlanProblem,
    PlanProblems,
    Platform,
    ResolvedPlan,
    diff,
    parse_plan,
    plan_data,
    plan_fingerprint,
    plan_from_intent,
)
from copilot_core.ports import ToolEffect

__all__ = ["PLAN_TOOL", "PlanLabArguments", "gns3_lab_tools", "lab_tools", "resolved_data"]

#: The tool's name.
PLAN_TOOL = "plan_lab"

JSON = dict[str, Any]


class PlanLabArguments(ToolArguments):
    """The tool's arguments: an ``intent`` or a ``plan``."""

    intent: LabIntent | None = Field(
        default=None,
        description="The lab described: routers (names), links (router pairs), hosts "
        "({name, behind: router}), protocol (ospf or static), pool (e.g. 10.10.0.0/16), "
        "p2p_length (30 or 31), host_platform (linux or vpcs). Ports, subnets, every "
        "device's lines and the checks are laid out for you.",
    )
    plan: dict[str, Any] | None = Field(
        default=None,
        description="Or a whole plan document (docs/labs.md): nodes [{name, platform: "
        "frr|linux|vpcs, template, x, y}], links ['R1:eth0-R2:eth0'], addressing "
        "{'R1:eth0': '10.0.12.1/30'}, config {R1: [lines]}, checks [intent checks].",
    )
    relative: bool = Field(
        default=False,
        description="Plan against the lab as it is: keep what the current lab has and "
        "answer what a build would add and remove.",
    )
    router_template: str | None = Field(
        default=None,
        max_length=200,
        description="intent: the template routers are made from (default: the server's "
        "FRR template).",
    )
    host_template: str | None = Field(
        default=None,
        max_length=200,
        description="intent: the template hosts are made from (default: the server's "
        "template for host_platform).",
    )

    @model_validator(mode="after")
    def _one_description(self) -> PlanLabArguments:
        if (self.intent is None) == (self.plan is None):
            raise ValueError("give either intent (a description) or plan (a document)")
        if self.plan is not None and (self.router_template or self.host_template):
            raise ValueError("router_template and host_template go with an intent; a plan "
                             "names each node's template")  # fmt: skip
        return self


_DESCRIPTION = (
    "Plan a lab build as one value, without building anything: from an intent (routers, "
    "router links, hosts behind routers, ospf or static, an address pool) the service lays "
    "out ports, subnets, every device's configuration lines and the checks that prove the "
    "lab works (hosts reach each other, OSPF Full, routes), then checks it against this "
    "GNS3 server (templates exist, ports exist, every line is well-formed for its "
    "platform). Or give a whole plan document. Answers the resolved plan, or every problem "
    "by its field: fix those and call again. relative: plan a change to the current lab "
    "(e.g. add a router between R2 and R3: the intent lists the whole wanted lab)."
)


def _with_templates(plan: LabPlan, args: PlanLabArguments) -> LabPlan:
    """An intent's nodes from the templates it names (a node that has one keeps it)."""
    chosen = {Platform.FRR: args.router_template}
    if args.intent is not None:
        chosen[args.intent.host_platform] = args.host_template
    nodes = tuple(
        n.model_copy(update={"template": chosen.get(n.platform)})
        if n.template is None and chosen.get(n.platform)
        else n
        for n in plan.nodes
    )
    return plan.model_copy(update={"nodes": nodes})


def _refused(where: str, problems: tuple[PlanProblem, ...]) -> ToolResult:
    listed = "; ".join(str(p) for p in problems)
    return ToolResult.error(
        f"The {where} cannot be built: {listed}. Fix each and call plan_lab again; "
        "nothing was changed.",
        source=where,
        problems=[{"field": p.field, "problem": p.message} for p in problems],
    )


def _delta(current: LabPlan | None, wanted: LabPlan) -> PlanDelta:
    if current is None:
        return PlanDelta(add_nodes=wanted.nodes, add_links=wanted.links, add_lines=wanted.config)
    return diff(current, wanted)


def delta_data(delta: PlanDelta) -> JSON:
    """What a relative build adds and removes, as plain data."""
    return delta.as_data()


def resolved_data(resolved: ResolvedPlan) -> JSON:
    """A resolved plan as plain data: the plan document, each node's template id, each
    linked port's GNS3 numbers."""
    return {
        "plan": plan_data(resolved.plan),
        "templates": {n.name: n.template_id for n in resolved.nodes},
        "ports": {p.endpoint: [p.adapter_number, p.port_number] for p in resolved.ports},
    }


async def plan_lab(lab: LabAccess, args: PlanLabArguments, scope: CallScope) -> ToolResult:
    planner = Gns3LabPlanner(lab)
    current: LabPlan | None = None
    if args.relative:
        with suppress(NotFoundError):  # nothing a plan holds yet: everything is new
            current = await planner.current(scope.context)
    try:
        if args.plan is not None:
            plan = parse_plan(args.plan, "plan")
        else:
            assert args.intent is not None
            plan = _with_templates(plan_from_intent(args.intent, keep=current), args)
    except LabPlanError as exc:
        return _refused(exc.source, exc.problems)
    resolved = await planner.resolve(plan, scope.context)
    if isinstance(resolved, PlanProblems):
        return _refused("plan", resolved.problems)
    if current is not None:  # the ports the lab links, named as the lab names them
        resolved = await named_as_the_lab(planner, current, resolved, scope.context)
    answer: JSON = {
        "status": "success",
        "summary": (
            f"{len(plan.nodes)} nodes, {len(plan.links)} links, lines for "
            f"{len(plan.config)} devices, {len(plan.checks)} checks; nothing was built"
        ),
        **resolved_data(resolved),
    }
    if args.relative:
        answer["change"] = {
            **delta_data(_delta(current, resolved.plan)),
            "base": plan_fingerprint(current),
        }
        answer["summary"] += (
            "; build only the change with build_lab {plan, relative: true, base: change.base}"
        )
    return ToolResult(answer)


def lab_tools() -> list[Gns3Tool[Any]]:
    """The lab-plan tools of the GNS3 registry."""
    return [
        Gns3Tool(
            PLAN_TOOL,
            _DESCRIPTION,
            PlanLabArguments,
            plan_lab,
            AUTOMATION_ONLY,
            effect=ToolEffect.READ_ONLY,
            example={
                "intent": {
                    "routers": ["R1", "R2", "R3"],
                    "links": [["R1", "R2"], ["R2", "R3"], ["R3", "R1"]],
                    "hosts": [{"name": "H1", "behind": "R1"}, {"name": "H2", "behind": "R2"}],
                    "protocol": "ospf",
                    "pool": "10.10.0.0/16",
                }
            },
            title=lambda args: "Plan a lab" + (" change" if args.relative else ""),
        )
    ]


def gns3_lab_tools() -> ToolRegistry:
    """Every GNS3 tool (:func:`~adapters.gns3.gns3_tools`), then the lab-plan tools."""
    return ToolRegistry([*gns3_tools(), *lab_tools()])
