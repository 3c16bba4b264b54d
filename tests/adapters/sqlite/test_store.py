"""The SQLite store's own behaviour: where files go, the schema, transactions, lifecycle."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import sqlite3
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest

from adapters.sqlite import SCHEMA_VERSION, SqliteCheckpointStore, SqliteStoreSettings
from copilot_core import (
    BuiltinAgent,
    ChatSettings,
    CopilotMode,
    Message,
    Session,
    TurnRequest,
)
from copilot_core.bootstrap import build_chat_service
from copilot_core.errors import InvalidRequestError, StoreCorruptedError, StoreError
from copilot_core.ports import (
    IntentRun,
    ModelSelection,
    RestorePoint,
    StandingIntentRecord,
    Usage,
)
from copilot_core.testing import (
    FakeToolExecutor,
    FakeTopologySource,
    ScriptedLanguageModel,
    SequentialIds,
    StaticModelProvider,
    SteppingClock,
    text_reply,
    tool_reply,
)
from tests.adapters.sqlite.conftest import project_id
from tests.fakes.old_restore_point import OLD_STATE, assert_read_as_typed

T0 = datetime(2026, 3, 1, tzinfo=UTC)
P1, P2 = project_id(1), project_id(2)


def new_session(thread_id: str, project: str = P1, user: str = "alice") -> Session:
    return Session(
        thread_id=thread_id, user_id=user, project_id=project, created_at=T0, updated_at=T0
    )


def db_path(data_dir: Path, project: str) -> Path:
    return data_dir / "projects" / project / "gns3-copilot" / "copilot_checkpoints.db"


def query(path: Path, sql: str, params: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


def files_under(root: Path) -> list[str]:
    return sorted(str(path.relative_to(root)) for path in root.rglob("*"))


def open_db_files() -> set[str]:
    names = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.endswith("copilot_checkpoints.db"):
            names.add(target)
    return names


# ================================================================= placement
async def test_database_lives_under_the_data_dir_per_project(
    store: SqliteCheckpointStore, data_dir: Path
) -> None:
    await store.create_session(new_session("s1", P1))
    await store.create_session(new_session("s2", P2))
    assert query(db_path(data_dir, P1), "SELECT thread_id FROM chat_sessions") == [("s1",)]
    assert query(db_path(data_dir, P2), "SELECT thread_id FROM chat_sessions") == [("s2",)]
    assert await store.database_path(P1) == db_path(data_dir, P1)


@pytest.mark.parametrize("asynchronous", [False, True])
async def test_reachable_project_directories_hold_their_database(
    tmp_path: Path, asynchronous: bool
) -> None:
    gns3_projects = tmp_path / "gns3" / "projects"
    known = {P1: gns3_projects / "lab-one"}

    def sync_resolver(project: str) -> Path | None:
        return known.get(project)

    async def async_resolver(project: str) -> Path | None:
        await asyncio.sleep(0)
        return known.get(project)

    resolver = async_resolver if asynchronous else sync_resolver
    async with SqliteCheckpointStore(tmp_path / "data", resolver) as store:
        await store.create_session(new_session("s1", P1))
        await store.create_session(new_session("s2", P2))
    in_project = gns3_projects / "lab-one" / "gns3-copilot" / "copilot_checkpoints.db"
    assert query(in_project, "SELECT thread_id FROM chat_sessions") == [("s1",)]
    # A project the resolver does not know falls back to the data directory.
    fallback = db_path(tmp_path / "data", P2)
    assert query(fallback, "SELECT thread_id FROM chat_sessions") == [("s2",)]


@pytest.mark.parametrize(
    "bad_id",
    ["", ".", "..", "../escape", "a/b", "/etc", "a\\b", "x\x00y", "-leading", "é", "a" * 200],
)
async def test_project_ids_that_are_not_plain_identifiers_are_refused(
    store: SqliteCheckpointStore, tmp_path: Path, bad_id: str
) -> None:
    with pytest.raises(InvalidRequestError, match="project_id"):
        await store.create_session(new_session("s1", bad_id))
    with pytest.raises(InvalidRequestError):
        await store.list_sessions(bad_id, "alice")
    with pytest.raises(InvalidRequestError):
        await store.delete_project_sessions(bad_id)
    assert files_under(tmp_path) == ["data"]


# ==================================================================== schema
async def test_schema_is_spec_000s_with_a_message_log_and_a_version(
    store: SqliteCheckpointStore, data_dir: Path
) -> None:
    await store.create_session(new_session("s1"))
    path = db_path(data_dir, P1)
    columns = {row[1]: (row[2], row[4]) for row in query(path, "PRAGMA table_info(chat_sessions)")}
    assert columns == {
        "id": ("INTEGER", None),
        "thread_id": ("TEXT", None),
        "user_id": ("TEXT", None),
        "project_id": ("TEXT", None),
        "title": ("TEXT", None),
        "message_count": ("INTEGER", "0"),
        "llm_calls_count": ("INTEGER", "0"),
        "input_tokens": ("INTEGER", "0"),
        "output_tokens": ("INTEGER", "0"),
        "total_tokens": ("INTEGER", "0"),
        "last_message_at": ("TIMESTAMP", None),
        "created_at": ("TIMESTAMP", "CURRENT_TIMESTAMP"),
        "updated_at": ("TIMESTAMP", "CURRENT_TIMESTAMP"),
        "metadata": ("TEXT", None),
        "stats": ("TEXT", None),
        "pinned": ("BOOLEAN", "FALSE"),
        "copilot_mode": ("TEXT", "'teaching_assistant'"),
        "opening_messages": ("TEXT", None),  # a new session's first messages, in transit
        "question_count": ("INTEGER", "0"),  # its user messages (version 7)
    }
    indexes = {
        name: [row[2] for row in query(path, f"PRAGMA index_info({name})")]
        for (name,) in query(
            path, "SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL"
        )
    }
    assert indexes["idx_thread_id"] == ["thread_id"]
    assert indexes["idx_user_project"] == ["user_id", "project_id"]
    assert indexes["idx_pinned_updated"] == ["pinned", "updated_at"]
    assert indexes["idx_messages_session_seq"] == ["session_id", "seq"]
    assert indexes["idx_user_sessions"] == ["user_id", "project_id", "pinned", "updated_at", "id"]
    assert query(path, "SELECT version FROM copilot_schema_version") == [
        (version,) for version in range(1, SCHEMA_VERSION + 1)
    ]
    assert query(path, "PRAGMA journal_mode") == [("wal",)]
    assert query(path, "PRAGMA page_size") == [(2048,)]


async def test_a_page_of_sessions_is_read_from_an_index_not_sorted(
    store: SqliteCheckpointStore, data_dir: Path
) -> None:
    for n in range(30):
        await store.create_session(new_session(f"s{n}", user=f"user{n % 3}"))
    plan = query(
        db_path(data_dir, P1),
        "EXPLAIN QUERY PLAN SELECT * FROM chat_sessions WHERE user_id = ? AND project_id = ? "
        "AND copilot_mode = ? ORDER BY pinned DESC, updated_at DESC, id DESC LIMIT 5 OFFSET 5",
        ("user1", P1, "teaching_assistant"),
    )
    details = " ".join(str(row[-1]) for row in plan)
    assert "idx_user_sessions" in details
    assert "TEMP B-TREE" not in details


async def test_opening_an_existing_database_again_changes_nothing(data_dir: Path) -> None:
    for _ in range(3):
        async with SqliteCheckpointStore(data_dir) as store:
            if await store.get_session(P1, "s1") is None:
                await store.create_session(new_session("s1"))
            await store.append_messages(P1, "s1", [Message.user("m", "hi", T0)])
    path = db_path(data_dir, P1)
    assert query(path, "SELECT count(*) FROM copilot_schema_version") == [(SCHEMA_VERSION,)]
    assert query(path, "SELECT count(*) FROM chat_messages") == [(3,)]


OLD_SCHEMA = """
CREATE TABLE chat_sessions (
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
    stats TEXT
);
CREATE INDEX idx_thread_id ON chat_sessions(thread_id);
CREATE INDEX idx_user_project ON chat_sessions(user_id, project_id);
INSERT INTO chat_sessions (thread_id, user_id, project_id, title, message_count, created_at,
    updated_at, metadata)
VALUES ('old-1', 'alice', '{p}', 'From before', 4, '2025-06-01 10:00:00',
    '2025-06-01 10:05:00', '{{"mode": "text"}}');
INSERT INTO chat_sessions (thread_id, user_id, project_id, title, message_count, input_tokens,
    created_at, updated_at, stats)
VALUES ('old-2', 'alice', '{p}', NULL, NULL, NULL, '2025-06-02T09:00:00', '2025-06-02T09:00:00',
    'not json');
"""


async def test_a_database_made_without_pinned_is_migrated(data_dir: Path) -> None:
    path = db_path(data_dir, P1)
    path.parent.mkdir(parents=True)
    conn = sqlite3.connect(path)
    conn.executescript(OLD_SCHEMA.format(p=P1))
    conn.close()
    assert "pinned" not in {row[1] for row in query(path, "PRAGMA table_info(chat_sessions)")}

    async with SqliteCheckpointStore(data_dir) as store:
        listed = await store.list_sessions(P1, "alice")
        assert [s.thread_id for s in listed] == ["old-2", "old-1"]
        old = listed[1]
        # Its messages lived elsewhere (spec 000 kept them in LangGraph's checkpoints):
        # the counter is recounted from the log this store can read, which is empty.
        assert (old.title, old.pinned, old.message_count) == ("From before", False, 0)
        assert old.updated_at == datetime(2025, 6, 1, 10, 5, tzinfo=UTC)
        assert old.metadata == {"mode": "text"}
        assert old.copilot_mode is CopilotMode.TEACHING_ASSISTANT
        assert (listed[0].title, listed[0].message_count, listed[0].input_tokens) == ("", 0, 0)
        assert (listed[0].stats, listed[0].metadata) == ({}, {})

        pinned = await store.set_pinned(P1, "old-1", True)
        assert pinned is not None
        assert pinned.pinned
        await store.append_messages(P1, "old-2", [Message.user("m1", "hello again", T0)])
        await store.record_turn(P1, "old-2", T0, usage=Usage(1, 7, 3))
        refreshed = await store.get_session(P1, "old-2")
        assert refreshed is not None
        assert (refreshed.message_count, refreshed.input_tokens, refreshed.total_tokens) == (
            1,
            7,
            10,
        )
        assert [s.thread_id for s in await store.list_sessions(P1, "alice")] == ["old-1", "old-2"]
    assert "pinned" in {row[1] for row in query(path, "PRAGMA table_info(chat_sessions)")}
    names = {row[0] for row in query(path, "SELECT name FROM sqlite_master WHERE type='index'")}
    assert {"idx_pinned_updated", "idx_messages_session_seq"} <= names


# What each schema version added, undone: to make a database of an older version.
_UNDO = {
    5: (
        "DROP TRIGGER append_opening_messages",
        "ALTER TABLE chat_sessions DROP COLUMN opening_messages",
    ),
    4: ("DROP TABLE restore_points",),
    6: ("DROP TABLE standing_intent",),
    7: (
        "DROP TRIGGER count_inserted_question",
        "DROP TRIGGER count_deleted_question",
        "ALTER TABLE chat_sessions DROP COLUMN question_count",
    ),
    8: (
        "ALTER TABLE standing_intent DROP COLUMN last_run_at",
        "ALTER TABLE standing_intent DROP COLUMN last_run",
    ),
}


async def older_database(data_dir: Path, version: int) -> Path:
    """A database of schema ``version`` holding session s1 with one message."""
    async with SqliteCheckpointStore(data_dir) as store:
        await store.create_session(new_session("s1"))
        await store.append_messages(P1, "s1", [Message.user("m1", "hello", T0)])
    path = db_path(data_dir, P1)
    conn = sqlite3.connect(path)
    for newer in range(SCHEMA_VERSION, version, -1):
        for statement in _UNDO[newer]:
            conn.execute(statement)
    conn.execute("DELETE FROM copilot_schema_version WHERE version > ?", (version,))
    conn.commit()
    conn.close()
    return path


async def test_a_version_3_database_gains_restore_points_that_survive_a_restart(
    data_dir: Path,
) -> None:
    path = await older_database(data_dir, 3)
    point = RestorePoint(
        "p1", P1, "s1", T0, "call-1", "create_gns3_node", "before", kept={"a": [1]}
    )
    async with SqliteCheckpointStore(data_dir) as store:
        await store.save_restore_point(point)
    assert query(path, "SELECT max(version) FROM copilot_schema_version") == [(SCHEMA_VERSION,)]
    async with SqliteCheckpointStore(data_dir) as store:  # a restart
        assert await store.restore_points(P1, "s1") == [point]
        assert (await store.history(P1, "s1")).messages == [Message.user("m1", "hello", T0)]


async def test_a_restore_point_row_in_the_old_flat_shape_is_read_into_typed_fields(
    data_dir: Path,
) -> None:
    async with SqliteCheckpointStore(data_dir) as store:
        await store.create_session(new_session("s1"))
    path = db_path(data_dir, P1)
    conn = sqlite3.connect(path)  # a row as the store wrote it before the typed fields
    conn.execute(
        "INSERT INTO restore_points (point_id, session_id, created_at, tool_call_id, "
        "tool_name, summary, state) SELECT ?, id, ?, ?, ?, ?, ? FROM chat_sessions "
        "WHERE thread_id = ?",
        (
            "p-old",
            T0.isoformat(),
            "call-1",
            "create_gns3_node",
            "before",
            json.dumps(OLD_STATE),
            "s1",
        ),
    )
    conn.commit()
    conn.close()
    async with SqliteCheckpointStore(data_dir) as store:
        (point,) = await store.restore_points(P1, "s1")
        assert (point.id, point.created_at, point.tool_name) == ("p-old", T0, "create_gns3_node")
        assert_read_as_typed(point)
        # Written again (a later rollback's id), it is kept in the new shape and read alike.
        again = replace(point, id_map={**point.id_map, "n1": "n1-again"})
        await store.update_restore_point(again)
        assert await store.restore_point(P1, "s1", "p-old") == again
    (state,) = query(path, "SELECT state FROM restore_points")[0]
    assert json.loads(str(state))["format"] == 2


async def test_a_version_5_database_gains_the_standing_intent_that_survives_a_restart(
    data_dir: Path,
) -> None:
    path = await older_database(data_dir, 5)
    record = StandingIntentRecord([{"kind": "interface", "node": "R1", "interface": "e0"}], T0)
    async with SqliteCheckpointStore(data_dir) as store:
        assert await store.standing_intent(P1, "alice") is None
        await store.save_standing_intent(P1, "alice", record)
    assert query(path, "SELECT max(version) FROM copilot_schema_version") == [(SCHEMA_VERSION,)]
    async with SqliteCheckpointStore(data_dir) as store:  # a restart
        assert await store.standing_intent(P1, "alice") == record
        assert (await store.history(P1, "s1")).messages == [Message.user("m1", "hello", T0)]


async def test_a_version_7_databases_intent_is_kept_and_learns_to_keep_its_last_run(
    data_dir: Path,
) -> None:
    path = await older_database(data_dir, 7)
    checks = [{"kind": "interface", "node": "R1", "interface": "e0", "state": "up"}]
    conn = sqlite3.connect(path)
    conn.execute(
        "INSERT INTO standing_intent (user_id, checks, updated_at) VALUES (?, ?, ?)",
        ("alice", json.dumps(checks), T0.isoformat()),
    )
    conn.commit()
    conn.close()
    run = IntentRun(T0, {"status": "pass", "summary": {"pass": 1}, "waited_s": 0, "checks": []})
    async with SqliteCheckpointStore(data_dir) as store:
        assert await store.standing_intent(P1, "alice") == StandingIntentRecord(checks, T0)
        assert await store.save_intent_run(P1, "alice", checks, run)
    assert query(path, "SELECT max(version) FROM copilot_schema_version") == [(SCHEMA_VERSION,)]
    async with SqliteCheckpointStore(data_dir) as store:  # a restart
        assert await store.standing_intent(P1, "alice") == StandingIntentRecord(checks, T0, run)


async def test_a_version_4_database_learns_to_take_a_session_with_its_first_messages(
    data_dir: Path,
) -> None:
    path = await older_database(data_dir, 4)
    first = [Message.user("m2", "why is R1 down?", T0)]
    async with SqliteCheckpointStore(data_dir) as store:
        created = await store.create_session(new_session("s2"), first)
        assert created.message_count == 1
        assert (await store.history(P1, "s2")).messages == first
        assert (await store.history(P1, "s1")).messages == [Message.user("m1", "hello", T0)]
    assert query(path, "SELECT max(version) FROM copilot_schema_version") == [(SCHEMA_VERSION,)]
    # The column only carries the messages into the log: empty at rest.
    assert query(path, "SELECT thread_id, opening_messages FROM chat_sessions") == [
        ("s1", None),
        ("s2", None),
    ]
    assert query(
        path,
        "SELECT s.thread_id, m.seq FROM chat_messages m JOIN chat_sessions s "
        "ON s.id = m.session_id ORDER BY m.id",
    ) == [("s1", 1), ("s2", 1)]


# ============================================================== transactions
async def test_a_step_that_fails_inside_the_database_leaves_nothing(
    store: SqliteCheckpointStore, data_dir: Path
) -> None:
    await store.create_session(new_session("s1"))
    first = [Message.user("m1", "hello", T0)]
    await store.append_messages(P1, "s1", first)
    # The database refuses the third row of the next step, mid-transaction.
    conn = sqlite3.connect(db_path(data_dir, P1))
    conn.execute(
        "CREATE TRIGGER refuse_third BEFORE INSERT ON chat_messages WHEN NEW.seq = 4 "
        "BEGIN SELECT RAISE(ABORT, 'disk says no'); END"
    )
    conn.commit()
    conn.close()
    step = [Message.assistant(f"a{n}", f"part {n}", T0) for n in range(3)]
    with pytest.raises(StoreError, match=P1):
        await store.append_messages(P1, "s1", step)
    assert (await store.history(P1, "s1")).messages == first
    assert query(db_path(data_dir, P1), "SELECT count(*) FROM chat_messages") == [(1,)]


async def test_cancelled_appends_leave_whole_steps_or_nothing(
    store: SqliteCheckpointStore,
) -> None:
    await store.create_session(new_session("s1"))
    rng = random.Random(11)
    attempts = 80
    for n in range(attempts):
        step = [Message.user(f"{n}-{k}", "x" * 3000, T0) for k in range(5)]
        task = asyncio.create_task(store.append_messages(P1, "s1", step))
        if n % 10 == 9:
            await asyncio.sleep(0.02)  # long enough to commit, even on a busy machine
        for _ in range(rng.randrange(12)):  # cancel at any await of the append
            await asyncio.sleep(0)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    await store.append_messages(P1, "s1", [Message.user("last", "still works", T0)])
    history = (await store.history(P1, "s1")).messages
    assert history[-1].id == "last"
    saved = history[:-1]
    assert len(saved) % 5 == 0
    steps = [saved[i : i + 5] for i in range(0, len(saved), 5)]
    for step in steps:
        prefix = step[0].id.split("-")[0]
        assert [m.id for m in step] == [f"{prefix}-{k}" for k in range(5)]
    numbers = [int(step[0].id.split("-")[0]) for step in steps]
    assert numbers == sorted(set(numbers))
    assert 0 < len(steps) < attempts  # cancellations landed before and after commits


def numbered_step(n: int, first: bool) -> list[Message]:
    """Three messages a connection appends at once (a user message and two answers)."""
    tag = f"{n}-{'one' if first else 'two'}"
    return [
        Message.user(f"u-{tag}", "q", T0),
        Message.assistant(f"a-{tag}", "thinking", T0),
        Message.assistant(f"b-{tag}", "answer", T0),
    ]


async def test_counters_are_increments_even_from_two_connections(data_dir: Path) -> None:
    async with SqliteCheckpointStore(data_dir) as one, SqliteCheckpointStore(data_dir) as two:
        await one.create_session(new_session("s1"))
        await asyncio.gather(
            *(
                store.append_messages(
                    P1, "s1", numbered_step(n, store is one), usage=Usage(2, 10, 4)
                )
                for n in range(40)
                for store in (one, two)
            )
        )
        got = await one.get_session(P1, "s1")
        history = (await one.history(P1, "s1")).messages
    assert got is not None
    assert (got.message_count, got.llm_calls_count) == (240, 160)
    assert len(history) == 240
    assert (got.input_tokens, got.output_tokens, got.total_tokens) == (800, 320, 1120)


async def test_deleting_a_session_deletes_its_message_rows(
    store: SqliteCheckpointStore, data_dir: Path
) -> None:
    for name in ("s1", "s2"):
        await store.create_session(new_session(name))
        await store.append_messages(
            P1, name, [Message.user(f"{name}-{n}", "x", T0) for n in range(5)]
        )
    await store.delete_session(P1, "s1")
    path = db_path(data_dir, P1)
    assert query(path, "SELECT count(*) FROM chat_messages") == [(5,)]
    assert query(path, "SELECT thread_id FROM chat_sessions") == [("s2",)]


async def test_messages_are_stored_as_openai_json_with_a_sequence(
    store: SqliteCheckpointStore, data_dir: Path
) -> None:
    await store.create_session(new_session("s1"))
    message = Message.user("m1", "ça va ?", T0)
    await store.append_messages(P1, "s1", [message, Message.user("m2", "oui", T0)])
    rows = query(db_path(data_dir, P1), "SELECT seq, message FROM chat_messages ORDER BY seq")
    assert [row[0] for row in rows] == [1, 2]
    assert rows[0][1] == (
        '{"id":"m1","role":"user","content":"ça va ?","metadata":'
        '{"created_at":"2026-03-01T00:00:00+00:00"}}'
    )


async def test_a_turn_through_the_chat_service_is_saved_and_no_secret_is_written(
    store: SqliteCheckpointStore, data_dir: Path
) -> None:
    secret = "eyJhbGciOiJIUzI1NiJ9.c2VjcmV0LXVzZXI.s3cr3t-signature"
    tools = FakeToolExecutor().add("get_topology", lambda args, ctx: {"token_len": 3})
    model = ScriptedLanguageModel(
        [tool_reply(("get_topology", {})), text_reply("All good.")],
        default=text_reply("Lab check"),
    )
    clock, ids = SteppingClock(), SequentialIds()
    service = build_chat_service(
        store,
        {"copilot": BuiltinAgent(tools, FakeTopologySource(), clock=clock, ids=ids)},
        models=StaticModelProvider(ModelSelection(model)),
        clock=clock,
        ids=ids,
        settings=ChatSettings(finished_turn_retention=0.01),
    )
    turn = await service.start_turn(
        TurnRequest(project_id=P1, user_id="alice", message="check R1", credentials=secret)
    )
    result = await turn.wait()
    assert result.error is None
    page = await store.history(P1, result.session_id)
    assert page.messages == list(result.messages)
    session = await store.get_session(P1, result.session_id)
    assert session is not None
    assert session.message_count == len(page.messages) == 4
    assert session.llm_calls_count == 2
    await store.close_project(P1)
    for path in db_path(data_dir, P1).parent.iterdir():
        assert secret.encode() not in path.read_bytes()
        assert b"s3cr3t" not in path.read_bytes()


# ================================================================= lifecycle
async def test_open_databases_are_bounded_and_reopen_transparently(data_dir: Path) -> None:
    projects = [project_id(n) for n in range(1, 41)]
    async with SqliteCheckpointStore(data_dir, settings=SqliteStoreSettings(max_open=4)) as store:
        for project in projects:
            await store.create_session(new_session("s", project))
            await store.append_messages(project, "s", [Message.user(project, project, T0)])
            assert len(store.open_projects) <= 4
            assert len(open_db_files()) <= 4
        assert store.open_projects == tuple(projects[-4:])
        for project in projects:
            page = await store.history(project, "s")
            assert [m.content for m in page.messages] == [project]
        assert len(open_db_files()) <= 4
    assert open_db_files() == set()


async def test_databases_in_use_are_not_closed_under_their_users(data_dir: Path) -> None:
    projects = [project_id(n) for n in range(1, 11)]

    async def chat(project: str) -> None:
        await store.create_session(new_session("s", project))
        for n in range(15):
            await store.append_messages(project, "s", [Message.user(f"{n}", f"{n}", T0)])
            await store.record_turn(project, "s", T0)

    async with SqliteCheckpointStore(data_dir, settings=SqliteStoreSettings(max_open=2)) as store:
        await asyncio.gather(*(chat(project) for project in projects))
        for project in projects:
            session = await store.get_session(project, "s")
            assert session is not None
            assert session.message_count == 15
            assert len((await store.history(project, "s")).messages) == 15


async def test_close_project_closes_its_database_and_it_reopens_on_use(
    store: SqliteCheckpointStore, data_dir: Path
) -> None:
    await store.create_session(new_session("s1", P1))
    await store.create_session(new_session("s1", P2))
    path = str(db_path(data_dir, P1))
    assert path in open_db_files()
    await store.close_project(P1)
    assert path not in open_db_files()
    assert store.open_projects == (P2,)
    assert await store.get_session(P1, "s1") is not None
    assert path in open_db_files()


async def test_close_project_waits_for_work_in_progress(store: SqliteCheckpointStore) -> None:
    await store.create_session(new_session("s1"))
    appends = [store.append_messages(P1, "s1", [Message.user(f"m{n}", "x", T0)]) for n in range(20)]
    await asyncio.gather(*appends, store.close_project(P1))
    assert len((await store.history(P1, "s1")).messages) == 20


async def test_a_store_is_usable_only_between_open_and_close(data_dir: Path) -> None:
    store = SqliteCheckpointStore(data_dir)
    with pytest.raises(StoreError, match="not open"):
        await store.get_session(P1, "s1")
    await store.open()
    await store.create_session(new_session("s1"))
    await store.close()
    assert open_db_files() == set()
    with pytest.raises(StoreError, match="not open"):
        await store.get_session(P1, "s1")
    with pytest.raises(StoreError, match="closed"):
        await store.open()


def test_bad_settings_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="max_open"):
        SqliteCheckpointStore(tmp_path, settings=SqliteStoreSettings(max_open=0))
    with pytest.raises(ValueError, match="synchronous"):
        SqliteCheckpointStore(tmp_path, settings=SqliteStoreSettings(synchronous="OFF"))  # type: ignore[arg-type]


def test_the_package_exports_exactly_its_public_api() -> None:
    import adapters.sqlite as package

    assert set(package.__all__) == {
        "DATABASE_DIR",
        "DATABASE_NAME",
        "DRILLS_DATABASE_NAME",
        "SCHEMA_VERSION",
        "ProjectPathResolver",
        "SqliteCheckpointStore",
        "SqliteDrillResults",
        "SqliteStoreReadiness",
        "SqliteStoreSettings",
        "Synchronous",
    }
    public = {name for name in vars(package) if not name.startswith("_")}
    assert public - set(package.__all__) <= {"annotations"}
    for name in package.__all__:
        assert getattr(package, name) is not None


async def test_message_rows_of_other_shapes_are_read_and_garbage_is_reported(
    store: SqliteCheckpointStore, data_dir: Path
) -> None:
    await store.create_session(new_session("s1"))
    await store.append_messages(P1, "s1", [Message.user("m1", "hello", T0)])
    path = db_path(data_dir, P1)
    conn = sqlite3.connect(path)
    # An older shape: tool-call arguments as an object, content null.
    conn.execute(
        "INSERT INTO chat_messages (session_id, seq, message) VALUES (1, 2, ?)",
        (
            '{"id":"a1","role":"assistant","content":null,"tool_calls":[{"id":"c1",'
            '"type":"function","function":{"name":"ping","arguments":{"host":"R1"}}}]}',
        ),
    )
    conn.commit()
    page = await store.history(P1, "s1")
    assert page.messages[1].content == ""
    assert page.messages[1].tool_calls is not None
    assert page.messages[1].tool_calls[0].function.arguments == '{"host": "R1"}'

    conn.execute("INSERT INTO chat_messages (session_id, seq, message) VALUES (1, 3, 'garbage')")
    conn.commit()
    conn.close()
    with pytest.raises(StoreCorruptedError, match=P1) as caught:
        await store.history(P1, "s1")
    assert "message #3" in caught.value.message
    with pytest.raises(StoreCorruptedError, match="message #3"):
        await store.history(P1, "s1", limit=1)
    assert len((await store.history(P1, "s1", limit=2, before=3)).messages) == 2


async def test_a_version_6_database_counts_its_questions_once_and_then_keeps_counting(
    data_dir: Path,
) -> None:
    await older_database(data_dir, 6)
    async with SqliteCheckpointStore(data_dir) as store:
        found = await store.get_session(P1, "s1")
        assert found is not None and (found.message_count, found.question_count) == (1, 1)
        await store.append_messages(
            P1, "s1", [Message.assistant("m2", "hi", T0), Message.user("m3", "and?", T0)]
        )
        found = await store.get_session(P1, "s1")
        assert found is not None and (found.message_count, found.question_count) == (3, 2)
        await store.truncate(P1, "s1", "m3")
        found = await store.get_session(P1, "s1")
        assert found is not None and (found.message_count, found.question_count) == (2, 1)
