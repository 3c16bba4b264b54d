"""A troubleshooting drill's way into a GNS3 lab: the core's ``DrillLab`` port.

:class:`Gns3DrillLab` works with the adapter's own parts, as the tools do:

- **fit**: the project read over the REST client (:class:`~adapters.gns3.lab._snapshot.LabSnapshot`)
  and compared with the fault's lab shape (:func:`~adapters.gns3.drills._fit.fit_problems`);
- **apply**: each device line judged first by its platform's grammar and the operator's
  forbidden list, as the catalog judged it at start-up
  (:func:`~adapters.gns3._faults.line_problem`), then sent on the node's console (FRR lines
  in configuration mode, as the config tool sends them; Linux shell commands; VPCS
  commands); a link filter or suspension is a ``PUT`` on the link. Any failure is a
  :class:`~copilot_core.errors.DrillStepError` naming the step;
- **checkpoint**: the lab-state capture (:func:`~adapters.gns3.tools._lab_capture.
  capture_lab_state`, what ``capture_lab_state`` reads), each shape node's configuration
  as a restore point keeps it, a Linux host's MTUs, rules, iptables rules and nftables
  tables, the shape's links and the topology (:mod:`adapters.gns3.model._drill_state`
  says what and why);
- **judge**: the same taken again, compared (:func:`~adapters.gns3.model._drill_state.
  judge_constraints`);
- **restore**: the links' filters and suspension put back, then each node's configuration
  with the restore feature's own function
  (:func:`~adapters.gns3.restore._devices.restore_device`: FRR's running
  configuration line by line in configuration mode, a host's addresses and routes, a VPCS'
  ``ip``; every line judged before it is sent), a host's MTUs, states and rules; then the
  lab is captured again until nothing differs from the checkpoint or ``settle_s`` has
  passed (adjacencies and routes take their protocols' time to come back). The report is
  exact when nothing differs.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from adapters.gns3.drills._fit import KINDS, find_shape_link, fit_problems, link_label
from adapters.gns3.lab import CallScope, LabAccess, LabSnapshot
from adapters.gns3.model import (
    HOST_READS,
    DeviceKind,
    differences,
    host_plan,
    judge_constraints,
    keeper_for,
    link_fields,
    link_updates,
    parse_host,
)
from adapters.gns3.restore import RestorePointError, read_configuration, refusal, restore_device
from adapters.gns3.tools import capture_lab_state, send_device_lines
from copilot_core import ToolContext
from copilot_core.drills import ConstraintResult, DrillCheckpoint, LabFit, RestoreReport
from copilot_core.errors import AuthenticationError, CopilotError, DrillStepError
from copilot_core.faults import Constraint, DeviceLines, LabShape, LinkFilter, Platform, Step

__all__ = ["Gns3DrillLab"]

JSON = dict[str, Any]


class Gns3DrillLab:
    """The ``DrillLab`` port on a GNS3 lab (see the module). ``settle_s``: how long a
    restore waits for the lab to read as the checkpoint again; ``interval``: between two
    captures meanwhile; ``passes``: how often a node's configuration is put back when the
    read-back still differs (removing a host's address drops its routes: a second pass
    adds them again)."""

    def __init__(
        self, lab: LabAccess, *, settle_s: float = 120.0, interval: float = 3.0, passes: int = 3
    ) -> None:
        self.lab = lab
        self.settle_s = settle_s
        self.interval = interval
        self.passes = passes

    def _scope(self, context: ToolContext) -> CallScope:
        if not context.credentials:
            raise AuthenticationError("No GNS3 credentials came with this request.")
        return CallScope(context, context.credentials)

    # ------------------------------------------------------------------ fit
    async def fit(self, shape: LabShape, context: ToolContext) -> LabFit:
        snapshot = await self.lab.snapshot(self._scope(context))
        return LabFit(fit_problems(shape, snapshot))

    # ------------------------------------------------------------------ apply
    async def apply(self, steps: Sequence[Step], shape: LabShape, context: ToolContext) -> None:
        scope = self._scope(context)
        for index, step in enumerate(steps):
            if context.abort.is_aborted():
                raise DrillStepError(index, f"aborted ({context.abort.reason})")
            try:
                snapshot = await self.lab.snapshot(scope)
            except CopilotError as exc:
                raise DrillStepError(index, f"GNS3 could not be read: {exc.message}") from exc
            if isinstance(step, DeviceLines):
                await self._send_lines(index, step, shape, snapshot)
            else:
                await self._link_step(index, step, snapshot, scope)

    async def _send_lines(
        self, index: int, step: DeviceLines, shape: LabShape, snapshot: LabSnapshot
    ) -> None:
        shaped = shape.node(step.node)
        node = snapshot.by_name(step.node)
        if shaped is None or node is None:
            raise DrillStepError(index, f"the lab has no node {step.node}")
        why = await send_device_lines(self.lab, snapshot, node, shaped.platform, step.lines)
        if why is not None:
            raise DrillStepError(index, f"{step.node}: {why}")

    async def _link_step(
        self, index: int, step: Step, snapshot: LabSnapshot, scope: CallScope
    ) -> None:
        assert not isinstance(step, DeviceLines)
        link = find_shape_link(snapshot, step.link)
        if link is None:
            raise DrillStepError(index, f"the lab has no link {link_label(step.link)}")
        if isinstance(step, LinkFilter):
            filters = dict(link.get("filters") or {})
            filters.pop("packet_loss", None)
            if step.packet_loss:
                filters["packet_loss"] = [step.packet_loss]
            fields: JSON = {"filters": filters}
        else:
            fields = {"suspend": step.suspend}
        try:
            await self._update_link(scope, link, fields)
        except CopilotError as exc:
            raise DrillStepError(index, f"link {link_label(step.link)}: {exc.message}") from exc

    async def _update_link(self, scope: CallScope, link: JSON, fields: JSON) -> None:
        """Give ``link`` ``fields`` (see :func:`~adapters.gns3.model._drill_state.link_updates`)."""
        for body in link_updates(link, fields):
            await self.lab.client.update_link(
                scope.token, scope.project_id, str(link["link_id"]), **body
            )

    # ------------------------------------------------------------------ checkpoint, judge
    async def checkpoint(self, shape: LabShape, context: ToolContext) -> DrillCheckpoint:
        state = await self._capture(shape, self._scope(context))
        return DrillCheckpoint(self.lab.clock.now(), state)

    async def judge(
        self,
        checkpoint: DrillCheckpoint,
        constraints: Sequence[Constraint],
        shape: LabShape,
        context: ToolContext,
    ) -> list[ConstraintResult]:
        now = await self._capture(shape, self._scope(context))
        return judge_constraints(constraints, checkpoint.state, now)

    async def _capture(self, shape: LabShape, scope: CallScope) -> JSON:
        """The drill's JSON of the lab now (see :mod:`adapters.gns3.model._drill_state`)."""
        state = await capture_lab_state(self.lab, scope)
        snapshot = await self.lab.snapshot(scope)
        devices: JSON = {}
        hosts: JSON = {}

        async def one(name: str, platform: Platform) -> None:
            node = snapshot.by_name(name)
            keeper = keeper_for(KINDS[platform])
            if node is None or keeper is None or node.get("status") != "started":
                return
            try:
                config = await read_configuration(self.lab, snapshot, node, keeper)
            except RestorePointError:
                return  # a difference: read on one side only
            devices[name] = {
                "node_id": str(node["node_id"]),
                "kind": keeper.kind.value,
                "config": config,
            }
            if platform is Platform.LINUX:
                host = await self._read_host(snapshot, node)
                if host is not None:
                    hosts[name] = host

        await asyncio.gather(*(one(n.name, n.platform) for n in shape.nodes))
        links: JSON = {}
        for link in shape.links:
            found = find_shape_link(snapshot, link)
            if found is not None:
                links[link_label(link)] = {
                    "filters": dict(found.get("filters") or {}),
                    "suspend": bool(found.get("suspend")),
                }
        labels = sorted(snapshot.describe_link(link) for link in snapshot.links)
        return {
            "lab": state.to_dict(),
            "devices": dict(sorted(devices.items())),
            "hosts": dict(sorted(hosts.items())),
            "links": links,
            "topology": {"nodes": snapshot.node_names(), "links": labels},
        }

    async def _read_host(self, snapshot: LabSnapshot, node: JSON) -> JSON | None:
        target = snapshot.console_target(node, DeviceKind.LINUX)
        transcript = await self.lab.runner.run(target, HOST_READS)
        if transcript.error is not None or len(transcript.outcomes) != len(HOST_READS):
            return None
        return parse_host([o.output for o in transcript.outcomes])

    # ------------------------------------------------------------------ restore
    async def restore(
        self, checkpoint: DrillCheckpoint, shape: LabShape, context: ToolContext
    ) -> RestoreReport:
        scope = self._scope(context)
        saved: Mapping[str, Any] = checkpoint.state
        problems: list[str] = []
        snapshot = await self.lab.snapshot(scope)
        for link in shape.links:
            kept = (saved.get("links") or {}).get(link_label(link))
            found = find_shape_link(snapshot, link)
            if kept is None or found is None:
                continue
            fields = link_fields(
                kept, {"filters": found.get("filters"), "suspend": found.get("suspend")}
            )
            if fields:
                try:
                    await self._update_link(scope, found, fields)
                except CopilotError as exc:
                    problems.append(f"link {link_label(link)}: {exc.message}")
        await asyncio.gather(
            *(self._restore_node(scope, snapshot, name, saved, problems) for name in
              sorted(saved.get("devices") or {}))
        )  # fmt: skip
        deadline = asyncio.get_running_loop().time() + self.settle_s
        while True:
            now = await self._capture(shape, scope)
            left = differences(saved, now)
            if not left or asyncio.get_running_loop().time() >= deadline:
                break
            await asyncio.sleep(self.interval)
        remaining = tuple(problems + left)
        return RestoreReport(not remaining, remaining)

    async def _restore_node(
        self,
        scope: CallScope,
        snapshot: LabSnapshot,
        name: str,
        saved: Mapping[str, Any],
        problems: list[str],
    ) -> None:
        entry = {**saved["devices"][name], "captured": True}
        node = snapshot.by_name(name)
        if node is None:
            problems.append(f"{name} no longer exists")
            return
        kept_host = (saved.get("hosts") or {}).get(name)
        if kept_host is not None:
            now = await self._read_host(snapshot, node)
            commands = host_plan(kept_host, now) if now is not None else []
            refused = [w for c in commands if (w := refusal(c, DeviceKind.LINUX, config=False))]
            if refused:
                problems += [f"{name}: not sent: {why}" for why in refused]
            elif commands:
                target = snapshot.console_target(node, DeviceKind.LINUX)
                done = await self.lab.runner.run(target, commands)
                if done.error is not None:
                    problems.append(f"{name}: {done.error}")
        item = await restore_device(self.lab, scope, snapshot, name, entry, by_name=True)
        for _ in range(self.passes - 1):
            if item.status.value == "success":
                return
            item = await restore_device(self.lab, scope, snapshot, name, entry, by_name=True)
        if item.status.value == "success":
            return
        left = (item.evidence or {}).get("differences") or []
        problems.append(f"{name}: {item.error or '; '.join(map(str, left))}")
