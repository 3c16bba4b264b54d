"""Per-user LLM settings in the service-wide SQLite database, the API key encrypted.

One row per user in table ``llm_settings``: the settings as JSON (without the
key) and the key encrypted with Fernet (AES-128-CBC with HMAC-SHA256, from the
``cryptography`` package). The Fernet key comes from the service settings or is
generated on first start into ``data_dir`` (file ``llm-settings.key``, mode 0600).

:meth:`LLMSettingsRepository.get_public` is for API responses: no key, only
``api_key_set``. :meth:`LLMSettingsRepository.get_secret` decrypts the key and is
for the code that builds the model.
"""

from __future__ import annotations

import json
import logging
import os
import stat
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any

import aiosqlite
from cryptography.fernet import Fernet, InvalidToken
from pydantic import SecretStr, ValidationError

from adapters.llm._settings import LLMSettings, PublicLLMSettings, parse_llm_settings
from copilot_core.errors import StoreError

__all__ = [
    "DATABASE_FILENAME",
    "KEY_FILENAME",
    "LLMSettingsRepository",
    "load_or_create_key",
]

_log = logging.getLogger(__name__)

DATABASE_FILENAME = "copilot.db"
"""The service-wide database in ``data_dir`` (per-project databases live elsewhere)."""
KEY_FILENAME = "llm-settings.key"
"""The generated Fernet key in ``data_dir``, when none is configured."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS llm_settings (
    user_id           TEXT PRIMARY KEY,
    settings          TEXT NOT NULL,
    api_key_encrypted BLOB,
    updated_at        TEXT NOT NULL
)
"""


def load_or_create_key(data_dir: Path, configured: SecretStr | str | None = None) -> bytes:
    """The Fernet key: ``configured`` when given, else the one in ``data_dir``,
    generated there (mode 0600) on first use.

    Raises ``ValueError`` when the configured or stored key is not a Fernet key.
    """
    if configured is not None:
        value = configured.get_secret_value() if isinstance(configured, SecretStr) else configured
        return _checked_key(value.strip().encode(), "the configured LLM settings key")
    data_dir.mkdir(parents=True, exist_ok=True)
    path = data_dir / KEY_FILENAME
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        mode = stat.S_IMODE(path.stat().st_mode)
        if mode & 0o077:
            _log.warning("%s is readable by others (mode %o); tightening to 0600", path, mode)
            path.chmod(0o600)
        return _checked_key(path.read_bytes().strip(), str(path))
    key = Fernet.generate_key()
    with os.fdopen(fd, "wb") as handle:
        handle.write(key + b"\n")
    _log.info("generated the LLM settings encryption key in %s", path)
    return key


def _checked_key(key: bytes, where: str) -> bytes:
    try:
        Fernet(key)
    except ValueError:
        raise ValueError(
            f"{where} is not a valid Fernet key (32 url-safe base64-encoded bytes); "
            "generate one with cryptography's Fernet.generate_key()"
        ) from None
    return key


class LLMSettingsRepository:
    """The users' LLM settings in SQLite (see the module doc).

    Open with :meth:`open` (or ``async with``), close with :meth:`close`::

        repository = await LLMSettingsRepository.open(data_dir)
        await repository.put("alice", LLMSettings(model="gpt-4o-mini", api_key=SecretStr("sk-…")))
        (await repository.get_public("alice")).api_key_set   # True
    """

    def __init__(
        self,
        connection: aiosqlite.Connection,
        key: bytes,
        *,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self._db = connection
        self._fernet = Fernet(key)
        self._clock = clock or (lambda: datetime.now(UTC))

    @classmethod
    async def open(
        cls,
        data_dir: Path,
        *,
        encryption_key: SecretStr | str | None = None,
        filename: str = DATABASE_FILENAME,
    ) -> LLMSettingsRepository:
        """Open (creating when needed) the database in ``data_dir``."""
        key = load_or_create_key(data_dir, encryption_key)
        connection = await aiosqlite.connect(data_dir / filename)
        try:
            await connection.execute("PRAGMA journal_mode=WAL")
            await connection.execute("PRAGMA busy_timeout=5000")
            await connection.execute(_SCHEMA)
            await connection.commit()
        except BaseException:
            await connection.close()
            raise
        return cls(connection, key)

    async def close(self) -> None:
        await self._db.close()

    async def __aenter__(self) -> LLMSettingsRepository:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    # ----------------------------------------------------------------------- reads
    async def get_public(self, user_id: str) -> PublicLLMSettings | None:
        """The user's settings as they may see them, or ``None`` when they have none."""
        row = await self._row(user_id)
        if row is None:
            return None
        settings, encrypted = row
        return PublicLLMSettings(**settings, api_key_set=encrypted is not None)

    async def get_secret(self, user_id: str) -> LLMSettings | None:
        """The user's settings with the decrypted API key: only for building the model.

        Raises :class:`~copilot_core.errors.StoreError` when the key cannot be
        decrypted (the encryption key changed): the user must set it again.
        """
        row = await self._row(user_id)
        if row is None:
            return None
        settings, encrypted = row
        api_key: SecretStr | None = None
        if encrypted is not None:
            try:
                api_key = SecretStr(self._fernet.decrypt(encrypted).decode())
            except InvalidToken:
                raise StoreError(
                    "Your stored API key cannot be decrypted (the service's encryption key "
                    "changed). Set your API key again with PUT /v3/copilot/llm-config."
                ) from None
        return LLMSettings(**settings, api_key=api_key)

    # ---------------------------------------------------------------------- writes
    async def put(
        self,
        user_id: str,
        settings: LLMSettings | Mapping[str, Any],
        *,
        keep_api_key: bool = True,
    ) -> PublicLLMSettings:
        """Store the user's settings, replacing what they had.

        ``settings`` may be a mapping (a request body: fields left out take their
        defaults, ``api_key`` a plain string); it is validated with
        :func:`~adapters.llm.parse_llm_settings`, so bad values raise
        :class:`~copilot_core.errors.InvalidRequestError` and change nothing.

        The API key is write-only: when ``settings.api_key`` is ``None`` and
        ``keep_api_key`` is true, the stored key stays; an empty key removes it.
        """
        if not isinstance(settings, LLMSettings):
            settings = parse_llm_settings(settings)
        document = json.dumps(settings.model_dump(mode="json", exclude={"api_key"}))
        now = self._clock().isoformat()
        if settings.api_key is None and keep_api_key:
            # One statement, so that a concurrent put cannot slip a key in between.
            sql = (
                "INSERT INTO llm_settings (user_id, settings, api_key_encrypted, updated_at) "
                "VALUES (?, ?, NULL, ?) ON CONFLICT(user_id) DO UPDATE SET "
                "settings = excluded.settings, updated_at = excluded.updated_at "
                "RETURNING api_key_encrypted IS NOT NULL"
            )
            parameters: tuple[object, ...] = (user_id, document, now)
        else:
            secret = settings.api_key.get_secret_value() if settings.api_key is not None else ""
            encrypted = self._fernet.encrypt(secret.encode()) if secret else None
            sql = (
                "INSERT INTO llm_settings (user_id, settings, api_key_encrypted, updated_at) "
                "VALUES (?, ?, ?, ?) ON CONFLICT(user_id) DO UPDATE SET "
                "settings = excluded.settings, api_key_encrypted = excluded.api_key_encrypted, "
                "updated_at = excluded.updated_at "
                "RETURNING api_key_encrypted IS NOT NULL"
            )
            parameters = (user_id, document, encrypted, now)
        cursor = await self._db.execute(sql, parameters)
        row = await cursor.fetchone()
        await cursor.close()
        await self._db.commit()
        return settings.public().model_copy(update={"api_key_set": bool(row and row[0])})

    async def delete(self, user_id: str) -> bool:
        """Forget the user's settings; ``False`` when there were none."""
        cursor = await self._db.execute("DELETE FROM llm_settings WHERE user_id = ?", (user_id,))
        await self._db.commit()
        return bool(cursor.rowcount)

    # ------------------------------------------------------------------- internals
    async def _row(self, user_id: str) -> tuple[dict[str, Any], bytes | None] | None:
        cursor = await self._db.execute(
            "SELECT settings, api_key_encrypted FROM llm_settings WHERE user_id = ?", (user_id,)
        )
        row = await cursor.fetchone()
        await cursor.close()
        if row is None:
            return None
        try:
            settings = json.loads(row[0])
            LLMSettings(**settings)  # still valid under today's rules
        except (ValueError, ValidationError, TypeError) as exc:
            raise StoreError(
                f"The stored LLM settings of user {user_id!r} are unreadable ({exc}); "
                "set them again with PUT /v3/copilot/llm-config."
            ) from None
        encrypted = row[1]
        return settings, bytes(encrypted) if encrypted is not None else None
