"""Several tool sources offered as one: :class:`CompositeToolExecutor`."""

from __future__ import annotations

from collections.abc import Sequence

from copilot_core import CopilotMode, ParsedToolCall, ToolContext, ToolResult, ToolSpec
from copilot_core.intent import ChangeSteps
from copilot_core.ports import NOT_CLEARED, Assessment, Clearance, ToolExecutor

__all__ = ["CompositeToolExecutor"]


class CompositeToolExecutor:
    """The tools of several executors, in their order, as one ``ToolExecutor``.

    A call goes to the executor that offers its name in the call's mode; the first one
    wins when two offer the same name (the GNS3 tools come first, so an MCP server
    cannot shadow them: its tools are namespaced anyway). A name no executor offers is
    answered with an error result (the :class:`~copilot_core.ToolGate` refuses such a
    call before it gets here).
    """

    def __init__(self, *executors: ToolExecutor) -> None:
        self.executors = executors

    def specs(self, mode: CopilotMode) -> Sequence[ToolSpec]:
        seen: set[str] = set()
        specs: list[ToolSpec] = []
        for executor in self.executors:
            for spec in executor.specs(mode):
                if spec.name not in seen:
                    seen.add(spec.name)
                    specs.append(spec)
        return specs

    def _owner(self, name: str, mode: CopilotMode) -> ToolExecutor | None:
        for executor in self.executors:
            if any(spec.name == name for spec in executor.specs(mode)):
                return executor
        return None

    async def assess(self, call: ParsedToolCall, context: ToolContext) -> Assessment:
        owner = self._owner(call.name, context.mode)
        return Assessment.read_only() if owner is None else await owner.assess(call, context)

    async def change_steps(
        self, call: ParsedToolCall, context: ToolContext, assessment: Assessment
    ) -> ChangeSteps | None:
        owner = self._owner(call.name, context.mode)
        return None if owner is None else await owner.change_steps(call, context, assessment)

    async def execute(
        self, call: ParsedToolCall, context: ToolContext, clearance: Clearance = NOT_CLEARED
    ) -> ToolResult:
        owner = self._owner(call.name, context.mode)
        if owner is None:
            return ToolResult.error(
                f"Tool {call.name!r} is not available in {context.mode.value} mode."
            )
        return await owner.execute(call, context, clearance)
