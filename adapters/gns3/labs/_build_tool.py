"""The chat's ``build_lab`` tool: a lab plan built as ONE verified change (issue 39).

The model calls ``build_lab`` with a plan (the document ``plan_lab`` answers, or a plan
file's data: ``docs/labs.md``). The plan is read (:func:`~copilot_core.labs.parse_plan`)
and resolved against the server (the :class:`~copilot_core.labs.LabPlanner`: templates,
ports, every device line judged by its platform's grammar); a plan that cannot be built
is answered with every problem by the field of the plan, and nothing is done.

A plan with checks is a verified change (:meth:`LabBuildTools.change_steps`,
:class:`~adapters.gns3.labs._build_steps.LabBuildSteps`): ONE approval whose card shows
the nodes and links to make (``topology``), every device's lines (``devices``) and the
checks that decide (``verification``); then the restore point, the build, the checks
retried until they hold or ``wait_s`` passes, and on a failing check the build rolled
back exactly (or kept, ``on_fail: keep``), with the failing checks and their evidence.
Progress streams per stage and device (``tool_progress``). A plan without checks is
built after its restore point, unverified.

A tool source of its own (like ``practice_drill``), beside the GNS3 tools: the labs
package sits above the tools, on the same :class:`~adapters.gns3.LabAccess`.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from adapters.gns3.lab import CallScope, LabAccess, RestoreScope
from adapters.gns3.labs._build import Gns3LabBuilder
from adapters.gns3.labs._build_steps import LabBuildSteps, build_result
from adapters.gns3.restore import keep_then, without_a_way_back
from copilot_core import CopilotMode, ToolContext, ToolResult, ToolSpec
from copilot_core.errors import CopilotError
from copilot_core.intent import (
    Check,
    CheckProbes,
    OnFail,
    VerificationPlan,
    check_label,
    checks_adapter,
)
from copilot_core.labs import (
    LabPlan,
    LabPlanError,
    LabPlanner,
    PlanProblems,
    ResolvedPlan,
    parse_plan,
    plan_data,
)
from copilot_core.ports import (
    NOT_CLEARED,
    Assessment,
    ChangePreview,
    ChangeSteps,
    Clearance,
    FunctionCall,
    ParsedToolCall,
    ToolEffect,
)

__all__ = ["BUILD_TOOL", "LabBuildTools"]

#: The tool's name.
BUILD_TOOL = "build_lab"
JSON = dict[str, Any]

_DESCRIPTION = (
    "Build a whole lab from a plan in ONE approved, verified change: the nodes from their "
    "templates, the links, every node started, every device configured with its lines, "
    "then the plan's checks retried until they hold; if one fails the build is rolled back "
    "(on_fail: keep keeps it). Give the plan plan_lab answered (nodes, links, addressing, "
    "config, checks). Use it when the user asks for a lab to be built."
)


class BuildLab(BaseModel):
    """The tool's arguments."""

    model_config = ConfigDict(extra="forbid")

    plan: dict[str, Any] = Field(
        description="the lab plan: nodes, links, addressing, config, checks (plan_lab's answer)"
    )
    on_fail: Literal["rollback", "keep"] = Field(
        default="rollback", description="what to do when a check fails after the build"
    )
    wait_s: float = Field(
        default=90.0, ge=0, description="seconds the checks may take to hold after the build"
    )


class LabBuildTools:
    """The ``build_lab`` tool as a ``ToolExecutor`` (see the module), offered in
    lab-automation mode only: it changes the lab."""

    def __init__(
        self,
        lab: LabAccess,
        planner: LabPlanner,
        probes: CheckProbes,
        builder: Gns3LabBuilder | None = None,
    ) -> None:
        self.lab = lab
        self.planner = planner
        self.probes = probes
        self.builder = builder or Gns3LabBuilder(lab)
        self._resolved: OrderedDict[str, ResolvedPlan] = OrderedDict()
        self.spec = ToolSpec(
            name=BUILD_TOOL,
            description=_DESCRIPTION,
            parameters=_schema(lab.settings.max_change_verify_wait),
            mutates_topology=True,
            effect=ToolEffect.TOPOLOGY_CHANGE,
            brief="Build a lab from a plan: one approval, then checked.",
            everyday=False,
            cues=("build", "triangle", "new lab"),
            title=_title,
        )

    def specs(self, mode: CopilotMode) -> Sequence[ToolSpec]:
        return [self.spec] if mode is CopilotMode.LAB_AUTOMATION_ASSISTANT else []

    def build_call(
        self, plan: LabPlan, *, on_fail: OnFail = "rollback", wait_s: float | None = None
    ) -> FunctionCall:
        """The core's :class:`~copilot_core.labs.LabBuildCalls`: this tool's call of
        ``plan`` (the plan's document; ``on_fail`` and ``wait_s`` only where they are not
        the tool's defaults, so that the plan alone is one call)."""
        arguments: JSON = {"plan": plan_data(plan)}
        if on_fail != "rollback":
            arguments["on_fail"] = on_fail
        if wait_s is not None:
            arguments["wait_s"] = wait_s
        return FunctionCall(name=BUILD_TOOL, arguments=json.dumps(arguments, ensure_ascii=False))

    # ------------------------------------------------------------------ reading a call
    def _arguments(self, call: ParsedToolCall) -> BuildLab | ToolResult:
        try:
            args = BuildLab.model_validate(call.arguments or {})
        except ValidationError as exc:
            said = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}"
                for e in exc.errors()
            )
            return ToolResult.error(f"Invalid arguments for {BUILD_TOOL}: {said}")
        limit = self.lab.settings.max_change_verify_wait
        if args.wait_s > limit:
            return ToolResult.error(
                f"Invalid arguments for {BUILD_TOOL}: wait_s: at most {limit:g} (this "
                "server's limit)"
            )
        return args

    async def _resolve(
        self, call: ParsedToolCall, context: ToolContext
    ) -> tuple[BuildLab, ResolvedPlan] | ToolResult:
        """The call's arguments and its plan resolved, or why it cannot be built (a
        result naming every problem by the plan's field; nothing is done)."""
        args = self._arguments(call)
        if isinstance(args, ToolResult):
            return args
        if not context.credentials:
            return ToolResult.error(
                "No GNS3 credentials came with this request; the tool cannot act on GNS3."
            )
        try:
            plan = parse_plan(args.plan)
        except LabPlanError as exc:
            return _problems("The plan is not valid", [str(p) for p in exc.problems])
        kept = self._resolved.get(call.id)
        if kept is not None and kept.plan == plan:
            return args, kept
        try:
            resolved = await self.planner.resolve(plan, context)
        except CopilotError as exc:
            return ToolResult.error(f"The plan could not be resolved on GNS3: {exc.message}")
        if isinstance(resolved, PlanProblems):
            return _problems("GNS3 cannot build the plan", [str(p) for p in resolved.problems])
        self._resolved[call.id] = resolved
        while len(self._resolved) > 32:
            self._resolved.popitem(last=False)
        return args, resolved

    # ------------------------------------------------------------------ the executor
    async def assess(self, call: ParsedToolCall, context: ToolContext) -> Assessment:
        """The whole build as the card shows it; a plan that cannot be built changes
        nothing (``execute`` says why)."""
        found = await self._resolve(call, context)
        if isinstance(found, ToolResult):
            return Assessment.read_only()
        return Assessment(True, preview_of(found[1].plan))

    async def change_steps(
        self, call: ParsedToolCall, context: ToolContext, assessment: Assessment
    ) -> ChangeSteps | None:
        found = await self._resolve(call, context)
        if isinstance(found, ToolResult) or not found[1].plan.checks:
            return None
        args, resolved = found
        standing = await self._standing(context)
        plan = VerificationPlan(resolved.plan.checks, standing, args.on_fail, args.wait_s)
        scope = CallScope(context, context.credentials or "")
        preview = assessment.preview or preview_of(resolved.plan)
        return LabBuildSteps(
            self.lab,
            self.builder,
            resolved,
            scope,
            call,
            preview,
            plan,
            self.probes.probe(context),
        )

    async def execute(
        self, call: ParsedToolCall, context: ToolContext, clearance: Clearance = NOT_CLEARED
    ) -> ToolResult:
        """A plan that cannot be built: every problem. A plan without checks: built after
        its restore point. A plan with checks is the gate's to run as a verified change:
        called past the gate, it is refused and nothing is done."""
        found = await self._resolve(call, context)
        if isinstance(found, ToolResult):
            return found
        resolved = found[1]
        if resolved.plan.checks:
            return ToolResult.error(
                f"{BUILD_TOOL} with checks is a verified change, which the copilot's gate "
                "runs (checks, restore point, build, rollback); it was called past the gate. "
                "Nothing was done."
            )
        scope = CallScope(context, context.credentials or "")

        async def progress(text: str) -> None:
            context.report_progress(text)

        try:
            kept = await keep_then(
                self.lab,
                scope,
                RestoreScope(topology=True),
                lambda: self.builder.build(resolved, context, progress),
                tool_call_id=call.id,
                tool_name=call.name,
                preview=preview_of(resolved.plan),
            )
        except CopilotError as exc:
            return ToolResult.error(exc.message)
        if kept.result is None:
            return ToolResult.error(
                without_a_way_back(f"{BUILD_TOOL} was not run", kept.refused or ""),
                restore_point_error=kept.refused,
            )
        return build_result(kept.result, kept.point, kept.notes)

    async def _standing(self, context: ToolContext) -> tuple[Check, ...]:
        store = self.lab.intent
        if store is None or not context.user_id:
            return ()
        record = await store.standing_intent(context.project_id, context.user_id)
        if record is None or not record.checks:
            return ()
        return tuple(checks_adapter.validate_python(record.checks))


def preview_of(plan: LabPlan) -> ChangePreview:
    """The approval card of a build: the nodes and links (``topology``), every device's
    lines (``devices``), the checks in the summary (the gate adds them as
    ``verification``)."""
    topology = [
        f"create node {n.name} ({n.platform.value}"
        + (f", template {n.template}" if n.template else "")
        + f") at ({n.x}, {n.y})"
        for n in plan.nodes
    ]
    for link in plan.links:
        subnet = plan.link_subnet(link)
        topology.append(
            f"link {link.ends[0]} - {link.ends[1]}" + (f" ({subnet})" if subnet else "")
        )
    topology.append(f"start {len(plan.nodes)} node(s)")
    routers = sum(1 for n in plan.nodes if n.role == "router")
    summary = (
        f"Build the lab{': ' + plan.summary if plan.summary else ''}: {len(plan.nodes)} nodes "
        f"({routers} routers, {len(plan.nodes) - routers} hosts), {len(plan.links)} links, "
        f"{len(plan.config)} devices configured; then {len(plan.checks)} check(s) decide"
    )
    labels = [check_label(c) for c in plan.checks]
    if labels:
        summary += ": " + "; ".join(labels[:6]) + ("; …" if len(labels) > 6 else "")
    return ChangePreview(
        summary, devices={c.node: list(c.lines) for c in plan.config}, topology=topology
    )


def _problems(what: str, problems: list[str]) -> ToolResult:
    return ToolResult.error(
        f"{what}; nothing was done. Fix every problem and call {BUILD_TOOL} again: "
        + "; ".join(problems),
        problems=problems,
    )


def _title(arguments: JSON) -> str | None:
    plan = arguments.get("plan")
    if not isinstance(plan, dict) or not isinstance(plan.get("nodes"), list):
        return None
    return f"Build a lab of {len(plan['nodes'])} nodes"


def _schema(max_wait: float) -> JSON:
    return {
        "type": "object",
        "properties": {
            "plan": {
                "type": "object",
                "description": "the lab plan plan_lab answered: nodes, links, addressing, "
                "config, checks (docs/lab-plan.schema.json)",
            },
            "on_fail": {"type": "string", "enum": ["rollback", "keep"]},
            "wait_s": {"type": "number", "minimum": 0, "maximum": max_wait},
        },
        "required": ["plan"],
        "additionalProperties": False,
    }
