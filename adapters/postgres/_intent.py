"""Each user's standing intent per project in PostgreSQL (table ``standing_intent``,
migration 3): one row per project and user, the checks as JSON text."""

from __future__ import annotations

import json
from typing import Any

from adapters.postgres._codec import encode_json, safe_text, utc
from adapters.postgres._database import PostgresDatabase
from copilot_core.errors import StoreError
from copilot_core.ports import StandingIntentRecord

__all__ = ["PostgresIntentRows"]


class PostgresIntentRows:
    """The :class:`~copilot_core.ports.IntentStore` half of the PostgreSQL store."""

    database: PostgresDatabase

    async def standing_intent(self, project_id: str, user_id: str) -> StandingIntentRecord | None:
        async with self.database.connection() as conn:
            cursor = await conn.execute(
                "SELECT checks, updated_at FROM standing_intent "
                "WHERE project_id = %s AND user_id = %s",
                (safe_text(project_id), safe_text(user_id)),
            )
            row = await cursor.fetchone()
        if row is None:
            return None
        checks: Any = json.loads(row[0])
        if not isinstance(checks, list):
            raise StoreError("A standing intent row is not a list of checks.")
        return StandingIntentRecord(checks, row[1])

    async def save_standing_intent(
        self, project_id: str, user_id: str, record: StandingIntentRecord
    ) -> None:
        async with self.database.connection() as conn:
            await conn.execute(
                "INSERT INTO standing_intent (project_id, user_id, checks, updated_at) "
                "VALUES (%s, %s, %s, %s) ON CONFLICT (project_id, user_id) DO UPDATE SET "
                "checks = EXCLUDED.checks, updated_at = EXCLUDED.updated_at",
                (
                    safe_text(project_id),
                    safe_text(user_id),
                    encode_json(record.checks),
                    utc(record.updated_at),
                ),
            )
