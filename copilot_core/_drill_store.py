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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Protocol

from copilot_core._drill_ports import DrillCheckpoint
from copilot_core.errors import DrillActiveError, DrillNotFoundError, StoreError

__all__ = [
    "ACTIVE_COLUMNS",
    "RESULT_COLUMNS",
    "ActiveDrill",
    "DrillOutcome",
    "DrillResults",
    "DrillRows",
    "InMemoryDrillResults",
]

#: The columns of a database's active drills, in :meth:`DrillRows.active_row`'s order.
ACTIVE_COLUMNS = (
    "drill_id, project_id, user_id, fault_id, started_at, checkpoint_at, checkpoint, "
    "handed_at, hints_used, grades, score"
)
#: The columns of a database's finished drills, in :meth:`DrillRows.outcome_row`'s order.
RESULT_COLUMNS = (
    "drill_id, user_id, project_id, fault_id, topic, difficulty, score, started_at, "
    "ended_at, time_s, hints_used, given_up, restored"
)


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


def _same(value: Any) -> Any:
    return value


@dataclass(frozen=True, slots=True)
class DrillRows:
    """How a database store lays the two records out as rows: an :class:`ActiveDrill` in
    the order of :data:`ACTIVE_COLUMNS`, a :class:`DrillOutcome` in that of
    :data:`RESULT_COLUMNS`. What differs between databases is given: how a time, the
    checkpoint's state and a text are written and read (``read_state`` raises
    ``ValueError`` for an unreadable one, which is a :class:`StoreError` here)."""

    write_time: Callable[[datetime], Any]
    read_time: Callable[[Any], datetime]
    write_state: Callable[[Mapping[str, Any]], Any]
    read_state: Callable[[Any], Mapping[str, Any]]
    write_text: Callable[[str], Any] = _same

    def active_row(self, drill: ActiveDrill) -> tuple[Any, ...]:
        point, text = drill.checkpoint, self.write_text
        return (
            text(drill.id),
            text(drill.project_id),
            text(drill.user_id),
            text(drill.fault_id),
            self.write_time(drill.started_at),
            None if point is None else self.write_time(point.taken_at),
            None if point is None else self.write_state(point.state),
            None if drill.handed_at is None else self.write_time(drill.handed_at),
            drill.hints_used,
            drill.grades,
            drill.score,
        )

    def active(self, row: Sequence[Any]) -> ActiveDrill:
        point = None
        if row[6] is not None:
            try:
                point = DrillCheckpoint(self.read_time(row[5]), self.read_state(row[6]))
            except ValueError:
                raise StoreError(f"The drill {row[0]!r} has an unreadable checkpoint.") from None
        return ActiveDrill(
            id=row[0],
            project_id=row[1],
            user_id=row[2],
            fault_id=row[3],
            started_at=self.read_time(row[4]),
            checkpoint=point,
            handed_at=None if row[7] is None else self.read_time(row[7]),
            hints_used=int(row[8]),
            grades=int(row[9]),
            score=None if row[10] is None else float(row[10]),
        )

    def outcome_row(self, outcome: DrillOutcome) -> tuple[Any, ...]:
        text = self.write_text
        return (
            text(outcome.drill_id),
            text(outcome.user_id),
            text(outcome.project_id),
            text(outcome.fault_id),
            text(outcome.topic),
            outcome.difficulty,
            outcome.score,
            self.write_time(outcome.started_at),
            self.write_time(outcome.ended_at),
            outcome.time_s,
            outcome.hints_used,
            outcome.given_up,
            outcome.restored,
        )

    def outcome(self, row: Sequence[Any]) -> DrillOutcome:
        return DrillOutcome(
            drill_id=row[0],
            user_id=row[1],
            project_id=row[2],
            fault_id=row[3],
            topic=row[4],
            difficulty=int(row[5]),
            score=None if row[6] is None else float(row[6]),
            started_at=self.read_time(row[7]),
            ended_at=self.read_time(row[8]),
            time_s=float(row[9]),
            hints_used=int(row[10]),
            given_up=bool(row[11]),
            restored=bool(row[12]),
        )
