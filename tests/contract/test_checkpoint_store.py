"""The CheckpointStore contract: one set of assertions, run on every store.

To add a store, add one entry to ``STORES``: a name and an async context manager
factory that yields a ready store given the test's request (for fixtures) and a
temporary directory. The PostgreSQL store runs on the real server, in a schema of its
own per test (``tests/real_postgres.py``).
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Protocol, overload

import pytest

from adapters.postgres import PostgresCheckpointStore, PostgresDatabase
from adapters.sqlite import SqliteCheckpointStore
from copilot_core import CopilotMode, Message, Session
from copilot_core.errors import InvalidRequestError, NotFoundError, SessionNotFoundError
from copilot_core.ports import (
    ChangeDescription,
    ChangeRecord,
    CheckpointStore,
    FunctionCall,
    ItemChanges,
    RestorePoint,
    RestorePointStore,
    RollbackStatus,
    RolledBack,
    ToolCall,
    Usage,
    stamp_usage,
)
from copilot_core.testing import InMemoryCheckpointStore

StoreFactory = Callable[
    [pytest.FixtureRequest, Path], contextlib.AbstractAsyncContextManager[CheckpointStore]
]


@contextlib.asynccontextmanager
async def _in_memory(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[CheckpointStore]:
    yield InMemoryCheckpointStore()


@contextlib.asynccontextmanager
async def _sqlite(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[CheckpointStore]:
    async with SqliteCheckpointStore(tmp_path / "data") as store:
        yield store


@contextlib.asynccontextmanager
async def _postgres(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[CheckpointStore]:
    url = request.getfixturevalue("postgres").url
    schema = request.getfixturevalue("postgres_schema")
    async with PostgresDatabase(url, schema=schema, max_size=2) as database:
        yield PostgresCheckpointStore(database)


STORES: dict[str, StoreFactory] = {
    "in_memory": _in_memory,
    "postgres": _postgres,
    "sqlite": _sqlite,
}

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
PROJECT = str(uuid.UUID(int=1))
OTHER_PROJECT = str(uuid.UUID(int=2))


@pytest.fixture(params=sorted(STORES))
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[CheckpointStore]:
    async with STORES[request.param](request, tmp_path) as made:
        yield made


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def session(
    thread_id: str,
    *,
    user: str = "alice",
    project: str = PROJECT,
    updated: float = 0,
    mode: CopilotMode = CopilotMode.TEACHING_ASSISTANT,
    **fields: Any,
) -> Session:
    return Session(
        thread_id=thread_id,
        user_id=user,
        project_id=project,
        copilot_mode=mode,
        created_at=at(0),
        updated_at=at(updated),
        **fields,
    )


def step(n: int, *, calls: int = 2) -> list[Message]:
    """An assistant message calling ``calls`` tools and their results."""
    ids = [f"call-{n}-{i}" for i in range(calls)]
    assistant = Message.assistant(
        f"a-{n}",
        f"Let me look ({n}) — ça marche 🙂",
        at(n),
        tool_calls=tuple(
            ToolCall(id=i, function=FunctionCall(name="get_topology", arguments='{"x": 1}'))
            for i in ids
        ),
    )
    results = [
        Message.tool(f"t-{n}-{k}", call_id, "get_topology", '{"nodes": []}', at(n))
        for k, call_id in enumerate(ids)
    ]
    return [assistant, *results]


def numbered(count: int) -> list[Message]:
    return [Message.user(f"m-{i}", f"message {i}", at(i)) for i in range(1, count + 1)]


class ExplodingMessages(Sequence[Message]):
    """A sequence whose iteration fails after ``good`` items, like a step that breaks mid-way."""

    def __init__(self, messages: list[Message], good: int) -> None:
        self._messages = messages
        self._good = good

    @overload
    def __getitem__(self, index: int) -> Message: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Message]: ...
    def __getitem__(self, index: int | slice) -> Message | Sequence[Message]:
        if isinstance(index, slice):
            raise RuntimeError("the step broke")
        if index >= self._good:
            raise RuntimeError("the step broke")
        return self._messages[index]

    def __len__(self) -> int:
        return len(self._messages)

    def __iter__(self) -> Iterator[Message]:
        for index in range(len(self._messages)):
            yield self[index]


async def ids(store: CheckpointStore, **kwargs: Any) -> list[str]:
    listed = await store.list_sessions(PROJECT, kwargs.pop("user", "alice"), **kwargs)
    return [s.thread_id for s in listed]


# ==================================================================== sessions
async def test_create_returns_the_session_with_an_id_and_get_finds_it(
    store: CheckpointStore,
) -> None:
    original = session(
        "s1",
        title="BGP between R1 and R2",
        mode=CopilotMode.LAB_AUTOMATION_ASSISTANT,
        metadata={"agent_id": "copilot", "tags": ["ospf", "été"]},
        stats={"tools": {"get_topology": 3}},
    )
    created = await store.create_session(original)
    assert created.id is not None
    assert created == original.model_copy(update={"id": created.id})
    assert await store.get_session(PROJECT, "s1") == created


async def test_each_session_gets_its_own_id(store: CheckpointStore) -> None:
    first = await store.create_session(session("s1"))
    second = await store.create_session(session("s2"))
    assert first.id != second.id


async def test_timestamps_in_any_timezone_come_back_as_the_same_instants(
    store: CheckpointStore,
) -> None:
    paris = timezone(timedelta(hours=2))
    original = session("s1").model_copy(
        update={
            "created_at": datetime(2026, 3, 1, 14, 0, 0, 123456, tzinfo=paris),
            "updated_at": datetime(2026, 3, 1, 14, 30, tzinfo=paris),
        }
    )
    await store.create_session(original)
    got = await store.get_session(PROJECT, "s1")
    assert got is not None
    assert got.created_at == datetime(2026, 3, 1, 12, 0, 0, 123456, tzinfo=UTC)
    assert got.updated_at == datetime(2026, 3, 1, 12, 30, tzinfo=UTC)
    assert got.last_message_at is None


async def test_unknown_session_is_none(store: CheckpointStore) -> None:
    await store.create_session(session("s1"))
    assert await store.get_session(PROJECT, "nope") is None


async def test_creating_an_existing_thread_id_is_refused_and_changes_nothing(
    store: CheckpointStore,
) -> None:
    await store.create_session(session("s1", title="first"))
    with pytest.raises(ValueError, match="s1"):
        await store.create_session(session("s1", title="second"))
    got = await store.get_session(PROJECT, "s1")
    assert got is not None
    assert got.title == "first"


async def test_a_session_created_with_its_first_messages_holds_and_counts_them(
    store: CheckpointStore,
) -> None:
    # A question as a client may send it: JSON allows an escaped lone surrogate and NUL.
    odd = "Why is R1 not pinging R2? « ok » 日本, half an emoji: \ud83d, NUL: \x00"
    first = [Message.user("u-1", odd, at(1)), *step(2)]
    created = await store.create_session(session("s1", title="Ping"), first)
    assert created.id is not None
    assert created.message_count == len(first)
    assert created.question_count == 1  # the step's assistant and tool messages are not
    assert await store.get_session(PROJECT, "s1") == created
    assert (await store.history(PROJECT, "s1")).messages == first
    # The log goes on after them, numbered as if they had been appended.
    more = numbered(2)
    await store.append_messages(PROJECT, "s1", more)
    assert (await store.history(PROJECT, "s1")).messages == [*first, *more]
    assert (await store.history(PROJECT, "s1", limit=2)).next_cursor == len(first) + 1
    stored = await store.get_session(PROJECT, "s1")
    assert stored is not None
    assert stored.message_count == len(first) + len(more)
    assert stored.question_count == 1 + len(more)
    [listed] = await store.list_sessions(PROJECT, "alice")
    assert (listed.message_count, listed.question_count) == (len(first) + 2, 3)


async def test_a_creation_refused_or_broken_writes_none_of_its_messages(
    store: CheckpointStore,
) -> None:
    await store.create_session(session("s1", title="first"), numbered(1))
    with pytest.raises(ValueError, match="s1"):
        await store.create_session(session("s1", title="second"), step(5))
    with pytest.raises(RuntimeError, match="the step broke"):
        await store.create_session(session("s2"), ExplodingMessages(step(3), good=2))
    assert await store.get_session(PROJECT, "s2") is None
    assert (await store.history(PROJECT, "s1")).messages == numbered(1)
    got = await store.get_session(PROJECT, "s1")
    assert got is not None
    assert (got.title, got.message_count) == ("first", 1)


async def test_sessions_belong_to_their_project(store: CheckpointStore) -> None:
    await store.create_session(session("s1"))
    await store.create_session(session("s2", project=OTHER_PROJECT))
    assert await store.get_session(OTHER_PROJECT, "s1") is None
    assert await ids(store) == ["s1"]
    listed = await store.list_sessions(OTHER_PROJECT, "alice")
    assert [s.thread_id for s in listed] == ["s2"]


async def test_list_puts_pinned_first_then_most_recently_updated(store: CheckpointStore) -> None:
    for name, updated in [("old", 1), ("new", 5), ("mid", 3), ("pinned-old", 0), ("pinned-new", 4)]:
        await store.create_session(session(name, updated=updated))
    await store.set_pinned(PROJECT, "pinned-old", True)
    await store.set_pinned(PROJECT, "pinned-new", True)
    assert await ids(store) == ["pinned-new", "pinned-old", "new", "mid", "old"]


async def test_list_breaks_updated_at_ties_by_newest_creation(store: CheckpointStore) -> None:
    for name in ["a", "b", "c"]:
        await store.create_session(session(name, updated=7))
    assert await ids(store) == ["c", "b", "a"]


async def test_list_pages_with_limit_and_offset(store: CheckpointStore) -> None:
    for n in range(7):
        await store.create_session(session(f"s{n}", updated=n))
    expected = [f"s{n}" for n in reversed(range(7))]
    assert await ids(store, limit=3) == expected[:3]
    assert await ids(store, limit=3, offset=3) == expected[3:6]
    assert await ids(store, limit=3, offset=6) == expected[6:]
    assert await ids(store, limit=3, offset=7) == []
    assert await ids(store) == expected


async def test_list_shows_only_the_users_own_sessions(store: CheckpointStore) -> None:
    await store.create_session(session("mine", user="alice"))
    await store.create_session(session("theirs", user="bob", updated=1))
    assert await ids(store, user="alice") == ["mine"]
    assert await ids(store, user="bob") == ["theirs"]
    assert await ids(store, user="carol") == []


async def test_list_filters_by_copilot_mode(store: CheckpointStore) -> None:
    await store.create_session(session("teach", mode=CopilotMode.TEACHING_ASSISTANT))
    await store.create_session(session("lab", mode=CopilotMode.LAB_AUTOMATION_ASSISTANT, updated=1))
    assert await ids(store) == ["lab", "teach"]
    assert await ids(store, copilot_mode=CopilotMode.TEACHING_ASSISTANT) == ["teach"]
    assert await ids(store, copilot_mode=CopilotMode.LAB_AUTOMATION_ASSISTANT) == ["lab"]


# ==================================================================== messages
async def test_appended_messages_come_back_exactly_and_in_order(store: CheckpointStore) -> None:
    await store.create_session(session("s1"))
    user = Message.user("u-1", "Why is R1 not pinging R2? « ok » 日本", at(1))
    first, second = step(1), step(2, calls=1)
    final = Message.assistant("a-final", "Fixed.", at(3), aborted=True)
    await store.append_messages(PROJECT, "s1", [user])
    await store.append_messages(PROJECT, "s1", first)
    await store.append_messages(PROJECT, "s1", second)
    await store.append_messages(PROJECT, "s1", [final])
    page = await store.history(PROJECT, "s1")
    assert page.messages == [user, *first, *second, final]
    assert page.next_cursor is None


async def test_text_that_is_not_valid_unicode_round_trips(store: CheckpointStore) -> None:
    # json.loads turns a model's "\ud83d" escape into a lone surrogate.
    await store.create_session(session("s1"))
    odd = Message.assistant("a1", "half an emoji: \ud83d, NUL: \x00, ok", at(1))
    await store.append_messages(PROJECT, "s1", [odd, *numbered(1)])
    assert (await store.history(PROJECT, "s1")).messages == [odd, *numbered(1)]


async def test_appending_nothing_changes_nothing(store: CheckpointStore) -> None:
    await store.create_session(session("s1"))
    await store.append_messages(PROJECT, "s1", [])
    assert (await store.history(PROJECT, "s1")).messages == []


async def test_an_append_that_fails_mid_way_leaves_nothing(store: CheckpointStore) -> None:
    await store.create_session(session("s1"))
    before = numbered(2)
    await store.append_messages(PROJECT, "s1", before)
    with pytest.raises(RuntimeError, match="the step broke"):
        await store.append_messages(PROJECT, "s1", ExplodingMessages(step(3), good=2))
    assert (await store.history(PROJECT, "s1")).messages == before
    after = step(4)
    await store.append_messages(PROJECT, "s1", after)
    assert (await store.history(PROJECT, "s1")).messages == [*before, *after]


async def test_appending_to_an_unknown_session_raises_and_creates_nothing(
    store: CheckpointStore,
) -> None:
    with pytest.raises(SessionNotFoundError):
        await store.append_messages(PROJECT, "ghost", numbered(1))
    assert await store.get_session(PROJECT, "ghost") is None
    with pytest.raises(SessionNotFoundError):
        await store.history(PROJECT, "ghost")


async def test_sessions_have_separate_logs(store: CheckpointStore) -> None:
    await store.create_session(session("s1"))
    await store.create_session(session("s2"))
    await store.append_messages(PROJECT, "s1", numbered(3))
    await store.append_messages(PROJECT, "s2", step(9))
    assert (await store.history(PROJECT, "s1")).messages == numbered(3)
    assert (await store.history(PROJECT, "s2")).messages == step(9)


def expected_page(
    total: int, limit: int | None, before: int | None
) -> tuple[list[int], int | None]:
    """The paging rule: messages are numbered 1..total; ``before`` is exclusive; the
    cursor is the number of the oldest message returned when older ones exist."""
    older = [n for n in range(1, total + 1) if before is None or n < before]
    chosen = older if limit is None else older[max(len(older) - limit, 0) :]
    cursor = chosen[0] if chosen and chosen[0] > 1 else None
    return chosen, cursor


@pytest.mark.parametrize("total", [0, 1, 7])
async def test_history_returns_the_newest_messages_before_the_cursor(
    store: CheckpointStore, total: int
) -> None:
    await store.create_session(session("s1"))
    log = numbered(total)
    await store.append_messages(PROJECT, "s1", log)
    for limit in [None, 1, 2, 3, 7, 10]:
        for before in [None, 0, 1, 2, 5, 7, 8, 20]:
            page = await store.history(PROJECT, "s1", limit=limit, before=before)
            numbers, cursor = expected_page(total, limit, before)
            assert page.messages == [log[n - 1] for n in numbers], (limit, before)
            assert page.next_cursor == cursor, (limit, before)


async def test_following_the_cursor_walks_the_whole_history_once(store: CheckpointStore) -> None:
    await store.create_session(session("s1"))
    log = numbered(11)
    for start in range(0, 11, 4):
        await store.append_messages(PROJECT, "s1", log[start : start + 4])
    seen: list[Message] = []
    cursor: int | None = None
    pages = 0
    while True:
        page = await store.history(PROJECT, "s1", limit=3, before=cursor)
        seen = page.messages + seen
        pages += 1
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert seen == log
    assert pages == 4


# ===================================================================== updates
async def test_each_step_is_counted_with_its_messages(store: CheckpointStore) -> None:
    await store.create_session(session("s1", title="kept"))
    await store.append_messages(PROJECT, "s1", numbered(1))
    await store.append_messages(PROJECT, "s1", step(2), usage=Usage(1, 100, 30))
    await store.append_messages(PROJECT, "s1", numbered(1), usage=Usage(2, 50, 5))
    got = await store.get_session(PROJECT, "s1")
    assert got is not None
    assert (got.message_count, got.llm_calls_count) == (5, 3)
    assert (got.input_tokens, got.output_tokens, got.total_tokens) == (150, 35, 185)
    assert got.message_count == len((await store.history(PROJECT, "s1")).messages)
    # Counting is not timestamping: that is the end of a turn.
    assert (got.updated_at, got.last_message_at, got.title) == (at(0), None, "kept")


async def test_a_step_replaces_the_draft_it_supersedes(store: CheckpointStore) -> None:
    await store.create_session(session("s1"))
    await store.append_messages(PROJECT, "s1", numbered(1))
    draft = Message.assistant("d", "Half an ans", at(1), partial=True)
    await store.append_messages(PROJECT, "s1", [draft])
    longer = Message.assistant("d", "Half an answer so far", at(2), partial=True)
    await store.append_messages(PROJECT, "s1", [longer], replaces="d")
    assert (await store.history(PROJECT, "s1")).messages == [*numbered(1), longer]
    final = step(3)
    await store.append_messages(PROJECT, "s1", final, usage=Usage(1, 10, 2), replaces="d")
    history = (await store.history(PROJECT, "s1")).messages
    # The step's usage is kept in its first message (so that a truncation can undo it).
    assert history == [*numbered(1), *stamp_usage(final, Usage(1, 10, 2))]
    assert history[1].metadata["usage"] == {"llm_calls": 1, "input_tokens": 10, "output_tokens": 2}
    got = await store.get_session(PROJECT, "s1")
    assert got is not None
    assert got.message_count == len(history) == 4
    assert got.llm_calls_count == 1


async def test_the_last_message_replaced_by_itself_with_its_usage_keeps_the_counters(
    store: CheckpointStore,
) -> None:
    # How a failed turn marks its last message incomplete (the turn runner).
    await store.create_session(session("s1"))
    await store.append_messages(PROJECT, "s1", numbered(1))
    await store.append_messages(PROJECT, "s1", step(2), usage=Usage(1, 10, 2))
    answer = Message.assistant("a-3", "Half an answer", at(3))
    await store.append_messages(PROJECT, "s1", [answer], usage=Usage(1, 30, 4))
    last = (await store.history(PROJECT, "s1")).messages[-1]
    marked = last.model_copy(update={"metadata": {**last.metadata, "incomplete": {"x": 1}}})
    await store.append_messages(
        PROJECT, "s1", [marked], usage=Usage.of(last.metadata), replaces=last.id
    )
    history = (await store.history(PROJECT, "s1")).messages
    assert history[-1] == marked and len(history) == 5
    got = await store.get_session(PROJECT, "s1")
    assert got is not None
    assert (got.message_count, got.llm_calls_count) == (5, 2)
    assert (got.input_tokens, got.output_tokens, got.total_tokens) == (40, 6, 46)
    await store.truncate(PROJECT, "s1", "a-2")  # takes off what the marked message carried
    got = await store.get_session(PROJECT, "s1")
    assert got is not None
    assert (got.message_count, got.llm_calls_count, got.total_tokens) == (1, 0, 0)
    # A message without usage (the user's question) is rewritten in its place.
    question = (await store.history(PROJECT, "s1")).messages[-1]
    marked = question.model_copy(update={"metadata": {**question.metadata, "incomplete": {}}})
    await store.append_messages(PROJECT, "s1", [marked], replaces=question.id)
    assert (await store.history(PROJECT, "s1")).messages == [marked]
    got = await store.get_session(PROJECT, "s1")
    assert got is not None and got.message_count == 1


async def test_replaces_deletes_nothing_unless_the_draft_is_the_last_message(
    store: CheckpointStore,
) -> None:
    await store.create_session(session("s1"))
    await store.append_messages(PROJECT, "s1", numbered(2))
    await store.append_messages(PROJECT, "s1", step(3), replaces="m-1")  # not the last one
    await store.append_messages(PROJECT, "s1", numbered(1), replaces="ghost")
    # A single message, as a newer draft is, rewrites nothing either.
    lone = Message.assistant("lone", "not a draft's successor", at(4), partial=True)
    await store.append_messages(PROJECT, "s1", [lone], replaces="m-2")
    history = (await store.history(PROJECT, "s1")).messages
    assert [m.id for m in history] == ["m-1", "m-2", "a-3", "t-3-0", "t-3-1", "m-1", "lone"]
    got = await store.get_session(PROJECT, "s1")
    assert got is not None
    assert got.message_count == 7


async def test_record_turn_adds_what_is_left_and_stamps_the_time(store: CheckpointStore) -> None:
    await store.create_session(session("s1", title="kept"))
    await store.append_messages(PROJECT, "s1", numbered(2), usage=Usage(1, 100, 30))
    await store.record_turn(PROJECT, "s1", at(10), usage=Usage(1, 50, 5))
    await store.record_turn(PROJECT, "s1", at(20))
    got = await store.get_session(PROJECT, "s1")
    assert got is not None
    assert (got.message_count, got.llm_calls_count) == (2, 2)
    assert (got.input_tokens, got.output_tokens, got.total_tokens) == (150, 35, 185)
    assert got.last_message_at == at(20)
    assert got.updated_at == at(20)
    assert got.created_at == at(0)
    assert got.title == "kept"


async def test_record_turn_sets_the_title_when_given(store: CheckpointStore) -> None:
    await store.create_session(session("s1"))
    await store.record_turn(PROJECT, "s1", at(1), title="OSPF lab")
    got = await store.get_session(PROJECT, "s1")
    assert got is not None
    assert got.title == "OSPF lab"
    await store.record_turn(PROJECT, "s1", at(2))
    got = await store.get_session(PROJECT, "s1")
    assert got is not None
    assert got.title == "OSPF lab"


async def test_record_turn_moves_the_session_to_the_top(store: CheckpointStore) -> None:
    await store.create_session(session("a", updated=1))
    await store.create_session(session("b", updated=2))
    await store.record_turn(PROJECT, "a", at(3))
    assert await ids(store) == ["a", "b"]


async def test_record_turn_of_an_unknown_session_raises(store: CheckpointStore) -> None:
    with pytest.raises(SessionNotFoundError):
        await store.record_turn(PROJECT, "ghost", at(1))


async def test_rename_sets_title_and_updated_at(store: CheckpointStore) -> None:
    await store.create_session(session("s1", title="old"))
    renamed = await store.rename_session(PROJECT, "s1", "new title", at(9))
    assert renamed is not None
    assert (renamed.title, renamed.updated_at) == ("new title", at(9))
    assert await store.get_session(PROJECT, "s1") == renamed
    assert await store.rename_session(PROJECT, "ghost", "x", at(9)) is None


async def test_pin_and_unpin_keep_updated_at(store: CheckpointStore) -> None:
    await store.create_session(session("s1", updated=5))
    pinned = await store.set_pinned(PROJECT, "s1", True)
    assert pinned is not None
    assert pinned.pinned is True
    assert pinned.updated_at == at(5)
    assert await store.get_session(PROJECT, "s1") == pinned
    unpinned = await store.set_pinned(PROJECT, "s1", False)
    assert unpinned is not None
    assert unpinned.pinned is False
    assert await store.get_session(PROJECT, "s1") == unpinned
    assert await store.set_pinned(PROJECT, "ghost", True) is None


async def test_set_mode_changes_the_mode_and_nothing_else(store: CheckpointStore) -> None:
    await store.create_session(session("s1", updated=5, title="kept"))
    await store.append_messages(PROJECT, "s1", numbered(2))
    before = await store.get_session(PROJECT, "s1")
    assert before is not None
    changed = await store.set_mode(PROJECT, "s1", CopilotMode.LAB_AUTOMATION_ASSISTANT)
    assert changed is not None
    assert changed == before.model_copy(
        update={"copilot_mode": CopilotMode.LAB_AUTOMATION_ASSISTANT}
    )
    assert await store.get_session(PROJECT, "s1") == changed
    listed = await store.list_sessions(
        PROJECT, "alice", copilot_mode=CopilotMode.LAB_AUTOMATION_ASSISTANT
    )
    assert [s.thread_id for s in listed] == ["s1"]
    assert await store.set_mode(PROJECT, "ghost", CopilotMode.TEACHING_ASSISTANT) is None


# ==================================================================== deletion
async def test_delete_session_removes_it_and_its_messages(store: CheckpointStore) -> None:
    await store.create_session(session("s1"))
    await store.create_session(session("s2"))
    await store.append_messages(PROJECT, "s1", numbered(3))
    await store.append_messages(PROJECT, "s2", numbered(2))
    assert await store.delete_session(PROJECT, "s1") is True
    assert await store.get_session(PROJECT, "s1") is None
    with pytest.raises(SessionNotFoundError):
        await store.history(PROJECT, "s1")
    assert await ids(store) == ["s2"]
    assert (await store.history(PROJECT, "s2")).messages == numbered(2)
    assert await store.delete_session(PROJECT, "s1") is False
    # The thread id is free again, with an empty log.
    await store.create_session(session("s1"))
    assert (await store.history(PROJECT, "s1")).messages == []


async def test_delete_project_sessions_removes_only_that_project(store: CheckpointStore) -> None:
    for name in ["a", "b", "c"]:
        await store.create_session(session(name, user="alice" if name != "c" else "bob"))
        await store.append_messages(PROJECT, name, numbered(2))
    await store.create_session(session("z", project=OTHER_PROJECT))
    await store.append_messages(OTHER_PROJECT, "z", numbered(1))
    assert await store.delete_project_sessions(PROJECT) == 3
    assert await ids(store) == []
    assert await store.get_session(PROJECT, "c") is None
    assert await store.get_session(OTHER_PROJECT, "z") is not None
    assert (await store.history(OTHER_PROJECT, "z")).messages == numbered(1)
    assert await store.delete_project_sessions(PROJECT) == 0
    assert await store.delete_project_sessions(str(uuid.UUID(int=3))) == 0


# ====================================================================== search
async def test_search_finds_titles_and_message_text_of_the_users_sessions(
    store: CheckpointStore,
) -> None:
    await store.create_session(session("s1", title="OSPF lab", updated=1))
    await store.create_session(session("s2", title="VLANs", updated=2))
    await store.create_session(session("s3", title="ospf elsewhere", user="bob", updated=3))
    await store.append_messages(
        PROJECT,
        "s2",
        [
            Message.user("u1", "why is ospf stuck in EXSTART?", at(1)),
            Message.assistant("a1", "An MTU mismatch on the link stops OSPF at EXSTART.", at(2)),
            Message.user("u2", "and 100% literal?", at(3)),
            # Tool output is not searched, even when it is the newest match.
            Message.tool("t1", "c1", "show", '{"output": "ospf EXSTART"}', at(4)),
        ],
    )
    found = await store.search_sessions(PROJECT, "alice", "OSPF")
    assert [m.session.thread_id for m in found] == ["s2", "s1"]  # newest first, bob's not
    assert found[0].message_id == "a1"  # the newest message that matches
    assert "MTU mismatch" in found[0].snippet
    assert (found[1].message_id, found[1].snippet) == (None, "OSPF lab")
    assert await store.search_sessions(PROJECT, "alice", "nothing like this") == []
    # LIKE's wildcards are plain text here.
    assert [m.message_id for m in await store.search_sessions(PROJECT, "alice", "100%")] == ["u2"]
    assert await store.search_sessions(PROJECT, "alice", "1_0") == []
    assert len(await store.search_sessions(PROJECT, "alice", "o", limit=1)) == 1


# ==================================================================== truncate
async def test_truncate_drops_a_message_and_what_follows_with_their_counts(
    store: CheckpointStore,
) -> None:
    await store.create_session(session("s1"))
    first = [Message.user("u1", "first", at(1))]
    answer = Message.assistant("a1", "one", at(2))
    second = [Message.user("u2", "second", at(3))]
    tools = step(4)
    await store.append_messages(PROJECT, "s1", first)
    await store.append_messages(PROJECT, "s1", [answer], usage=Usage(1, 100, 10))
    await store.append_messages(PROJECT, "s1", second)
    await store.append_messages(PROJECT, "s1", tools, usage=Usage(2, 300, 20))
    before = await store.get_session(PROJECT, "s1")
    assert before is not None and before.question_count == 2
    assert await store.truncate(PROJECT, "s1", "u2") == 1 + len(tools)
    history = (await store.history(PROJECT, "s1")).messages
    assert history == [*first, *stamp_usage([answer], Usage(1, 100, 10))]
    got = await store.get_session(PROJECT, "s1")
    assert got is not None
    assert (got.message_count, got.question_count) == (2, 1)
    assert (got.llm_calls_count, got.input_tokens, got.output_tokens) == (1, 100, 10)
    assert got.total_tokens == 110


async def test_truncate_of_a_message_not_in_the_session_changes_nothing(
    store: CheckpointStore,
) -> None:
    await store.create_session(session("s1"))
    await store.create_session(session("s2"))
    await store.append_messages(PROJECT, "s1", numbered(2))
    await store.append_messages(PROJECT, "s2", [Message.user("elsewhere", "x", at(1))])
    with pytest.raises(InvalidRequestError):
        await store.truncate(PROJECT, "s1", "elsewhere")
    assert (await store.history(PROJECT, "s1")).messages == numbered(2)
    with pytest.raises(SessionNotFoundError):
        await store.truncate(PROJECT, "ghost", "m-1")


# ============================================================== restore points
class SessionsWithRestorePoints(CheckpointStore, RestorePointStore, Protocol):
    """Every store here keeps restore points with its sessions."""


@pytest.fixture
def points(store: CheckpointStore) -> SessionsWithRestorePoints:
    assert isinstance(
        store, InMemoryCheckpointStore | SqliteCheckpointStore | PostgresCheckpointStore
    )
    return store


def restore_point(
    point_id: str, thread_id: str = "s1", *, project: str = PROJECT, seconds: float = 0
) -> RestorePoint:
    return RestorePoint(
        id=point_id,
        project_id=project,
        session_id=thread_id,
        created_at=at(seconds),
        tool_call_id=f"call-{point_id}",
        tool_name="execute_vpcs_commands",
        summary=f"before change {point_id}: PC1 — ça marche 🙂",
        devices=("PC1", "R1"),
        topology=True,
        snapshot=f"copilot-{point_id}",
        change=ChangeRecord(
            nodes=ItemChanges(
                created={"n2": {"node_id": "n2", "name": "PC2", "x": -12}},
                changed={"n1": {"name": "PC1", "fields": {"x": [0, -12]}}},
            ),
            links=ItemChanges(deleted={"l1": {"link_id": "l1", "nodes": [{"node_id": "n1"}]}}),
            configured={"n1": "PC1"},
            described=ChangeDescription(
                nodes_created=("PC2",),
                nodes_changed={"PC1": ("x",)},
                links_deleted=("PC1 <-> R1",),
                devices_configured=("PC1",),
            ),
        ),
        id_map={"old-n3": "n3"},
        kept={
            "devices": {
                "PC1": {"kind": "vpcs", "config": {"ip": "10.0.0.1/24", "dns": None}},
                "R1": {
                    "running_config": "hostname R1\ninterface Gi0/0\n ip address 10.0.0.1 255.0.0.0"
                },
            },
            "topology": {"nodes": [{"name": "PC1", "x": -12, "ok": True}], "links": []},
            "escaped": "nul \u0000 and a lone surrogate \ud83d kept",
        },
    )


async def test_a_restore_point_is_kept_with_its_session_and_read_back_exactly(
    points: SessionsWithRestorePoints,
) -> None:
    await points.create_session(session("s1"))
    point = restore_point("p1", seconds=5)
    await points.save_restore_point(point)
    assert await points.restore_point(PROJECT, "s1", "p1") == point
    assert await points.restore_points(PROJECT, "s1") == [point]
    got = await points.restore_point(PROJECT, "s1", "p1")
    assert got is not None and got.created_at.utcoffset() == timedelta(0)
    # Saving a restore point leaves the session's messages and counters alone.
    assert (await points.history(PROJECT, "s1")).messages == []
    stored = await points.get_session(PROJECT, "s1")
    assert stored is not None and stored.message_count == 0


async def test_a_restore_points_state_is_replaced_in_place_and_only_its_own(
    points: SessionsWithRestorePoints,
) -> None:
    await points.create_session(session("s1"))
    await points.create_session(session("s2"))
    first, second = restore_point("p1", seconds=1), restore_point("p2", seconds=2)
    await points.save_restore_point(first)
    await points.save_restore_point(second)
    mark = RolledBack(at(9), "u-alice", RollbackStatus.PARTIAL_SUCCESS, "rollback-1", "p9")
    marked = replace(first, rolled_back=mark, id_map={**first.id_map, "l1": "l1-again"})
    await points.update_restore_point(marked)
    assert await points.restore_points(PROJECT, "s1") == [marked, second]  # order kept
    with pytest.raises(NotFoundError):  # another session's point is not touched
        await points.update_restore_point(replace(second, session_id="s2"))
    with pytest.raises(NotFoundError):
        await points.update_restore_point(restore_point("nope"))
    assert await points.restore_point(PROJECT, "s1", "p2") == second


async def test_restore_points_are_listed_oldest_first_per_session(
    points: SessionsWithRestorePoints,
) -> None:
    await points.create_session(session("s1"))
    await points.create_session(session("s2"))
    for n, thread in enumerate(["s1", "s2", "s1", "s1"]):
        await points.save_restore_point(restore_point(f"p{n}", thread, seconds=n))
    assert [p.id for p in await points.restore_points(PROJECT, "s1")] == ["p0", "p2", "p3"]
    assert [p.id for p in await points.restore_points(PROJECT, "s2")] == ["p1"]
    assert await points.restore_point(PROJECT, "s2", "p0") is None  # another session's
    assert await points.restore_point(PROJECT, "s1", "nope") is None


async def test_a_session_without_restore_points_lists_none(
    points: SessionsWithRestorePoints,
) -> None:
    await points.create_session(session("s1"))
    assert await points.restore_points(PROJECT, "s1") == []


async def test_restore_points_of_an_unknown_session_raise_or_are_not_found(
    points: SessionsWithRestorePoints,
) -> None:
    with pytest.raises(SessionNotFoundError):
        await points.save_restore_point(restore_point("p1", "ghost"))
    with pytest.raises(SessionNotFoundError):
        await points.restore_points(PROJECT, "ghost")
    assert await points.restore_point(PROJECT, "ghost", "p1") is None
    # Nothing was kept: a session created later under that id has no restore point.
    await points.create_session(session("ghost"))
    assert await points.restore_points(PROJECT, "ghost") == []


async def test_restore_points_belong_to_their_project(points: SessionsWithRestorePoints) -> None:
    await points.create_session(session("s1"))
    await points.create_session(session("s1", project=OTHER_PROJECT))
    await points.save_restore_point(restore_point("p1"))
    assert await points.restore_points(OTHER_PROJECT, "s1") == []
    assert await points.restore_point(OTHER_PROJECT, "s1", "p1") is None


async def test_deleting_a_session_deletes_its_restore_points(
    points: SessionsWithRestorePoints,
) -> None:
    await points.create_session(session("s1"))
    await points.create_session(session("s2"))
    await points.save_restore_point(restore_point("p1", "s1"))
    await points.save_restore_point(restore_point("p2", "s2"))
    assert await points.delete_session(PROJECT, "s1") is True
    assert await points.restore_point(PROJECT, "s1", "p1") is None
    await points.create_session(session("s1"))  # the id is free again, with no restore point
    assert await points.restore_points(PROJECT, "s1") == []
    assert [p.id for p in await points.restore_points(PROJECT, "s2")] == ["p2"]


async def test_deleting_a_projects_sessions_deletes_their_restore_points(
    points: SessionsWithRestorePoints,
) -> None:
    await points.create_session(session("s1"))
    await points.create_session(session("s1", project=OTHER_PROJECT))
    await points.save_restore_point(restore_point("p1"))
    await points.save_restore_point(restore_point("p2", project=OTHER_PROJECT))
    assert await points.delete_project_sessions(PROJECT) == 1
    await points.create_session(session("s1"))
    assert await points.restore_points(PROJECT, "s1") == []
    assert [p.id for p in await points.restore_points(OTHER_PROJECT, "s1")] == ["p2"]
