"""The drills' store in one service-wide SQLite file: each project's active drill and each
user's finished drills (:class:`copilot_core.drills.DrillResults`).

Not in the projects' own databases: a user's history spans projects, and its best scores
are one query. Table ``drill_active`` has one row per project (its primary key: a second
drill on the project is refused by the row itself, whoever writes), the checkpoint as JSON;
``drill_results`` one row per finished drill. Finishing a drill deletes the active row and
writes the result in one transaction (``BEGIN IMMEDIATE``), so that a drill is never both
running and finished, nor lost between. WAL and a busy timeout let two processes share the
file.
"""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import aiosqlite

from adapters.sqlite._codec import decode_state, decode_time, encode_state, encode_time
from copilot_core.drills import (
    ACTIVE_COLUMNS,
    RESULT_COLUMNS,
    ActiveDrill,
    DrillOutcome,
    DrillRows,
)
from copilot_core.errors import DrillActiveError, DrillNotFoundError

__all__ = ["DRILLS_DATABASE_NAME", "SqliteDrillResults"]

#: The file's name in the service's data directory.
DRILLS_DATABASE_NAME = "drills.sqlite3"

_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS drill_active (
    project_id    TEXT PRIMARY KEY,
    drill_id      TEXT NOT NULL,
    user_id       TEXT NOT NULL,
    fault_id      TEXT NOT NULL,
    started_at    TEXT NOT NULL,
    checkpoint_at TEXT,
    checkpoint    TEXT,
    handed_at     TEXT,
    hints_used    INTEGER NOT NULL DEFAULT 0,
    grades        INTEGER NOT NULL DEFAULT 0,
    score         REAL
)""",
    """CREATE TABLE IF NOT EXISTS drill_results (
    drill_id    TEXT PRIMARY KEY,
    user_id     TEXT NOT NULL,
    project_id  TEXT NOT NULL,
    fault_id    TEXT NOT NULL,
    topic       TEXT NOT NULL,
    difficulty  INTEGER NOT NULL,
    score       REAL,
    started_at  TEXT NOT NULL,
    ended_at    TEXT NOT NULL,
    time_s      REAL NOT NULL,
    hints_used  INTEGER NOT NULL,
    given_up    INTEGER NOT NULL,
    restored    INTEGER NOT NULL
)""",
    "CREATE INDEX IF NOT EXISTS drill_results_user ON drill_results (user_id, ended_at)",
)

#: Times as ISO text, the checkpoint as JSON text.
_ROWS = DrillRows(encode_time, decode_time, encode_state, decode_state)


class SqliteDrillResults:
    """:class:`~copilot_core.drills.DrillResults` in one SQLite file (see the module).

    ``await SqliteDrillResults.open(path)``, then :meth:`close`.
    """

    def __init__(self, connection: aiosqlite.Connection) -> None:
        self._db = connection
        self._lock = asyncio.Lock()  # one transaction at a time on the one connection

    @classmethod
    async def open(cls, path: Path) -> SqliteDrillResults:
        """Open (creating when needed) the database file at ``path``."""
        connection = await aiosqlite.connect(path, isolation_level=None)
        try:
            await connection.execute("PRAGMA journal_mode=WAL")
            await connection.execute("PRAGMA busy_timeout=5000")
            for statement in _SCHEMA:
                await connection.execute(statement)
        except BaseException:
            await connection.close()
            raise
        return cls(connection)

    async def close(self) -> None:
        await self._db.close()

    async def begin(self, drill: ActiveDrill) -> None:
        async with self._lock:
            try:
                await self._db.execute(
                    f"INSERT INTO drill_active ({ACTIVE_COLUMNS}) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    _ROWS.active_row(drill),
                )
            except sqlite3.IntegrityError:
                raise DrillActiveError(drill.project_id) from None

    async def active(self, project_id: str) -> ActiveDrill | None:
        async with self._lock:
            rows = list(
                await self._db.execute_fetchall(
                    f"SELECT {ACTIVE_COLUMNS} FROM drill_active WHERE project_id = ?",
                    (project_id,),
                )
            )
        return _ROWS.active(rows[0]) if rows else None

    async def update(self, drill: ActiveDrill) -> None:
        row = _ROWS.active_row(drill)
        async with self._lock:
            cursor = await self._db.execute(
                "UPDATE drill_active SET user_id = ?, fault_id = ?, started_at = ?, "
                "checkpoint_at = ?, checkpoint = ?, handed_at = ?, hints_used = ?, grades = ?, "
                "score = ? WHERE project_id = ? AND drill_id = ?",
                (*row[2:], drill.project_id, drill.id),
            )
            if cursor.rowcount != 1:
                raise DrillNotFoundError(drill.id)

    async def finish(self, project_id: str, drill_id: str, outcome: DrillOutcome | None) -> None:
        async with self._lock:
            await self._db.execute("BEGIN IMMEDIATE")
            try:
                cursor = await self._db.execute(
                    "DELETE FROM drill_active WHERE project_id = ? AND drill_id = ?",
                    (project_id, drill_id),
                )
                if cursor.rowcount != 1:
                    raise DrillNotFoundError(drill_id)
                if outcome is not None:
                    await self._db.execute(
                        f"INSERT INTO drill_results ({RESULT_COLUMNS}) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        _ROWS.outcome_row(outcome),
                    )
            except BaseException:
                await self._db.execute("ROLLBACK")
                raise
            await self._db.execute("COMMIT")

    async def history(self, user_id: str, limit: int = 50) -> list[DrillOutcome]:
        async with self._lock:
            rows = await self._db.execute_fetchall(
                f"SELECT {RESULT_COLUMNS} FROM drill_results WHERE user_id = ? "
                "ORDER BY ended_at DESC, rowid DESC LIMIT ?",
                (user_id, max(0, limit)),
            )
        return [_ROWS.outcome(row) for row in rows]

    async def best_scores(self, user_id: str) -> dict[str, float]:
        async with self._lock:
            rows = await self._db.execute_fetchall(
                "SELECT fault_id, MAX(score) FROM drill_results "
                "WHERE user_id = ? AND score IS NOT NULL GROUP BY fault_id",
                (user_id,),
            )
        return {str(fault): float(score) for fault, score in rows}
