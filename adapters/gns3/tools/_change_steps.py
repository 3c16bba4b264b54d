"""A verified change's steps in the lab: the core's ``ChangeSteps`` for one GNS3 call.

The gate runs a call with ``verify`` as :func:`copilot_core.intent.verify_change` over
:class:`Gns3ChangeSteps` (``Gns3ToolExecutor.change_steps``): the typed plan (the call's
checks and the user's standing intent, read once, before the approval: the card shows
it and it decides), the probe of the call's caller, and the moves:

* ``restore_point``: the lab's state captured (for ``diff``), then the restore point of
  what the change touches, as for any approved change; one that cannot be taken refuses
  the change (a change is not made without a way back);
* ``apply``: the tool, then what it did recorded with the point (even when it failed
  half-way), its result naming the point;
* ``roll_back``: the lab captured as the change left it, then exactly that change undone
  (what conflicts with what was done since stays), the point marked rolled back by
  ``verification``;
* ``observed``: the lab captured again; what changed in the network after the change
  (``diff``) and after the rollback (``diff_after_rollback``).

A call made as background work keeps a person's console commands first in every step.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager, nullcontext
from typing import Any

from adapters.gns3.console import ConsolePriority, background_console_use, current_priority
from adapters.gns3.lab import CallScope, Gns3Tool, LabAccess
from adapters.gns3.restore import (
    record_what_it_did,
    restore_point_notes,
    roll_back_verified,
    take_for_change,
    without_a_way_back,
)
from adapters.gns3.tools._intent_probe import Gns3CheckProbe
from adapters.gns3.tools._lab_capture import LabState, capture_lab_state, diff_lab_state
from copilot_core import ParsedToolCall, ToolResult
from copilot_core.errors import CopilotError
from copilot_core.intent import CheckProbe, VerificationPlan
from copilot_core.ports import ChangePreview, RestorePoint

__all__ = ["Gns3ChangeSteps", "with_restore_point"]

JSON = dict[str, Any]


class Gns3ChangeSteps:
    """One verified GNS3 call's steps (see the module's docstring)."""

    def __init__(
        self,
        lab: LabAccess,
        tool: Gns3Tool[Any],
        args: Any,
        scope: CallScope,
        call: ParsedToolCall,
        preview: ChangePreview | None,
        plan: VerificationPlan,
    ) -> None:
        self._lab = lab
        self._tool = tool
        self._args = args
        self._scope = scope
        self._call = call
        #: What the change changes (``None``: the tool judged that it changes nothing).
        self._preview = preview
        self._plan = plan
        self._probe = Gns3CheckProbe(lab, scope)
        #: Whether the change is made as an approved one (naming its restore point, or
        #: why none was taken), the point, and what it could not keep.
        self._kept = False
        self._point: RestorePoint | None = None
        self._notes: list[str] = []
        #: The lab's state before the change, and as the change left it (read before a
        #: rollback); a string says why it could not be read.
        self._before: LabState | str = "not read"
        self._after: LabState | str = "not read"

    @property
    def plan(self) -> VerificationPlan:
        return self._plan

    @property
    def probe(self) -> CheckProbe:
        return self._probe

    @property
    def interval(self) -> float:
        return self._lab.settings.verify_interval

    async def restore_point(self) -> ToolResult | None:
        with self._priority():
            self._before = await self._capture()
            if self._preview is None:
                return None
            what = self._tool.restores(self._args, self._preview)
            if what is None:  # nothing a rollback could put back
                return None
            self._kept = True
            taken = await take_for_change(
                self._lab,
                self._scope,
                what,
                tool_call_id=self._call.id,
                tool_name=self._call.name,
                preview=self._preview,
            )
            if taken.refused is not None:
                return ToolResult.error(
                    without_a_way_back(f"{self._call.name} was not run", taken.refused),
                    restore_point_error=taken.refused,
                )
            self._point, self._notes = taken.point, taken.notes
            return None

    async def apply(self) -> ToolResult:
        with self._priority():
            if not self._kept:
                return await self._tool.run(self._lab, self._args, self._scope)
            try:
                result = await self._tool.run(self._lab, self._args, self._scope)
            finally:  # what it did, for an undo of it alone (even when it failed half-way)
                if self._point is not None:
                    self._point = await record_what_it_did(self._lab, self._scope, self._point)
            if self._point is not None:
                self._notes = restore_point_notes(self._point)
            return with_restore_point(result, self._point, self._notes)

    async def roll_back(self) -> ToolResult | None:
        point = self._point
        if point is None:
            return None
        with self._priority():
            self._after = await self._capture()  # the lab as the change left it
            result = await roll_back_verified(self._lab, self._scope, point, self._call.id)
        return ToolResult(result.to_json(), result.tool_status)

    async def observed(self, rolled_back: bool) -> Mapping[str, Any]:
        with self._priority():
            final = await self._capture()
        diffs = {"diff": _diff(self._before, self._after if rolled_back else final)}
        if rolled_back:
            diffs["diff_after_rollback"] = _diff(self._before, final)
        return diffs

    async def _capture(self) -> LabState | str:
        """The lab's state now, or why it could not be read (the change goes on)."""
        self._scope.context.report_progress("reading the lab's state\n")
        try:
            return await capture_lab_state(self._lab, self._scope)
        except CopilotError as exc:
            return exc.message

    @contextmanager
    def _priority(self) -> Iterator[None]:
        """Background work's console runs wait for a person's."""
        background = (
            self._scope.context.background and current_priority() is ConsolePriority.INTERACTIVE
        )
        with background_console_use() if background else nullcontext():
            yield


def _diff(before: LabState | str, after: LabState | str) -> JSON:
    """What changed in the network between two captures, or why it cannot be said."""
    if isinstance(before, LabState) and isinstance(after, LabState):
        return diff_lab_state(before, after)
    why = before if isinstance(before, str) else after
    return {"unavailable": f"the lab's state could not be read: {why}"}


def with_restore_point(
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
