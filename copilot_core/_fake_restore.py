"""``FakeRestorePoints``: the :class:`~copilot_core.ports.RestorePoints` port in memory,
for tests and for programs that embed the core without a lab (re-exported by
:mod:`copilot_core.testing`).

It keeps its restore points in a real :class:`~copilot_core.ports.RestorePointStore`
(the in-memory store, say) and keeps the port's promises: a rollback takes a restore point
of what it changes first (saved with the session, named by the result), unless it is
refused for its conflicts (nothing kept, nothing done); a session the store does not keep
cannot take one. What a rollback does is scripted (:attr:`FakeRestorePoints.handler`;
by default the topology is as before the change); every rollback asked is recorded
(:attr:`FakeRestorePoints.rollbacks`) with its options, context and approval.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace

from copilot_core._approvals import ApprovalDecision, ChangePreview
from copilot_core._messages import FunctionCall
from copilot_core._restore_point import RestorePoint
from copilot_core._restore_ports import (
    RollbackConflict,
    RollbackOptions,
    RollbackResult,
    RollbackStatus,
    RolledBackItem,
    RolledBackTo,
)
from copilot_core._store_ports import RestorePointStore
from copilot_core._system import SystemClock, UuidIdFactory
from copilot_core._tools import ToolContext
from copilot_core.errors import CopilotError, RestorePointNotTakenError
from copilot_core.ports import Clock, IdFactory

__all__ = ["FakeRestorePoints", "FakeRollback"]


@dataclass(frozen=True, slots=True)
class FakeRollback:
    """One rollback asked of :class:`FakeRestorePoints`, and the point it took first."""

    point: RestorePoint
    options: RollbackOptions
    context: ToolContext
    approval: ApprovalDecision
    tool_call_id: str
    taken: RestorePoint | None = None


#: What a scripted rollback does: a result (the fake names the point it took first).
RollbackHandler = Callable[[FakeRollback], RollbackResult | Awaitable[RollbackResult]]


def _undone(rollback: FakeRollback) -> RollbackResult:
    """The default: the topology is as before the change, read back."""
    evidence = {"state": "as before the change", "actions": []}
    return RollbackResult(
        RollbackStatus.SUCCESS, (RolledBackItem("topology", RollbackStatus.SUCCESS, evidence),)
    )


@dataclass
class FakeRestorePoints:
    """Restore points kept in ``points``; rollbacks scripted (see the module docstring).

    ``conflicts``: what was done since each point's change, by point id: a rollback of it
    without ``force`` is refused (``CONFLICT``), and its preview lists them.
    """

    points: RestorePointStore
    clock: Clock = field(default_factory=SystemClock)
    ids: IdFactory = field(default_factory=UuidIdFactory)
    #: The name of the rollback tool the history records a rollback as a call of.
    tool_name: str = "restore_point"
    handler: RollbackHandler = _undone
    conflicts: dict[str, list[str]] = field(default_factory=dict)
    rollbacks: list[FakeRollback] = field(default_factory=list)
    previews: list[tuple[RestorePoint, RollbackOptions]] = field(default_factory=list)

    def as_tool_call(self, point_id: str, options: RollbackOptions) -> FunctionCall:
        arguments = {
            "action": "rollback",
            "restore_point_id": point_id,
            "use_snapshot": options.use_snapshot,
            "force": options.force,
        }
        return FunctionCall(name=self.tool_name, arguments=json.dumps(arguments))

    async def take(
        self, context: ToolContext, *, tool_call_id: str, tool_name: str, preview: ChangePreview
    ) -> RestorePoint:
        point = RestorePoint(
            id=self.ids.new_id(),
            project_id=context.project_id,
            session_id=context.session_id,
            created_at=self.clock.now(),
            tool_call_id=tool_call_id,
            tool_name=tool_name,
            summary=preview.summary,
            devices=tuple(preview.devices),
        )
        try:
            await self.points.save_restore_point(point)
        except CopilotError as exc:
            raise RestorePointNotTakenError(f"it could not be saved: {exc.message}") from exc
        return point

    async def preview(
        self, point: RestorePoint, options: RollbackOptions, context: ToolContext
    ) -> ChangePreview:
        self.previews.append((point, options))
        conflicts = self.conflicts.get(point.id, [])
        return ChangePreview(
            f"roll back to before {point.tool_name} ({point.summary})",
            topology=[f"conflict: {line}" for line in conflicts] or ["put the topology back"],
        )

    async def roll_back(
        self,
        point: RestorePoint,
        options: RollbackOptions,
        context: ToolContext,
        *,
        approval: ApprovalDecision,
        tool_call_id: str,
    ) -> RollbackResult:
        asked = FakeRollback(point, options, context, approval, tool_call_id)
        conflicts = self.conflicts.get(point.id, [])
        if conflicts and not options.force:
            self.rollbacks.append(asked)
            return RollbackResult(
                RollbackStatus.CONFLICT,
                conflicts=tuple(RollbackConflict(line) for line in conflicts),
                error="Not undone: undoing this change would also touch what was done since.",
            )
        preview = await self.preview(point, options, context)
        try:
            taken = await self.take(
                context,
                tool_call_id=tool_call_id,
                tool_name=self.tool_name,
                preview=preview,
            )
        except RestorePointNotTakenError as exc:
            self.rollbacks.append(asked)
            return RollbackResult.failure(
                f"Not rolled back: no restore point could be taken first ({exc.message})."
            )
        asked = replace(asked, taken=taken)
        self.rollbacks.append(asked)
        result = self.handler(asked)
        if inspect.isawaitable(result):
            result = await result
        return replace(
            result,
            conflicts=result.conflicts or tuple(RollbackConflict(line) for line in conflicts),
            forced=result.forced or bool(conflicts),
            rolled_back_to=result.rolled_back_to or RolledBackTo.of(point),
            restore_point_id=taken.id,
        )
