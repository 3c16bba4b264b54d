"""The per-project SQLite databases of the checkpoint store: where each lives, one
connection each (WAL, busy timeout, migrated on open), used one at a time, at most
``max_open`` open (the least recently used idle ones are closed), and closed once idle
for ``idle_timeout`` seconds. SQLite's errors become the core's store errors."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import re
import shutil
import sqlite3
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

import aiosqlite
from pydantic import ConfigDict, Field
from pydantic.dataclasses import dataclass as settings_dataclass

from adapters.sqlite._schema import migrate
from copilot_core.errors import InvalidRequestError, StoreCorruptedError, StoreError

__all__ = [
    "DATABASE_DIR",
    "DATABASE_NAME",
    "ProjectDatabases",
    "ProjectPathResolver",
    "SqliteStoreSettings",
    "Synchronous",
    "rollback",
]

log = logging.getLogger(__name__)

DATABASE_DIR = "gns3-copilot"
DATABASE_NAME = "copilot_checkpoints.db"

ProjectPathResolver = Callable[[str], "Path | Awaitable[Path | None] | None"]
"""Maps a project id to its GNS3 project directory (``None``: not reachable here)."""

Synchronous = Literal["NORMAL", "FULL"]

# GNS3 project ids are UUIDs; accept any plain identifier, never a path.
_PROJECT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,127}")
_PAGE_SIZE = 2048
_SQLITE_BUSY = 5
_SQLITE_CORRUPT = 11
_SQLITE_NOTADB = 26


@settings_dataclass(frozen=True, slots=True, config=ConfigDict(extra="forbid"))
class SqliteStoreSettings:
    """How the per-project databases are kept: the service's ``store`` section
    (``COPILOT_STORE__<FIELD>``), each setting declared here once."""

    max_open: int = Field(
        default=64,
        ge=1,
        description="Databases kept open at once (least recently used ones close).",
    )
    busy_timeout: float = Field(
        default=10.0, gt=0, description="Seconds a write waits for another writer."
    )
    synchronous: Synchronous = Field(
        default="NORMAL",
        description="SQLite's synchronous mode: FULL survives a power loss at some speed.",
    )
    idle_timeout: float | None = Field(
        default=90.0,
        gt=0,
        description="Seconds after which a project's database no one uses is closed "
        "(it reopens on next use); null: kept open.",
    )


@dataclass(eq=False)
class _Database:
    """One open project database; ``lock`` serialises its use (one connection)."""

    project_id: str
    path: Path
    conn: aiosqlite.Connection
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    users: int = 0
    closed: bool = False
    #: When its last use ended (the loop's clock), for closing it once idle.
    last_used: float = 0.0


class ProjectDatabases:
    """The open project databases of one store (see the module docstring)."""

    def __init__(
        self,
        data_dir: Path | str,
        project_path: ProjectPathResolver | None = None,
        settings: SqliteStoreSettings | None = None,
    ) -> None:
        settings = settings or SqliteStoreSettings()
        self.data_dir = Path(data_dir)
        self.max_open = settings.max_open
        self.busy_timeout = settings.busy_timeout
        self.synchronous: Synchronous = settings.synchronous
        self.idle_timeout = settings.idle_timeout
        self._project_path = project_path
        self._open: OrderedDict[str, _Database] = OrderedDict()
        self._opening: dict[str, asyncio.Lock] = {}
        self._state: Literal["new", "open", "closed"] = "new"
        self._sweeper: asyncio.Task[None] | None = None

    def is_open(self, project_id: str) -> bool:
        return project_id in self._open

    async def open(self) -> None:
        """Make the store usable (creates ``data_dir``); idempotent."""
        if self._state == "closed":
            raise StoreError("The checkpoint store was closed; create a new one.")
        await asyncio.to_thread(self.data_dir.mkdir, parents=True, exist_ok=True)
        self._state = "open"
        if self.idle_timeout is not None and self._sweeper is None:
            self._sweeper = asyncio.create_task(self._sweep(), name="sqlite-idle-databases")

    async def close(self) -> None:
        """Close every open database; the store cannot be used afterwards."""
        self._state = "closed"
        sweeper, self._sweeper = self._sweeper, None
        if sweeper is not None:
            sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sweeper
        while self._open:
            _, database = self._open.popitem(last=False)
            await self._shut(database)

    async def close_project(self, project_id: str) -> bool:
        """Close the project's database (it reopens on next use); waits for its current use.
        Whether it was open."""
        database = self._open.pop(project_id, None)
        if database is None:
            return False
        await self._shut(database)
        return True

    async def stored_projects(self) -> list[str]:
        """Projects that have a database under ``data_dir/projects`` (sorted)."""
        root = self.data_dir / "projects"

        def scan() -> list[str]:
            if not root.is_dir():
                return []
            return sorted(
                entry.name
                for entry in root.iterdir()
                if _PROJECT_ID.fullmatch(entry.name)
                and (entry / DATABASE_DIR / DATABASE_NAME).is_file()
            )

        return await asyncio.to_thread(scan)

    async def remove_project(self, project_id: str, archive_to: Path | None = None) -> Path | None:
        """Close the project's database and remove its directory under
        ``data_dir/projects`` (the project is gone from GNS3). With ``archive_to``, the
        directory is moved there instead (as ``<project_id>-<UTC time>``), which is returned.

        Only the store's own directory is touched: a database placed elsewhere by a
        ``project_path`` resolver is closed, not removed.
        """
        path = await self.database_path(project_id)
        await self.close_project(project_id)
        directory = self.data_dir / "projects" / project_id
        if path.parent.parent != directory:
            return None

        def remove() -> Path | None:
            if not directory.is_dir():
                return None
            if archive_to is None:
                shutil.rmtree(directory)
                return None
            archive_to.mkdir(parents=True, exist_ok=True)
            stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
            target = archive_to / f"{project_id}-{stamp}"
            shutil.move(directory, target)
            return target

        return await asyncio.to_thread(remove)

    @property
    def open_projects(self) -> tuple[str, ...]:
        """Projects whose database is open, least recently used first."""
        return tuple(self._open)

    async def database_path(self, project_id: str) -> Path:
        """Where the project's database lives (validates ``project_id``)."""
        if not isinstance(project_id, str) or not _PROJECT_ID.fullmatch(project_id):
            raise InvalidRequestError(
                "project_id must be a GNS3 project id (letters, digits, '-' and '_')."
            )
        base: Path | None = None
        if self._project_path is not None:
            found = self._project_path(project_id)
            if inspect.isawaitable(found):
                found = await found
            base = Path(found) if found is not None else None
        if base is None:
            base = self.data_dir / "projects" / project_id
        return base / DATABASE_DIR / DATABASE_NAME

    @contextlib.asynccontextmanager
    async def write(self, project_id: str) -> AsyncIterator[aiosqlite.Connection]:
        """Several statements as one write transaction: committed on success, else
        rolled back. (A single statement needs none: see :meth:`use`.)"""
        async with self.use(project_id) as conn:
            await conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                await rollback(conn)
                raise
            await conn.commit()

    @contextlib.asynccontextmanager
    async def use(self, project_id: str) -> AsyncIterator[aiosqlite.Connection]:
        """The project's connection, held exclusively; SQLite errors become store errors.

        The connection is in autocommit mode: one statement is one transaction, which
        costs one thread hop (an implicit ``BEGIN`` would need a ``COMMIT``, a second
        hop). A write statement takes SQLite's write lock when it starts, waiting up to
        ``busy_timeout`` for it.
        """
        while True:
            database = await self._acquire(project_id)
            try:
                await database.lock.acquire()
            except BaseException:
                database.users -= 1
                raise
            if not database.closed:
                break
            database.lock.release()  # closed while we waited: open it again
            database.users -= 1
        try:
            try:
                if database.conn.in_transaction:  # a use was cancelled mid-transaction
                    await rollback(database.conn)
                yield database.conn
            except sqlite3.Error as exc:
                error = _translate(project_id, exc)
                if isinstance(error, StoreCorruptedError):
                    database.closed = True
                raise error from exc
        finally:
            database.lock.release()
            database.users -= 1
            database.last_used = asyncio.get_running_loop().time()
            if database.closed and self._open.get(project_id) is database:
                del self._open[project_id]
                await self._shut(database)

    async def _acquire(self, project_id: str) -> _Database:
        if self._state != "open":
            raise StoreError("The checkpoint store is not open.")
        database = self._open.get(project_id)
        if database is None:
            opening = self._opening.setdefault(project_id, asyncio.Lock())
            async with opening:
                database = self._open.get(project_id)
                if database is None:
                    database = await self._connect(project_id)
                    self._open[project_id] = database
            if not opening.locked():
                self._opening.pop(project_id, None)
        self._open.move_to_end(project_id)
        database.users += 1
        try:
            await self._evict()
        except BaseException:
            database.users -= 1
            raise
        return database

    async def _sweep(self) -> None:
        """Close the databases no one has used for ``idle_timeout`` seconds (a project
        nobody works on keeps no file open; it reopens on next use)."""
        assert self.idle_timeout is not None
        interval = max(self.idle_timeout / 4, 0.05)
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(interval)
            cutoff = loop.time() - self.idle_timeout
            for database in list(self._open.values()):
                idle = database.users == 0 and database.last_used <= cutoff
                if idle and self._open.get(database.project_id) is database:
                    del self._open[database.project_id]
                    log.info("closed the idle database of project %s", database.project_id)
                    await self._shut(database)

    async def _evict(self) -> None:
        """Close least recently used idle databases while more than ``max_open`` are open."""
        while len(self._open) > self.max_open:
            idle = next((db for db in self._open.values() if db.users == 0), None)
            if idle is None:
                return  # all busy: close them later
            del self._open[idle.project_id]
            await self._shut(idle)

    async def _connect(self, project_id: str) -> _Database:
        path = await self.database_path(project_id)
        try:
            await asyncio.to_thread(path.parent.mkdir, parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(
                f"Cannot create the copilot database directory of project {project_id!r}: "
                f"{exc.strerror or exc}."
            ) from exc
        try:
            conn = await aiosqlite.connect(
                str(path), isolation_level=None, timeout=self.busy_timeout
            )
        except sqlite3.Error as exc:
            raise _translate(project_id, exc) from exc
        try:
            await conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout * 1000)}")
            # New databases only (a no-op once one has tables): 2 KiB pages waste less
            # space around rows of a few hundred bytes to a few KiB than 4 KiB ones
            # (bench_store: 1.16x the JSON bytes instead of 1.50x at 100 turns).
            await conn.execute(f"PRAGMA page_size = {_PAGE_SIZE}")
            await self._enable_wal(conn)
            await conn.execute(f"PRAGMA synchronous = {self.synchronous}")
            await migrate(conn)
        except BaseException as exc:
            await conn.close()
            if isinstance(exc, sqlite3.Error):
                raise _translate(project_id, exc) from exc
            raise
        return _Database(project_id, path, conn)

    async def _enable_wal(self, conn: aiosqlite.Connection) -> None:
        # Switching a new database to WAL needs a moment of exclusive access and
        # SQLite does not wait for it (no busy handler): retry until busy_timeout.
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.busy_timeout
        delay = 0.002
        while True:
            try:
                await conn.execute_fetchall("PRAGMA journal_mode = WAL")
                return
            except sqlite3.OperationalError as exc:
                if _error_code(exc) != _SQLITE_BUSY or loop.time() > deadline:
                    raise
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.1)

    @staticmethod
    async def _shut(database: _Database) -> None:
        async with database.lock:
            database.closed = True
            with contextlib.suppress(sqlite3.Error, ValueError):
                await database.conn.close()


async def rollback(conn: aiosqlite.Connection) -> None:
    with contextlib.suppress(sqlite3.Error):
        await conn.rollback()


def _error_code(exc: sqlite3.Error) -> int:
    code: int = getattr(exc, "sqlite_errorcode", 0) or 0
    return code & 0xFF  # the primary code of an extended one


def _translate(project_id: str, exc: sqlite3.Error) -> StoreError:
    code = _error_code(exc)
    if code in (_SQLITE_CORRUPT, _SQLITE_NOTADB):
        log.warning("the copilot database of project %s is unreadable: %s", project_id, exc)
        return StoreCorruptedError(project_id, str(exc))
    return StoreError(f"The copilot database of project {project_id!r} failed: {exc}.")
