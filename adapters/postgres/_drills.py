"""The drills' store in PostgreSQL (tables ``drill_active`` and ``drill_results``, schema
version 6): :class:`copilot_core.drills.DrillResults` for replicas, which then all see a
project's active drill. The project's row is the lock: ``INSERT ... ON CONFLICT DO
NOTHING`` takes it or finds it taken; finishing deletes it and writes the result in one
transaction."""

from __future__ import annotations

import json
from typing import Any

from adapters.postgres._codec import encode_json, safe_text, utc
from adapters.postgres._database import PostgresDatabase
from copilot_core.drills import ActiveDrill, DrillCheckpoint, DrillOutcome
from copilot_core.errors import DrillActiveError, DrillNotFoundError, StoreError

__all__ = ["PostgresDrillResults"]

_ACTIVE_COLUMNS = (
    "drill_id, project_id, user_id, fault_id, started_at, checkpoint_at, checkpoint, "
    "handed_at, hints_used, grades, score"
)
_RESULT_COLUMNS = (
    "drill_id, user_id, project_id, fault_id, topic, difficulty, score, started_at, "
    "ended_at, time_s, hints_used, given_up, restored"
)


def _active_row(drill: ActiveDrill) -> tuple[Any, ...]:
    point = drill.checkpoint
    return (
        safe_text(drill.id),
        safe_text(drill.project_id),
        safe_text(drill.user_id),
        safe_text(drill.fault_id),
        utc(drill.started_at),
        None if point is None else utc(point.taken_at),
        None if point is None else encode_json(dict(point.state)),
        None if drill.handed_at is None else utc(drill.handed_at),
        drill.hints_used,
        drill.grades,
        drill.score,
    )


def _active(row: Any) -> ActiveDrill:
    point = None
    if row[6] is not None:
        try:
            state = json.loads(row[6])
        except ValueError:
            state = None
        if not isinstance(state, dict):
            raise StoreError(f"The drill {row[0]!r} has an unreadable checkpoint.")
        point = DrillCheckpoint(row[5], state)
    return ActiveDrill(
        id=row[0],
        project_id=row[1],
        user_id=row[2],
        fault_id=row[3],
        started_at=row[4],
        checkpoint=point,
        handed_at=row[7],
        hints_used=int(row[8]),
        grades=int(row[9]),
        score=None if row[10] is None else float(row[10]),
    )


def _outcome(row: Any) -> DrillOutcome:
    return DrillOutcome(
        drill_id=row[0],
        user_id=row[1],
        project_id=row[2],
        fault_id=row[3],
        topic=row[4],
        difficulty=int(row[5]),
        score=None if row[6] is None else float(row[6]),
        started_at=row[7],
        ended_at=row[8],
        time_s=float(row[9]),
        hints_used=int(row[10]),
        given_up=bool(row[11]),
        restored=bool(row[12]),
    )


class PostgresDrillResults:
    """A :class:`~copilot_core.drills.DrillResults` in PostgreSQL (see the module)."""

    def __init__(self, database: PostgresDatabase) -> None:
        self.database = database

    async def begin(self, drill: ActiveDrill) -> None:
        async with self.database.connection() as conn:
            cursor = await conn.execute(
                f"INSERT INTO drill_active ({_ACTIVE_COLUMNS}) VALUES "
                "(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) "
                "ON CONFLICT (project_id) DO NOTHING",
                _active_row(drill),
            )
            if cursor.rowcount != 1:
                raise DrillActiveError(drill.project_id)

    async def active(self, project_id: str) -> ActiveDrill | None:
        async with self.database.connection() as conn:
            cursor = await conn.execute(
                f"SELECT {_ACTIVE_COLUMNS} FROM drill_active WHERE project_id = %s",
                (safe_text(project_id),),
            )
            row = await cursor.fetchone()
        return None if row is None else _active(row)

    async def update(self, drill: ActiveDrill) -> None:
        row = _active_row(drill)
        async with self.database.connection() as conn:
            cursor = await conn.execute(
                "UPDATE drill_active SET user_id = %s, fault_id = %s, started_at = %s, "
                "checkpoint_at = %s, checkpoint = %s, handed_at = %s, hints_used = %s, "
                "grades = %s, score = %s WHERE project_id = %s AND drill_id = %s",
                (*row[2:], row[1], row[0]),
            )
            if cursor.rowcount != 1:
                raise DrillNotFoundError(drill.id)

    async def finish(self, project_id: str, drill_id: str, outcome: DrillOutcome | None) -> None:
        async with self.database.connection() as conn, conn.transaction():
            cursor = await conn.execute(
                "DELETE FROM drill_active WHERE project_id = %s AND drill_id = %s",
                (safe_text(project_id), safe_text(drill_id)),
            )
            if cursor.rowcount != 1:
                raise DrillNotFoundError(drill_id)
            if outcome is not None:
                await conn.execute(
                    f"INSERT INTO drill_results ({_RESULT_COLUMNS}) VALUES "
                    "(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                    (
                        safe_text(outcome.drill_id),
                        safe_text(outcome.user_id),
                        safe_text(outcome.project_id),
                        safe_text(outcome.fault_id),
                        safe_text(outcome.topic),
                        outcome.difficulty,
                        outcome.score,
                        utc(outcome.started_at),
                        utc(outcome.ended_at),
                        outcome.time_s,
                        outcome.hints_used,
                        outcome.given_up,
                        outcome.restored,
                    ),
                )

    async def history(self, user_id: str, limit: int = 50) -> list[DrillOutcome]:
        async with self.database.connection() as conn:
            cursor = await conn.execute(
                f"SELECT {_RESULT_COLUMNS} FROM drill_results WHERE user_id = %s "
                "ORDER BY ended_at DESC, seq DESC LIMIT %s",
                (safe_text(user_id), max(0, limit)),
            )
            rows = await cursor.fetchall()
        return [_outcome(row) for row in rows]

    async def best_scores(self, user_id: str) -> dict[str, float]:
        async with self.database.connection() as conn:
            cursor = await conn.execute(
                "SELECT fault_id, MAX(score) FROM drill_results "
                "WHERE user_id = %s AND score IS NOT NULL GROUP BY fault_id",
                (safe_text(user_id),),
            )
            rows = await cursor.fetchall()
        return {str(fault): float(score) for fault, score in rows}
