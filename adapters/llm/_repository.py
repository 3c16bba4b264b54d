"""Per-user LLM settings, the API key encrypted, in any ``LLMSettingsStore``.

One row per user: the settings as JSON (without the key) and the key encrypted with
Fernet (AES-128-CBC with HMAC-SHA256, from the ``cryptography`` package). The rows
live in the service-wide SQLite database by default (:class:`SqliteLLMSettingsStore`)
or in any other store given (PostgreSQL's, for several replicas); the store only ever
sees ciphertext. The Fernet key comes from the service settings or is generated on
first start into ``data_dir`` (file ``llm-settings.key``, mode 0600).

:meth:`LLMSettingsRepository.get_public` is for API responses: no key, only
``api_key_set``. :meth:`LLMSettingsRepository.get_secret` decrypts the key and is
for the code that builds the model.
"""

from __future__ import annotations

import json
import logging
import os
import stat
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any

from cryptography.fernet import Fernet, InvalidToken
from pydantic import SecretStr, ValidationError

from adapters.llm._rows import SqliteLLMSettingsStore
from adapters.llm._settings import LLMSettings, PublicLLMSettings, parse_llm_settings
from copilot_core.errors import StoreError
from copilot_core.ports import LLMSettingsStore

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
    """The users' LLM settings, the API key encrypted (see the module doc).

    The rows live in any :class:`~copilot_core.ports.LLMSettingsStore`; this class
    encrypts and decrypts the keys, so the store only ever holds ciphertext.
    Open with :meth:`open` (or ``async with``), close with :meth:`close`::

        repository = await LLMSettingsRepository.open(data_dir)
        await repository.put("alice", LLMSettings(model="gpt-4o-mini", api_key=SecretStr("sk-…")))
        (await repository.get_public("alice")).api_key_set   # True
    """

    def __init__(
        self,
        rows: LLMSettingsStore,
        key: bytes,
        *,
        clock: Callable[[], datetime] | None = None,
        close_rows: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self._rows = rows
        self._fernet = Fernet(key)
        self._clock = clock or (lambda: datetime.now(UTC))
        self._close_rows = close_rows

    @classmethod
    async def open(
        cls,
        data_dir: Path,
        *,
        encryption_key: SecretStr | str | None = None,
        filename: str = DATABASE_FILENAME,
        rows: LLMSettingsStore | None = None,
    ) -> LLMSettingsRepository:
        """The repository over ``rows``, else over the SQLite database in ``data_dir``
        (created when needed, and closed by :meth:`close`).

        The Fernet key is ``encryption_key``, else the one kept in ``data_dir``
        (see :func:`load_or_create_key`).
        """
        key = load_or_create_key(data_dir, encryption_key)
        if rows is not None:
            return cls(rows, key)
        sqlite_rows = await SqliteLLMSettingsStore.open(data_dir / filename)
        return cls(sqlite_rows, key, close_rows=sqlite_rows.close)

    async def close(self) -> None:
        """Close the rows' database when this repository opened it."""
        if self._close_rows is not None:
            await self._close_rows()

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
        try:
            return LLMSettings(**settings, api_key=api_key)
        except ValidationError:  # a key stored before keys were checked (never shown)
            raise StoreError(
                "Your stored API key cannot be sent (it has spaces or characters an HTTP "
                "header cannot carry). Set it again with PUT /v3/copilot/llm-config."
            ) from None

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
        encrypted: bytes | None = None
        if settings.api_key is not None:
            secret = settings.api_key.get_secret_value()
            encrypted = self._fernet.encrypt(secret.encode()) if secret else None
        key_set = await self._rows.put(
            user_id,
            document,
            encrypted,
            self._clock(),
            keep_api_key=keep_api_key and settings.api_key is None,
        )
        return settings.public().model_copy(update={"api_key_set": key_set})

    async def delete(self, user_id: str) -> bool:
        """Forget the user's settings; ``False`` when there were none."""
        return await self._rows.delete(user_id)

    # ------------------------------------------------------------------- internals
    async def _row(self, user_id: str) -> tuple[dict[str, Any], bytes | None] | None:
        record = await self._rows.get(user_id)
        if record is None:
            return None
        try:
            settings = json.loads(record.settings)
            LLMSettings(**settings)  # still valid under today's rules
        except (ValueError, ValidationError, TypeError) as exc:
            raise StoreError(
                f"The stored LLM settings of user {user_id!r} are unreadable ({exc}); "
                "set them again with PUT /v3/copilot/llm-config."
            ) from None
        return settings, record.api_key_encrypted
