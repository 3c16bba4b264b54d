"""The users' LLM settings rows in PostgreSQL (table ``llm_settings``)."""

from __future__ import annotations

from datetime import datetime

from adapters.postgres._codec import safe_text, utc
from adapters.postgres._database import PostgresDatabase
from copilot_core.ports import LLMSettingsRecord

__all__ = ["PostgresLLMSettingsStore"]

# One statement each, so that a concurrent put cannot slip a key in between.
_PUT_KEEPING_KEY = (
    "INSERT INTO llm_settings (user_id, settings, api_key_encrypted, updated_at) "
    "VALUES (%s, %s, NULL, %s) ON CONFLICT (user_id) DO UPDATE SET "
    "settings = EXCLUDED.settings, updated_at = EXCLUDED.updated_at "
    "RETURNING api_key_encrypted IS NOT NULL"
)
_PUT_REPLACING_KEY = (
    "INSERT INTO llm_settings (user_id, settings, api_key_encrypted, updated_at) "
    "VALUES (%s, %s, %s, %s) ON CONFLICT (user_id) DO UPDATE SET "
    "settings = EXCLUDED.settings, api_key_encrypted = EXCLUDED.api_key_encrypted, "
    "updated_at = EXCLUDED.updated_at "
    "RETURNING api_key_encrypted IS NOT NULL"
)


class PostgresLLMSettingsStore:
    """A :class:`~copilot_core.ports.LLMSettingsStore` in PostgreSQL.

    It stores what it is given: the settings JSON and the API key's ciphertext (the LLM
    adapter encrypts; this package never sees a key in clear nor the encryption key).
    """

    def __init__(self, database: PostgresDatabase) -> None:
        self.database = database

    async def get(self, user_id: str) -> LLMSettingsRecord | None:
        async with self.database.connection() as conn:
            cursor = await conn.execute(
                "SELECT settings, api_key_encrypted FROM llm_settings WHERE user_id = %s",
                (safe_text(user_id),),
            )
            row = await cursor.fetchone()
        if row is None:
            return None
        encrypted = row[1]
        return LLMSettingsRecord(
            settings=str(row[0]),
            api_key_encrypted=None if encrypted is None else bytes(encrypted),
        )

    async def put(
        self,
        user_id: str,
        settings: str,
        api_key_encrypted: bytes | None,
        at: datetime,
        *,
        keep_api_key: bool,
    ) -> bool:
        user = safe_text(user_id)
        async with self.database.connection() as conn:
            if api_key_encrypted is None and keep_api_key:
                cursor = await conn.execute(_PUT_KEEPING_KEY, (user, settings, utc(at)))
            else:
                cursor = await conn.execute(
                    _PUT_REPLACING_KEY, (user, settings, api_key_encrypted, utc(at))
                )
            row = await cursor.fetchone()
        return bool(row and row[0])

    async def delete(self, user_id: str) -> bool:
        async with self.database.connection() as conn:
            cursor = await conn.execute(
                "DELETE FROM llm_settings WHERE user_id = %s", (safe_text(user_id),)
            )
            return cursor.rowcount > 0
