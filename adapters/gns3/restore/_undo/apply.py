"""Carrying an :class:`~adapters.gns3.restore._undo.plan.UndoPlan` out, then reading it back.

The steps go to a :class:`TopologyPort` (GNS3's API, or the property tests' model) in the
plan's order; a run of consecutive deletes of links, or of nodes, goes at once (at most
:data:`DELETES_AT_ONCE` in flight: GNS3 stops a running node as it deletes it). A node is
made again from its saved JSON with its own id; when that is refused it is made with a
new id, and the id map records old -> new (links made again after it follow it; later
undos read the map). A link is made again with its id, its port labels, filters,
suspension and style.

Then everything the plan touched is read back: a node made again is compared with what
was saved field by field (properties, so ports mapping, adapters and MAC address, then
label, console type, symbol, position, status), a link by its ends and settings, a field
set back by its value, and what was deleted by its absence. Each difference is one line
of :attr:`UndoOutcome.differences`; none means the change is undone exactly.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from itertools import groupby
from typing import Any, Protocol

from adapters.gns3.restore._undo.plan import Step, UndoPlan, resolve
from adapters.gns3.restore._undo.record import LINK_FIELDS, node_differences, same_field
from copilot_core.errors import CopilotError

__all__ = ["DELETES_AT_ONCE", "TopologyPort", "UndoOutcome", "carry_out"]

JSON = dict[str, Any]
#: Saved node keys GNS3 refuses or sets itself when a node is created.
_NOT_SENT = frozenset({"status"})
#: Steps whose consecutive runs go to GNS3 at once: the links, then the nodes, a change
#: made are independent of each other (the plan deletes a node's links before the node).
#: GNS3 stops a running node as it deletes it (a Docker node: up to its stop timeout), so
#: one at a time a lab's rollback waited for each node in turn.
_CONCURRENT = frozenset({"delete_link", "delete_node"})
#: How many deletes of a run are in flight at once.
DELETES_AT_ONCE = 8


class TopologyPort(Protocol):
    """What an undo needs of a topology: GNS3's calls, raising ``CopilotError``."""

    async def read(self) -> JSON:
        """``{"nodes", "links", "drawings"}``, each ``{id: kept JSON}``."""
        ...

    async def delete_link(self, link_id: str) -> None: ...
    async def delete_node(self, node_id: str) -> None: ...
    async def create_node(self, body: JSON) -> JSON: ...
    async def create_link(self, body: JSON) -> JSON: ...
    async def update_node(self, node_id: str, fields: JSON) -> JSON: ...
    async def update_link(self, link_id: str, fields: JSON) -> JSON: ...
    async def node_action(self, node_id: str, action: str) -> None: ...
    async def delete_drawing(self, drawing_id: str) -> None: ...
    async def create_drawing(self, body: JSON) -> JSON: ...
    async def update_drawing(self, drawing_id: str, fields: JSON) -> JSON: ...


@dataclass(slots=True)
class UndoOutcome:
    actions: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    differences: list[str] = field(default_factory=list)
    #: Ids GNS3 gave anew: record id -> current id.
    id_map: dict[str, str] = field(default_factory=dict)


class _Runner:
    def __init__(self, port: TopologyPort, id_map: Mapping[str, str]) -> None:
        self.port = port
        self.known = dict(id_map)
        self.outcome = UndoOutcome()

    def r(self, some_id: str) -> str:
        return resolve({**self.known, **self.outcome.id_map}, some_id)

    def _mapped_link(self, saved: JSON) -> JSON:
        return {
            **saved,
            "nodes": [
                {**end, "node_id": self.r(str(end.get("node_id")))}
                for end in saved.get("nodes") or []
            ],
        }

    async def _create_node(self, step: Step) -> None:
        body = {k: v for k, v in step.body.items() if k not in _NOT_SENT}
        try:
            made = await self.port.create_node(body)
        except CopilotError as first:
            try:  # its id may be refused (taken): made with a new one, mapped
                made = await self.port.create_node(
                    {k: v for k, v in body.items() if k != "node_id"}
                )
            except CopilotError:
                raise first from None
        new_id = str(made.get("node_id"))
        if new_id != step.target:
            self.outcome.id_map[step.target] = new_id

    async def _create_link(self, step: Step) -> None:
        body = self._mapped_link(step.body)
        body["nodes"] = [
            {k: e[k] for k in ("node_id", "adapter_number", "port_number", "label") if k in e}
            for e in body["nodes"]
        ]
        try:
            made = await self.port.create_link(body)
        except CopilotError as first:
            try:  # made with a new id and its ends alone; the settings follow
                bare = [{k: e[k] for k in e if k != "label"} for e in body["nodes"]]
                made = await self.port.create_link({"nodes": bare})
            except CopilotError:
                raise first from None
        new_id = str(made.get("link_id"))
        if new_id != step.target:
            self.outcome.id_map[step.target] = new_id
        fields = {
            key: body[key]
            for key in LINK_FIELDS
            if key in body and not same_field(key, made.get(key), body[key])
        }
        if fields:
            await self.port.update_link(new_id, fields)

    async def one(self, step: Step) -> None:
        port, target = self.port, self.r(step.target)
        if step.action == "delete_link":
            await port.delete_link(target)
        elif step.action == "delete_node":
            await port.delete_node(target)
        elif step.action == "create_node":
            await self._create_node(step)
        elif step.action == "create_link":
            await self._create_link(step)
        elif step.action == "update_node":
            await port.update_node(target, step.body)
        elif step.action == "update_link":
            await port.update_link(target, step.body)
        elif step.action == "node_action":
            await port.node_action(target, str(step.body["action"]))
        elif step.action == "delete_drawing":
            await port.delete_drawing(target)
        elif step.action == "create_drawing":
            made = await port.create_drawing(
                {k: v for k, v in step.body.items() if k != "drawing_id"}
            )
            if str(made.get("drawing_id")) != step.target:
                self.outcome.id_map[step.target] = str(made.get("drawing_id"))
        else:  # update_drawing
            await port.update_drawing(target, step.body)

    async def _deletes(self, steps: list[Step]) -> None:
        """Consecutive deletes of one kind, at most :data:`DELETES_AT_ONCE` at a time; what
        each did is said in the plan's order."""
        bound = asyncio.Semaphore(DELETES_AT_ONCE)

        async def delete(step: Step) -> str | None:
            async with bound:
                try:
                    await self.one(step)
                except CopilotError as exc:
                    return exc.message
                return None

        failures = await asyncio.gather(*(delete(step) for step in steps))
        for step, failure in zip(steps, failures, strict=True):
            if failure is None:
                self.outcome.actions.append(step.line)
            else:
                self.outcome.problems.append(f"could not {step.line}: {failure}")

    async def run(self, plan: UndoPlan) -> UndoOutcome:
        failed_nodes: set[str] = set()
        for action, group in groupby(plan.steps, key=lambda step: step.action):
            if action in _CONCURRENT:
                await self._deletes(list(group))
                continue
            for step in group:
                ends = {str(e.get("node_id")) for e in step.body.get("nodes") or []}
                if step.action == "create_link" and ends & failed_nodes:
                    self.outcome.problems.append(
                        f"could not {step.line}: an end was not made again"
                    )
                    continue
                try:
                    await self.one(step)
                except CopilotError as exc:
                    self.outcome.problems.append(f"could not {step.line}: {exc.message}")
                    if step.action == "create_node":
                        failed_nodes.add(step.target)
                    continue
                self.outcome.actions.append(step.line)
        await self.check(plan, await self.port.read())
        return self.outcome

    async def check(self, plan: UndoPlan, now: JSON) -> None:
        nodes, links = now.get("nodes") or {}, now.get("links") or {}
        found = self.outcome.differences
        for step in plan.steps:
            target = self.r(step.target)
            if step.action == "delete_node" and target in nodes:
                found.append(f"{nodes[target].get('name')} is still there")
            elif step.action == "delete_link" and target in links:
                found.append(f"a link is still there: {step.line}")
            elif step.action == "create_node":
                present = nodes.get(target)
                if present is None:
                    found.append(f"{step.body.get('name')} was not made again")
                else:
                    saved = step.body
                    if self._starts_later(plan, step.target):
                        saved = {k: v for k, v in saved.items() if k != "status"}
                    found += node_differences(saved, present)
            elif step.action == "create_link":
                present = links.get(target)
                if present is None:
                    found.append(f"not linked again: {step.line}")
                    continue
                wanted = self._mapped_link(step.body)
                if _ends(present) != _ends(wanted):
                    found.append(f"{step.line}: on other ports")
                found += [
                    f"{step.line}: {key} {present.get(key)!r}, was {wanted.get(key)!r}"
                    for key in LINK_FIELDS
                    if key in wanted and not same_field(key, present.get(key), wanted.get(key))
                ]
            elif step.action in ("update_node", "update_link"):
                present = (nodes if step.action == "update_node" else links).get(target)
                for key, value in step.body.items():
                    if present is None or not same_field(key, present.get(key), value):
                        shown = present.get(key) if present is not None else "(gone)"
                        found.append(f"{step.line}: {key} is {shown!r}, not {value!r}")
            elif step.action == "node_action":
                want = {"start": "started", "stop": "stopped", "suspend": "suspended"}
                present = nodes.get(target)
                status = present.get("status") if present is not None else None
                if status != want[str(step.body["action"])]:
                    found.append(f"{step.line}: it is {status}")

    @staticmethod
    def _starts_later(plan: UndoPlan, node_id: str) -> bool:
        # A node made again stopped and started after: its status is checked by that step.
        return any(s.action == "node_action" and s.target == node_id for s in plan.steps)


def _ends(link: Mapping[str, Any]) -> set[tuple[str, int, int]]:
    return {
        (str(e.get("node_id")), int(e.get("adapter_number", -1)), int(e.get("port_number", -1)))
        for e in link.get("nodes") or []
    }


async def carry_out(
    plan: UndoPlan, port: TopologyPort, id_map: Mapping[str, str] | None = None
) -> UndoOutcome:
    """Do the plan's steps on ``port`` and read them back (see the module docstring)."""
    return await _Runner(port, id_map or {}).run(plan)
