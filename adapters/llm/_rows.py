"""The users' LLM settings rows in the service-wide SQLite database.

:class:`SqliteLLMSettingsStore` implements :class:`copilot_core.ports.LLMSettingsStore`:
table ``llm_settings``, one row per user, the settings JSON and the API key as the
ciphertext it is given. It never sees a key in clear: encryption is
:class:`~adapters.llm.LLMSettingsRepository`'s business.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import aiosqlite

from copilot_core.ports import LLMSettingsRecord

__all__ = ["SqliteLLMSettingsStore"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS llm_settings (
    user_id           TEXT PRIMARY KEY,
    settings          TEXT NOT NULL,
    api_key_encrypted BLOB,
    updated_at        TEXT NOT NULL
)
"""

# One statement each, so that a concurrent put cannot slip a key in between.
_PUT_KEEPING_KEY = (
    "INSERT INTO llm_settings (user_id, settings, api_key_encrypted, updated_at) "
    "VALUES (?, ?, NULL, ?) ON CONFLICT(user_id) DO UPDATE SET "
    "settings = excluded.settings, updated_at = excluded.updated_at "
    "RETURNING api_key_encrypted IS NOT NULL"
)
_PUT_REPLACING_KEY = (
    "INSERT INTO llm_settings (user_id, settings, api_key_encrypted, updated_at) "
    "VALUES (?, ?, ?, ?) ON CONFLICT(user_id) DO UPDATE SET "
    "settings = excluded.settings, api_key_encrypted = excluded.api_key_encrypted, "
    "updated_at = excluded.updated_at "
    "RETURNING api_key_encrypted IS NOT NULL"
)


class SqliteLLMSettingsStore:
    """LLM settings rows in one SQLite file (WAL, busy timeout); see the module doc.

    ``await SqliteLLMSettingsStore.open(path)``, then :meth:`close`.
    """

    def __init__(self, connection: aiosqlite.Connection) -> None:
        self._db = connection

    @classmethod
    async def open(cls, path: Path) -> SqliteLLMSettingsStore:
        """Open (creating when needed) the database file at ``path``."""
        connection = await aiosqlite.connect(path)
        try:
            await connection.execute("PRAGMA journal_mode=WAL")
            await connection.execute("PRAGMA busy_timeout=5000")
            await connection.execute(_SCHEMA)
            await connection.commit()
        except BaseException:
            await connection.close()
            raise
        return cls(connection)

    async def close(self) -> None:
        await self._db.close()

    async def get(self, user_id: str) -> LLMSettingsRecord | None:
        cursor = await self._db.execute(
            "SELECT settings, api_key_encrypted FROM llm_settings WHERE user_id = ?", (user_id,)
        )
        row = await cursor.fetchone()
        await cursor.close()
        if row is None:
            return None
        encrypted = row[1]
        return LLMSettingsRecord(
            settings=str(row[0]),
            api_key_encrypted=bytes(encrypted) if encrypted is not None else None,
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
        stamp = at.isoformat()
        if api_key_encrypted is None and keep_api_key:
            cursor = await self._db.execute(_PUT_KEEPING_KEY, (user_id, settings, stamp))
        else:
            cursor = await self._db.execute(
                _PUT_REPLACING_KEY, (user_id, settings, api_key_encrypted, stamp)
            )
        row = await cursor.fetchone()
        await cursor.close()
        await self._db.commit()
        return bool(row and row[0])

    async def delete(self, user_id: str) -> bool:
        cursor = await self._db.execute("DELETE FROM llm_settings WHERE user_id = ?", (user_id,))
        await self._db.commit()
        return bool(cursor.rowcount)
