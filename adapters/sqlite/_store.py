"""The SQLite checkpoint store: one database per GNS3 project, through aiosqlite."""

from __future__ import annotations

import asyncio
import json
import logging
import re
import sqlite3
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import Any

import aiosqlite

from adapters.sqlite._codec import (
    SESSION_JSON,
    decode_sessions,
    encode_json,
    encode_message,
    encode_time,
)
from adapters.sqlite._databases import (
    DATABASE_DIR,
    DATABASE_NAME,
    ProjectDatabases,
    ProjectPathResolver,
    SqliteStoreSettings,
    Synchronous,
)
from adapters.sqlite._intent import SqliteIntentRows
from adapters.sqlite._restore_points import SqliteRestorePointRows
from copilot_core import CopilotMode, Message, Role, Session
from copilot_core.errors import (
    InvalidRequestError,
    SessionNotFoundError,
    StoreCorruptedError,
)
from copilot_core.ports import HistoryPage, SessionMatch, Usage, excerpt, stamp_usage

__all__ = [
    "DATABASE_DIR",
    "DATABASE_NAME",
    "ProjectPathResolver",
    "SqliteCheckpointStore",
    "SqliteStoreSettings",
    "Synchronous",
]

log = logging.getLogger(__name__)


_NO_UPPER_BOUND = 1 << 62


class SqliteCheckpointStore(SqliteIntentRows, SqliteRestorePointRows):
    """A :class:`~copilot_core.ports.CheckpointStore` in per-project SQLite databases.

    The database of a project lives at
    ``{data_dir}/projects/{project_id}/gns3-copilot/copilot_checkpoints.db``, or, when
    ``project_path`` is given and knows the project, at
    ``{project_path(project_id)}/gns3-copilot/copilot_checkpoints.db``.

    ``settings`` (:class:`SqliteStoreSettings`): at most ``max_open`` databases stay
    open (least recently used ones are closed when idle), and one unused for
    ``idle_timeout`` seconds is closed (``None``: kept open). Each has one connection in
    WAL mode with a busy timeout; every write is one transaction: a single statement, or
    ``BEGIN IMMEDIATE`` … ``COMMIT``. Lifecycle: ``await open()`` (or ``async with``)
    before use, ``await close()`` at the end; :meth:`close_project` closes one project's
    database.
    """

    def __init__(
        self,
        data_dir: Path | str,
        project_path: ProjectPathResolver | None = None,
        *,
        settings: SqliteStoreSettings | None = None,
    ) -> None:
        self._databases = ProjectDatabases(data_dir, project_path, settings)
        self.data_dir = self._databases.data_dir
        self._use = self._databases.use
        self._write = self._databases.write

    # ================================================================ lifecycle
    async def open(self) -> None:
        """Make the store usable (creates ``data_dir``); idempotent."""
        await self._databases.open()

    async def close(self) -> None:
        """Close every open database; the store cannot be used afterwards."""
        await self._databases.close()

    async def close_project(self, project_id: str) -> bool:
        """Close the project's database (it reopens on next use); waits for its current use.
        Whether it was open."""
        return await self._databases.close_project(project_id)

    async def stored_projects(self) -> list[str]:
        """Projects that have a database under ``data_dir/projects`` (sorted)."""
        return await self._databases.stored_projects()

    async def remove_project(self, project_id: str, archive_to: Path | None = None) -> Path | None:
        """Close the project's database and remove (or, with ``archive_to``, move) its
        directory under ``data_dir/projects``: see :meth:`ProjectDatabases.remove_project`."""
        return await self._databases.remove_project(project_id, archive_to)

    @property
    def max_open(self) -> int:
        return self._databases.max_open

    @property
    def busy_timeout(self) -> float:
        return self._databases.busy_timeout

    @property
    def synchronous(self) -> Synchronous:
        return self._databases.synchronous

    @property
    def idle_timeout(self) -> float | None:
        return self._databases.idle_timeout

    @property
    def open_projects(self) -> tuple[str, ...]:
        """Projects whose database is open, least recently used first."""
        return self._databases.open_projects

    async def database_path(self, project_id: str) -> Path:
        """Where the project's database lives (validates ``project_id``)."""
        return await self._databases.database_path(project_id)

    async def __aenter__(self) -> SqliteCheckpointStore:
        await self.open()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.close()

    # ================================================================= sessions
    async def create_session(self, session: Session, messages: Sequence[Message] = ()) -> Session:
        # The first messages ride in the row's opening_messages column, which a trigger
        # empties into the log (schema version 5): one statement, one transaction.
        opening = _json_array([encode_message(message) for message in messages])
        async with self._use(session.project_id) as conn:
            try:
                cursor = await conn.execute(
                    "INSERT INTO chat_sessions (thread_id, user_id, project_id, title, "
                    "copilot_mode, pinned, message_count, llm_calls_count, input_tokens, "
                    "output_tokens, total_tokens, last_message_at, created_at, updated_at, "
                    "metadata, stats, opening_messages) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        session.thread_id,
                        session.user_id,
                        session.project_id,
                        session.title,
                        session.copilot_mode.value,
                        int(session.pinned),
                        session.message_count,
                        session.llm_calls_count,
                        session.input_tokens,
                        session.output_tokens,
                        session.total_tokens,
                        _time_or_none(session.last_message_at),
                        encode_time(session.created_at),
                        encode_time(session.updated_at),
                        encode_json(session.metadata),
                        encode_json(session.stats),
                        opening,
                    ),
                )
            except sqlite3.IntegrityError as exc:
                raise ValueError(f"session {session.thread_id!r} exists already") from exc
            row_id = cursor.lastrowid
        count = session.message_count + len(messages)
        asked = sum(message.role is Role.USER for message in messages)
        return session.model_copy(
            update={"id": row_id, "message_count": count, "question_count": asked}
        )

    async def get_session(self, project_id: str, thread_id: str) -> Session | None:
        async with self._use(project_id) as conn:
            rows = await conn.execute_fetchall(
                f"SELECT {SESSION_JSON} FROM chat_sessions WHERE thread_id = ?", (thread_id,)
            )
        return _first_session(rows)

    async def list_sessions(
        self,
        project_id: str,
        user_id: str,
        *,
        limit: int = 100,
        offset: int = 0,
        copilot_mode: CopilotMode | None = None,
    ) -> list[Session]:
        if limit <= 0:
            return []
        where = "user_id = ? AND project_id = ?"
        params: list[Any] = [user_id, project_id]
        if copilot_mode is not None:
            where += " AND copilot_mode = ?"
            params.append(copilot_mode.value)
        params += [limit, max(offset, 0)]
        async with self._use(project_id) as conn:
            rows = await conn.execute_fetchall(
                f"SELECT {SESSION_JSON} FROM chat_sessions WHERE {where} "
                "ORDER BY pinned DESC, updated_at DESC, id DESC LIMIT ? OFFSET ?",
                params,
            )
        return decode_sessions([row[0] for row in rows])

    async def record_turn(
        self,
        project_id: str,
        thread_id: str,
        at: datetime,
        *,
        usage: Usage | None = None,
        title: str | None = None,
    ) -> None:
        stamp = encode_time(at)
        usage = usage or Usage()
        async with self._use(project_id) as conn:
            cursor = await conn.execute(
                "UPDATE chat_sessions SET "
                "llm_calls_count = llm_calls_count + ?, "
                "input_tokens = input_tokens + ?, "
                "output_tokens = output_tokens + ?, "
                "total_tokens = total_tokens + ?, "
                "last_message_at = ?, updated_at = ?, title = COALESCE(?, title) "
                "WHERE thread_id = ?",
                (*_usage_params(usage), stamp, stamp, title, thread_id),
            )
            if cursor.rowcount == 0:
                raise SessionNotFoundError(thread_id)

    async def search_sessions(
        self, project_id: str, user_id: str, text: str, *, limit: int = 20
    ) -> list[SessionMatch]:
        if not text.strip() or limit <= 0:
            return []
        pattern = "%" + re.sub(r"([\\%_])", r"\\\1", text) + "%"
        async with self._use(project_id) as conn:
            rows = await conn.execute_fetchall(
                f"SELECT {SESSION_JSON}, title, (SELECT json_array("
                "json_extract(m.message, '$.id'), json_extract(m.message, '$.content')) "
                "FROM chat_messages m "
                "WHERE m.session_id = chat_sessions.id "
                "AND json_extract(m.message, '$.role') IN ('user', 'assistant') "
                "AND json_extract(m.message, '$.content') LIKE ? ESCAPE '\\' "
                "ORDER BY m.seq DESC LIMIT 1) AS hit "
                "FROM chat_sessions WHERE user_id = ? AND project_id = ? "
                "AND (hit IS NOT NULL OR title LIKE ? ESCAPE '\\') "
                "ORDER BY updated_at DESC, id DESC LIMIT ?",
                (pattern, user_id, project_id, pattern, limit),
            )
        found: list[SessionMatch] = []
        for row in rows:
            (session,) = decode_sessions([row[0]])
            if row[2] is not None:
                message_id, content = json.loads(row[2])
                found.append(SessionMatch(session, excerpt(str(content), text), message_id))
            else:
                found.append(SessionMatch(session, session.title))
        return found

    async def truncate(self, project_id: str, thread_id: str, message_id: str) -> int:
        # The counting trigger takes each deleted message (and its usage) off.
        async with self._use(project_id) as conn:
            cursor = await conn.execute(
                "DELETE FROM chat_messages WHERE session_id = "
                "(SELECT id FROM chat_sessions WHERE thread_id = ?) AND seq >= "
                "(SELECT m.seq FROM chat_messages m JOIN chat_sessions s "
                "ON s.id = m.session_id WHERE s.thread_id = ? "
                "AND json_extract(m.message, '$.id') = ?)",
                (thread_id, thread_id, message_id),
            )
            removed = cursor.rowcount
            if removed <= 0:
                await self._require(conn, project_id, thread_id)
                raise InvalidRequestError(f"message {message_id!r} is not in this session.")
        return removed

    async def rename_session(
        self, project_id: str, thread_id: str, title: str, at: datetime
    ) -> Session | None:
        async with self._use(project_id) as conn:
            rows = await conn.execute_fetchall(
                "UPDATE chat_sessions SET title = ?, updated_at = ? WHERE thread_id = ? "
                f"RETURNING {SESSION_JSON}",
                (title, encode_time(at), thread_id),
            )
        return _first_session(rows)

    async def set_pinned(self, project_id: str, thread_id: str, pinned: bool) -> Session | None:
        async with self._use(project_id) as conn:
            rows = await conn.execute_fetchall(
                f"UPDATE chat_sessions SET pinned = ? WHERE thread_id = ? RETURNING {SESSION_JSON}",
                (int(pinned), thread_id),
            )
        return _first_session(rows)

    async def set_mode(self, project_id: str, thread_id: str, mode: CopilotMode) -> Session | None:
        async with self._use(project_id) as conn:
            rows = await conn.execute_fetchall(
                "UPDATE chat_sessions SET copilot_mode = ? WHERE thread_id = ? "
                f"RETURNING {SESSION_JSON}",
                (mode.value, thread_id),
            )
        return _first_session(rows)

    async def delete_session(self, project_id: str, thread_id: str) -> bool:
        async with self._write(project_id) as conn:
            for table in ("chat_messages", "restore_points"):
                await conn.execute(
                    f"DELETE FROM {table} WHERE session_id = "
                    "(SELECT id FROM chat_sessions WHERE thread_id = ?)",
                    (thread_id,),
                )
            cursor = await conn.execute(
                "DELETE FROM chat_sessions WHERE thread_id = ?", (thread_id,)
            )
            return cursor.rowcount > 0

    async def delete_project_sessions(self, project_id: str) -> int:
        if not self._databases.is_open(project_id):
            path = await self.database_path(project_id)
            if not await asyncio.to_thread(path.exists):
                return 0  # nothing stored: do not create a database just to empty it
        async with self._write(project_id) as conn:
            await conn.execute("DELETE FROM chat_messages")
            await conn.execute("DELETE FROM restore_points")
            cursor = await conn.execute("DELETE FROM chat_sessions")
            return cursor.rowcount

    # ================================================================= messages
    async def append_messages(
        self,
        project_id: str,
        thread_id: str,
        messages: Sequence[Message],
        *,
        usage: Usage | None = None,
        replaces: str | None = None,
    ) -> None:
        # Serialised before the transaction (a failure writes nothing). The counters
        # follow in SQLite: triggers add each inserted row, and the usage recorded in
        # the step's first message, and take a deleted draft off.
        texts = [encode_message(message) for message in stamp_usage(messages, usage)]
        if replaces is None:
            async with self._use(project_id) as conn:
                await self._append(conn, project_id, thread_id, texts, usage)
            return
        if len(texts) == 1 and not usage:
            # A newer draft (or an answer without usage) takes the draft's row in one
            # statement: same place, same count.
            async with self._use(project_id) as conn:
                cursor = await conn.execute(_REWRITE_DRAFT, (texts[0], thread_id, replaces))
                if cursor.rowcount == 0:  # no such draft: an append
                    await self._append(conn, project_id, thread_id, texts, usage)
            return
        async with self._write(project_id) as conn:
            # The draft is the session's last message, or nothing is deleted.
            await conn.execute(
                "DELETE FROM chat_messages WHERE id = (SELECT m.id FROM chat_messages m "
                "JOIN chat_sessions s ON s.id = m.session_id WHERE s.thread_id = ? "
                "ORDER BY m.seq DESC LIMIT 1) AND json_extract(message, '$.id') = ?",
                (thread_id, replaces),
            )
            await self._append(conn, project_id, thread_id, texts, usage)

    async def _append(
        self,
        conn: aiosqlite.Connection,
        project_id: str,
        thread_id: str,
        texts: list[str],
        usage: Usage | None,
    ) -> None:
        """The messages' rows in one statement: all of them, or none when the session
        does not exist."""
        if not texts:
            if usage:  # nothing to record it in: counted as record_turn does
                cursor = await conn.execute(_ADD_USAGE, (*_usage_params(usage), thread_id))
                if cursor.rowcount == 0:
                    raise SessionNotFoundError(thread_id)
            else:
                await self._require(conn, project_id, thread_id)
            return
        if len(texts) == 1:
            cursor = await conn.execute(_APPEND_ONE, (texts[0], thread_id))
        else:
            cursor = await conn.execute(_APPEND_MANY, (_json_array(texts), thread_id))
        if cursor.rowcount != len(texts):
            raise SessionNotFoundError(thread_id)

    async def history(
        self,
        project_id: str,
        thread_id: str,
        *,
        limit: int | None = None,
        before: int | None = None,
    ) -> HistoryPage:
        if limit is not None and limit <= 0:
            return await self._empty_page(project_id, thread_id, limit, before)
        async with self._use(project_id) as conn:
            rows = list(
                await conn.execute_fetchall(
                    "SELECT seq, message FROM chat_messages WHERE session_id = "
                    "(SELECT id FROM chat_sessions WHERE thread_id = ?) AND seq < ? "
                    "ORDER BY seq DESC LIMIT ?",
                    (
                        thread_id,
                        _NO_UPPER_BOUND if before is None else before,
                        -1 if limit is None else limit,
                    ),
                )
            )
            if not rows:
                await self._require(conn, project_id, thread_id)
                return HistoryPage([], None)
        rows.reverse()
        try:
            messages = Message.from_json_texts([row[1] for row in rows], rows[0][0])
        except ValueError as exc:
            raise StoreCorruptedError(project_id, f"session {thread_id!r}: {exc}") from exc
        oldest = rows[0][0]
        return HistoryPage(messages, oldest if oldest > 1 else None)

    async def _empty_page(
        self, project_id: str, thread_id: str, limit: int, before: int | None
    ) -> HistoryPage:
        # A page of at most ``limit <= 0`` messages: only its cursor says anything.
        async with self._use(project_id) as conn:
            session_id = await self._require(conn, project_id, thread_id)
            rows = list(
                await conn.execute_fetchall(
                    "SELECT COALESCE(MAX(seq), 0) FROM chat_messages WHERE session_id = ?",
                    (session_id,),
                )
            )
        count = rows[0][0]
        end = count if before is None else min(max(before - 1, 0), count)
        start = max(end - limit, 0)
        return HistoryPage([], start + 1 if start > 0 else None)

    async def _require(self, conn: aiosqlite.Connection, project_id: str, thread_id: str) -> int:
        rows = list(
            await conn.execute_fetchall(
                "SELECT id FROM chat_sessions WHERE thread_id = ?", (thread_id,)
            )
        )
        if not rows:
            raise SessionNotFoundError(thread_id)
        row_id: int = rows[0][0]
        return row_id


# A message takes its session's next sequence number (an index seek); nothing is
# inserted when the session does not exist.
_APPEND_ONE = (
    "INSERT INTO chat_messages (session_id, seq, message) "
    "SELECT id, 1 + (SELECT COALESCE(MAX(seq), 0) FROM chat_messages "
    "WHERE session_id = chat_sessions.id), ? FROM chat_sessions WHERE thread_id = ?"
)

# Several messages (a JSON array of their texts) in one statement, in the order given
# (SQLite reads the SELECT to its end before inserting: MAX(seq) is the one before).
_APPEND_MANY = (
    "INSERT INTO chat_messages (session_id, seq, message) "
    "SELECT s.id, 1 + j.key + (SELECT COALESCE(MAX(seq), 0) FROM chat_messages "
    "WHERE session_id = s.id), j.value FROM chat_sessions s, json_each(?) j "
    "WHERE s.thread_id = ? ORDER BY j.key"
)

# The draft's row, when the draft is still the session's last message.
_REWRITE_DRAFT = (
    "UPDATE chat_messages SET message = ? WHERE id = (SELECT m.id FROM chat_messages m "
    "JOIN chat_sessions s ON s.id = m.session_id WHERE s.thread_id = ? "
    "ORDER BY m.seq DESC LIMIT 1) AND json_extract(message, '$.id') = ?"
)

_ADD_USAGE = (
    "UPDATE chat_sessions SET llm_calls_count = llm_calls_count + ?, "
    "input_tokens = input_tokens + ?, output_tokens = output_tokens + ?, "
    "total_tokens = total_tokens + ? WHERE thread_id = ?"
)


def _json_array(texts: list[str]) -> str | None:
    """Message texts as one JSON array (what ``json_each`` reads), or None for none."""
    return json.dumps(texts, ensure_ascii=False, separators=(",", ":")) if texts else None


def _usage_params(usage: Usage) -> tuple[int, int, int, int]:
    return (usage.llm_calls, usage.input_tokens, usage.output_tokens, usage.total_tokens)


def _time_or_none(value: datetime | None) -> str | None:
    return None if value is None else encode_time(value)


def _first_session(rows: Any) -> Session | None:
    sessions = decode_sessions([row[0] for row in rows])
    return sessions[0] if sessions else None
