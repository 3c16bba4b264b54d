"""The PostgreSQL schema and its versioned migrations, run at start-up.

Everything lives in one PostgreSQL schema (``gns3_copilot`` by default), created when
missing. Tables:

* ``copilot_schema_version``: one row per applied migration (version, description,
  applied_at).
* ``chat_sessions``: spec 000's session columns plus ``project_id`` in the key
  (``UNIQUE (project_id, thread_id)``), ``copilot_mode``, and ``last_seq``, the
  sequence number of the session's newest message.
* ``chat_messages``: the append-only conversation log, one row per message, the
  OpenAI-shape JSON as text, keyed by ``(session_id, seq)``; deleting a session
  cascades to its messages.
* ``llm_settings``: one row per user, the settings JSON and the API key as Fernet
  ciphertext (``bytea``), written by the LLM adapter.
* ``restore_points`` (version 2): what the lab looked like before an approved change,
  one row per restore point (the tool call it preceded, a summary, the tool executor's
  state as JSON text); deleting a session cascades to them.
* ``standing_intent`` (version 3): each user's checks that should always hold in a
  project's lab, one row per project and user, the checks as JSON text.
* ``chat_sessions.question_count`` (version 4): the session's user messages, kept by
  triggers on ``chat_messages`` (:data:`QUESTION_TRIGGERS`) and counted once from the
  log when the column is added, so reading a session no longer counts its messages.
* ``standing_intent``'s last run (version 5): ``last_run_at``, and ``last_run`` (the
  result as JSON text); NULL until the checks run.
* ``drill_active`` and ``drill_results`` (version 6): the troubleshooting drills, each
  project's active drill (one row at most: the key refuses a second) with its checkpoint
  as JSON text, and each user's finished drills.

:func:`migrate` applies the missing migrations in one transaction under a
transaction-scoped advisory lock, so that replicas starting together apply each
migration once: the others wait for the lock, then find nothing left to do. It is
idempotent. Migrations only add (tables, columns, indexes), so a replica of the
previous version keeps working on an upgraded schema during a rolling upgrade.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass

import psycopg
from psycopg import sql
from psycopg.rows import TupleRow

__all__ = ["MIGRATIONS", "QUESTION_TRIGGERS", "SCHEMA_VERSION", "Migration", "lock_key", "migrate"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    description: str
    statements: tuple[str, ...]


# A question is a user message. Its role is read from the text, not through a jsonb cast,
# which refuses the \u0000 a stored message may hold: the store writes ``{"id":…,"role":…``
# compactly, and the first ``","role":"`` is that key (a quote inside the id is escaped, so
# the id cannot contain the sequence).
_IS_QUESTION = 'substr({row}.message, strpos({row}.message, \'","role":"\') + 10, 5) = \'user"\''

QUESTION_TRIGGERS = ("count_inserted_question", "count_deleted_question")
"""The triggers on ``chat_messages`` that keep ``chat_sessions.question_count`` (version 4)."""

MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "sessions, their message logs and the users' LLM settings",
        (
            """
            CREATE TABLE chat_sessions (
                id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                project_id      text NOT NULL,
                thread_id       text NOT NULL,
                user_id         text NOT NULL,
                title           text NOT NULL DEFAULT '',
                copilot_mode    text NOT NULL DEFAULT 'teaching_assistant',
                pinned          boolean NOT NULL DEFAULT false,
                message_count   bigint NOT NULL DEFAULT 0,
                llm_calls_count bigint NOT NULL DEFAULT 0,
                input_tokens    bigint NOT NULL DEFAULT 0,
                output_tokens   bigint NOT NULL DEFAULT 0,
                total_tokens    bigint NOT NULL DEFAULT 0,
                last_message_at timestamptz,
                created_at      timestamptz NOT NULL DEFAULT now(),
                updated_at      timestamptz NOT NULL DEFAULT now(),
                metadata        text NOT NULL DEFAULT '{}',
                stats           text NOT NULL DEFAULT '{}',
                last_seq        bigint NOT NULL DEFAULT 0,
                CONSTRAINT chat_sessions_thread UNIQUE (project_id, thread_id)
            )
            """,
            # A user's sessions in listing order: a page is read, not sorted.
            """
            CREATE INDEX chat_sessions_listing ON chat_sessions
                (project_id, user_id, pinned DESC, updated_at DESC, id DESC)
            """,
            """
            CREATE TABLE chat_messages (
                session_id bigint NOT NULL REFERENCES chat_sessions (id) ON DELETE CASCADE,
                seq        bigint NOT NULL,
                message    text NOT NULL,
                PRIMARY KEY (session_id, seq)
            )
            """,
            """
            CREATE TABLE llm_settings (
                user_id           text PRIMARY KEY,
                settings          text NOT NULL,
                api_key_encrypted bytea,
                updated_at        timestamptz NOT NULL
            )
            """,
        ),
    ),
    Migration(
        2,
        "restore points, kept with their session",
        (
            """
            CREATE TABLE restore_points (
                id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                point_id     text NOT NULL UNIQUE,
                session_id   bigint NOT NULL REFERENCES chat_sessions (id) ON DELETE CASCADE,
                created_at   timestamptz NOT NULL,
                tool_call_id text NOT NULL,
                tool_name    text NOT NULL,
                summary      text NOT NULL,
                state        text NOT NULL
            )
            """,
            "CREATE INDEX restore_points_session ON restore_points (session_id, id)",
        ),
    ),
    Migration(
        3,
        "each user's standing intent per project",
        (
            """
            CREATE TABLE standing_intent (
                project_id text NOT NULL,
                user_id    text NOT NULL,
                checks     text NOT NULL,
                updated_at timestamptz NOT NULL,
                PRIMARY KEY (project_id, user_id)
            )
            """,
        ),
    ),
    Migration(
        4,
        "each session's question count, kept by triggers",
        (
            "ALTER TABLE chat_sessions ADD COLUMN question_count bigint NOT NULL DEFAULT 0",
            # The function is bound to the schema it is created in (the migration's search
            # path), whatever the search path of the session that writes a message.
            """
            CREATE FUNCTION count_questions() RETURNS trigger
            LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
            BEGIN
                IF TG_OP = 'INSERT' THEN
                    UPDATE chat_sessions SET question_count = question_count + 1
                    WHERE id = NEW.session_id;
                ELSE
                    UPDATE chat_sessions SET question_count = GREATEST(question_count - 1, 0)
                    WHERE id = OLD.session_id;
                END IF;
                RETURN NULL;
            END
            $$
            """,
            f"CREATE TRIGGER {QUESTION_TRIGGERS[0]} AFTER INSERT ON chat_messages FOR EACH ROW "
            f"WHEN ({_IS_QUESTION.format(row='NEW')}) EXECUTE FUNCTION count_questions()",
            f"CREATE TRIGGER {QUESTION_TRIGGERS[1]} AFTER DELETE ON chat_messages FOR EACH ROW "
            f"WHEN ({_IS_QUESTION.format(row='OLD')}) EXECUTE FUNCTION count_questions()",
            # Counted once from the log. Nothing is written meanwhile: adding the column
            # holds chat_sessions and creating the triggers holds chat_messages against
            # writes until the migration commits.
            "UPDATE chat_sessions s SET question_count = q.n FROM (SELECT session_id, "
            f"count(*) AS n FROM chat_messages m WHERE {_IS_QUESTION.format(row='m')} "
            "GROUP BY session_id) q WHERE s.id = q.session_id",
        ),
    ),
    Migration(
        5,
        "the last run of each standing intent",
        (
            "ALTER TABLE standing_intent ADD COLUMN last_run_at timestamptz",
            "ALTER TABLE standing_intent ADD COLUMN last_run text",
        ),
    ),
    Migration(
        6,
        "troubleshooting drills: each project's active drill, each user's results",
        (
            """
            CREATE TABLE drill_active (
                project_id    text PRIMARY KEY,
                drill_id      text NOT NULL,
                user_id       text NOT NULL,
                fault_id      text NOT NULL,
                started_at    timestamptz NOT NULL,
                checkpoint_at timestamptz,
                checkpoint    text,
                handed_at     timestamptz,
                hints_used    integer NOT NULL DEFAULT 0,
                grades        integer NOT NULL DEFAULT 0,
                score         double precision
            )
            """,
            """
            CREATE TABLE drill_results (
                drill_id    text PRIMARY KEY,
                seq         bigint GENERATED ALWAYS AS IDENTITY,
                user_id     text NOT NULL,
                project_id  text NOT NULL,
                fault_id    text NOT NULL,
                topic       text NOT NULL,
                difficulty  integer NOT NULL,
                score       double precision,
                started_at  timestamptz NOT NULL,
                ended_at    timestamptz NOT NULL,
                time_s      double precision NOT NULL,
                hints_used  integer NOT NULL,
                given_up    boolean NOT NULL,
                restored    boolean NOT NULL
            )
            """,
            "CREATE INDEX drill_results_user ON drill_results (user_id, ended_at)",
        ),
    ),
)

SCHEMA_VERSION = MIGRATIONS[-1].version
"""The schema version this code writes and expects."""

_VERSION_TABLE = """
CREATE TABLE IF NOT EXISTS copilot_schema_version (
    version     integer PRIMARY KEY,
    description text NOT NULL,
    applied_at  timestamptz NOT NULL DEFAULT now()
)
"""


def lock_key(schema: str) -> int:
    """The advisory lock key that serialises migrations of ``schema`` (a signed 64-bit int)."""
    digest = hashlib.sha256(f"gns3-copilot migrations {schema}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


async def migrate(conn: psycopg.AsyncConnection[TupleRow], schema: str) -> int:
    """Bring ``schema`` to :data:`SCHEMA_VERSION`; returns the newest version applied there.

    ``conn`` is in autocommit mode and its ``search_path`` is ``schema``. One
    transaction, under the advisory lock :func:`lock_key`: concurrent callers wait
    for each other, and the later ones apply nothing.
    """
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(%s::bigint)", (lock_key(schema),))
        cursor = await conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema,))
        if await cursor.fetchone() is None:
            # Only when missing: CREATE SCHEMA IF NOT EXISTS would still need the right to
            # create schemas, which a role given a ready-made schema may not have.
            await conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
            log.info("created the PostgreSQL schema %s", schema)
        await conn.execute(_VERSION_TABLE)
        cursor = await conn.execute("SELECT version FROM copilot_schema_version")
        applied = {int(row[0]) for row in await cursor.fetchall()}
        for migration in MIGRATIONS:
            if migration.version in applied:
                continue
            for statement in migration.statements:
                await conn.execute(statement)
            await conn.execute(
                "INSERT INTO copilot_schema_version (version, description) VALUES (%s, %s)",
                (migration.version, migration.description),
            )
            applied.add(migration.version)
            log.info(
                "applied PostgreSQL schema migration %s (%s) to schema %s",
                migration.version,
                migration.description,
                schema,
            )
    newest = max(applied)
    if newest > SCHEMA_VERSION:
        log.warning(
            "the PostgreSQL schema %s is at version %s, newer than this version of "
            "gns3-copilot knows (%s); it keeps working because migrations only add, "
            "but upgrade this replica",
            schema,
            newest,
            SCHEMA_VERSION,
        )
    return newest
