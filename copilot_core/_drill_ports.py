"""The port a troubleshooting drill reaches a lab through, and the values it answers with.

A drill breaks a student's lab on purpose and must put it back exactly: :class:`DrillLab`
is what the core asks of the lab's tool source for that. It says whether the project's lab
has what a fault's :class:`~copilot_core.faults.LabShape` needs (:meth:`~DrillLab.fit`, a
:class:`LabFit` whose ``missing`` sentences a student can act on), keeps the lab as it was
(:meth:`~DrillLab.checkpoint`), sends a fault's steps (:meth:`~DrillLab.apply`, which
raises :class:`~copilot_core.errors.DrillStepError` naming the step that failed), judges a
fix's constraints against the checkpoint (:meth:`~DrillLab.judge`) and restores the lab,
answering the lab-state diff against the checkpoint (:meth:`~DrillLab.restore`).

Symptoms and fixed-checks are not the port's: the existing
:class:`~copilot_core._verification.CheckProbes` answers them, so a check is answered one
way whoever asks. The GNS3 adapter implements the port; :mod:`copilot_core.testing` has an
in-memory fake. Public through :mod:`copilot_core.drills`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from copilot_core._tools import ToolContext
from copilot_core.errors import DrillStepError
from copilot_core.faults import Constraint, LabShape, Step

__all__ = [
    "ConstraintResult",
    "DrillCheckpoint",
    "DrillLab",
    "DrillStepError",
    "LabFit",
    "RestoreReport",
]


@dataclass(frozen=True, slots=True)
class LabFit:
    """Whether the project's lab has what a fault's lab shape needs: ``missing`` says, in
    sentences a student can act on, what it lacks ("no FRR node named R1", "R1 eth0 is not
    linked to R2 eth0", "R2 is stopped"); none missing, it fits."""

    missing: tuple[str, ...] = ()

    @property
    def fits(self) -> bool:
        return not self.missing


@dataclass(frozen=True, slots=True)
class DrillCheckpoint:
    """The lab as it was before the fault, to restore exactly. ``state`` is the adapter's
    own JSON (its captured lab state): the core keeps it with the active drill (in the
    results store, so another replica can restore) and hands it back untouched."""

    taken_at: datetime
    state: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class ConstraintResult:
    """Whether a fix respected one constraint, and the evidence (e.g. "R1 gained ip route
    10.0.2.0/24 10.0.12.2", or what was compared when it held)."""

    constraint: Constraint
    held: bool
    evidence: str


@dataclass(frozen=True, slots=True)
class RestoreReport:
    """How a restore ended: ``exact`` when the lab-state diff against the checkpoint is
    empty; otherwise ``differences`` says what still differs, by node and line."""

    exact: bool
    differences: tuple[str, ...] = ()


class DrillLab(Protocol):
    """A project's lab as a drill needs it (see the module). Every method acts for
    ``context``'s caller (project, user, credentials) and stops when its abort fires."""

    async def fit(self, shape: LabShape, context: ToolContext) -> LabFit:
        """Whether the project's lab has the shape's nodes, interfaces, links, running."""
        ...

    async def checkpoint(self, shape: LabShape, context: ToolContext) -> DrillCheckpoint:
        """The state of every node and link of the shape, to restore later."""
        ...

    async def apply(self, steps: Sequence[Step], shape: LabShape, context: ToolContext) -> None:
        """Send each step: device lines judged by the platform grammar first, then sent on
        the node's console (FRR lines in configuration mode); link filters and suspension
        through GNS3. Raises :class:`~copilot_core.errors.DrillStepError`."""
        ...

    async def judge(
        self,
        checkpoint: DrillCheckpoint,
        constraints: Sequence[Constraint],
        shape: LabShape,
        context: ToolContext,
    ) -> list[ConstraintResult]:
        """Each constraint judged on the lab-state diff against ``checkpoint``, in order."""
        ...

    async def restore(
        self, checkpoint: DrillCheckpoint, shape: LabShape, context: ToolContext
    ) -> RestoreReport:
        """Put every node of the shape back as the checkpoint has it (device configuration,
        link filters and suspension) and answer the lab-state diff against the checkpoint."""
        ...
