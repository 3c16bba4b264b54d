"""Each user's standing intent per project in PostgreSQL (table ``standing_intent``,
migrations 3 and 5): one row per project and user, the checks as JSON text, and their
last run (when it ended and its result as JSON text; NULL until they run)."""

from __future__ import annotations

import json
from typing import Any

from adapters.postgres._codec import encode_json, safe_text, utc
from adapters.postgres._database import PostgresDatabase
from copilot_core.errors import StoreError
from copilot_core.ports import IntentRun, StandingIntentRecord

__all__ = ["PostgresIntentRows"]


class PostgresIntentRows:
    """The :class:`~copilot_core.ports.IntentStore` half of the PostgreSQL store."""

    database: PostgresDatabase

    async def standing_intent(self, project_id: str, user_id: str) -> StandingIntentRecord | None:
        async with self.database.connection() as conn:
            cursor = await conn.execute(
                "SELECT checks, updated_at, last_run_at, last_run FROM standing_intent "
                "WHERE project_id = %s AND user_id = %s",
                (safe_text(project_id), safe_text(user_id)),
            )
            row = await cursor.fetchone()
        if row is None:
            return None
        checks: Any = json.loads(row[0])
        if not isinstance(checks, list):
            raise StoreError("A standing intent row is not a list of checks.")
        run = None
        if row[3] is not None:
            result: Any = json.loads(row[3])
            if not isinstance(result, dict):
                raise StoreError("A standing intent's last run is not a JSON object.")
            run = IntentRun(row[2], result)
        return StandingIntentRecord(checks, row[1], run)

    async def save_standing_intent(
        self, project_id: str, user_id: str, record: StandingIntentRecord
    ) -> None:
        run = record.last_run
        async with self.database.connection() as conn:
            await conn.execute(
                "INSERT INTO standing_intent "
                "(project_id, user_id, checks, updated_at, last_run_at, last_run) "
                "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (project_id, user_id) DO UPDATE "
                "SET checks = EXCLUDED.checks, updated_at = EXCLUDED.updated_at, "
                "last_run_at = EXCLUDED.last_run_at, last_run = EXCLUDED.last_run",
                (
                    safe_text(project_id),
                    safe_text(user_id),
                    encode_json(record.checks),
                    utc(record.updated_at),
                    None if run is None else utc(run.at),
                    None if run is None else encode_json(run.result),
                ),
            )

    async def save_intent_run(
        self, project_id: str, user_id: str, checks: list[dict[str, Any]], run: IntentRun
    ) -> bool:
        async with self.database.connection() as conn:
            cursor = await conn.execute(
                "UPDATE standing_intent SET last_run_at = %s, last_run = %s "
                "WHERE project_id = %s AND user_id = %s AND checks = %s",
                (
                    utc(run.at),
                    encode_json(run.result),
                    safe_text(project_id),
                    safe_text(user_id),
                    encode_json(checks),
                ),
            )
            return cursor.rowcount == 1
