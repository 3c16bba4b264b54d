"""The TurnLog contract: one set of assertions, run on the in-memory log and on Redis.

To add a log, add one entry to ``LOGS``: an async context manager factory that yields
a ready log with the given retention. The Redis log runs on the real server
(127.0.0.1:6379, ``GNS3_COPILOT_TEST_REDIS_URL``) under a key prefix of its own per
test, whose keys are deleted afterwards (``tests/real_redis.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator, Callable

import pytest

from adapters.redis import RedisTurnLog
from copilot_core.abort import AbortToken
from copilot_core.errors import SessionBusyError
from copilot_core.events import (
    AbortEvent,
    AgentErrorEvent,
    AnswerEvent,
    ContentEvent,
    DoneEvent,
    ErrorEvent,
    PlanEvent,
    StatusEvent,
    StepEvent,
    ThinkingEvent,
    ToolCallEvent,
    ToolEndEvent,
    ToolProgressEvent,
    ToolStartEvent,
    TurnEvent,
    WireEvent,
)
from copilot_core.ports import TurnLog
from copilot_core.turnlog import InMemoryTurnLog
from copilot_core.turns import TurnInfo
from tests.real_redis import RedisForTests

LogFactory = Callable[
    [pytest.FixtureRequest, float], contextlib.AbstractAsyncContextManager[TurnLog]
]
MakeLog = Callable[[float], contextlib.AbstractAsyncContextManager[TurnLog]]
PROJECT = str(uuid.UUID(int=5))


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


LOGS: dict[str, LogFactory] = {"in_memory": _in_memory, "redis": _redis}


@pytest.fixture(params=sorted(LOGS))
def make_log(
    request: pytest.FixtureRequest,
) -> Callable[[float], contextlib.AbstractAsyncContextManager[TurnLog]]:
    def make(retention: float = 60.0) -> contextlib.AbstractAsyncContextManager[TurnLog]:
        return LOGS[request.param](request, retention)

    return make


@pytest.fixture
async def turn_log(make_log: MakeLog) -> AsyncIterator[TurnLog]:
    async with make_log(60.0) as log:
        yield log


def info(session: str = "s1", turn: str | None = None, user: str = "alice") -> TurnInfo:
    return TurnInfo(turn or f"t-{uuid.uuid4().hex[:8]}", PROJECT, session, user)


EVERY_KIND: list[WireEvent] = [
    ContentEvent("Bonjour ☃ \ud83d", from_answer=True),
    ToolCallEvent("call_1", "get_topology", '{"x": 1', complete=False),
    ToolStartEvent("get_topology", "call_1"),
    ToolProgressEvent("get_topology", "call_1", "R1: ok", device="R1"),
    ToolEndEvent("get_topology", "call_1", {"nodes": [1, "two", None]}, "success", 0.25),
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


async def collect(log: TurnLog, turn_id: str, after: int = 0, limit: int = 1000) -> list[TurnEvent]:
    got: list[TurnEvent] = []
    async with asyncio.timeout(10):
        async for event in log.subscribe(turn_id, after=after):
            got.append(event)
            if len(got) >= limit:
                break
    return got


# ======================================================================= events
async def test_every_kind_of_event_comes_back_numbered_and_equal(turn_log: TurnLog) -> None:
    turn = info()
    await turn_log.open(turn, AbortToken())
    stamped = [turn_log.append(turn.turn_id, event) for event in EVERY_KIND]
    assert [e.seq for e in stamped] == list(range(1, len(EVERY_KIND) + 1))
    await turn_log.close(turn.turn_id)
    got = await collect(turn_log, turn.turn_id)
    assert [e.seq for e in got] == list(range(1, len(EVERY_KIND) + 1))
    assert [e.event for e in got] == EVERY_KIND
    assert {e.session_id for e in got} == {"s1"}


async def test_following_from_a_sequence_number_misses_and_repeats_nothing(
    turn_log: TurnLog,
) -> None:
    turn = info()
    await turn_log.open(turn, AbortToken())
    for n in range(5):
        turn_log.append(turn.turn_id, ContentEvent(f"part {n}"))
    late = asyncio.create_task(collect(turn_log, turn.turn_id, after=3))
    first = asyncio.create_task(collect(turn_log, turn.turn_id))
    await asyncio.sleep(0.05)
    for n in range(5, 8):
        turn_log.append(turn.turn_id, ContentEvent(f"part {n}"))
    turn_log.append(turn.turn_id, DoneEvent("m", ""))
    await turn_log.close(turn.turn_id)
    assert [e.seq for e in await late] == [4, 5, 6, 7, 8, 9]
    assert [e.seq for e in await first] == list(range(1, 10))


async def test_a_follower_that_stops_early_leaves_the_turn_running(turn_log: TurnLog) -> None:
    turn = info()
    await turn_log.open(turn, AbortToken())
    turn_log.append(turn.turn_id, ContentEvent("a"))
    assert [e.seq for e in await collect(turn_log, turn.turn_id, limit=1)] == [1]
    turn_log.append(turn.turn_id, ContentEvent("b"))
    state = await turn_log.find(PROJECT, "s1")
    assert state is not None
    assert (state.last_seq, state.finished) == (2, False)


async def test_heartbeats_come_while_the_turn_is_quiet_and_are_not_numbered(
    turn_log: TurnLog,
) -> None:
    turn = info()
    await turn_log.open(turn, AbortToken())
    got: list[TurnEvent] = []

    async def follow() -> None:
        async for event in turn_log.subscribe(turn.turn_id, heartbeat=0.1):
            got.append(event)

    task = asyncio.create_task(follow())
    await asyncio.sleep(0.45)
    turn_log.append(turn.turn_id, DoneEvent(None, ""))
    await turn_log.close(turn.turn_id)
    await asyncio.wait_for(task, 5)
    beats = [e for e in got if e.event.type == "heartbeat"]
    assert len(beats) >= 2
    assert all(e.seq == 0 for e in beats)
    assert got[-1].event == DoneEvent(None, "")


async def test_an_unknown_turn_yields_nothing(turn_log: TurnLog) -> None:
    assert await collect(turn_log, "no-such-turn") == []
    assert await turn_log.find(PROJECT, "nobody") is None


# ===================================================================== sessions
async def test_a_session_has_one_open_turn_at_a_time(turn_log: TurnLog) -> None:
    first = info()
    await turn_log.open(first, AbortToken())
    with pytest.raises(SessionBusyError):
        await turn_log.open(info(), AbortToken())
    await turn_log.open(info(session="s2"), AbortToken())  # another session: fine
    turn_log.append(first.turn_id, DoneEvent(None, ""))
    await turn_log.close(first.turn_id)
    second = info()
    await turn_log.open(second, AbortToken())
    state = await turn_log.find(PROJECT, "s1")
    assert state is not None
    assert state.info == second
    assert (state.last_seq, state.finished) == (0, False)


async def test_find_reports_the_latest_turn_and_whether_it_ended(turn_log: TurnLog) -> None:
    turn = info()
    await turn_log.open(turn, AbortToken())
    turn_log.append(turn.turn_id, ContentEvent("x"))
    turn_log.append(turn.turn_id, DoneEvent(None, ""))
    await turn_log.close(turn.turn_id)
    state = await turn_log.find(PROJECT, "s1")
    assert state is not None
    assert state.info == turn
    assert (state.last_seq, state.finished) == (2, True)


async def test_discarding_a_turn_that_never_started_frees_the_session_and_restores_the_last(
    turn_log: TurnLog,
) -> None:
    done = info()
    await turn_log.open(done, AbortToken())
    turn_log.append(done.turn_id, DoneEvent(None, ""))
    await turn_log.close(done.turn_id)
    failed = info()
    await turn_log.open(failed, AbortToken())
    await turn_log.discard(failed.turn_id)
    state = await turn_log.find(PROJECT, "s1")
    assert state is not None
    assert state.info == done
    assert await collect(turn_log, failed.turn_id) == []
    await turn_log.open(info(), AbortToken())  # the session is free


async def test_a_finished_turn_is_kept_for_the_retention_time_then_forgotten(
    make_log: MakeLog,
) -> None:
    async with make_log(0.3) as log:
        turn = info()
        await log.open(turn, AbortToken())
        log.append(turn.turn_id, DoneEvent(None, ""))
        await log.close(turn.turn_id)
        assert [e.seq for e in await collect(log, turn.turn_id)] == [1]
        for _ in range(100):
            await asyncio.sleep(0.05)
            if await log.find(PROJECT, "s1") is None:
                break
        assert await log.find(PROJECT, "s1") is None
        assert await collect(log, turn.turn_id) == []


# ======================================================================== abort
async def test_request_abort_sets_the_open_turns_token_once(turn_log: TurnLog) -> None:
    token = AbortToken()
    turn = info()
    await turn_log.open(turn, token)
    assert await turn_log.request_abort(PROJECT, "s1", "stop it") is True
    assert token.is_aborted()
    assert token.reason == "stop it"
    turn_log.append(turn.turn_id, DoneEvent(None, ""))
    await turn_log.close(turn.turn_id)
    assert await turn_log.request_abort(PROJECT, "s1", "again") is False
    assert await turn_log.request_abort(PROJECT, "nobody", "x") is False
