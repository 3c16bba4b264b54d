"""``Gns3ToolExecutor`` (the core's ``ToolExecutor``) and ``Gns3TopologySource``.

The project comes from the request context (never from the model); tools name nodes and
ports by their names. The executor offers, per mode, the tools of its registry; it does
not refuse a tool by mode nor watch the abort token itself: the core does both, for every
tool source, and cancels a running tool's task on abort (the console runner then leaves
the device ready, see :class:`~adapters.gns3.ConsoleRunner`).

A call the user approved (``Clearance.approved``) that changes the lab runs only after
a restore point of what it changes was taken and saved (``restore_points``); once it ran,
what it did is recorded with the point (for an undo of that change alone); its result
names it (``restore_point_id``, also in the tool message's metadata). When no restore
point can be taken the change is not made and the result says why. An executor given no
``restore_points`` store, or a call from outside a conversation the store keeps (an MCP
client's), makes approved changes without one, and says so in each result.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from adapters.gns3._client import Gns3Client
from adapters.gns3._console import ConsoleRunner
from adapters.gns3._console_lock import ConsolePriority, background_console_use, current_priority
from adapters.gns3._lab import LabSnapshot
from adapters.gns3._skills import SkillLibrary
from adapters.gns3._tools.capture import capture_tools
from adapters.gns3._tools.commands import command_tools
from adapters.gns3._tools.compact import with_compact_profile
from adapters.gns3._tools.consoles import console_tools
from adapters.gns3._tools.filters import filter_tools
from adapters.gns3._tools.intent import intent_tools
from adapters.gns3._tools.intent_probe import Gns3CheckProbe, Gns3CheckProbes
from adapters.gns3._tools.lab_capture import LabState, capture_lab_state, diff_lab_state
from adapters.gns3._tools.lab_state import lab_state_tools
from adapters.gns3._tools.links import link_tools
from adapters.gns3._tools.nodes import node_tools
from adapters.gns3._tools.project import project_tools
from adapters.gns3._tools.registry import (
    CallScope,
    Gns3Tool,
    Gns3ToolSettings,
    LabAccess,
    ToolRegistry,
)
from adapters.gns3._tools.restore import restore_tools
from adapters.gns3._tools.restore_port import Gns3RestorePoints, roll_back
from adapters.gns3._tools.restore_take import keep_then
from adapters.gns3._tools.skills import skill_tools
from adapters.gns3._tools.titles import TITLES
from adapters.gns3._tools.topology import topology_tools
from adapters.gns3._tools.touches import TOUCHES
from adapters.gns3._tools.verified import (
    VerifyArguments,
    offered_spec,
    plan_of,
    split_verification,
    standing_checks,
    with_plan,
    with_verification,
)
from copilot_core import (
    CopilotMode,
    ParsedToolCall,
    SystemClock,
    ToolContext,
    ToolResult,
    ToolSpec,
    UuidIdFactory,
)
from copilot_core.errors import AuthenticationError, CopilotError
from copilot_core.intent import MonotonicClock, VerificationPlan, WaitClock, verify_change
from copilot_core.ports import (
    NOT_CLEARED,
    Assessment,
    ChangePreview,
    Clearance,
    Clock,
    IdFactory,
    IntentStore,
    RestorePoint,
    RestorePointStore,
    ToolEffect,
)

__all__ = ["CATALOGUE", "Gns3ToolExecutor", "Gns3TopologySource", "gns3_tools"]

#: The order tools are offered in (teaching's tools first, then lab automation's own).
CATALOGUE = (
    "gns3_topology_reader",
    "get_gns3_templates",
    "create_gns3_node",
    "create_gns3_link",
    "start_gns3_node",
    "update_gns3_node_name",
    "execute_multiple_device_commands",
    "packet_capture",
    "device_skills",
    "verify_intent",
    "standing_intent",
    "capture_lab_state",
    "diff_lab_state",
    "gns3_snapshots",
    "gns3_link_filters",
    "stop_gns3_node",
    "suspend_gns3_node",
    "start_all_gns3_nodes",
    "stop_all_gns3_nodes",
    "wait_for_console",
    "delete_gns3_node",
    "delete_gns3_link",
    "execute_multiple_device_config_commands",
    "execute_vpcs_commands",
    "gns3_annotate",
    "restore_point",
)


def gns3_tools() -> ToolRegistry:
    """Every GNS3 tool, in catalogue order."""
    tools: dict[str, Gns3Tool[Any]] = {
        tool.name: tool
        for family in (
            topology_tools(),
            node_tools(),
            link_tools(),
            command_tools(),
            capture_tools(),
            skill_tools(),
            console_tools(),
            filter_tools(),
            project_tools(),
            restore_tools(),
            intent_tools(),
            lab_state_tools(),
        )
        for tool in family
    }
    return ToolRegistry(
        replace(tools[name], title=TITLES[name], touches=TOUCHES.get(name)) for name in CATALOGUE
    )


class Gns3ToolExecutor:
    """The lab tools over a :class:`Gns3Client` and a :class:`ConsoleRunner`."""

    def __init__(
        self,
        client: Gns3Client,
        *,
        runner: ConsoleRunner | None = None,
        skills: SkillLibrary | None = None,
        settings: Gns3ToolSettings | None = None,
        registry: ToolRegistry | None = None,
        restore_points: RestorePointStore | None = None,
        clock: Clock | None = None,
        ids: IdFactory | None = None,
        intent: IntentStore | None = None,
        wait_clock: WaitClock | None = None,
    ) -> None:
        self.client = client
        self.runner = runner or ConsoleRunner()
        self.skills = skills or SkillLibrary()
        self.settings = settings or Gns3ToolSettings()
        self.registry = registry or gns3_tools()
        self.lab = LabAccess(
            self.client,
            self.runner,
            self.skills,
            self.settings,
            restore_points=restore_points,
            intent=intent,
            clock=clock or SystemClock(),
            ids=ids or UuidIdFactory(),
        )
        #: What verified changes wait on (the event loop's clock; a fake one in tests).
        self.wait_clock = wait_clock or MonotonicClock()
        #: The lab's checks per caller: the core's ``CheckProbes`` (its standing intent's).
        self.probes = Gns3CheckProbes(self.lab)
        #: The restore feature: the core's ``RestorePoints`` (the user's undo), and what the
        #: ``restore_point`` tool rolls back with.
        self.restore = Gns3RestorePoints(self.lab)
        self._specs = {
            tool.name: with_compact_profile(offered_spec(tool, self.lab)) for tool in self.registry
        }

    async def warm(self) -> None:
        """Load now what the first console call would otherwise load (the TextFSM index,
        ~0.2 s, in a thread): call it at start-up, before the service takes requests. (Done
        in the background during the first turn instead, it slowed that turn's own first
        loads by more than it saved.)"""
        await self.lab.parser.ready()

    def specs(self, mode: CopilotMode) -> Sequence[ToolSpec]:
        return [self._specs[tool.name] for tool in self.registry.offered(mode)]

    async def assess(self, call: ParsedToolCall, context: ToolContext) -> Assessment:
        """What the call would change, from its tool's preview: a preview is a change, no
        preview (the tool judged this call) none; a tool that is not read-only and cannot
        judge the call (no preview function, or one that could not read what it needs)
        leaves it to its declared effect. A call that cannot run (unknown tool, bad
        arguments) changes nothing (``execute`` says why). A verified change's preview
        carries the checks that will decide it."""
        tool = self.registry.get(call.name)
        if tool is None or call.arguments is None:
            return Assessment.read_only()
        parsed = self._parse(tool, call.arguments)
        if isinstance(parsed, ToolResult):
            return Assessment.read_only()
        args, verification = parsed
        judged, preview = await self._preview(tool, args, context)
        if preview is not None:
            if verification is not None:
                preview = with_plan(preview, await self._plan(verification, context))
            return Assessment(True, preview)
        if judged or tool.effect is ToolEffect.READ_ONLY:
            return Assessment.read_only()
        return Assessment()

    def _parse(self, tool: Gns3Tool[Any], arguments: dict[str, Any]) -> Any:
        """The tool's validated arguments and the call's verification, or an error."""
        split = split_verification(tool, arguments, self.settings)
        if isinstance(split, ToolResult):
            return split
        own, verification = split
        args = tool.parse(own, self.settings)
        return args if isinstance(args, ToolResult) else (args, verification)

    async def _plan(self, verification: VerifyArguments, context: ToolContext) -> VerificationPlan:
        standing = await standing_checks(self.lab.intent, context.project_id, context.user_id)
        return plan_of(verification, standing)

    async def _preview(
        self, tool: Gns3Tool[Any], args: Any, context: ToolContext
    ) -> tuple[bool, ChangePreview | None]:
        """Whether the tool could judge the call, and its preview of it; one that must read
        something (``describe``) falls back to the static one when it cannot."""
        if tool.describe is not None:
            try:
                scope = CallScope(context, context.credentials or "")
                return True, await tool.describe(self.lab, args, scope)
            except CopilotError:
                pass
        if tool.change is None:
            return False, None
        return True, tool.change(args, context.mode)

    async def execute(
        self, call: ParsedToolCall, context: ToolContext, clearance: Clearance = NOT_CLEARED
    ) -> ToolResult:
        """Run the call; an approved change (``clearance.approved``) after a restore point
        of what its preview, assessed once before the approval, says it changes; a call
        with checks (``verify``) as a verified change, decided by the checks its approved
        preview lists."""
        if context.background and current_priority() is ConsolePriority.INTERACTIVE:
            with background_console_use():  # a person's console commands go first
                return await self.execute(call, context, clearance)
        tool = self.registry.get(call.name)
        if tool is None:
            known = ", ".join(t.name for t in self.registry)
            return ToolResult.error(f"There is no GNS3 tool {call.name!r}; tools: {known}.")
        if not call.is_valid or call.arguments is None:
            return ToolResult.error(f"The arguments of {call.name} are invalid: {call.error}")
        parsed = self._parse(tool, call.arguments)
        if isinstance(parsed, ToolResult):
            return parsed
        args, verification = parsed
        if tool.needs_gns3 and not context.credentials:
            return ToolResult.error(
                "No GNS3 credentials came with this request; the tool cannot act on GNS3."
            )
        scope = CallScope(context, context.credentials or "")
        try:
            preview: ChangePreview | None = None
            assessed = clearance.assessment
            if assessed is not None and assessed.preview is not None:
                preview = assessed.preview
            elif clearance.approved is not None or verification is not None:
                _, preview = await self._preview(tool, args, context)  # not assessed by a gate
            if verification is not None:
                plan = (
                    VerificationPlan.from_dict(preview.verification)
                    if (preview is not None and preview.verification is not None)
                    else await self._plan(verification, context)
                )
                return await self._verified(tool, args, scope, call, preview, plan)
            if clearance.approved is not None and preview is not None:
                return await self._change(tool, args, scope, call, preview)
            return await tool.run(self.lab, args, scope)
        except CopilotError as exc:
            return ToolResult.error(exc.message)

    async def _verified(
        self,
        tool: Gns3Tool[Any],
        args: Any,
        scope: CallScope,
        call: ParsedToolCall,
        preview: ChangePreview | None,
        plan: VerificationPlan,
    ) -> ToolResult:
        """The change as a transaction decided by ``plan``'s checks (:mod:`.verified`),
        with what changed in the network: the lab captured before the change, after it
        (once its checks ran) and, when it was rolled back, after the rollback."""
        steps = _ChangeSteps(self, tool, args, scope, call, preview)
        steps.before = await self._capture(scope)
        outcome = await verify_change(
            plan,
            steps,
            Gns3CheckProbe(self.lab, scope),
            self.wait_clock,
            interval=self.settings.verify_interval,
            progress=scope.context.report_progress,
        )
        result = with_verification(outcome)
        if outcome.after is None:  # the change did not run
            return result
        final = await self._capture(scope)
        after = steps.after if outcome.rollback is not None else final
        diffs = {"diff": _diff(steps.before, after)}
        if outcome.rollback is not None:
            diffs["diff_after_rollback"] = _diff(steps.before, final)
        output = result.output
        if isinstance(output, dict):
            output = {**output, "verification": {**output["verification"], **diffs}}
        return ToolResult(output, result.status, result.metadata)

    async def _capture(self, scope: CallScope) -> LabState | str:
        """The lab's state now, or why it could not be read (the change goes on)."""
        scope.context.report_progress("reading the lab's state\n")
        try:
            return await capture_lab_state(self.lab, scope)
        except CopilotError as exc:
            return exc.message

    async def _change(
        self,
        tool: Gns3Tool[Any],
        args: Any,
        scope: CallScope,
        call: ParsedToolCall,
        preview: ChangePreview,
    ) -> ToolResult:
        """An approved change: a restore point first, then the change, named in its result."""
        result, _ = await self._change_kept(tool, args, scope, call, preview)
        return result

    async def _change_kept(
        self,
        tool: Gns3Tool[Any],
        args: Any,
        scope: CallScope,
        call: ParsedToolCall,
        preview: ChangePreview,
    ) -> tuple[ToolResult, RestorePoint | None]:
        """The change after its restore point, and the point (``None``: none was taken)."""
        what = tool.restores(args, preview)
        if what is None:  # nothing a rollback could put back
            return await tool.run(self.lab, args, scope), None
        kept = await keep_then(
            self.lab,
            scope,
            what,
            lambda: tool.run(self.lab, args, scope),
            tool_call_id=call.id,
            tool_name=call.name,
            preview=preview,
        )
        if kept.result is None:
            refused = ToolResult.error(
                f"{call.name} was not run: no restore point could be taken first "
                f"({kept.refused}), and a change is not made without a way back.",
                restore_point_error=kept.refused,
            )
            return refused, None
        return _with_restore_point(kept.result, kept.point, kept.notes), kept.point

    async def _roll_back(
        self, scope: CallScope, call: ParsedToolCall, point: RestorePoint
    ) -> ToolResult:
        """Undo exactly the change ``point`` was taken for, and mark the point rolled back
        (by the verification, not by a user)."""
        result = await roll_back(self.lab, scope, point, use_snapshot=False, partial=True)
        store = self.lab.restore_points
        if store is not None:
            current = await store.restore_point(point.project_id, point.session_id, point.id)
            marked = replace(
                current or point,
                state={
                    **(current or point).state,
                    "rolled_back": {
                        "at": self.lab.clock.now().isoformat(),
                        "by": "verification",
                        "status": result.status.value,
                        "tool_call_id": call.id,
                        "restore_point_id": None,
                    },
                },
            )
            await store.update_restore_point(marked)
        return ToolResult(result.to_json(), result.tool_status)


class _ChangeSteps:
    """The executor's two moves for :func:`~copilot_core.intent.verify_change`."""

    def __init__(
        self,
        executor: Gns3ToolExecutor,
        tool: Gns3Tool[Any],
        args: Any,
        scope: CallScope,
        call: ParsedToolCall,
        preview: ChangePreview | None,
    ) -> None:
        self._executor = executor
        self._tool = tool
        self._args = args
        self._scope = scope
        self._call = call
        self._preview = preview
        self._point: RestorePoint | None = None
        #: The lab's state before the change, and as the change left it (read before a
        #: rollback); a string says why it could not be read.
        self.before: LabState | str = "not read"
        self.after: LabState | str = "not read"

    async def change(self) -> ToolResult:
        if self._preview is None:  # the tool judged that this call changes nothing
            return await self._tool.run(self._executor.lab, self._args, self._scope)
        result, self._point = await self._executor._change_kept(
            self._tool, self._args, self._scope, self._call, self._preview
        )
        return result

    async def roll_back(self) -> ToolResult | None:
        if self._point is None:
            return None
        self.after = await self._executor._capture(self._scope)  # the lab as the change left it
        return await self._executor._roll_back(self._scope, self._call, self._point)


def _diff(before: LabState | str, after: LabState | str) -> dict[str, Any]:
    """What changed in the network between two captures, or why it cannot be said."""
    if isinstance(before, LabState) and isinstance(after, LabState):
        return diff_lab_state(before, after)
    why = before if isinstance(before, str) else after
    return {"unavailable": f"the lab's state could not be read: {why}"}


def _with_restore_point(
    result: ToolResult, point: RestorePoint | None, notes: list[str]
) -> ToolResult:
    """The result naming the restore point taken before it (and what it could not keep)."""
    output = result.output
    if isinstance(output, dict):
        output = {**output, "restore_point_id": point.id if point else None}
        if notes:
            output["restore_point_notes"] = notes
    metadata = dict(result.metadata or {})
    if point is not None:
        metadata["restore_point_id"] = point.id
    return ToolResult(output, result.status, metadata or None)


class Gns3TopologySource:
    """The core's :class:`~copilot_core.ports.TopologySource` over the GNS3 API."""

    def __init__(self, client: Gns3Client) -> None:
        self.client = client

    async def read(self, context: ToolContext) -> dict[str, Any]:
        if not context.credentials:
            raise AuthenticationError("No GNS3 credentials came with this request.")
        lab = await LabSnapshot.read(self.client, context.credentials, context.project_id)
        return lab.summary()
