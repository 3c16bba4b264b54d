"""Reliability: SIGKILLed writers, many concurrent sessions, corrupt database files."""

from __future__ import annotations

import asyncio
import multiprocessing
import random
import signal
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from adapters.sqlite import SqliteCheckpointStore
from copilot_core import Conversation, Message, Session
from copilot_core.errors import StoreCorruptedError
from copilot_core.ports import FunctionCall, ToolCall, Usage, stamp_usage
from tests.adapters.sqlite import killable_writer
from tests.adapters.sqlite.conftest import project_id
from tests.adapters.sqlite.killable_writer import TITLE, USER, turn_appends

T0 = datetime(2026, 3, 1, tzinfo=UTC)
P1, P2 = project_id(1), project_id(2)
KILLS = 50


def db_path(data_dir: Path, project: str) -> Path:
    return data_dir / "projects" / project / "gns3-copilot" / "copilot_checkpoints.db"


def integrity(path: Path) -> str:
    conn = sqlite3.connect(path)
    try:
        result: str = conn.execute("PRAGMA integrity_check").fetchone()[0]
        return result
    finally:
        conn.close()


def new_session(thread_id: str, project: str = P1) -> Session:
    return Session(
        thread_id=thread_id, user_id=USER, project_id=project, created_at=T0, updated_at=T0
    )


# ===================================================================== SIGKILL
async def check_killed_session(store: SqliteCheckpointStore, thread_id: str) -> int | None:
    """Assert the session is what a writer killed at any instant can leave; returns
    how many messages of an unfinished turn it holds (``None``: no session yet)."""
    session = await store.get_session(P1, thread_id)
    if session is None:
        return None  # killed before the session was created
    history = (await store.history(P1, thread_id)).messages
    conversation = Conversation(history)  # raises on a broken conversation
    assert conversation.open_tool_call_ids == (), "a step was saved without its tool results"

    # The history is whole appends, and the counters are exactly what it holds.
    appends = [append for t in range(len(history) // 5 + 1) for append in turn_appends(t)]
    saved: list[Message] = []
    usage = Usage()
    for messages, used in appends:
        if len(saved) == len(history):
            break
        saved.extend(stamp_usage(messages, used))  # the store keeps the usage with the step
        usage += used or Usage()
    assert history == saved, "a step was saved in part"
    assert session.message_count == len(history)
    assert session.llm_calls_count == usage.llm_calls
    assert (session.input_tokens, session.output_tokens) == (
        usage.input_tokens,
        usage.output_tokens,
    )
    assert session.total_tokens == session.input_tokens + session.output_tokens
    # The title is set when turn 0 ends, before turn 1 starts.
    assert session.title in (TITLE, "")
    if len(history) > 5:
        assert session.title == TITLE
    return len(history) % 5


async def test_a_writer_killed_at_random_moments_never_leaves_a_broken_conversation(
    data_dir: Path,
) -> None:
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["tests.adapters.sqlite.killable_writer"])
    rng = random.Random(20261129)
    tails: list[int | None] = []
    async with SqliteCheckpointStore(data_dir) as store:
        await store.close_project(P1)  # the writer creates the database
        for kill in range(KILLS):
            thread_id = f"s{kill}"
            receive, send = context.Pipe(duplex=False)
            writer = context.Process(
                target=killable_writer.write_until_killed,
                args=(str(data_dir), P1, thread_id, send),
            )
            writer.start()
            send.close()
            assert await asyncio.to_thread(receive.poll, 10), "the writer did not start"
            receive.recv()
            receive.close()
            await asyncio.sleep(rng.uniform(0.0, 0.12))
            writer.kill()
            await asyncio.to_thread(writer.join, 10)
            assert writer.exitcode == -signal.SIGKILL, (
                f"the writer ended by itself: {writer.exitcode}"
            )
            writer.close()

            # The database opens after every kill, and holds a valid conversation.
            if db_path(data_dir, P1).exists():  # else: killed before it was created
                assert await asyncio.to_thread(integrity, db_path(data_dir, P1)) == "ok"
            tails.append(await check_killed_session(store, thread_id))
            await store.close_project(P1)

        sessions = await store.list_sessions(P1, USER, limit=1000)
        assert len(sessions) == sum(tail is not None for tail in tails)
        for session in sessions:
            await check_killed_session(store, session.thread_id)
    # Kills landed mid-turn too, not only before the session or between turns.
    assert any(tail for tail in tails), tails
    assert any(tail is not None for tail in tails), tails


# ================================================================ concurrency
def turn(session: int, t: int) -> list[list[Message]]:
    at = T0 + timedelta(seconds=t)
    call = ToolCall(id=f"c-{session}-{t}", function=FunctionCall(name="ping", arguments="{}"))
    return [
        [Message.user(f"u-{session}-{t}", f"ping {t}", at)],
        [
            Message.assistant(f"a-{session}-{t}", "", at, tool_calls=(call,)),
            Message.tool(f"t-{session}-{t}", call.id, "ping", "5/5 ok", at),
        ],
        [Message.assistant(f"f-{session}-{t}", f"reachable {t}", at)],
    ]


def step_usage(n: int) -> Usage | None:
    """The usage of a turn's ``n``-th append: two LLM calls, 30 tokens in, 7 out."""
    return Usage(1, 15, 3 + n % 2) if n else None


async def chat(store: SqliteCheckpointStore, session: int, turns: int) -> None:
    thread_id = f"s{session}"
    await store.create_session(new_session(thread_id))
    for t in range(turns):
        for n, messages in enumerate(turn(session, t)):
            await store.append_messages(P1, thread_id, messages, usage=step_usage(n))
            await asyncio.sleep(0)
        await store.record_turn(P1, thread_id, T0 + timedelta(seconds=t), title=f"chat {session}")


async def check_chats(store: SqliteCheckpointStore, sessions: range, turns: int) -> None:
    listed = await store.list_sessions(P1, USER, limit=1000)
    assert {s.thread_id for s in listed} == {f"s{n}" for n in sessions}
    for n in sessions:
        history = (await store.history(P1, f"s{n}")).messages
        assert history == [
            m
            for t in range(turns)
            for k, append in enumerate(turn(n, t))
            for m in stamp_usage(append, step_usage(k))
        ]
        got = await store.get_session(P1, f"s{n}")
        assert got is not None
        assert (got.message_count, got.llm_calls_count) == (4 * turns, 2 * turns)
        assert (got.input_tokens, got.output_tokens, got.total_tokens) == (
            30 * turns,
            7 * turns,
            37 * turns,
        )


async def test_fifty_sessions_write_twenty_turns_each_concurrently(data_dir: Path) -> None:
    async with SqliteCheckpointStore(data_dir) as store:
        await asyncio.gather(*(chat(store, n, 20) for n in range(50)))
        await check_chats(store, range(50), 20)


async def test_two_stores_on_one_project_wait_for_each_other_instead_of_failing(
    data_dir: Path,
) -> None:
    # Two connections (as two service processes would have) contend for the write lock.
    async with SqliteCheckpointStore(data_dir) as one, SqliteCheckpointStore(data_dir) as two:
        await asyncio.gather(
            *(chat(one, n, 8) for n in range(0, 20, 2)), *(chat(two, n, 8) for n in range(1, 20, 2))
        )
        await check_chats(one, range(20), 8)


async def test_stores_creating_the_same_new_database_at_once_all_succeed(data_dir: Path) -> None:
    # Turning a fresh file to WAL needs exclusive access, for which SQLite does not wait.
    stores = [SqliteCheckpointStore(data_dir) for _ in range(4)]
    for store in stores:
        await store.open()
    try:
        for round_ in range(15):
            project = project_id(100 + round_)
            await asyncio.gather(
                *(
                    store.create_session(new_session(f"s{n}", project))
                    for n, store in enumerate(stores)
                )
            )
            listed = await stores[0].list_sessions(project, USER)
            assert sorted(s.thread_id for s in listed) == ["s0", "s1", "s2", "s3"]
    finally:
        for store in stores:
            await store.close()


# ================================================================== corruption
async def test_a_file_that_is_not_sqlite_names_its_project_and_spares_the_others(
    store: SqliteCheckpointStore, data_dir: Path
) -> None:
    await store.create_session(new_session("fine", P2))
    broken = db_path(data_dir, P1)
    broken.parent.mkdir(parents=True)
    broken.write_bytes(b"this is not a database, it is a shopping list\n" * 200)

    for attempt in (store.get_session(P1, "s"), store.list_sessions(P1, USER)):
        with pytest.raises(StoreCorruptedError, match=P1) as caught:
            await attempt
        assert caught.value.project_id == P1
        assert "move the file aside" in caught.value.message
    assert await store.get_session(P2, "fine") is not None
    await store.create_session(new_session("also-fine", P2))

    broken.rename(broken.with_suffix(".bad"))  # the operator moves it aside
    await store.create_session(new_session("fresh", P1))
    assert await store.get_session(P1, "fresh") is not None


async def test_a_sqlite_file_with_damaged_pages_names_its_project_and_spares_the_others(
    data_dir: Path,
) -> None:
    async with SqliteCheckpointStore(data_dir) as store:
        for project in (P1, P2):
            await store.create_session(new_session("s", project))
            for t in range(30):
                for messages in turn(0, t):
                    await store.append_messages(project, "s", messages)
    damaged = db_path(data_dir, P1)
    assert not damaged.with_name(damaged.name + "-wal").exists()
    data = bytearray(damaged.read_bytes())
    page = int.from_bytes(data[16:18], "big")  # the page size, from the file header
    data[page:] = b"\xde\xad\xbe\xef" * ((len(data) - page) // 4)  # every page but the first
    damaged.write_bytes(bytes(data))

    async with SqliteCheckpointStore(data_dir) as store:
        with pytest.raises(StoreCorruptedError, match=P1):
            await store.history(P1, "s")
        with pytest.raises(StoreCorruptedError, match=P1):
            await store.history(P1, "s")
        assert len((await store.history(P2, "s")).messages) == 4 * 30
        await store.append_messages(P2, "s", turn(0, 99)[0])
        assert len((await store.history(P2, "s")).messages) == 4 * 30 + 1
