"""Restore points in the project's database (table ``restore_points``): one row per
point, tied to its session's row; ``state`` holds the point as
:meth:`~copilot_core.ports.RestorePoint.to_dict` makes it JSON (rows stored before hold
the older flat state, which :meth:`~copilot_core.ports.RestorePoint.from_dict` reads too).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Coroutine
from typing import Any

import aiosqlite

from adapters.sqlite._codec import decode_state, decode_time, encode_state, encode_time
from copilot_core.errors import NotFoundError, SessionNotFoundError, StoreCorruptedError
from copilot_core.ports import RestorePoint

__all__ = ["SqliteRestorePointRows"]


class SqliteRestorePointRows:
    """The :class:`~copilot_core.ports.RestorePointStore` part of the SQLite store."""

    #: The project's connection, held exclusively (the store's).
    _use: Callable[[str], contextlib.AbstractAsyncContextManager[aiosqlite.Connection]]
    #: The session's row id (``SessionNotFoundError`` when there is none).
    _require: Callable[[aiosqlite.Connection, str, str], Coroutine[Any, Any, int]]

    async def save_restore_point(self, point: RestorePoint) -> None:
        state = encode_state(point.to_dict())  # fails before any write
        async with self._use(point.project_id) as conn:
            cursor = await conn.execute(
                "INSERT INTO restore_points (point_id, session_id, created_at, tool_call_id, "
                "tool_name, summary, state) SELECT ?, id, ?, ?, ?, ?, ? FROM chat_sessions "
                "WHERE thread_id = ?",
                (
                    point.id,
                    encode_time(point.created_at),
                    point.tool_call_id,
                    point.tool_name,
                    point.summary,
                    state,
                    point.session_id,
                ),
            )
            if cursor.rowcount == 0:
                raise SessionNotFoundError(point.session_id)

    async def restore_points(self, project_id: str, thread_id: str) -> list[RestorePoint]:
        async with self._use(project_id) as conn:
            rows = list(
                await conn.execute_fetchall(
                    f"SELECT {_POINT_COLUMNS} FROM restore_points r JOIN chat_sessions s "
                    "ON s.id = r.session_id WHERE s.thread_id = ? ORDER BY r.id",
                    (thread_id,),
                )
            )
            if not rows:
                await self._require(conn, project_id, thread_id)
        return [_point(project_id, thread_id, row) for row in rows]

    async def restore_point(
        self, project_id: str, thread_id: str, point_id: str
    ) -> RestorePoint | None:
        async with self._use(project_id) as conn:
            rows = list(
                await conn.execute_fetchall(
                    f"SELECT {_POINT_COLUMNS} FROM restore_points r JOIN chat_sessions s "
                    "ON s.id = r.session_id WHERE s.thread_id = ? AND r.point_id = ?",
                    (thread_id, point_id),
                )
            )
        return _point(project_id, thread_id, rows[0]) if rows else None

    async def update_restore_point(self, point: RestorePoint) -> None:
        state = encode_state(point.to_dict())
        async with self._use(point.project_id) as conn:
            cursor = await conn.execute(
                "UPDATE restore_points SET state = ? WHERE point_id = ? AND session_id = "
                "(SELECT id FROM chat_sessions WHERE thread_id = ?)",
                (state, point.id, point.session_id),
            )
            if cursor.rowcount == 0:
                raise NotFoundError(f"There is no restore point {point.id!r} in this session.")


_POINT_COLUMNS = "r.point_id, r.created_at, r.tool_call_id, r.tool_name, r.summary, r.state"


def _point(project_id: str, thread_id: str, row: Any) -> RestorePoint:
    point_id, created_at, tool_call_id, tool_name, summary, state = row
    try:
        return RestorePoint.from_dict(
            {
                **decode_state(state),
                "id": point_id,
                "project_id": project_id,
                "session_id": thread_id,
                "created_at": decode_time(created_at),
                "tool_call_id": tool_call_id,
                "tool_name": tool_name,
                "summary": summary,
            }
        )
    except (ValueError, TypeError, KeyError) as exc:
        raise StoreCorruptedError(project_id, f"restore point {point_id!r}: {exc}") from exc
