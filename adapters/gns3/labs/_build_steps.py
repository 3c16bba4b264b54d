"""A lab build as ONE verified change: the core's ``ChangeSteps`` of a ``build_lab`` call.

The gate runs :func:`copilot_core.intent.verify_change` over :class:`LabBuildSteps`:

* ``plan``: the plan's own checks decide (the approval card shows them), with the user's
  standing intent in the project (deciding where it held before the build);
* ``restore_point``: the restore point of the topology (and of the devices of the
  project the plan configures: a plan relative to the lab), as for any approved change;
  one that cannot be taken refuses the build; a call from outside a conversation (an
  MCP client's) builds without one, and a rollback then deletes what the build made;
* ``apply``: :meth:`~adapters.gns3.labs.Gns3LabBuilder.build`, progress per stage and
  device (a relative build's: the links it removes deleted first, each device sent only
  its lines undone and added); then what it did recorded with the point (even when it
  failed half-way);
* ``roll_back``: exactly the build undone: with the point, the restore feature's own
  rollback of its recorded change (the nodes and links it made deleted, the links it
  deleted made again, the devices that were there given back their configuration);
  without one, the links and then the nodes the build made deleted;
* ``observed``: the project's nodes and links as the build left them (and after the
  rollback), read back from GNS3.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from adapters.gns3.lab import CallScope, LabAccess, RestoreScope
from adapters.gns3.labs._build import Gns3LabBuilder, LabBuildReport
from adapters.gns3.restore import (
    DELETES_AT_ONCE,
    record_what_it_did,
    restore_point_notes,
    roll_back_verified,
    take_for_change,
    without_a_way_back,
)
from copilot_core import ParsedToolCall, ToolResult, ToolStatus
from copilot_core.errors import CopilotError
from copilot_core.intent import CheckProbe, VerificationPlan
from copilot_core.labs import PlanLink, ResolvedPlan
from copilot_core.ports import ChangePreview, RestorePoint

__all__ = ["LabBuildSteps", "build_result"]

JSON = dict[str, Any]


def build_result(
    report: LabBuildReport, point: RestorePoint | None, notes: list[str]
) -> ToolResult:
    """A build's result: the report, naming its restore point; an error when a part of
    the plan was not made (the checks then say what does not work)."""
    output: JSON = {**report.to_dict(), "restore_point_id": point.id if point else None}
    if notes:
        output["restore_point_notes"] = notes
    if report.aborted:
        return ToolResult(output, ToolStatus.ABORTED)
    if not report.ok:
        output["error"] = "Part of the plan was not built: " + "; ".join(report.problems)
    metadata = {"restore_point_id": point.id} if point is not None else None
    return ToolResult(output, ToolStatus.SUCCESS if report.ok else ToolStatus.ERROR, metadata)


class LabBuildSteps:
    """One ``build_lab`` call's steps (see the module)."""

    def __init__(
        self,
        lab: LabAccess,
        builder: Gns3LabBuilder,
        resolved: ResolvedPlan,
        scope: CallScope,
        call: ParsedToolCall,
        preview: ChangePreview,
        plan: VerificationPlan,
        probe: CheckProbe,
        *,
        remove_links: tuple[PlanLink, ...] = (),
    ) -> None:
        self._lab = lab
        self._builder = builder
        self._resolved = resolved
        self._scope = scope
        self._call = call
        self._preview = preview
        self._plan = plan
        self._probe = probe
        self._remove_links = remove_links
        self._point: RestorePoint | None = None
        self._notes: list[str] = []
        self._report: LabBuildReport | None = None

    @property
    def plan(self) -> VerificationPlan:
        return self._plan

    @property
    def probe(self) -> CheckProbe:
        return self._probe

    @property
    def interval(self) -> float:
        return self._lab.settings.verify_interval

    @property
    def report(self) -> LabBuildReport | None:
        """What the build made (``None``: it did not run)."""
        return self._report

    def _say(self, text: str) -> None:
        self._scope.context.report_progress(text)

    async def restore_point(self) -> ToolResult | None:
        if self._lab.restore_points is None:
            self._notes = ["no restore point was taken: this service keeps none"]
            return None
        try:
            snapshot = await self._lab.snapshot(self._scope)
        except CopilotError as exc:
            return ToolResult.error(
                f"build_lab was not run: the lab could not be read ({exc.message})"
            )
        there = set(snapshot.node_names())
        configured = tuple(c.node for c in self._resolved.plan.config if c.node in there)
        what = RestoreScope(devices=configured, topology=True)
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
                without_a_way_back("build_lab was not run", taken.refused),
                restore_point_error=taken.refused,
            )
        self._point, self._notes = taken.point, taken.notes
        return None

    async def apply(self) -> ToolResult:
        async def progress(text: str) -> None:
            self._say(text)

        try:
            self._report = await self._builder.build(
                self._resolved, self._scope.context, progress, remove_links=self._remove_links
            )
        finally:  # what it did, for an undo of it alone (even when it failed half-way)
            if self._point is not None:
                self._point = await record_what_it_did(self._lab, self._scope, self._point)
        if self._point is not None:
            self._notes = restore_point_notes(self._point)
        return build_result(self._report, self._point, self._notes)

    async def roll_back(self) -> ToolResult | None:
        point = self._point
        if point is not None:
            self._say("rolling the build back to the restore point\n")
            result = await roll_back_verified(self._lab, self._scope, point, self._call.id)
            return ToolResult(result.to_json(), result.tool_status)
        if self._report is None:
            return None
        return await self._delete_what_was_made(self._report)

    async def _delete_what_was_made(self, report: LabBuildReport) -> ToolResult:
        """Without a restore point: the links, then the nodes, the build made (each kind at
        once, at most ``DELETES_AT_ONCE`` in flight: GNS3 stops a node as it deletes it)."""
        token, project = self._scope.token, self._scope.project_id
        client = self._lab.client
        deleted: JSON = {"links": [], "nodes": []}
        failed: list[str] = []
        bound = asyncio.Semaphore(DELETES_AT_ONCE)

        async def delete(
            label: str, ident: str, call: Callable[[str, str, str], Awaitable[None]]
        ) -> str | None:
            async with bound:
                self._say(f"deleting {label}\n")
                try:
                    await call(token, project, ident)
                except CopilotError as exc:
                    return f"{label}: {exc.message}"
                return None

        kinds: list[tuple[str, list[tuple[str, str]], Callable[[str, str, str], Awaitable[None]]]]
        kinds = [
            ("links", [(k.ends, k.link_id) for k in report.created_links], client.delete_link),
            ("nodes", [(n.name, n.node_id) for n in report.created_nodes], client.delete_node),
        ]
        for what, made, call in kinds:
            outcomes = await asyncio.gather(*(delete(label, i, call) for label, i in made))
            for (label, _), failure in zip(made, outcomes, strict=True):
                if failure is None:
                    deleted[what].append(label)
                else:
                    failed.append(failure)
        status = "success" if not failed else "partial_success"
        output: JSON = {"status": status, "deleted": deleted}
        if failed:
            output["failed"] = failed
        return ToolResult(output, ToolStatus.SUCCESS if not failed else ToolStatus.ERROR)

    async def observed(self, rolled_back: bool) -> Mapping[str, Any]:
        try:
            snapshot = await self._lab.snapshot(self._scope)
        except CopilotError as exc:
            return {"lab_now": {"unavailable": exc.message}}
        return {
            "lab_now": {
                "nodes": snapshot.node_names(),
                "links": sorted(snapshot.describe_link(k) for k in snapshot.links),
            }
        }
