"""Where drills are kept: the active drill of each project, and each user's results.

:class:`DrillResults` is the store port. It keeps

* the **active drill** of each project (:class:`ActiveDrill`, the private record: the
  fault's id, the checkpoint to restore, the hints used): one at most per project, taken
  atomically by :meth:`~DrillResults.begin` (a second one is
  :class:`~copilot_core.errors.DrillActiveError`), so that a restart, or a second replica
  on the same store, knows a project has a drill and can end it and restore the lab;
* each user's **finished drills** (:class:`DrillOutcome`: the fault, the score, the time,
  the hints, given up or not), written in the same step that drops the active drill
  (:meth:`~DrillResults.finish`), read back as a history and as the best score per fault.

:class:`InMemoryDrillResults` is the store in memory (tests, a single process); the SQLite
and PostgreSQL adapters keep the same rows in a database. One contract test runs on all.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Protocol

from copilot_core._drill_ports import DrillCheckpoint
from copilot_core.errors import DrillActiveError, DrillNotFoundError

__all__ = ["ActiveDrill", "DrillOutcome", "DrillResults", "InMemoryDrillResults"]


@dataclass(frozen=True, slots=True)
class ActiveDrill:
    """A drill running on a project: the private record (it names the fault).

    ``checkpoint`` is ``None`` while the drill is being set up (the project is reserved
    first, so that two starts cannot both inject); ``handed_at`` is when the symptoms were
    confirmed and the student got the lab (``None`` until then): the drill's time counts
    from it. ``score`` is the last grade's (``None``: not graded yet).
    """

    id: str
    project_id: str
    user_id: str
    fault_id: str
    started_at: datetime
    checkpoint: DrillCheckpoint | None = None
    handed_at: datetime | None = None
    hints_used: int = 0
    grades: int = 0
    score: float | None = None


@dataclass(frozen=True, slots=True)
class DrillOutcome:
    """A finished drill, kept in its user's history."""

    drill_id: str
    user_id: str
    project_id: str
    fault_id: str
    topic: str
    difficulty: int
    #: The last grade's share of conditions met (``None``: never graded).
    score: float | None
    started_at: datetime
    ended_at: datetime
    time_s: float
    hints_used: int
    given_up: bool
    #: Whether the restore left the lab exactly as before the fault.
    restored: bool


class DrillResults(Protocol):
    """The active drill of each project and each user's finished drills (see the module)."""

    async def begin(self, drill: ActiveDrill) -> None:
        """Keep ``drill`` as its project's active drill; DrillActiveError when the project
        has one already (nothing is written then)."""
        ...

    async def active(self, project_id: str) -> ActiveDrill | None:
        """The project's active drill, if any."""
        ...

    async def update(self, drill: ActiveDrill) -> None:
        """Replace the project's active drill of the same id (its checkpoint, hints,
        grade); DrillNotFoundError when that drill is not the project's active one."""
        ...

    async def finish(self, project_id: str, drill_id: str, outcome: DrillOutcome | None) -> None:
        """Drop the project's active drill ``drill_id`` and, in the same step, keep
        ``outcome`` in its user's history (``None``: a drill that never started keeps
        none); DrillNotFoundError when that drill is not the project's active one."""
        ...

    async def history(self, user_id: str, limit: int = 50) -> list[DrillOutcome]:
        """The user's finished drills, the latest first, at most ``limit``."""
        ...

    async def best_scores(self, user_id: str) -> dict[str, float]:
        """The user's best score per fault id (faults never graded are left out)."""
        ...


class InMemoryDrillResults:
    """:class:`DrillResults` in memory (one process)."""

    def __init__(self) -> None:
        self._active: dict[str, ActiveDrill] = {}
        self._outcomes: list[DrillOutcome] = []
        self._lock = asyncio.Lock()

    async def begin(self, drill: ActiveDrill) -> None:
        async with self._lock:
            if drill.project_id in self._active:
                raise DrillActiveError(drill.project_id)
            self._active[drill.project_id] = drill

    async def active(self, project_id: str) -> ActiveDrill | None:
        return self._active.get(project_id)

    async def update(self, drill: ActiveDrill) -> None:
        async with self._lock:
            self._current(drill.project_id, drill.id)
            self._active[drill.project_id] = replace(drill)

    async def finish(self, project_id: str, drill_id: str, outcome: DrillOutcome | None) -> None:
        async with self._lock:
            self._current(project_id, drill_id)
            del self._active[project_id]
            if outcome is not None:
                self._outcomes.append(outcome)

    async def history(self, user_id: str, limit: int = 50) -> list[DrillOutcome]:
        mine = [o for o in reversed(self._outcomes) if o.user_id == user_id]
        mine.sort(key=lambda o: o.ended_at, reverse=True)  # stable: the later kept first
        return mine[: max(0, limit)]

    async def best_scores(self, user_id: str) -> dict[str, float]:
        best: dict[str, float] = {}
        for o in self._outcomes:
            if o.user_id == user_id and o.score is not None:
                best[o.fault_id] = max(o.score, best.get(o.fault_id, o.score))
        return best

    def _current(self, project_id: str, drill_id: str) -> ActiveDrill:
        drill = self._active.get(project_id)
        if drill is None or drill.id != drill_id:
            raise DrillNotFoundError(drill_id)
        return drill
