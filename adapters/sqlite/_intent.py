"""Each user's standing intent in a project, in the project's database (table
``standing_intent``, schema versions 6 and 8): one row per user, the checks as JSON, and
their last run (when it ended and its result as JSON; NULL until they run)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from typing import Any

import aiosqlite

from adapters.sqlite._codec import decode_state, decode_time, encode_state, encode_time
from copilot_core.errors import StoreCorruptedError
from copilot_core.ports import IntentRun, StandingIntentRecord

__all__ = ["SqliteIntentRows"]


def _encode_checks(checks: list[dict[str, Any]]) -> str:
    # A run is kept only where the row's text is still this text: one encoding.
    return json.dumps(checks, ensure_ascii=False)


class SqliteIntentRows:
    """The :class:`~copilot_core.ports.IntentStore` part of the SQLite store."""

    #: The project's connection, held exclusively (the store's).
    _use: Callable[[str], contextlib.AbstractAsyncContextManager[aiosqlite.Connection]]

    async def standing_intent(self, project_id: str, user_id: str) -> StandingIntentRecord | None:
        async with self._use(project_id) as conn:
            rows = list(
                await conn.execute_fetchall(
                    "SELECT checks, updated_at, last_run_at, last_run FROM standing_intent "
                    "WHERE user_id = ?",
                    (user_id,),
                )
            )
        if not rows:
            return None
        checks, updated_at, last_run_at, last_run = rows[0]
        try:
            decoded: Any = json.loads(checks)
            result = None if last_run is None else decode_state(last_run)
        except ValueError:
            raise StoreCorruptedError(project_id, "a standing intent row is not JSON") from None
        if not isinstance(decoded, list):
            raise StoreCorruptedError(project_id, "a standing intent row is not a list")
        run = None if result is None else IntentRun(decode_time(last_run_at), result)
        return StandingIntentRecord(decoded, decode_time(updated_at), run)

    async def save_standing_intent(
        self, project_id: str, user_id: str, record: StandingIntentRecord
    ) -> None:
        run = record.last_run
        async with self._use(project_id) as conn:
            await conn.execute(
                "INSERT INTO standing_intent (user_id, checks, updated_at, last_run_at, last_run) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT (user_id) DO UPDATE SET "
                "checks = excluded.checks, updated_at = excluded.updated_at, "
                "last_run_at = excluded.last_run_at, last_run = excluded.last_run",
                (
                    user_id,
                    _encode_checks(record.checks),
                    encode_time(record.updated_at),
                    None if run is None else encode_time(run.at),
                    None if run is None else encode_state(run.result),
                ),
            )

    async def save_intent_run(
        self, project_id: str, user_id: str, checks: list[dict[str, Any]], run: IntentRun
    ) -> bool:
        async with self._use(project_id) as conn:
            cursor = await conn.execute(
                "UPDATE standing_intent SET last_run_at = ?, last_run = ? "
                "WHERE user_id = ? AND checks = ?",
                (encode_time(run.at), encode_state(run.result), user_id, _encode_checks(checks)),
            )
            return cursor.rowcount == 1
