"""The port of the lab's restore feature, and the typed values it answers with.

:class:`RestorePoints` is what the core asks of a tool source's restore feature: keep
what a change will change before it is made (:meth:`~RestorePoints.take`), say what
rolling a restore point back would change, read now (:meth:`~RestorePoints.preview`),
and roll it back (:meth:`~RestorePoints.roll_back`), which answers with a
:class:`RollbackResult`: a status the core can branch on, the conflicts that stopped it,
the id of the restore point taken just before it (rolling that one back undoes the
rollback), and per device and for the topology what was done and read back.

The values are the core's; their JSON (:meth:`RollbackResult.to_json`) is made once, where
they leave the core: the tool message the model reads, the page's reply, the tool
source's own ``restore_point`` tool. Public through :mod:`copilot_core.ports`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from copilot_core._approvals import ApprovalDecision, ChangePreview
from copilot_core._messages import FunctionCall
from copilot_core._restore_point import RestorePoint, RollbackStatus
from copilot_core._tools import ToolContext, ToolStatus

__all__ = [
    "RestorePoints",
    "RollbackConflict",
    "RollbackOptions",
    "RollbackResult",
    "RollbackStatus",
    "RolledBackItem",
    "RolledBackTo",
]

JSON = dict[str, Any]


#: The statuses whose tool message is an error (the model reads the lab again).
_ERRORS = frozenset({RollbackStatus.FAILED, RollbackStatus.CONFLICT, RollbackStatus.ERROR})


@dataclass(frozen=True, slots=True)
class RollbackOptions:
    """How to roll back: ``use_snapshot`` restores the GNS3-side snapshot the point holds
    (the whole project returns to that moment, others' work included) instead of undoing
    the change by itself; ``force`` goes on where the undo conflicts with what was done
    since (the preview lists what it then touches)."""

    use_snapshot: bool = False
    force: bool = False


@dataclass(frozen=True, slots=True)
class RollbackConflict:
    """One thing done since the change that undoing it would touch, in words; ``device``
    names the device whose configuration it is about (``None``: the topology)."""

    description: str
    device: str | None = None


@dataclass(frozen=True, slots=True)
class RolledBackItem:
    """One device's or the topology's part of a rollback: its status and the evidence,
    as the tool source read it back (``state``, ``actions``, ``differences``, commands
    sent…; JSON the model and the page show as it is), and what went wrong."""

    name: str
    status: RollbackStatus
    evidence: Mapping[str, Any] | None = None
    error: str | None = None

    def to_json(self) -> JSON:
        body: JSON = {
            "device_name": self.name,
            "status": self.status.value,
            "output": None if self.evidence is None else dict(self.evidence),
        }
        if self.error is not None:
            body["error"] = self.error
        return body


@dataclass(frozen=True, slots=True)
class RolledBackTo:
    """The restore point a rollback went back to: its id, when it was taken, and before
    what (its change's summary)."""

    restore_point_id: str
    taken_at: datetime
    before: str

    @classmethod
    def of(cls, point: RestorePoint) -> RolledBackTo:
        return cls(point.id, point.created_at, point.summary)

    def to_json(self) -> JSON:
        return {
            "restore_point": self.restore_point_id,
            "taken_at": self.taken_at.isoformat(),
            "before": self.before,
        }


@dataclass(frozen=True, slots=True)
class RollbackResult:
    """What one rollback did (see the module docstring).

    ``restore_point_id`` names the restore point taken just before the rollback (``None``
    with ``restore_point_notes`` saying why none was; both empty for a rollback refused
    before anything was kept). ``forced``: the ``conflicts`` were gone past (``force``);
    otherwise conflicts of a rollback that ran were left as they are.
    """

    status: RollbackStatus
    items: tuple[RolledBackItem, ...] = ()
    conflicts: tuple[RollbackConflict, ...] = ()
    forced: bool = False
    #: For a refused rollback: what a forced one would also touch, a line each.
    would_also_touch: tuple[str, ...] = ()
    rolled_back_to: RolledBackTo | None = None
    #: Notes on how it went, by topic (``gns3_snapshot``: why the snapshot was not used).
    notes: Mapping[str, str] = field(default_factory=dict)
    restore_point_id: str | None = None
    restore_point_notes: tuple[str, ...] = ()
    error: str | None = None

    @classmethod
    def failure(cls, message: str) -> RollbackResult:
        """A rollback that failed as a whole, ``message`` saying why."""
        return cls(RollbackStatus.ERROR, error=message)

    @classmethod
    def aborted(cls) -> RollbackResult:
        return cls(RollbackStatus.ABORTED)

    @property
    def tool_status(self) -> ToolStatus:
        """The status of the tool message that carries it."""
        if self.status is RollbackStatus.ABORTED:
            return ToolStatus.ABORTED
        return ToolStatus.ERROR if self.status in _ERRORS else ToolStatus.SUCCESS

    @property
    def conflict_lines(self) -> list[str]:
        return [conflict.description for conflict in self.conflicts]

    def to_json(self) -> JSON:
        """The result as the model and the page read it (the ``restore_point`` tool's
        output): ``status``, ``error``, ``results`` (one per device and the topology),
        ``conflicts`` or ``forced``, ``would_also_touch``, ``rolled_back_to``, ``notes``,
        ``restore_point_id`` and ``restore_point_notes``."""
        body: JSON = {"status": self.status.value}
        if self.error is not None:
            body["error"] = self.error
        if self.items:
            body["results"] = [item.to_json() for item in self.items]
        if self.conflicts:
            body["forced" if self.forced else "conflicts"] = self.conflict_lines
        if self.status is RollbackStatus.CONFLICT or self.would_also_touch:
            body["would_also_touch"] = list(self.would_also_touch)
        if self.rolled_back_to is not None:
            body["rolled_back_to"] = self.rolled_back_to.to_json()
        if self.notes:
            body["notes"] = dict(self.notes)
        if self.restore_point_id is not None or self.restore_point_notes:
            body["restore_point_id"] = self.restore_point_id
        if self.restore_point_notes:
            body["restore_point_notes"] = list(self.restore_point_notes)
        return body


class RestorePoints(Protocol):
    """The lab's restore feature, as the core asks it (see the module docstring).

    Every member works in the session ``context`` names, with its credentials; restore
    points are kept with the session (the :class:`~copilot_core.ports.RestorePointStore`).
    """

    def as_tool_call(self, point_id: str, options: RollbackOptions) -> FunctionCall:
        """The rollback as the model would ask for it in the tool source's own terms (its
        rollback tool and arguments): the history records the user's rollback as that
        call, so the model of the next turn reads it as one of its tools' calls."""
        ...

    async def take(
        self, context: ToolContext, *, tool_call_id: str, tool_name: str, preview: ChangePreview
    ) -> RestorePoint:
        """Keep what the change ``preview`` describes will change (the call ``tool_call_id``
        of ``tool_name``), before it is made, and save it with the session. Raises
        :class:`~copilot_core.errors.RestorePointNotTakenError` when what the change needs
        cannot be kept: the change is then not to be made."""
        ...

    async def preview(
        self, point: RestorePoint, options: RollbackOptions, context: ToolContext
    ) -> ChangePreview:
        """What rolling ``point`` back would change, read now: every node, link and device
        by name, each conflict with what was done since (a ``conflict: …`` line). Changes
        nothing."""
        ...

    async def roll_back(
        self,
        point: RestorePoint,
        options: RollbackOptions,
        context: ToolContext,
        *,
        approval: ApprovalDecision,
        tool_call_id: str,
    ) -> RollbackResult:
        """Roll ``point`` back as a change the user approved (``approval``), recorded as the
        call ``tool_call_id`` (:meth:`as_tool_call`): first a restore point of what the
        rollback changes is taken for that call (the result names it), unless the rollback
        is refused for its conflicts (``CONFLICT``: nothing was changed, nothing kept); a
        rollback that cannot keep one is not made (``ERROR``). Failures of the lab are
        results, not exceptions."""
        ...
