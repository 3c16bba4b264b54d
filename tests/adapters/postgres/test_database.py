"""PostgresDatabase on the real server: migrations, concurrent start-ups, clear errors,
recovery after the server drops its connections, several replicas on one schema."""

from __future__ import annotations

import asyncio
import json
import traceback
import uuid
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from adapters.postgres import (
    SCHEMA_VERSION,
    PostgresCheckpointStore,
    PostgresDatabase,
    describe_url,
)
from adapters.postgres._schema import QUESTION_TRIGGERS, lock_key
from copilot_core import Message, Session
from copilot_core.errors import StoreError
from copilot_core.ports import IntentRun, RestorePoint, StandingIntentRecord, Usage
from tests.fakes.old_restore_point import OLD_STATE, assert_read_as_typed
from tests.real_postgres import PostgresForTests

PROJECT = str(uuid.UUID(int=7))
T0 = datetime(2026, 3, 1, tzinfo=UTC)
PASSWORD = "s3cret-Pw-7781"


def session(thread_id: str, **fields: object) -> Session:
    return Session.model_validate(
        {
            "thread_id": thread_id,
            "user_id": "alice",
            "project_id": PROJECT,
            "created_at": T0,
            "updated_at": T0,
            **fields,
        }
    )


def versions(postgres: PostgresForTests, schema: str) -> list[int]:
    with psycopg.connect(postgres.conninfo, autocommit=True) as conn:
        rows = conn.execute(
            sql.SQL("SELECT version FROM {}.copilot_schema_version ORDER BY version").format(
                sql.Identifier(schema)
            )
        ).fetchall()
    return [int(row[0]) for row in rows]


def tables(postgres: PostgresForTests, schema: str) -> set[str]:
    with psycopg.connect(postgres.conninfo, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = %s", (schema,)
        ).fetchall()
    return {str(row[0]) for row in rows}


# =================================================================== migrations
async def test_open_creates_the_schema_and_reopening_migrates_nothing_and_keeps_data(
    postgres: PostgresForTests, postgres_schema: str
) -> None:
    assert postgres_schema not in postgres.schemas()
    async with PostgresDatabase(postgres.url, schema=postgres_schema) as database:
        assert database.schema_version == SCHEMA_VERSION
        store = PostgresCheckpointStore(database)
        await store.create_session(session("s1", title="kept"))
        await store.append_messages(PROJECT, "s1", [Message.user("m1", "hello", T0)])
    assert tables(postgres, postgres_schema) == {
        "copilot_schema_version",
        "chat_sessions",
        "chat_messages",
        "llm_settings",
        "restore_points",
        "standing_intent",
        "drill_active",
        "drill_results",
    }
    for _ in range(2):
        async with PostgresDatabase(postgres.url, schema=postgres_schema) as database:
            store = PostgresCheckpointStore(database)
            got = await store.get_session(PROJECT, "s1")
            assert got is not None
            assert got.title == "kept"
            assert [m.id for m in (await store.history(PROJECT, "s1")).messages] == ["m1"]
    assert versions(postgres, postgres_schema) == list(range(1, SCHEMA_VERSION + 1))


async def test_a_version_1_schema_gains_restore_points_that_survive_a_restart(
    postgres: PostgresForTests, postgres_schema: str
) -> None:
    async with PostgresDatabase(postgres.url, schema=postgres_schema) as database:
        await PostgresCheckpointStore(database).create_session(session("s1"))
    with psycopg.connect(postgres.conninfo, autocommit=True) as conn:  # back to version 1
        conn.execute(f"DROP TABLE {postgres_schema}.restore_points")
        conn.execute(f"DELETE FROM {postgres_schema}.copilot_schema_version WHERE version = 2")
    point = RestorePoint(
        "p1", PROJECT, "s1", T0, "call-1", "create_gns3_node", "before", kept={"a": 1}
    )
    async with PostgresDatabase(postgres.url, schema=postgres_schema) as database:
        assert database.schema_version == SCHEMA_VERSION
        await PostgresCheckpointStore(database).save_restore_point(point)
    async with PostgresDatabase(postgres.url, schema=postgres_schema) as database:
        store = PostgresCheckpointStore(database)
        assert await store.restore_points(PROJECT, "s1") == [point]
        assert await store.delete_session(PROJECT, "s1")  # the points go with it (cascade)
    with psycopg.connect(postgres.conninfo, autocommit=True) as conn:
        rows = conn.execute(f"SELECT count(*) FROM {postgres_schema}.restore_points").fetchall()
    assert rows == [(0,)]
    assert versions(postgres, postgres_schema) == list(range(1, SCHEMA_VERSION + 1))


async def test_a_restore_point_row_in_the_old_flat_shape_is_read_into_typed_fields(
    postgres: PostgresForTests, postgres_schema: str
) -> None:
    async with PostgresDatabase(postgres.url, schema=postgres_schema) as database:
        await PostgresCheckpointStore(database).create_session(session("s1"))
    with psycopg.connect(postgres.conninfo, autocommit=True) as conn:  # as written before
        conn.execute(
            sql.SQL(
                "INSERT INTO {}.restore_points (point_id, session_id, created_at, tool_call_id, "
                "tool_name, summary, state) SELECT %s, id, %s, %s, %s, %s, %s FROM "
                "{}.chat_sessions WHERE thread_id = %s"
            ).format(sql.Identifier(postgres_schema), sql.Identifier(postgres_schema)),
            ("p-old", T0, "call-1", "create_gns3_node", "before", json.dumps(OLD_STATE), "s1"),
        )
    async with PostgresDatabase(postgres.url, schema=postgres_schema) as database:
        store = PostgresCheckpointStore(database)
        (point,) = await store.restore_points(PROJECT, "s1")
        assert (point.id, point.created_at, point.tool_name) == ("p-old", T0, "create_gns3_node")
        assert_read_as_typed(point)
        # Written again (a later rollback's id), it is kept in the new shape and read alike.
        again = replace(point, id_map={**point.id_map, "n1": "n1-again"})
        await store.update_restore_point(again)
        assert await store.restore_point(PROJECT, "s1", "p-old") == again
    with psycopg.connect(postgres.conninfo, autocommit=True) as conn:
        rows = conn.execute(f"SELECT state FROM {postgres_schema}.restore_points").fetchall()
    assert json.loads(rows[0][0])["format"] == 2


# The count PostgreSQL made on every read of a session before version 4.
_SUBQUERY_COUNT = (
    "SELECT thread_id, question_count, (SELECT count(*) FROM chat_messages q "
    "WHERE q.session_id = chat_sessions.id "
    'AND substr(q.message, strpos(q.message, \'","role":"\') + 10, 5) = \'user"\') '
    "FROM chat_sessions ORDER BY thread_id"
)


async def test_a_version_3_schema_gains_question_counts_that_match_its_messages(
    postgres: PostgresForTests, postgres_schema: str
) -> None:
    def user(n: int, text: str = "why is R1 down?") -> Message:
        return Message.user(f"q{n}", text, T0)

    def answer(n: int, text: str = "Its eth0 is shut.") -> Message:
        return Message.assistant(f"a{n}", text, T0)

    async with PostgresDatabase(postgres.url, schema=postgres_schema) as database:
        store = PostgresCheckpointStore(database)
        await store.create_session(session("empty"))
        await store.create_session(session("one"), [user(1)])
        await store.create_session(session("turns"), [user(1)])
        for n in range(1, 4):
            await store.append_messages(PROJECT, "turns", [answer(n)])
            await store.append_messages(PROJECT, "turns", [user(n + 1)])
        await store.truncate(PROJECT, "turns", "q3")  # cut back before its third question
        await store.create_session(session("tricky"), [user(1, "NUL \x00, lone \ud83d")])
        await store.append_messages(
            PROJECT, "tricky", [answer(1, 'says "role":"user" and ","role":"user"')]
        )
        await store.append_messages(
            PROJECT, "tricky", [Message.user('q"2', "an id with a quote", T0)]
        )
        await store.append_messages(PROJECT, "tricky", [user(3)])
        marked = user(3).model_copy(update={"metadata": {"incomplete": {}}})
        await store.append_messages(PROJECT, "tricky", [marked], replaces="q3")
        expected = {}
        for thread in ("empty", "one", "turns", "tricky"):
            history = (await store.history(PROJECT, thread)).messages
            expected[thread] = sum(message.role.value == "user" for message in history)
    assert expected == {"empty": 0, "one": 1, "turns": 2, "tricky": 3}
    with psycopg.connect(postgres.conninfo, autocommit=True) as conn:  # back to version 3
        conn.execute(sql.SQL("SET search_path = {}").format(sql.Identifier(postgres_schema)))
        for trigger in QUESTION_TRIGGERS:
            conn.execute(
                sql.SQL("DROP TRIGGER {} ON chat_messages").format(sql.Identifier(trigger))
            )
        conn.execute("DROP FUNCTION count_questions()")
        conn.execute("ALTER TABLE chat_sessions DROP COLUMN question_count")
        for column in ("last_run_at", "last_run"):  # and what version 5 added
            conn.execute(f"ALTER TABLE standing_intent DROP COLUMN {column}")
        conn.execute("DROP TABLE drill_active, drill_results")  # and what version 6 added
        conn.execute("DELETE FROM copilot_schema_version WHERE version >= 4")
    assert versions(postgres, postgres_schema) == [1, 2, 3]

    async with PostgresDatabase(postgres.url, schema=postgres_schema) as database:
        assert database.schema_version == SCHEMA_VERSION
        store = PostgresCheckpointStore(database)
        got = {s.thread_id: s.question_count for s in await store.list_sessions(PROJECT, "alice")}
        with psycopg.connect(postgres.conninfo, autocommit=True) as conn:
            conn.execute(sql.SQL("SET search_path = {}").format(sql.Identifier(postgres_schema)))
            rows = conn.execute(_SUBQUERY_COUNT).fetchall()
            assert [(thread, column) for thread, column, _ in rows] == sorted(got.items())
            assert all(column == counted for _, column, counted in rows)
            # A question an older replica inserts (its own statement, not the store's) and
            # one cut off later are counted too: by the triggers, whoever writes.
            conn.execute(
                "INSERT INTO chat_messages (session_id, seq, message) SELECT id, last_seq + 1, "
                "%s FROM chat_sessions WHERE thread_id = 'one'",
                ('{"id":"q9","role":"user","content":"and R2?","metadata":{}}',),
            )
        assert got == expected
        found = await store.get_session(PROJECT, "one")
        assert found is not None and found.question_count == 2
        await store.truncate(PROJECT, "turns", "q2")
        found = await store.get_session(PROJECT, "turns")
        assert found is not None and found.question_count == 1


async def test_a_version_4_schemas_intent_is_kept_and_learns_to_keep_its_last_run(
    postgres: PostgresForTests, postgres_schema: str
) -> None:
    checks = [{"kind": "interface", "node": "R1", "interface": "e0", "state": "up"}]
    async with PostgresDatabase(postgres.url, schema=postgres_schema) as database:
        await PostgresCheckpointStore(database).save_standing_intent(
            PROJECT, "alice", StandingIntentRecord(checks, T0)
        )
    with psycopg.connect(postgres.conninfo, autocommit=True) as conn:  # back to version 4
        for column in ("last_run_at", "last_run"):
            conn.execute(f"ALTER TABLE {postgres_schema}.standing_intent DROP COLUMN {column}")
        conn.execute(f"DELETE FROM {postgres_schema}.copilot_schema_version WHERE version = 5")
    run = IntentRun(T0, {"status": "pass", "summary": {"pass": 1}, "waited_s": 0, "checks": []})
    async with PostgresDatabase(postgres.url, schema=postgres_schema) as database:
        assert database.schema_version == SCHEMA_VERSION
        store = PostgresCheckpointStore(database)
        assert await store.standing_intent(PROJECT, "alice") == StandingIntentRecord(checks, T0)
        assert await store.save_intent_run(PROJECT, "alice", checks, run)
    async with PostgresDatabase(postgres.url, schema=postgres_schema) as database:
        store = PostgresCheckpointStore(database)
        assert await store.standing_intent(PROJECT, "alice") == StandingIntentRecord(
            checks, T0, run
        )
    assert versions(postgres, postgres_schema) == list(range(1, SCHEMA_VERSION + 1))


async def test_replicas_starting_together_on_an_empty_database_all_start_and_migrate_once(
    postgres: PostgresForTests, postgres_schema: str
) -> None:
    replicas = [
        PostgresDatabase(postgres.url, schema=postgres_schema, max_size=1) for _ in range(4)
    ]
    try:
        await asyncio.gather(*(replica.open() for replica in replicas))
        assert [replica.schema_version for replica in replicas] == [SCHEMA_VERSION] * 4
        assert versions(postgres, postgres_schema) == list(range(1, SCHEMA_VERSION + 1))
        # Every replica works on the one schema.
        stores = [PostgresCheckpointStore(replica) for replica in replicas]
        await stores[0].create_session(session("shared"))
        for store in stores:
            assert await store.get_session(PROJECT, "shared") is not None
    finally:
        await asyncio.gather(*(replica.close() for replica in replicas))


async def test_migrations_wait_for_the_advisory_lock_another_replica_holds(
    postgres: PostgresForTests, postgres_schema: str
) -> None:
    holder = await psycopg.AsyncConnection.connect(postgres.conninfo, autocommit=True)
    try:
        await holder.execute("SELECT pg_advisory_lock(%s::bigint)", (lock_key(postgres_schema),))
        database = PostgresDatabase(postgres.url, schema=postgres_schema, max_size=1)
        opening = asyncio.create_task(database.open())
        await asyncio.sleep(0.5)
        assert not opening.done()  # waiting for the lock: nothing was created meanwhile
        assert postgres_schema not in postgres.schemas()
        await holder.execute("SELECT pg_advisory_unlock(%s::bigint)", (lock_key(postgres_schema),))
        await asyncio.wait_for(opening, 10)
        assert database.schema_version == SCHEMA_VERSION
        await database.close()
    finally:
        await holder.close()


async def test_a_schema_made_by_an_administrator_is_used_without_the_right_to_create_schemas(
    postgres: PostgresForTests, postgres_schema: str
) -> None:
    role = f"copilot_role_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(postgres.conninfo, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(role)))
        admin.execute(
            sql.SQL("REVOKE CREATE ON DATABASE {} FROM PUBLIC").format(
                sql.Identifier(postgres.name)
            )
        )
        admin.execute(
            sql.SQL("CREATE SCHEMA {} AUTHORIZATION {}").format(
                sql.Identifier(postgres_schema), sql.Identifier(role)
            )
        )
    url = postgres.url.replace("postgresql://postgres@", f"postgresql://{role}@")
    try:
        async with PostgresDatabase(url, schema=postgres_schema) as database:
            store = PostgresCheckpointStore(database)
            await store.create_session(session("s1"))
            assert await store.get_session(PROJECT, "s1") is not None
    finally:
        with psycopg.connect(postgres.conninfo, autocommit=True) as admin:
            admin.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(postgres_schema)))
            admin.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))


# ======================================================================= errors
def _port_nobody_listens_on() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize(
    ("make_url", "expected"),
    [
        (
            lambda pg: f"mysql://copilot:{PASSWORD}@127.0.0.1/copilot",
            "must start with postgresql://",
        ),
        (
            lambda pg: f"postgresql://copilot:{PASSWORD}@127.0.0.1:notaport/copilot",
            'invalid integer value "notaport"',
        ),
        (
            lambda pg: f"postgresql://postgres:{PASSWORD}@127.0.0.1/copilot?bogus=1",
            'invalid URI query parameter: "bogus"',
        ),
        (
            lambda pg: f"postgresql://postgres:{PASSWORD}@127.0.0.1:{_port_nobody_listens_on()}/x",
            "Connection refused",
        ),
        (
            lambda pg: f"postgresql://postgres:{PASSWORD}@no-such-host.invalid/copilot",
            "no-such-host.invalid",
        ),
        (
            lambda pg: (
                pg.url.replace("postgresql://postgres@", f"postgresql://postgres:{PASSWORD}@")
                + "_missing"
            ),
            "does not exist",
        ),
    ],
    ids=["not-postgres", "bad-port", "unknown-parameter", "refused", "unknown-host", "no-database"],
)
async def test_a_bad_or_unreachable_database_is_a_clear_store_error_without_the_password(
    postgres: PostgresForTests, postgres_schema: str, make_url: object, expected: str
) -> None:
    url = make_url(postgres)  # type: ignore[operator]
    with pytest.raises(StoreError) as caught:
        # A pool that kept trying would wait longer than the test may take: the error
        # comes from the one direct connection, at once, with the driver's own reason.
        database = PostgresDatabase(
            url, schema=postgres_schema, connect_timeout=3, pool_timeout=3600
        )
        await database.open()
    message = caught.value.message
    assert expected in message
    assert PASSWORD not in message
    # Nor in anything a log of the traceback would show (the driver's own errors).
    assert PASSWORD not in "".join(traceback.format_exception(caught.value))


def test_a_bad_schema_name_is_refused() -> None:
    with pytest.raises(StoreError, match="schema name"):
        PostgresDatabase("postgresql://postgres@127.0.0.1/x", schema="Robert'); DROP")


def test_describe_url_never_shows_the_password() -> None:
    described = describe_url(f"postgresql://copilot:{PASSWORD}@db.lab:6432/copilot?sslmode=require")
    assert described == "postgresql://copilot@db.lab:6432/copilot"
    assert describe_url("postgresql://") == "postgresql://(default host)/(default database)"
    assert PASSWORD not in describe_url(f"postgresql://u:{PASSWORD}@h:bad/d")


async def test_a_store_whose_database_is_not_open_says_so(postgres: PostgresForTests) -> None:
    store = PostgresCheckpointStore(PostgresDatabase(postgres.url, schema="never_opened"))
    with pytest.raises(StoreError, match="not open"):
        await store.get_session(PROJECT, "s1")


# ==================================================================== resilience
async def test_connections_the_server_dropped_are_replaced_without_a_failed_request(
    postgres: PostgresForTests, postgres_schema: str
) -> None:
    name = f"copilot-test-{uuid.uuid4().hex[:8]}"
    async with PostgresDatabase(
        postgres.url, schema=postgres_schema, min_size=3, max_size=3, application_name=name
    ) as database:
        store = PostgresCheckpointStore(database)
        await store.create_session(session("s1"))
        with psycopg.connect(postgres.conninfo, autocommit=True) as admin:
            killed = admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE application_name = %s",
                (name,),
            ).fetchall()
            assert len(killed) == 3
            for _ in range(100):  # as after a restart: the backends are gone
                left = admin.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", (name,)
                ).fetchone()
                if left is not None and left[0] == 0:
                    break
                await asyncio.sleep(0.02)
        await asyncio.sleep(0.05)
        for _ in range(6):
            await database.ping()
            assert await store.get_session(PROJECT, "s1") is not None


async def test_two_replicas_appending_to_one_session_at_once_lose_and_duplicate_nothing(
    postgres: PostgresForTests, postgres_schema: str
) -> None:
    async with (
        PostgresDatabase(postgres.url, schema=postgres_schema, max_size=4) as first,
        PostgresDatabase(postgres.url, schema=postgres_schema, max_size=4) as second,
    ):
        stores = [PostgresCheckpointStore(first), PostgresCheckpointStore(second)]
        await stores[0].create_session(session("s1"))

        async def append(n: int) -> None:
            store = stores[n % 2]
            step = [Message.user(f"m{n}-{k}", f"{n}/{k}", T0) for k in range(3)]
            draft = None
            if n % 3 == 0:  # some steps replace a draft (if it is still the last message)
                draft = f"draft-{n}"
                partial = Message.assistant(draft, "partial", T0, partial=True)
                await store.append_messages(PROJECT, "s1", [partial])
            await store.append_messages(
                PROJECT, "s1", step, usage=Usage(llm_calls=1), replaces=draft
            )
            await store.record_turn(PROJECT, "s1", T0)

        await asyncio.gather(*(append(n) for n in range(20)))
        page = await stores[1].history(PROJECT, "s1")
        ids = [m.id for m in page.messages if not m.id.startswith("draft-")]
        drafts = len(page.messages) - len(ids)  # drafts another step overtook stay
        assert len(ids) == len(set(ids)) == 60
        for n in range(20):  # each step stayed whole and in order
            at = ids.index(f"m{n}-0")
            assert ids[at : at + 3] == [f"m{n}-0", f"m{n}-1", f"m{n}-2"]
        got = await stores[0].get_session(PROJECT, "s1")
        assert got is not None
        assert got.message_count == 60 + drafts == len(page.messages)
        assert got.llm_calls_count == 20
        walked: list[str] = []
        cursor: int | None = None
        while True:  # the sequence numbers have no gap: pages walk it all
            part = await stores[0].history(PROJECT, "s1", limit=7, before=cursor)
            walked = [m.id for m in part.messages] + walked
            if part.next_cursor is None:
                break
            cursor = part.next_cursor
        assert walked == [m.id for m in page.messages]


async def test_text_postgres_cannot_hold_is_stored_with_a_replacement_character(
    postgres: PostgresForTests, postgres_schema: str
) -> None:
    async with PostgresDatabase(postgres.url, schema=postgres_schema) as database:
        store = PostgresCheckpointStore(database)
        await store.create_session(session("s1", title="R1\x00R2 \ud83d", metadata={"x": "\x00"}))
        got = await store.get_session(PROJECT, "s1")
        assert got is not None
        assert got.title == "R1\ufffdR2 \ufffd"
        assert got.metadata == {"x": "\x00"}  # JSON escapes it
        renamed = await store.rename_session(PROJECT, "s1", "a\x00b", T0)
        assert renamed is not None
        assert renamed.title == "a\ufffdb"


# ============================================================ backup and restore
async def test_the_documented_backup_and_restore_bring_back_every_session(
    postgres: PostgresForTests, postgres_schema: str, tmp_path: Path
) -> None:
    """The commands of docs/deployment.md: ``pg_dump -Fc --schema``, then
    ``pg_restore`` into an empty database (here: the same one, schema dropped)."""
    async with PostgresDatabase(postgres.url, schema=postgres_schema) as database:
        store = PostgresCheckpointStore(database)
        await store.create_session(session("s1", title="OSPF lab"))
        await store.append_messages(PROJECT, "s1", [Message.user("m1", "hello ☃", T0)])
        await store.record_turn(PROJECT, "s1", T0)
    backup = tmp_path / "copilot.dump"
    dump = await asyncio.create_subprocess_exec(
        "pg_dump", "--format=custom", f"--schema={postgres_schema}", f"--file={backup}",
        f"--dbname={postgres.url}",
    )  # fmt: skip
    assert await asyncio.wait_for(dump.wait(), 60) == 0
    postgres.drop_schema(postgres_schema)
    assert postgres_schema not in postgres.schemas()
    restore = await asyncio.create_subprocess_exec(
        "pg_restore", "--no-owner", f"--dbname={postgres.url}", str(backup)
    )
    assert await asyncio.wait_for(restore.wait(), 60) == 0
    async with PostgresDatabase(postgres.url, schema=postgres_schema) as database:
        store = PostgresCheckpointStore(database)
        got = await store.get_session(PROJECT, "s1")
        assert got is not None
        assert (got.title, got.message_count) == ("OSPF lab", 1)
        assert (await store.history(PROJECT, "s1")).messages == [Message.user("m1", "hello ☃", T0)]
        await store.append_messages(PROJECT, "s1", [Message.user("m2", "again", T0)])
        assert (await store.history(PROJECT, "s1", limit=1)).next_cursor == 2
        created = await store.create_session(session("s2"))  # the identity goes on
        assert created.id is not None
        assert got.id is not None
        assert created.id > got.id


async def test_a_short_password_is_masked_where_it_stands_not_inside_the_words_of_the_message() -> (
    None
):
    # The password "p": libpq's 'port 5 failed' once read '***ort 5 failed'.
    port = _port_nobody_listens_on()
    url = f"postgresql://postgres:p@127.0.0.1:{port}/x"
    with pytest.raises(StoreError) as caught:
        await PostgresDatabase(url, connect_timeout=3).open()
    message = caught.value.message
    assert f"port {port} failed" in message, message
    assert "***ort" not in message
    assert ":p@" not in message
