"""``FakeDrillLab``: the :class:`~copilot_core.drills.DrillLab` port in memory, for tests
and for programs that embed the core without a lab (re-exported by
:mod:`copilot_core.testing`).

Its lab is plain data: each node's configuration as a list of lines, and each link's
packet loss and suspension. A step changes it as a device would (device lines are
appended, ``no ...`` lines take back the line they negate; a link filter or suspension is
set), a checkpoint copies it, a restore puts the copy back and compares, and constraints
are judged on the difference from the checkpoint (a ``ip route`` line gained, an
``ip address`` line changed, any line changed, a node or link added or removed). What the
port does can be spoilt on purpose: ``missing`` (the lab does not fit), ``fail_step`` (that
step raises :class:`~copilot_core.errors.DrillStepError`), ``restore_leaves`` (the restore
is not exact). Every call is recorded in ``calls`` with its context.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from copilot_core._drill_ports import ConstraintResult, DrillCheckpoint, LabFit, RestoreReport
from copilot_core._tools import ToolContext
from copilot_core.errors import DrillStepError
from copilot_core.faults import (
    AddressesUnchanged,
    ConfigUnchanged,
    Constraint,
    DeviceLines,
    LabShape,
    LinkFilter,
    NoNewStaticRoute,
    Step,
)

__all__ = ["FakeDrillCall", "FakeDrillLab"]


@dataclass(frozen=True, slots=True)
class FakeDrillCall:
    """One call made to :class:`FakeDrillLab`: the method's name and the caller."""

    method: str
    context: ToolContext


def _link_key(link: Sequence[str]) -> str:
    return " - ".join(sorted(link))


@dataclass
class FakeDrillLab:
    """A lab in memory that a drill can break and restore (see the module)."""

    #: Each node's configuration lines.
    nodes: dict[str, list[str]] = field(default_factory=dict)
    #: Each link (its ends joined by `` - ``, sorted): ``packet_loss`` and ``suspended``.
    links: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: What the lab lacks for any shape (empty: it fits every shape whose nodes it has).
    missing: tuple[str, ...] = ()
    #: The index of the step (of one ``apply``) that fails, and why.
    fail_step: int | None = None
    fail_reason: str = "the console did not answer"
    #: What a restore leaves different (empty: it is exact).
    restore_leaves: tuple[str, ...] = ()
    calls: list[FakeDrillCall] = field(default_factory=list)
    applied: list[Step] = field(default_factory=list)

    @classmethod
    def for_shape(cls, shape: LabShape) -> FakeDrillLab:
        """A healthy lab with the shape's nodes (no lines yet) and links."""
        return cls(
            nodes={node.name: [] for node in shape.nodes},
            links={_link_key(link): {"packet_loss": 0, "suspended": False} for link in shape.links},
        )

    def state(self) -> dict[str, Any]:
        return {"nodes": copy.deepcopy(self.nodes), "links": copy.deepcopy(self.links)}

    # ------------------------------------------------------------------ the port
    async def fit(self, shape: LabShape, context: ToolContext) -> LabFit:
        self.calls.append(FakeDrillCall("fit", context))
        absent = tuple(f"no node named {n.name}" for n in shape.nodes if n.name not in self.nodes)
        return LabFit(self.missing + absent)

    async def checkpoint(self, shape: LabShape, context: ToolContext) -> DrillCheckpoint:
        self.calls.append(FakeDrillCall("checkpoint", context))
        return DrillCheckpoint(datetime.now(UTC), self.state())

    async def apply(self, steps: Sequence[Step], shape: LabShape, context: ToolContext) -> None:
        self.calls.append(FakeDrillCall("apply", context))
        for index, step in enumerate(steps):
            if index == self.fail_step:
                raise DrillStepError(index, self.fail_reason)
            self.applied.append(step)
            if isinstance(step, DeviceLines):
                config = self.nodes.setdefault(step.node, [])
                for line in step.lines:
                    negated = line.removeprefix("no ").strip()
                    if line.startswith("no ") and negated in config:
                        config.remove(negated)
                    else:
                        config.append(line)
            else:
                link = self.links.setdefault(
                    _link_key(step.link), {"packet_loss": 0, "suspended": False}
                )
                if isinstance(step, LinkFilter):
                    link["packet_loss"] = step.packet_loss
                else:
                    link["suspended"] = step.suspend

    async def judge(
        self,
        checkpoint: DrillCheckpoint,
        constraints: Sequence[Constraint],
        shape: LabShape,
        context: ToolContext,
    ) -> list[ConstraintResult]:
        self.calls.append(FakeDrillCall("judge", context))
        before: dict[str, list[str]] = checkpoint.state["nodes"]
        judged = []
        for constraint in constraints:
            if isinstance(constraint, NoNewStaticRoute | AddressesUnchanged | ConfigUnchanged):
                node = constraint.node
                old, new = before.get(node, []), self.nodes.get(node, [])
                gained = [line for line in new if line not in old]
                lost = [line for line in old if line not in new]
                if isinstance(constraint, NoNewStaticRoute):
                    bad = [line for line in gained if line.startswith("ip route")]
                    what = f"{node} gained {'; '.join(bad)}" if bad else f"{node} gained no route"
                else:
                    bad = gained + lost
                    if isinstance(constraint, AddressesUnchanged):
                        bad = [line for line in bad if "address" in line]
                    what = f"{node} changed {'; '.join(bad)}" if bad else f"{node} as before"
                judged.append(ConstraintResult(constraint, not bad, what))
            else:
                same = set(checkpoint.state["nodes"]) == set(self.nodes) and set(
                    checkpoint.state["links"]
                ) == set(self.links)
                judged.append(
                    ConstraintResult(
                        constraint, same, "as before" if same else "nodes or links differ"
                    )
                )
        return judged

    async def restore(
        self, checkpoint: DrillCheckpoint, shape: LabShape, context: ToolContext
    ) -> RestoreReport:
        self.calls.append(FakeDrillCall("restore", context))
        self.nodes = copy.deepcopy(dict(checkpoint.state["nodes"]))
        self.links = copy.deepcopy(dict(checkpoint.state["links"]))
        if self.restore_leaves:
            return RestoreReport(exact=False, differences=self.restore_leaves)
        exact = self.state() == {
            "nodes": dict(checkpoint.state["nodes"]),
            "links": dict(checkpoint.state["links"]),
        }
        return RestoreReport(exact=exact)

    def method_calls(self) -> list[str]:
        return [call.method for call in self.calls]
