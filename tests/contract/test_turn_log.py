"""The TurnLog contract (a turn's numbered events): one set of assertions, run on the
in-memory log and on Redis. The session leases and the turn control relay have their
own (``test_session_leases.py``, ``test_turn_control_relay.py``).

To add a turn log, add one entry to ``LOGS``: a name and an async context manager factory
that yields a ready log given the test's request and its retention time in seconds. The
Redis log runs on the real server (127.0.0.1:6379, ``GNS3_COPILOT_TEST_REDIS_URL``) under
a key prefix of its own per test, whose keys are deleted afterwards
(``tests/real_redis.py``). Every wait below is bounded.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import itertools
from collections.abc import AsyncIterator, Callable

import pytest

from adapters.redis import RedisTurnLog
from copilot_core import AbortToken, TurnEvent
from copilot_core.bootstrap import InMemoryTurnLog
from copilot_core.events import (
    AbortEvent,
    AgentErrorEvent,
    AnswerEvent,
    ApprovalRequiredEvent,
    ApprovalResolvedEvent,
    ContentEvent,
    DoneEvent,
    ErrorEvent,
    HeartbeatEvent,
    PlanEvent,
    StatusEvent,
    StepEvent,
    ThinkingEvent,
    ToolCallEvent,
    ToolEndEvent,
    ToolProgressEvent,
    ToolStartEvent,
    WireEvent,
)
from copilot_core.ports import TurnInfo, TurnLog
from tests.real_redis import RedisForTests

Factory = Callable[[pytest.FixtureRequest, float], contextlib.AbstractAsyncContextManager[TurnLog]]
LogFactory = Callable[[float], contextlib.AbstractAsyncContextManager[TurnLog]]


@contextlib.asynccontextmanager
async def _in_memory(request: pytest.FixtureRequest, retention: float) -> AsyncIterator[TurnLog]:
    yield InMemoryTurnLog(retention=retention)


@contextlib.asynccontextmanager
async def _redis(request: pytest.FixtureRequest, retention: float) -> AsyncIterator[TurnLog]:
    redis: RedisForTests = request.getfixturevalue("redis_server")
    async with redis.client() as client:
        log = RedisTurnLog(client, retention=retention, prefix=redis.new_prefix())
        await log.start()
        try:
            yield log
        finally:
            await log.stop()
            await redis.delete_prefix(client, log.prefix)


LOGS: dict[str, Factory] = {"in_memory": _in_memory, "redis": _redis}

PROJECT = "project-1"
_turn_ids = itertools.count(1)


@pytest.fixture(params=sorted(LOGS))
def make_log(request: pytest.FixtureRequest) -> LogFactory:
    def make(retention: float) -> contextlib.AbstractAsyncContextManager[TurnLog]:
        return LOGS[request.param](request, retention)

    return make


@pytest.fixture
async def log(make_log: LogFactory) -> AsyncIterator[TurnLog]:
    async with make_log(60.0) as made:
        yield made


def turn(session: str = "s1", *, project: str = PROJECT, user: str = "alice") -> TurnInfo:
    return TurnInfo(f"turn-{next(_turn_ids)}", project, session, user)


async def read_all(log: TurnLog, turn_id: str, *, after: int = 0) -> list[TurnEvent]:
    """Follow a turn to its end (bounded)."""
    async with asyncio.timeout(5):
        return [event async for event in log.subscribe(turn_id, after=after)]


async def eventually(check: Callable[[], object], within: float = 5.0) -> None:
    async with asyncio.timeout(within):
        while not check():
            await asyncio.sleep(0.01)


# ====================================================================== opening
async def test_open_makes_the_turn_the_sessions_latest_until_the_next_one(log: TurnLog) -> None:
    first, second = turn("s1"), turn("s1")
    await log.open(first, AbortToken())
    await log.open(turn("s2"), AbortToken())
    await log.open(turn("s1", project="project-2"), AbortToken())
    state = await log.find(PROJECT, "s1")
    assert state is not None and state.info == first

    log.append(first.turn_id, DoneEvent(None))
    await log.close(first.turn_id)
    await log.open(second, AbortToken())

    state = await log.find(PROJECT, "s1")
    assert state is not None and (state.info, state.finished) == (second, False)


async def test_discard_forgets_a_turn_that_never_started(log: TurnLog) -> None:
    never = turn("s1")
    await log.open(never, AbortToken())

    await log.discard(never.turn_id)

    assert await log.find(PROJECT, "s1") is None
    assert await read_all(log, never.turn_id) == []
    await log.open(turn("s1"), AbortToken())


async def test_discard_leaves_the_previous_turn_findable(log: TurnLog) -> None:
    earlier = turn("s1")
    await log.open(earlier, AbortToken())
    log.append(earlier.turn_id, ContentEvent("hello"))
    log.append(earlier.turn_id, DoneEvent("m1", "hello"))
    await log.close(earlier.turn_id)
    never = turn("s1")
    await log.open(never, AbortToken())

    await log.discard(never.turn_id)

    state = await log.find(PROJECT, "s1")
    assert state is not None
    assert (state.info, state.last_seq, state.finished) == (earlier, 2, True)


# ==================================================================== appending
async def test_append_numbers_the_events_of_a_turn_from_one(log: TurnLog) -> None:
    one, two = turn("s1"), turn("s2")
    await log.open(one, AbortToken())
    await log.open(two, AbortToken())

    stamped = [
        log.append(one.turn_id, ContentEvent("a")),
        log.append(two.turn_id, ContentEvent("b")),
        log.append(one.turn_id, ToolStartEvent("get_nodes", "call-1")),
        log.append(one.turn_id, ContentEvent("c")),
    ]

    assert [(e.seq, e.session_id) for e in stamped] == [(1, "s1"), (1, "s2"), (2, "s1"), (3, "s1")]
    assert stamped[2].event == ToolStartEvent("get_nodes", "call-1")
    assert stamped[2].type == "tool_start"


# ================================================================== subscribing
async def test_subscribe_replays_after_a_sequence_number_then_follows_live_to_the_close(
    log: TurnLog,
) -> None:
    info = turn()
    await log.open(info, AbortToken())
    for text in ("a", "b", "c"):
        log.append(info.turn_id, ContentEvent(text))
    follower = asyncio.create_task(read_all(log, info.turn_id, after=1))
    await asyncio.sleep(0.05)  # the follower has replayed and now waits for more
    assert not follower.done()

    log.append(info.turn_id, ContentEvent("d"))
    log.append(info.turn_id, DoneEvent("m1", "abcd"))
    await log.close(info.turn_id)
    seen = await follower

    assert [e.seq for e in seen] == [2, 3, 4, 5]
    assert [e.event for e in seen] == [
        ContentEvent("b"),
        ContentEvent("c"),
        ContentEvent("d"),
        DoneEvent("m1", "abcd"),
    ]


async def test_every_follower_gets_every_event_once(log: TurnLog) -> None:
    info = turn()
    await log.open(info, AbortToken())
    early = asyncio.create_task(read_all(log, info.turn_id))
    log.append(info.turn_id, ContentEvent("a"))
    late = asyncio.create_task(read_all(log, info.turn_id))
    log.append(info.turn_id, ContentEvent("b"))
    log.append(info.turn_id, DoneEvent("m1", "ab"))
    await log.close(info.turn_id)

    for seen in await asyncio.gather(early, late):
        assert [e.seq for e in seen] == [1, 2, 3]


async def test_a_closed_turn_is_replayed_whole_within_its_retention(log: TurnLog) -> None:
    info = turn()
    await log.open(info, AbortToken())
    log.append(info.turn_id, ContentEvent("a"))
    log.append(info.turn_id, DoneEvent("m1", "a"))
    await log.close(info.turn_id)

    assert [e.seq for e in await read_all(log, info.turn_id)] == [1, 2]
    assert [e.seq for e in await read_all(log, info.turn_id, after=1)] == [2]
    assert await read_all(log, info.turn_id, after=2) == []


async def test_subscribing_to_an_unknown_turn_yields_nothing(log: TurnLog) -> None:
    assert await read_all(log, "no-such-turn") == []


async def test_a_quiet_turn_sends_heartbeats_that_are_not_numbered(log: TurnLog) -> None:
    info = turn()
    await log.open(info, AbortToken())
    log.append(info.turn_id, ContentEvent("a"))
    seen: list[TurnEvent] = []

    async def follow() -> None:
        async for event in log.subscribe(info.turn_id, heartbeat=0.05):
            seen.append(event)

    follower = asyncio.create_task(follow())
    await eventually(lambda: sum(e.seq == 0 for e in seen) >= 2)
    log.append(info.turn_id, ContentEvent("b"))
    log.append(info.turn_id, DoneEvent("m1", "ab"))
    await log.close(info.turn_id)
    async with asyncio.timeout(5):
        await follower

    beats = [e for e in seen if e.seq == 0]
    assert all(e.event == HeartbeatEvent() and e.session_id == "s1" for e in beats)
    assert [e.seq for e in seen if e.seq] == [1, 2, 3]
    assert seen[0].seq == 1  # the replay comes first
    assert seen[-1].event == DoneEvent("m1", "ab")  # nothing after the close


# ====================================================================== finding
async def test_find_tells_where_a_turn_stands_before_and_after_it_closes(log: TurnLog) -> None:
    info = turn()
    assert await log.find(PROJECT, "s1") is None
    await log.open(info, AbortToken())
    log.append(info.turn_id, ContentEvent("a"))

    running = await log.find(PROJECT, "s1")
    log.append(info.turn_id, DoneEvent("m1", "a"))
    await log.close(info.turn_id)
    closed = await log.find(PROJECT, "s1")

    assert running is not None and closed is not None
    assert (running.info, running.last_seq, running.finished) == (info, 1, False)
    assert (closed.info, closed.last_seq, closed.finished) == (info, 2, True)
    assert await log.find("project-2", "s1") is None


async def test_a_closed_turn_is_forgotten_after_its_retention(make_log: LogFactory) -> None:
    async with make_log(0.2) as log:
        info = turn()
        await log.open(info, AbortToken())
        log.append(info.turn_id, DoneEvent(None))
        await log.close(info.turn_id)
        assert await log.find(PROJECT, "s1") is not None

        async with asyncio.timeout(5):
            while await log.find(PROJECT, "s1") is not None:
                await asyncio.sleep(0.02)

        assert await read_all(log, info.turn_id) == []
        await log.open(turn("s1"), AbortToken())


async def test_a_running_turn_is_kept_past_the_retention(make_log: LogFactory) -> None:
    async with make_log(0.05) as log:
        info = turn()
        await log.open(info, AbortToken())
        log.append(info.turn_id, ContentEvent("a"))
        await asyncio.sleep(0.2)

        state = await log.find(PROJECT, "s1")

        assert state is not None and not state.finished
        log.append(info.turn_id, DoneEvent(None))
        await log.close(info.turn_id)


async def test_a_retained_answer_keeps_its_tokens_as_text_not_as_event_objects(
    log: TurnLog,
) -> None:
    # Thousands of tokens stay for the retention after the turn: kept as event objects,
    # each would be one more object for the garbage collector to visit on every pass.
    def events_alive() -> int:
        gc.collect()
        return sum(1 for o in gc.get_objects() if isinstance(o, ContentEvent | TurnEvent))

    before = events_alive()  # (other tests' events may still be around)
    info = turn()
    await log.open(info, AbortToken())
    for n in range(2000):
        log.append(info.turn_id, ContentEvent(f" token{n}"))
    log.append(info.turn_id, DoneEvent(None))
    await log.close(info.turn_id)

    assert events_alive() <= before
    replayed = await read_all(log, info.turn_id)
    assert [e.event for e in replayed[:2]] == [ContentEvent(" token0"), ContentEvent(" token1")]
    assert (replayed[-1].seq, replayed[-1].event) == (2001, DoneEvent(None))


# ==================================================================== approvals
def approval(approval_id: str) -> ApprovalRequiredEvent:
    return ApprovalRequiredEvent(
        approval_id, f"call-{approval_id}", "set_ip", {"device": "PC1"}, {"summary": "x"}
    )


async def test_find_lists_the_waiting_approvals_with_their_numbers_until_resolved(
    log: TurnLog,
) -> None:
    info = turn("s1")
    await log.open(info, AbortToken())
    log.append(info.turn_id, ContentEvent("a"))
    log.append(info.turn_id, approval("ap-1"))
    log.append(info.turn_id, approval("ap-2"))
    log.append(info.turn_id, ApprovalResolvedEvent("ap-1", "call-ap-1", "approve", "alice"))

    waiting = await log.find(PROJECT, "s1")
    log.append(info.turn_id, approval("ap-3"))
    log.append(info.turn_id, DoneEvent(None))
    await log.close(info.turn_id)
    closed = await log.find(PROJECT, "s1")

    assert waiting is not None and closed is not None
    assert [(e.seq, e.session_id, e.event) for e in waiting.pending] == [
        (3, "s1", approval("ap-2"))
    ]
    assert closed.pending == ()


EVERY_KIND: list[WireEvent] = [
    ContentEvent(" a streamed token ☃"),
    ContentEvent("Bonjour ☃ \ud83d", from_answer=True),
    ToolCallEvent("call_1", "get_topology", '{"x": 1', complete=False),
    ToolStartEvent("get_topology", "call_1"),
    ToolProgressEvent("get_topology", "call_1", "R1: ok", device="R1"),
    ToolEndEvent("get_topology", "call_1", {"nodes": [1, "two", None]}, "success", 0.25),
    ApprovalRequiredEvent("ap", "call_2", "set_ip", {"device": "R1"}, {"summary": "x"}),
    ApprovalResolvedEvent("ap", "call_2", "reject", "alice", "not now", "decided"),
    StatusEvent("step_limit", "20 calls", {"calls": 20}),
    StepEvent(2, 5, "done"),
    PlanEvent(("look", "fix"), 1),
    ThinkingEvent("hmm"),
    AnswerEvent("42", 1.5, 3, 2),
    AgentErrorEvent("it broke"),
    ErrorEvent("LLM down", "llm_unavailable"),
    AbortEvent(),
    DoneEvent("m-9", "final"),
]


async def test_every_kind_of_event_comes_back_numbered_and_equal(log: TurnLog) -> None:
    info = turn()
    await log.open(info, AbortToken())
    stamped = [log.append(info.turn_id, event) for event in EVERY_KIND]
    assert [e.seq for e in stamped] == list(range(1, len(EVERY_KIND) + 1))
    await log.close(info.turn_id)
    got = await read_all(log, info.turn_id)
    assert [e.event for e in got] == EVERY_KIND
    assert {e.session_id for e in got} == {"s1"}


async def test_a_follower_that_stops_early_leaves_the_turn_running(log: TurnLog) -> None:
    info = turn()
    await log.open(info, AbortToken())
    log.append(info.turn_id, ContentEvent("a"))
    async with asyncio.timeout(5):
        async for event in log.subscribe(info.turn_id):
            assert event.seq == 1
            break
    log.append(info.turn_id, ContentEvent("b"))
    state = await log.find(PROJECT, "s1")
    assert state is not None
    assert (state.last_seq, state.finished) == (2, False)
