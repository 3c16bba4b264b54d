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
from copilot_core.drills import (
    ACTIVE_COLUMNS,
    RESULT_COLUMNS,
    ActiveDrill,
    DrillOutcome,
    DrillRows,
)
from copilot_core.errors import DrillActiveError, DrillNotFoundError

__all__ = ["PostgresDrillResults"]


def _state(raw: Any) -> dict[str, Any]:
    state = json.loads(raw)
    if not isinstance(state, dict):
        raise ValueError("a checkpoint is a JSON object")
    return state


#: Times as timestamptz, the checkpoint as JSON text, text made storable.
_ROWS = DrillRows(utc, utc, lambda state: encode_json(dict(state)), _state, safe_text)


class PostgresDrillResults:
    """A :class:`~copilot_core.drills.DrillResults` in PostgreSQL (see the module)."""

    def __init__(self, database: PostgresDatabase) -> None:
        self.database = database

    async def begin(self, drill: ActiveDrill) -> None:
        async with self.database.connection() as conn:
            cursor = await conn.execute(
                f"INSERT INTO drill_active ({ACTIVE_COLUMNS}) VALUES "
                "(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) "
                "ON CONFLICT (project_id) DO NOTHING",
                _ROWS.active_row(drill),
            )
            if cursor.rowcount != 1:
                raise DrillActiveError(drill.project_id)

    async def active(self, project_id: str) -> ActiveDrill | None:
        async with self.database.connection() as conn:
            cursor = await conn.execute(
                f"SELECT {ACTIVE_COLUMNS} FROM drill_active WHERE project_id = %s",
                (safe_text(project_id),),
            )
            row = await cursor.fetchone()
        return None if row is None else _ROWS.active(row)

    async def update(self, drill: ActiveDrill) -> None:
        row = _ROWS.active_row(drill)
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
                    f"INSERT INTO drill_results ({RESULT_COLUMNS}) VALUES "
                    "(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                    _ROWS.outcome_row(outcome),
                )

    async def history(self, user_id: str, limit: int = 50) -> list[DrillOutcome]:
        async with self.database.connection() as conn:
            cursor = await conn.execute(
                f"SELECT {RESULT_COLUMNS} FROM drill_results WHERE user_id = %s "
                "ORDER BY ended_at DESC, seq DESC LIMIT %s",
                (safe_text(user_id), max(0, limit)),
            )
            rows = await cursor.fetchall()
        return [_ROWS.outcome(row) for row in rows]

    async def best_scores(self, user_id: str) -> dict[str, float]:
        async with self.database.connection() as conn:
            cursor = await conn.execute(
                "SELECT fault_id, MAX(score) FROM drill_results "
                "WHERE user_id = %s AND score IS NOT NULL GROUP BY fault_id",
                (safe_text(user_id),),
            )
            rows = await cursor.fetchall()
        return {str(fault): float(score) for fault, score in rows}
