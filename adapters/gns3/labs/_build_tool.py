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

With ``relative`` (the plan ``plan_lab`` answered with ``relative``: the whole wanted
lab), only the difference from the lab as it is is built, and the card shows exactly it
(:mod:`~adapters.gns3.labs._relative`); ``base``, the lab's fingerprint ``plan_lab``
answered, binds the call to that lab (refused when the lab is another by then).

A tool source of its own (like ``practice_drill``), beside the GNS3 tools: the labs
package sits above the tools, on the same :class:`~adapters.gns3.LabAccess`.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from adapters.gns3.lab import CallScope, LabAccess, RestoreScope
from adapters.gns3.labs._build import Gns3LabBuilder
from adapters.gns3.labs._build_steps import LabBuildSteps, build_result
from adapters.gns3.labs._relative import (
    RelativeBuild,
    named_as_the_lab,
    relative_build,
    relative_preview,
    unread_devices,
)
from adapters.gns3.restore import keep_then, without_a_way_back
from copilot_core import CopilotMode, ToolContext, ToolResult, ToolSpec
from copilot_core.errors import CopilotError, NotFoundError
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
    PlanLink,
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
    "config, checks). Use it when the user asks for a lab to be built. To change the "
    "existing lab, give relative: true with the whole wanted plan plan_lab relative "
    "answered and its change.base as base: only the difference is built."
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
    relative: bool = Field(
        default=False, description="build only the difference from the lab as it is"
    )
    base: str | None = Field(
        default=None,
        pattern=r"^sha256:[0-9a-f]{64}$",
        description="relative: the lab's fingerprint plan_lab answered (change.base)",
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
        self._resolved: OrderedDict[str, _Prepared] = OrderedDict()
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
        self,
        plan: LabPlan,
        *,
        on_fail: OnFail = "rollback",
        wait_s: float | None = None,
        base: str | None = None,
    ) -> FunctionCall:
        """The core's :class:`~copilot_core.labs.LabBuildCalls`: this tool's call of
        ``plan`` (the plan's document; ``on_fail`` and ``wait_s`` only where they are not
        the tool's defaults, so that the plan alone is one call; ``base``: a relative
        build of the lab of that fingerprint)."""
        arguments: JSON = {"plan": plan_data(plan)}
        if on_fail != "rollback":
            arguments["on_fail"] = on_fail
        if wait_s is not None:
            arguments["wait_s"] = wait_s
        if base is not None:
            arguments["relative"] = True
            arguments["base"] = base
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
        if args.base is not None and not args.relative:
            return ToolResult.error(
                f"Invalid arguments for {BUILD_TOOL}: base goes with relative: true"
            )
        limit = self.lab.settings.max_change_verify_wait
        if args.wait_s > limit:
            return ToolResult.error(
                f"Invalid arguments for {BUILD_TOOL}: wait_s: at most {limit:g} (this "
                "server's limit)"
            )
        return args

    async def _resolve(
        self, call: ParsedToolCall, context: ToolContext
    ) -> tuple[BuildLab, _Prepared] | ToolResult:
        """The call's arguments and what it builds, or why it cannot be built (a result
        naming every problem by the plan's field; nothing is done)."""
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
        if kept is not None and kept.key == (plan, args.relative, args.base):
            return args, kept
        try:
            resolved = await self.planner.resolve(plan, context)
        except CopilotError as exc:
            return ToolResult.error(f"The plan could not be resolved on GNS3: {exc.message}")
        if isinstance(resolved, PlanProblems):
            return _problems("GNS3 cannot build the plan", [str(p) for p in resolved.problems])
        prepared = _Prepared((plan, args.relative, args.base), resolved)
        if args.relative:
            relative = await self._relative(args, resolved, context)
            if isinstance(relative, ToolResult):
                return relative
            prepared = _Prepared(prepared.key, relative.resolved, relative)
        self._resolved[call.id] = prepared
        while len(self._resolved) > 32:
            self._resolved.popitem(last=False)
        return args, prepared

    async def _relative(
        self, args: BuildLab, resolved: ResolvedPlan, context: ToolContext
    ) -> RelativeBuild | ToolResult:
        """The difference to build from the lab as it is, or why it is refused."""
        try:
            current: LabPlan | None = await self.planner.current(context)
        except NotFoundError:  # nothing a plan holds yet: everything is new
            current = None
        except CopilotError as exc:
            return ToolResult.error(
                f"{BUILD_TOOL} was not run: the lab could not be read ({exc.message})"
            )
        if current is not None:
            scope = CallScope(context, context.credentials or "")
            unread = await unread_devices(self.lab, scope, current)
            if unread:
                return ToolResult.error(
                    f"{BUILD_TOOL} was not run: the configuration of "
                    + ", ".join(unread)
                    + " could not be read, and a relative build must know what each device "
                    "has. Try again once its console answers."
                )
            resolved = await named_as_the_lab(self.planner, current, resolved, context)
        built = relative_build(current, resolved)
        if isinstance(built, list):
            return ToolResult.error(
                f"{BUILD_TOOL} relative cannot build this change; nothing was done: "
                + "; ".join(built),
                problems=built,
            )
        if args.base is not None and built.base != args.base:
            return ToolResult.error(
                f"{BUILD_TOOL} was not run: the lab is not the one the plan was made against "
                f"(its fingerprint is {built.base}, the call names {args.base}): it changed "
                "since. Call plan_lab relative again and build the change it answers.",
                base=built.base,
            )
        return built

    # ------------------------------------------------------------------ the executor
    async def assess(self, call: ParsedToolCall, context: ToolContext) -> Assessment:
        """The whole build as the card shows it; a plan that cannot be built changes
        nothing (``execute`` says why)."""
        found = await self._resolve(call, context)
        if isinstance(found, ToolResult):
            return Assessment.read_only()
        return Assessment(True, found[1].preview())

    async def change_steps(
        self, call: ParsedToolCall, context: ToolContext, assessment: Assessment
    ) -> ChangeSteps | None:
        found = await self._resolve(call, context)
        if isinstance(found, ToolResult) or not found[1].resolved.plan.checks:
            return None
        args, prepared = found
        resolved = prepared.resolved
        standing = await self._standing(context)
        plan = VerificationPlan(resolved.plan.checks, standing, args.on_fail, args.wait_s)
        scope = CallScope(context, context.credentials or "")
        preview = assessment.preview or prepared.preview()
        return LabBuildSteps(
            self.lab,
            self.builder,
            resolved,
            scope,
            call,
            preview,
            plan,
            self.probes.probe(context),
            remove_links=prepared.remove_links,
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
        prepared = found[1]
        resolved = prepared.resolved
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
                RestoreScope(devices=prepared.kept_devices, topology=True),
                lambda: self.builder.build(
                    resolved, context, progress, remove_links=prepared.remove_links
                ),
                tool_call_id=call.id,
                tool_name=call.name,
                preview=prepared.preview(),
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


@dataclass(frozen=True, slots=True)
class _Prepared:
    """A call's build: the plan resolved, and for a relative build the difference."""

    key: tuple[LabPlan, bool, str | None]
    resolved: ResolvedPlan
    relative: RelativeBuild | None = None

    @property
    def remove_links(self) -> tuple[PlanLink, ...]:
        return self.relative.remove_links if self.relative is not None else ()

    @property
    def kept_devices(self) -> tuple[str, ...]:
        """A relative build's devices that stay and get lines: its restore point keeps
        them (a build with checks finds them in the project: ``LabBuildSteps``)."""
        if self.relative is None:
            return ()
        new = {n.name for n in self.relative.delta.add_nodes}
        return tuple(c.node for c in self.resolved.plan.config if c.node not in new)

    def preview(self) -> ChangePreview:
        if self.relative is not None:
            return relative_preview(self.relative)
        return preview_of(self.resolved.plan)


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
            "relative": {
                "type": "boolean",
                "description": "build only the difference from the lab as it is",
            },
            "base": {
                "type": "string",
                "description": "with relative: plan_lab's change.base (the lab planned against)",
            },
        },
        "required": ["plan"],
        "additionalProperties": False,
    }
