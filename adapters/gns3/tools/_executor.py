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

A call with checks (``verify``) is a verified change: the executor gives the gate its
steps (:meth:`Gns3ToolExecutor.change_steps`, :mod:`.change_steps`) and the gate runs the
transaction; ``execute`` refuses such a call made past the gate.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from adapters.gns3._skills import SkillLibrary
from adapters.gns3.console import (
    ConsolePriority,
    ConsoleRunner,
    background_console_use,
    current_priority,
)
from adapters.gns3.lab import (
    CallScope,
    Gns3Tool,
    Gns3ToolSettings,
    LabAccess,
    LabSnapshot,
    ToolRegistry,
)
from adapters.gns3.rest import Gns3Client
from adapters.gns3.restore import Gns3RestorePoints, keep_then, without_a_way_back
from adapters.gns3.tools._capture import capture_tools
from adapters.gns3.tools._change_steps import Gns3ChangeSteps, with_restore_point
from adapters.gns3.tools._commands import command_tools
from adapters.gns3.tools._compact import with_compact_profile
from adapters.gns3.tools._consoles import console_tools
from adapters.gns3.tools._filters import filter_tools
from adapters.gns3.tools._intent import intent_tools
from adapters.gns3.tools._intent_probe import Gns3CheckProbes
from adapters.gns3.tools._lab_state import lab_state_tools
from adapters.gns3.tools._links import link_tools
from adapters.gns3.tools._nodes import node_tools
from adapters.gns3.tools._project import project_tools
from adapters.gns3.tools._restore import restore_tools
from adapters.gns3.tools._skills import skill_tools
from adapters.gns3.tools._titles import TITLES
from adapters.gns3.tools._topology import topology_tools
from adapters.gns3.tools._touches import TOUCHES
from adapters.gns3.tools._verified import (
    VerifyArguments,
    offered_spec,
    plan_of,
    split_verification,
    standing_checks,
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
from copilot_core.intent import ChangeSteps, VerificationPlan
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
        arguments) changes nothing (``execute`` says why)."""
        tool = self.registry.get(call.name)
        if tool is None or call.arguments is None:
            return Assessment.read_only()
        parsed = self._parse(tool, call.arguments)
        if isinstance(parsed, ToolResult):
            return Assessment.read_only()
        judged, preview = await self._preview(tool, parsed[0], context)
        if preview is not None:
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
        of what its preview, assessed once before the approval, says it changes. A call
        with checks (``verify``) is the gate's to run, over :meth:`change_steps`: here it
        is refused, and nothing is done."""
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
        if verification is not None:
            return ToolResult.error(
                f"{call.name} with verify is a verified change, which the copilot's gate "
                "runs (checks, restore point, change, rollback); it was called past the "
                "gate. Nothing was done."
            )
        scope = CallScope(context, context.credentials or "")
        try:
            preview: ChangePreview | None = None
            assessed = clearance.assessment
            if assessed is not None and assessed.preview is not None:
                preview = assessed.preview
            elif clearance.approved is not None:
                _, preview = await self._preview(tool, args, context)  # not assessed by a gate
            if clearance.approved is not None and preview is not None:
                return await self._change(tool, args, scope, call, preview)
            return await tool.run(self.lab, args, scope)
        except CopilotError as exc:
            return ToolResult.error(exc.message)

    async def change_steps(
        self, call: ParsedToolCall, context: ToolContext, assessment: Assessment
    ) -> ChangeSteps | None:
        """A call with checks (``verify``) as the steps of a verified change
        (:mod:`.change_steps`), for the gate to run: its plan is the call's checks and
        the user's standing intent as they are now (the approval card shows that plan,
        and it decides), its restore point sized by the assessed preview. ``None`` for
        any other call, and for one that cannot run (``execute`` says why)."""
        tool = self.registry.get(call.name)
        if tool is None or not call.is_valid or call.arguments is None:
            return None
        parsed = self._parse(tool, call.arguments)
        if isinstance(parsed, ToolResult) or parsed[1] is None:
            return None
        args, verification = parsed
        if tool.needs_gns3 and not context.credentials:
            return None
        preview = assessment.preview
        if preview is None:
            try:
                _, preview = await self._preview(tool, args, context)
            except CopilotError:
                preview = None
        plan = await self._plan(verification, context)
        scope = CallScope(context, context.credentials or "")
        return Gns3ChangeSteps(self.lab, tool, args, scope, call, preview, plan)

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
                without_a_way_back(f"{call.name} was not run", kept.refused or ""),
                restore_point_error=kept.refused,
            )
            return refused, None
        return with_restore_point(kept.result, kept.point, kept.notes), kept.point


class Gns3TopologySource:
    """The core's :class:`~copilot_core.ports.TopologySource` over the GNS3 API."""

    def __init__(self, client: Gns3Client) -> None:
        self.client = client

    async def read(self, context: ToolContext) -> dict[str, Any]:
        if not context.credentials:
            raise AuthenticationError("No GNS3 credentials came with this request.")
        lab = await LabSnapshot.read(self.client, context.credentials, context.project_id)
        return lab.summary()
