"""One PostgreSQL database: its URL, its connection pool, its migrations, its errors.

:class:`PostgresDatabase` is what the composition root opens and closes; the stores of
this package borrow its connections. Errors of the driver become
:class:`~copilot_core.errors.StoreError` with a message an operator can act on, and
never the password of the URL.
"""

from __future__ import annotations

import contextlib
import logging
import re
import select
from collections.abc import AsyncIterator
from types import TracebackType
from typing import Any, Literal
from urllib.parse import parse_qs, unquote, urlsplit

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.rows import TupleRow
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from adapters.postgres._schema import migrate
from copilot_core.errors import StoreError
from copilot_core.ports import redact_secrets

__all__ = ["DEFAULT_SCHEMA", "Connection", "PostgresDatabase", "describe_url"]

log = logging.getLogger(__name__)

DEFAULT_SCHEMA = "gns3_copilot"
"""The PostgreSQL schema that holds the copilot's tables unless told otherwise."""

_SCHEMES = ("postgresql://", "postgres://")
_SCHEMA_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")

Connection = psycopg.AsyncConnection[TupleRow]


def _secrets_of(url: str) -> list[str]:
    """The password(s) a URL carries, raw and decoded, to scrub from messages."""
    found: list[str] = []
    try:
        parts = urlsplit(url)
        if parts.password:
            found += [parts.password, unquote(parts.password)]
        for value in parse_qs(parts.query).get("password", []):
            found.append(value)
    except ValueError:
        pass
    # A URL too broken for urlsplit: anything between "://user:" and "@".
    match = re.match(r"^[a-z]+://[^:/@]*:([^@]*)@", url)
    if match:
        found += [match.group(1), unquote(match.group(1))]
    return sorted({secret for secret in found if secret}, key=len, reverse=True)


def _scrub(text: str, secrets: list[str]) -> str:
    text = redact_secrets(text, secrets)
    # libpq's messages span lines (a hint on a tab-indented second line): one line.
    lines = [" ".join(line.split()) for line in text.splitlines()]
    return "; ".join(line for line in lines if line)


async def _check_idle(conn: Connection) -> None:
    """The pool's check before it hands out a connection, free when all is well.

    A server that shuts down or restarts (or an administrator's
    ``pg_terminate_backend``) sends an error to each idle connection before closing it:
    the socket is then readable. Only then is the connection tried (an empty query,
    which raises if it is gone), so a restart of PostgreSQL costs no failed request.
    """
    if conn.broken or conn.closed:
        raise psycopg.OperationalError("the connection is closed")
    readable, _, _ = select.select([conn.fileno()], [], [], 0)
    if readable:
        await conn.execute("")


def describe_url(url: str) -> str:
    """The URL without its password, for messages and logs (never raises)."""
    try:
        info = conninfo_to_dict(url)
    except psycopg.Error:
        return "(an unreadable PostgreSQL URL)"
    user = f"{info['user']}@" if info.get("user") else ""
    host = info.get("host") or "(default host)"
    port = f":{info['port']}" if info.get("port") else ""
    dbname = info.get("dbname") or "(default database)"
    return f"postgresql://{user}{host}{port}/{dbname}"


class PostgresDatabase:
    """A pool of connections to one PostgreSQL database, its schema migrated at open.

    ``url`` is a libpq URL (``postgresql://user:password@host:5432/dbname?sslmode=…``;
    every libpq parameter works, and libpq's ``PG*`` environment variables and password
    file apply). ``schema`` holds the tables (created when missing). The pool keeps
    ``min_size`` to ``max_size`` connections; a request waits at most ``pool_timeout``
    seconds for one. ``connect_timeout`` bounds each connection attempt (unless the URL
    sets its own).

    Lifecycle: ``await open()`` (or ``async with``) connects once directly (so that a bad
    URL, an unknown host, a refused connection or a missing database is reported at
    once, clearly), applies the missing migrations under an advisory lock, then opens
    the pool. ``await close()`` closes the pool. Raises
    :class:`~copilot_core.errors.StoreError` on any failure.
    """

    def __init__(
        self,
        url: str,
        *,
        schema: str = DEFAULT_SCHEMA,
        min_size: int = 1,
        max_size: int = 10,
        pool_timeout: float = 10.0,
        connect_timeout: float = 10.0,
        application_name: str = "gns3-copilot",
    ) -> None:
        self._secrets = _secrets_of(url)
        if not url.startswith(_SCHEMES):
            raise StoreError(
                "The database URL must start with postgresql:// (or postgres://), "
                "for example postgresql://copilot@db.example:5432/copilot."
            )
        if not _SCHEMA_NAME.fullmatch(schema):
            raise StoreError(
                f"The PostgreSQL schema name {schema!r} is not valid: use lower-case letters, "
                "digits and '_', starting with a letter or '_', at most 63 characters."
            )
        if not 0 < min_size <= max_size:
            raise ValueError("need 0 < min_size <= max_size")
        try:
            info = conninfo_to_dict(url)
        except psycopg.Error as exc:
            raise StoreError(
                f"The PostgreSQL database URL is not valid: {_scrub(str(exc), self._secrets)}."
            ) from None
        self.schema = schema
        self.target = describe_url(url)
        options = f"-c search_path={schema} -c timezone=UTC"
        if info.get("options"):
            options = f"{info['options']} {options}"
        extra: dict[str, Any] = {"options": options}
        if not info.get("application_name"):
            extra["application_name"] = application_name
        if not info.get("connect_timeout"):
            extra["connect_timeout"] = max(1, round(connect_timeout))
        self._conninfo = make_conninfo(url, **extra)
        self._min_size = min_size
        self._max_size = max_size
        self._pool_timeout = pool_timeout
        self._pool: AsyncConnectionPool[Connection] | None = None
        self._state: Literal["new", "open", "closed"] = "new"
        self.schema_version: int | None = None
        """The schema's version once open (see :mod:`adapters.postgres._schema`)."""

    # ------------------------------------------------------------------ lifecycle
    async def open(self) -> None:
        """Connect, migrate, open the pool (see the class doc); idempotent."""
        if self._state == "open":
            return
        if self._state == "closed":
            raise StoreError("The PostgreSQL database was closed; create a new one.")
        async with await self._connect() as conn, self._translated("migrating"):
            self.schema_version = await migrate(conn, self.schema)
        pool: AsyncConnectionPool[Connection] = AsyncConnectionPool(
            self._conninfo,
            kwargs={"autocommit": True},
            min_size=self._min_size,
            max_size=self._max_size,
            timeout=self._pool_timeout,
            open=False,
            name="gns3-copilot",
            check=_check_idle,
        )
        try:
            await pool.open(wait=True, timeout=self._pool_timeout)
        except PoolTimeout:
            await pool.close()
            raise StoreError(
                f"The PostgreSQL database {self.target} accepted one connection but the pool "
                f"could not open {self._min_size} within {self._pool_timeout:g} s."
            ) from None
        self._pool = pool
        self._state = "open"
        log.info(
            "opened the PostgreSQL database %s (schema %s, version %s)",
            self.target,
            self.schema,
            self.schema_version,
        )

    async def close(self) -> None:
        """Close the pool; the database object cannot be used afterwards."""
        self._state = "closed"
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close()

    async def __aenter__(self) -> PostgresDatabase:
        await self.open()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.close()

    async def ping(self, wait: float = 1.0) -> None:
        """One round trip through the pool (readiness); raises ``StoreError``.

        When the pool has no connection to give within ``wait`` seconds, one direct
        connection tells a busy pool (the database answers: fine) from a database that
        cannot be used (the error says why, as at start-up).
        """
        pool = self._pool
        if pool is None:
            raise StoreError("The PostgreSQL database is not open.")
        try:
            async with pool.connection(timeout=wait) as conn:
                await conn.execute("SELECT 1")
            return
        except PoolTimeout:
            pass
        except psycopg.Error as exc:
            raise self._error(exc) from None
        async with await self._connect() as conn, self._translated("checking readiness"):
            await conn.execute("SELECT 1")

    # ---------------------------------------------------------------- connections
    @contextlib.asynccontextmanager
    async def connection(self) -> AsyncIterator[Connection]:
        """A pooled connection in autocommit mode; driver errors become ``StoreError``.

        Use ``async with conn.transaction():`` for several statements that go together.
        """
        pool = self._pool
        if pool is None:
            raise StoreError("The PostgreSQL database is not open.")
        try:
            async with pool.connection() as conn:
                yield conn
        except PoolTimeout:
            raise StoreError(
                f"No connection to the PostgreSQL database {self.target} within "
                f"{self._pool_timeout:g} s: it cannot be reached, or every connection is busy."
            ) from None
        except psycopg.Error as exc:
            raise self._error(exc) from None

    async def _connect(self) -> Connection:
        try:
            return await psycopg.AsyncConnection.connect(self._conninfo, autocommit=True)
        except psycopg.Error as exc:
            reason = _scrub(str(exc), self._secrets)
            reason = reason.removeprefix("connection failed: ").removeprefix("connection is bad: ")
            raise StoreError(
                f"Cannot connect to the PostgreSQL database {self.target}: {reason}"
            ) from None

    @contextlib.asynccontextmanager
    async def _translated(self, doing: str) -> AsyncIterator[None]:
        try:
            yield
        except psycopg.Error as exc:
            error = self._error(exc)
            raise StoreError(f"{error.message} (while {doing})") from None

    def _error(self, exc: psycopg.Error) -> StoreError:
        primary = exc.diag.message_primary if exc.diag is not None else None
        reason = _scrub(primary or str(exc) or type(exc).__name__, self._secrets)
        if isinstance(exc, psycopg.OperationalError) and exc.sqlstate is None:
            return StoreError(f"The PostgreSQL database {self.target} cannot be reached: {reason}")
        return StoreError(f"The PostgreSQL database {self.target} failed: {reason}")
