"""The per-project database's schema and its idempotent, versioned migrations.

Tables:

* ``chat_sessions``: spec 000's columns, types, defaults and three indexes, plus two
  columns of ours, ``copilot_mode`` (so that listing can filter by mode in SQL) and
  ``opening_messages`` (always NULL at rest: see version 5), and one index of ours,
  ``idx_user_sessions`` (a user's sessions in listing order). Databases made by older
  versions lack ``pinned`` (spec 000's migration) and our columns; they are added on
  open.
* ``chat_messages``: the append-only conversation log: one row per message, the
  OpenAI-shape JSON, ordered by a per-session sequence number starting at 1.
* ``restore_points``: what the lab looked like before an approved change (one row per
  restore point: the tool call it preceded, a summary, and the tool executor's state
  as JSON), kept with its session and deleted with it.
* ``copilot_schema_version``: one row per applied schema version.

Versions: 1 is the tables above; 2 recounts ``message_count`` from the message log
(earlier versions counted a turn's messages at its end, so a process killed mid-turn
left the counter behind its history; now each step is counted with its messages); 3
adds the triggers that keep the counters equal to the log: inserting a message adds it,
and the usage its ``metadata.usage`` records, to its session's counters; deleting one
takes them off (a step costs no statement of its own for its counters); 4 adds
``restore_points``; 5 lets a session be created with its first messages in one
statement: an ``INSERT`` into ``chat_sessions`` that sets ``opening_messages`` (a JSON
array of message texts) fires a trigger that appends them to the log, as sequence
numbers 1, 2, ..., and clears the column (the counting trigger counts them); 6 adds
``standing_intent`` (each user's checks that should always hold in the project's lab: one
row per user, the checks as a JSON list); 7 adds ``question_count`` (the session's user
messages), kept by triggers like the other counters and counted once from the log; 8
adds ``last_run_at`` and ``last_run`` to ``standing_intent`` (when the user's checks last
ran and the result, as JSON; NULL until they run).
"""

from __future__ import annotations

import logging

import aiosqlite

__all__ = ["SCHEMA_VERSION", "migrate"]

SCHEMA_VERSION = 8

log = logging.getLogger(__name__)

_CHAT_SESSIONS = """
CREATE TABLE IF NOT EXISTS chat_sessions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    thread_id TEXT NOT NULL UNIQUE,
    user_id TEXT NOT NULL,
    project_id TEXT NOT NULL,
    title TEXT,
    message_count INTEGER DEFAULT 0,
    llm_calls_count INTEGER DEFAULT 0,
    input_tokens INTEGER DEFAULT 0,
    output_tokens INTEGER DEFAULT 0,
    total_tokens INTEGER DEFAULT 0,
    last_message_at TIMESTAMP,
    created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
    updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
    metadata TEXT,
    stats TEXT,
    pinned BOOLEAN DEFAULT FALSE
)
"""

# Rows are inserted in rowid order, so the table's pages fill densely; the
# (session_id, seq) index is what history reads walk.
_CHAT_MESSAGES = """
CREATE TABLE IF NOT EXISTS chat_messages (
    id INTEGER PRIMARY KEY,
    session_id INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    message TEXT NOT NULL
)
"""

# A session's restore points, oldest first by ``id`` (rows are only ever inserted).
_RESTORE_POINTS = """
CREATE TABLE IF NOT EXISTS restore_points (
    id INTEGER PRIMARY KEY,
    point_id TEXT NOT NULL UNIQUE,
    session_id INTEGER NOT NULL,
    created_at TIMESTAMP NOT NULL,
    tool_call_id TEXT NOT NULL,
    tool_name TEXT NOT NULL,
    summary TEXT NOT NULL,
    state TEXT NOT NULL
)
"""

_STANDING_INTENT = """
CREATE TABLE IF NOT EXISTS standing_intent (
    user_id TEXT PRIMARY KEY,
    checks TEXT NOT NULL,
    updated_at TIMESTAMP NOT NULL
)
"""

_SCHEMA_VERSION_TABLE = """
CREATE TABLE IF NOT EXISTS copilot_schema_version (
    version INTEGER PRIMARY KEY,
    applied_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP
)
"""

_INDEXES = (
    "CREATE UNIQUE INDEX IF NOT EXISTS idx_thread_id ON chat_sessions(thread_id)",
    "CREATE INDEX IF NOT EXISTS idx_user_project ON chat_sessions(user_id, project_id)",
    "CREATE INDEX IF NOT EXISTS idx_pinned_updated ON chat_sessions(pinned DESC, updated_at DESC)",
    # Ours: a user's sessions in listing order, so that a page is read, not sorted.
    "CREATE INDEX IF NOT EXISTS idx_user_sessions "
    "ON chat_sessions(user_id, project_id, pinned DESC, updated_at DESC, id DESC)",
    "CREATE UNIQUE INDEX IF NOT EXISTS idx_messages_session_seq ON chat_messages(session_id, seq)",
)

_COUNTERS = (
    "message_count",
    "llm_calls_count",
    "input_tokens",
    "output_tokens",
    "total_tokens",
)

# Columns version 8 adds to ``standing_intent``: (name, declaration).
_INTENT_RUN_COLUMNS = (("last_run_at", "TIMESTAMP"), ("last_run", "TEXT"))

# Columns added to tables made by older versions: (name, declaration).
_ADDED_COLUMNS = (
    ("pinned", "BOOLEAN DEFAULT FALSE"),
    ("copilot_mode", "TEXT NOT NULL DEFAULT 'teaching_assistant'"),
    ("opening_messages", "TEXT"),
    ("question_count", "INTEGER NOT NULL DEFAULT 0"),
)


def _usage(row: str, key: str) -> str:
    # A row that is not JSON (a damaged database) counts as a message without usage; the
    # reader reports it as corrupt.
    return (
        f"COALESCE(CASE WHEN json_valid({row}.message) "
        f"THEN json_extract({row}.message, '$.metadata.usage.{key}') END, 0)"
    )


# The counters follow the log inside SQLite: no statement, and no thread hop, of their own.
_COUNTING_TRIGGERS = (
    "CREATE TRIGGER IF NOT EXISTS count_inserted_message AFTER INSERT ON chat_messages "
    "BEGIN UPDATE chat_sessions SET message_count = message_count + 1, "
    f"llm_calls_count = llm_calls_count + {_usage('NEW', 'llm_calls')}, "
    f"input_tokens = input_tokens + {_usage('NEW', 'input_tokens')}, "
    f"output_tokens = output_tokens + {_usage('NEW', 'output_tokens')}, "
    f"total_tokens = total_tokens + {_usage('NEW', 'input_tokens')} "
    f"+ {_usage('NEW', 'output_tokens')} "
    "WHERE id = NEW.session_id; END",
    "CREATE TRIGGER IF NOT EXISTS count_deleted_message AFTER DELETE ON chat_messages "
    "BEGIN UPDATE chat_sessions SET message_count = message_count - 1, "
    f"llm_calls_count = MAX(llm_calls_count - {_usage('OLD', 'llm_calls')}, 0), "
    f"input_tokens = MAX(input_tokens - {_usage('OLD', 'input_tokens')}, 0), "
    f"output_tokens = MAX(output_tokens - {_usage('OLD', 'output_tokens')}, 0), "
    f"total_tokens = MAX(total_tokens - {_usage('OLD', 'input_tokens')} "
    f"- {_usage('OLD', 'output_tokens')}, 0) "
    "WHERE id = OLD.session_id; END",
)


# A question is a user message: its counter follows the log too (version 7).
_IS_QUESTION = "json_valid({row}.message) AND json_extract({row}.message, '$.role') = 'user'"
_QUESTION_TRIGGERS = (
    "CREATE TRIGGER IF NOT EXISTS count_inserted_question AFTER INSERT ON chat_messages "
    f"WHEN {_IS_QUESTION.format(row='NEW')} BEGIN UPDATE chat_sessions "
    "SET question_count = question_count + 1 WHERE id = NEW.session_id; END",
    "CREATE TRIGGER IF NOT EXISTS count_deleted_question AFTER DELETE ON chat_messages "
    f"WHEN {_IS_QUESTION.format(row='OLD')} BEGIN UPDATE chat_sessions "
    "SET question_count = MAX(question_count - 1, 0) WHERE id = OLD.session_id; END",
)


# A new session's first messages go in with its row: one statement, one transaction.
_OPENING_TRIGGER = (
    "CREATE TRIGGER IF NOT EXISTS append_opening_messages AFTER INSERT ON chat_sessions "
    "WHEN NEW.opening_messages IS NOT NULL BEGIN "
    "INSERT INTO chat_messages (session_id, seq, message) "
    "SELECT NEW.id, 1 + j.key, j.value FROM json_each(NEW.opening_messages) j ORDER BY j.key; "
    "UPDATE chat_sessions SET opening_messages = NULL WHERE id = NEW.id; END"
)


async def migrate(conn: aiosqlite.Connection) -> None:
    """Bring the database to :data:`SCHEMA_VERSION`; idempotent, one write transaction.

    Runs its own explicit transaction; the connection must not be in one.
    """
    await conn.execute("BEGIN IMMEDIATE")
    try:
        await conn.execute(_SCHEMA_VERSION_TABLE)
        await conn.execute(_CHAT_SESSIONS)
        columns = {
            row[1] for row in await conn.execute_fetchall("PRAGMA table_info(chat_sessions)")
        }
        for name, declaration in _ADDED_COLUMNS:
            if name not in columns:
                log.info("adding column %s to an existing chat_sessions table", name)
                await conn.execute(f"ALTER TABLE chat_sessions ADD COLUMN {name} {declaration}")
        await conn.execute(_CHAT_MESSAGES)
        for statement in _INDEXES:
            await conn.execute(statement)
        applied = {
            row[0]
            for row in await conn.execute_fetchall("SELECT version FROM copilot_schema_version")
        }
        if 1 not in applied:
            # Older writers left NULL counters; counters are only ever updated by
            # increments (``x = x + ?``), which NULL would swallow.
            for counter in _COUNTERS:
                await conn.execute(
                    f"UPDATE chat_sessions SET {counter} = 0 WHERE {counter} IS NULL"
                )
            await conn.execute("INSERT INTO copilot_schema_version(version) VALUES (1)")
        for statement in _COUNTING_TRIGGERS:
            await conn.execute(statement)
        if 2 not in applied:
            await conn.execute(
                "UPDATE chat_sessions SET message_count = "
                "(SELECT COUNT(*) FROM chat_messages WHERE session_id = chat_sessions.id)"
            )
            await conn.execute("INSERT INTO copilot_schema_version(version) VALUES (2)")
        if 3 not in applied:
            await conn.execute("INSERT INTO copilot_schema_version(version) VALUES (3)")
        if 4 not in applied:
            await conn.execute(_RESTORE_POINTS)
            await conn.execute(
                "CREATE INDEX IF NOT EXISTS idx_restore_points_session "
                "ON restore_points(session_id, id)"
            )
            await conn.execute("INSERT INTO copilot_schema_version(version) VALUES (4)")
        await conn.execute(_OPENING_TRIGGER)
        if 5 not in applied:
            await conn.execute("INSERT INTO copilot_schema_version(version) VALUES (5)")
        if 6 not in applied:
            await conn.execute(_STANDING_INTENT)
            await conn.execute("INSERT INTO copilot_schema_version(version) VALUES (6)")
        for statement in _QUESTION_TRIGGERS:
            await conn.execute(statement)
        if 7 not in applied:
            await conn.execute(
                "UPDATE chat_sessions SET question_count = (SELECT COUNT(*) FROM chat_messages m "
                f"WHERE m.session_id = chat_sessions.id AND {_IS_QUESTION.format(row='m')})"
            )
            await conn.execute("INSERT INTO copilot_schema_version(version) VALUES (7)")
        if 8 not in applied:
            present = {
                row[1] for row in await conn.execute_fetchall("PRAGMA table_info(standing_intent)")
            }
            for name, declaration in _INTENT_RUN_COLUMNS:
                if name not in present:
                    await conn.execute(
                        f"ALTER TABLE standing_intent ADD COLUMN {name} {declaration}"
                    )
            await conn.execute("INSERT INTO copilot_schema_version(version) VALUES (8)")
    except BaseException:
        await conn.rollback()
        raise
    await conn.commit()
