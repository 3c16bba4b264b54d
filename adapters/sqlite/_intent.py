"""Each user's standing intent in a project, in the project's database (table
``standing_intent``, schema version 6): one row per user, the checks as JSON."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from typing import Any

import aiosqlite

from adapters.sqlite._codec import decode_time, encode_time
from copilot_core.errors import StoreCorruptedError
from copilot_core.ports import StandingIntentRecord

__all__ = ["SqliteIntentRows"]


class SqliteIntentRows:
    """The :class:`~copilot_core.ports.IntentStore` half of the SQLite store."""

    #: The project's connection, held exclusively (the store's).
    _use: Callable[[str], contextlib.AbstractAsyncContextManager[aiosqlite.Connection]]

    async def standing_intent(self, project_id: str, user_id: str) -> StandingIntentRecord | None:
        async with self._use(project_id) as conn:
            rows = list(
                await conn.execute_fetchall(
                    "SELECT checks, updated_at FROM standing_intent WHERE user_id = ?",
                    (user_id,),
                )
            )
        if not rows:
            return None
        checks, updated_at = rows[0]
        try:
            decoded: Any = json.loads(checks)
        except ValueError:
            raise StoreCorruptedError(project_id, "a standing intent row is not JSON") from None
        if not isinstance(decoded, list):
            raise StoreCorruptedError(project_id, "a standing intent row is not a list")
        return StandingIntentRecord(decoded, decode_time(updated_at))

    async def save_standing_intent(
        self, project_id: str, user_id: str, record: StandingIntentRecord
    ) -> None:
        text = json.dumps(record.checks, ensure_ascii=False)
        async with self._use(project_id) as conn:
            await conn.execute(
                "INSERT INTO standing_intent (user_id, checks, updated_at) VALUES (?, ?, ?) "
                "ON CONFLICT (user_id) DO UPDATE SET checks = excluded.checks, "
                "updated_at = excluded.updated_at",
                (user_id, text, encode_time(record.updated_at)),
            )
