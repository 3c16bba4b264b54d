"""Several replicas on one Redis: follow, re-attach and abort a turn another replica runs;
one turn per session across replicas; a replica that dies (even by SIGKILL) has its
turn ended for its watchers once its lease expires, and the session is free again."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import redis.asyncio as aioredis
from redis.exceptions import ConnectionError as RedisConnectionError

from adapters.redis import REPLICA_LOST
from copilot_core.errors import SessionBusyError
from copilot_core.events import ContentEvent, DoneEvent, ErrorEvent, TurnEvent
from copilot_core.ports import TurnControl, TurnInfo
from tests.adapters.redis.replica import Replica
from tests.real_redis import RedisForTests

ROOT = Path(__file__).resolve().parents[3]
PROJECT = str(uuid.UUID(int=11))


@contextlib.asynccontextmanager
async def replicas(
    redis_server: RedisForTests, count: int = 2, lease: float = 15.0
) -> AsyncIterator[tuple[aioredis.Redis, list[Replica]]]:
    prefix = redis_server.new_prefix()
    async with redis_server.client() as client:
        logs = [Replica.on(client, prefix=prefix, lease=lease, name=f"r{n}") for n in range(count)]
        for log in logs:
            await log.start()
        try:
            yield client, logs
        finally:
            for log in logs:
                await log.stop()
            await redis_server.delete_prefix(client, prefix)


def info(session: str = "s1") -> TurnInfo:
    return TurnInfo(f"t-{uuid.uuid4().hex[:8]}", PROJECT, session, "alice")


async def follow(log: Replica, turn_id: str, after: int = 0) -> list[TurnEvent]:
    async with asyncio.timeout(20):
        return [event async for event in log.subscribe(turn_id, after=after)]


async def test_another_replica_follows_a_turn_live_and_re_attaches_with_nothing_lost(
    redis_server: RedisForTests,
) -> None:
    async with replicas(redis_server) as (_, (a, b)):
        turn = info()
        await a.open(turn, TurnControl())
        for n in range(3):
            a.append(turn.turn_id, ContentEvent(f"{n}"))
        watcher = asyncio.create_task(follow(b, turn.turn_id))
        await asyncio.sleep(0.1)
        for n in range(3, 200):  # a stream of tokens while B watches
            a.append(turn.turn_id, ContentEvent(f"{n}"))
            if n % 50 == 0:
                await asyncio.sleep(0)
        a.append(turn.turn_id, DoneEvent("m1", "answer"))
        resumed = await follow(b, turn.turn_id, after=120)  # as with Last-Event-ID: 120
        await a.close(turn.turn_id)
        seen = await watcher
        assert [e.seq for e in seen] == list(range(1, 202))
        assert [e.event for e in seen[:-1]] == [ContentEvent(f"{n}") for n in range(200)]
        assert seen[-1].event == DoneEvent("m1", "answer")
        assert [e.seq for e in resumed] == list(range(121, 202))
        state = await b.find(PROJECT, "s1")
        assert state is not None
        assert (state.info, state.last_seq, state.finished) == (turn, 201, True)


async def test_an_abort_asked_on_another_replica_reaches_the_running_one(
    redis_server: RedisForTests,
) -> None:
    async with replicas(redis_server) as (_, (a, b)):
        control = TurnControl()
        token = control.abort
        turn = info()
        await a.open(turn, control)
        assert await b.request_abort(PROJECT, "s1", "stop from B") is True
        async with asyncio.timeout(5):
            await token.wait()
        assert token.reason == "stop from B"


async def test_an_abort_published_while_nobody_listened_arrives_with_the_next_renewal(
    redis_server: RedisForTests,
) -> None:
    async with replicas(redis_server, count=1, lease=0.6) as (client, (a,)):
        control = TurnControl()
        token = control.abort
        turn = info()
        await a.open(turn, control)
        # As if A missed the message (reconnecting): only the session's hash says it.
        await client.hset(f"{a.prefix}:control:{PROJECT}:s1", "abort", "late")
        async with asyncio.timeout(5):
            await token.wait()
        assert token.reason == "late"


async def test_a_session_has_one_running_turn_across_replicas(
    redis_server: RedisForTests,
) -> None:
    async with replicas(redis_server) as (_, (a, b)):
        turn = info()
        await a.open(turn, TurnControl())
        with pytest.raises(SessionBusyError):
            await b.open(info(), TurnControl())
        a.append(turn.turn_id, DoneEvent(None, ""))
        await a.close(turn.turn_id)
        await b.open(info(), TurnControl())


async def test_a_turn_whose_replica_stopped_renewing_is_ended_for_its_watchers(
    redis_server: RedisForTests,
) -> None:
    async with replicas(redis_server, lease=0.6) as (_, (a, b)):
        control = TurnControl()
        token = control.abort
        turn = info()
        await a.open(turn, control)
        a.append(turn.turn_id, ContentEvent("partial"))
        await a.flush(turn.turn_id)
        watcher = asyncio.create_task(follow(b, turn.turn_id))
        a.hang()  # no more renewals, no more listening
        seen = await watcher
        assert [e.seq for e in seen] == [1, 2, 3]
        assert seen[0].event == ContentEvent("partial")
        error = seen[1].event
        assert isinstance(error, ErrorEvent)
        assert error.code == REPLICA_LOST
        assert seen[2].event == DoneEvent(None, "")
        await b.open(info(), TurnControl())  # the session is free
        # A wakes up and writes on: its stream refuses, and its turn is aborted.
        a.append(turn.turn_id, ContentEvent("too late"))
        async with asyncio.timeout(5):
            await token.wait()
        assert [e.seq for e in await follow(b, turn.turn_id)] == [1, 2, 3]


async def test_a_replica_killed_mid_turn_has_its_turn_ended_and_the_session_freed(
    redis_server: RedisForTests,
) -> None:
    prefix = redis_server.new_prefix()
    turn = info()
    victim = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tests.adapters.redis.turn_holder", redis_server.url,
        prefix, PROJECT, turn.session_id, turn.turn_id, "1.0",
        cwd=ROOT, stdout=subprocess.PIPE,
    )  # fmt: skip
    try:
        assert victim.stdout is not None
        line = await asyncio.wait_for(victim.stdout.readline(), 20)
        assert line.strip() == b"ready"
        async with redis_server.client() as client:
            watcher_log = Replica.on(client, prefix=prefix, lease=1.0, name="watcher")
            await watcher_log.start()
            try:
                with pytest.raises(SessionBusyError):  # the victim holds the session
                    await watcher_log.open(info(), TurnControl())
                watcher = asyncio.create_task(follow(watcher_log, turn.turn_id))
                await asyncio.sleep(0.2)
                victim.kill()  # SIGKILL: nothing is closed, nothing is said
                await asyncio.wait_for(victim.wait(), 10)
                seen = await watcher
                assert [e.seq for e in seen] == [1, 2, 3, 4, 5]
                assert [e.event for e in seen[:3]] == [ContentEvent(f"part {n}") for n in range(3)]
                assert isinstance(seen[3].event, ErrorEvent)
                assert seen[3].event.code == REPLICA_LOST
                assert seen[4].event == DoneEvent(None, "")
                state = await watcher_log.find(PROJECT, turn.session_id)
                assert state is not None
                assert state.finished
                await watcher_log.open(info(), TurnControl())
            finally:
                await watcher_log.stop()
                await redis_server.delete_prefix(client, prefix)
    finally:
        if victim.returncode is None:
            victim.kill()
            await asyncio.wait_for(victim.wait(), 10)


async def test_closing_writes_the_last_events_with_the_close_in_one_step(
    redis_server: RedisForTests, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with replicas(redis_server) as (client, (a, b)):
        turn = info()
        await a.open(turn, TurnControl())
        a.append(turn.turn_id, ContentEvent("first"))
        await a.flush(turn.turn_id)
        script, appended = a.log._append_script, []

        async def counted(*, keys: list[str], args: list[str]) -> object:
            appended.append(args[0])
            return await script(keys=keys, args=args)

        monkeypatch.setattr(a.log, "_append_script", counted)
        await a.let_go(turn.turn_id)  # as the runner does before its last events
        a.append(turn.turn_id, ContentEvent("last"))
        a.append(turn.turn_id, DoneEvent("m1", "first last"))
        await a.close(turn.turn_id)
        # The two last events went in as one stream entry, with the close: the event
        # writer sent nothing more after the flush.
        assert appended == []
        entries = await client.xrange(f"{a.prefix}:turn:{turn.turn_id}:events")
        assert [entry_id for entry_id, _ in entries] == [b"1-0", b"3-0"]
        seen = await follow(b, turn.turn_id)
        assert [e.event for e in seen] == [
            ContentEvent("first"),
            ContentEvent("last"),
            DoneEvent("m1", "first last"),
        ]
        await b.open(info(), TurnControl())  # the session is free


async def test_a_close_that_fails_in_one_step_writes_the_events_and_closes_the_slow_way(
    redis_server: RedisForTests, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with replicas(redis_server) as (_, (a, b)):
        turn = info()
        await a.open(turn, TurnControl())
        await a.let_go(turn.turn_id)
        a.append(turn.turn_id, ContentEvent("only"))
        a.append(turn.turn_id, DoneEvent("m1", "only"))
        script, calls = a.log._close_script, []

        async def flaky(*, keys: list[str], args: list[str]) -> object:
            calls.append(len(args))
            if len(calls) == 1:
                raise RedisConnectionError("the connection dropped")
            return await script(keys=keys, args=args)

        monkeypatch.setattr(a.log, "_close_script", flaky)
        await a.close(turn.turn_id)
        assert calls[0] > 2 and calls[1] == 2  # with the events, then the plain close
        seen = await follow(b, turn.turn_id)
        assert [e.event for e in seen] == [ContentEvent("only"), DoneEvent("m1", "only")]
        state = await b.find(PROJECT, "s1")
        assert state is not None and state.finished


async def collect(log: Replica, turn_id: str, into: list[TurnEvent]) -> None:
    async for event in log.subscribe(turn_id):
        into.append(event)


async def test_a_client_of_a_replica_that_dies_re_attaches_elsewhere_and_sees_the_turn_end(
    redis_server: RedisForTests,
) -> None:
    """The running replica's clients see an event only once other replicas can: one that
    dies with events not yet written leaves its clients right before them, so that
    re-attaching on another replica goes on with the ``error`` and ``done`` that end the
    turn (a client ahead of Redis would get neither, and ids used twice)."""
    async with replicas(redis_server, lease=0.6) as (_, (a, b)):
        turn = info()
        await a.open(turn, TurnControl())
        for n in range(3):
            a.append(turn.turn_id, ContentEvent(f"{n}"))
        await a.flush(turn.turn_id)
        on_a: list[TurnEvent] = []
        client = asyncio.create_task(collect(a, turn.turn_id, on_a))
        try:
            for n in range(3, 6):
                a.append(turn.turn_id, ContentEvent(f"{n}"))
            # A dies before its writer ran: 4 to 6 never reach Redis.
            writer = a.log._local[turn.turn_id].writer
            assert writer is not None
            writer.cancel()
            a.hang()
            await asyncio.sleep(0.3)
            assert [e.seq for e in on_a] == [1, 2, 3]
        finally:
            client.cancel()
        resumed = await follow(b, turn.turn_id, after=on_a[-1].seq)
        assert [e.seq for e in resumed] == [4, 5]
        error = resumed[0].event
        assert isinstance(error, ErrorEvent)
        assert error.code == REPLICA_LOST
        assert resumed[1].event == DoneEvent(None, "")


async def test_while_redis_refuses_writes_the_running_replicas_clients_still_follow(
    redis_server: RedisForTests, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with replicas(redis_server, count=1) as (_, (a,)):
        turn = info()
        await a.open(turn, TurnControl())

        async def refused(*args: object, **kwargs: object) -> int:
            raise RedisConnectionError("Redis went away")

        monkeypatch.setattr(a.log, "_append_script", refused)
        on_a: list[TurnEvent] = []
        client = asyncio.create_task(collect(a, turn.turn_id, on_a))
        try:
            for n in range(3):
                a.append(turn.turn_id, ContentEvent(f"{n}"))
            async with asyncio.timeout(5):
                while len(on_a) < 3:
                    await asyncio.sleep(0.01)
            assert [e.event for e in on_a] == [ContentEvent(f"{n}") for n in range(3)]
        finally:
            client.cancel()
            monkeypatch.undo()
            a.log._local[turn.turn_id].given_up()


async def test_a_claim_whose_replica_stopped_renewing_expires_and_is_lost_when_it_wakes(
    redis_server: RedisForTests,
) -> None:
    async with replicas(redis_server, lease=0.4) as (_, (a, b)):
        claim = await a.leases.claim(PROJECT, "s1", "rollback-1")
        task = a.leases._renewals.task
        assert task is not None
        task.cancel()  # A hangs
        async with asyncio.timeout(5):
            while True:
                with contextlib.suppress(SessionBusyError):
                    taken = await b.leases.claim(PROJECT, "s1", "turn-2")
                    break
                await asyncio.sleep(0.05)
        assert not claim.lost.is_aborted()

        a.leases._renewals.task = None
        a.leases._renewals.start()  # A wakes up: its next renewal finds B's claim
        async with asyncio.timeout(5):
            await claim.lost.wait()
        await a.leases.release(claim)  # too late: it leaves B's claim alone
        with pytest.raises(SessionBusyError):
            await a.leases.claim(PROJECT, "s1", "turn-3")
        await b.leases.release(taken)
