"""The SessionLeases contract: one set of assertions, run on the in-memory leases and on
Redis, each as two replicas that share the claims (one object in memory; two objects on
one key prefix on the real Redis, 127.0.0.1:6379, ``tests/real_redis.py``).

To add an implementation, add one entry to ``LEASES``: a name and an async context
manager factory that yields two ready replicas given the test's request and the lease
time in seconds. Every wait below is bounded.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable

import pytest

from adapters.redis import RedisSessionLeases
from copilot_core._leases import hold_session
from copilot_core.bootstrap import InMemorySessionLeases
from copilot_core.errors import SessionBusyError
from copilot_core.ports import SessionLeases
from tests.real_redis import RedisForTests

Pair = tuple[SessionLeases, SessionLeases]
Factory = Callable[[pytest.FixtureRequest, float], contextlib.AbstractAsyncContextManager[Pair]]

PROJECT = "project-1"


@contextlib.asynccontextmanager
async def _in_memory(request: pytest.FixtureRequest, lease: float) -> AsyncIterator[Pair]:
    leases = InMemorySessionLeases()
    yield leases, leases


@contextlib.asynccontextmanager
async def _redis(request: pytest.FixtureRequest, lease: float) -> AsyncIterator[Pair]:
    redis: RedisForTests = request.getfixturevalue("redis_server")
    prefix = redis.new_prefix()
    async with redis.client() as client:
        made = [RedisSessionLeases(client, lease=lease, prefix=prefix) for _ in range(2)]
        for leases in made:
            await leases.start()
        try:
            yield made[0], made[1]
        finally:
            for leases in made:
                await leases.stop()
            await redis.delete_prefix(client, prefix)


LEASES: dict[str, Factory] = {"in_memory": _in_memory, "redis": _redis}


@pytest.fixture(params=sorted(LEASES))
async def replicas(request: pytest.FixtureRequest) -> AsyncIterator[Pair]:
    async with LEASES[request.param](request, 15.0) as pair:
        yield pair


async def test_a_claim_holds_the_session_everywhere_until_it_is_released(
    replicas: Pair,
) -> None:
    a, b = replicas
    claim = await a.claim(PROJECT, "s1", "turn-1")
    assert (claim.project_id, claim.session_id, claim.holder) == (PROJECT, "s1", "turn-1")

    for leases in (a, b):
        with pytest.raises(SessionBusyError):
            await leases.claim(PROJECT, "s1", "turn-2")
        assert await leases.holder(PROJECT, "s1") == "turn-1"
    await b.claim(PROJECT, "s2", "turn-3")  # another session is free
    await b.claim("project-2", "s1", "turn-4")  # so is another project's

    await a.release(claim)
    assert await b.holder(PROJECT, "s1") is None
    again = await b.claim(PROJECT, "s1", "turn-5")  # released
    assert again.holder == "turn-5"
    assert not claim.lost.is_aborted()


async def test_releasing_a_claim_twice_leaves_the_next_holder_alone(replicas: Pair) -> None:
    a, b = replicas
    first = await a.claim(PROJECT, "s1", "turn-1")
    await a.release(first)
    await b.claim(PROJECT, "s1", "turn-2")

    await a.release(first)

    with pytest.raises(SessionBusyError):
        await a.claim(PROJECT, "s1", "turn-3")


async def test_hold_session_claims_for_a_block_and_releases_whatever_happens(
    replicas: Pair,
) -> None:
    a, b = replicas
    with pytest.raises(RuntimeError, match="rollback failed"):
        async with hold_session(a, PROJECT, "s1", "rollback-1") as claim:
            assert claim.holder == "rollback-1"
            with pytest.raises(SessionBusyError):
                await b.claim(PROJECT, "s1", "turn-1")
            raise RuntimeError("rollback failed")

    async with hold_session(b, PROJECT, "s1", "turn-1"):
        with pytest.raises(SessionBusyError):
            async with hold_session(a, PROJECT, "s1", "rollback-2"):
                pass  # never reached: the turn holds the session


async def test_a_claim_held_across_several_renewals_is_kept(request: pytest.FixtureRequest) -> None:
    for name in sorted(LEASES):
        async with LEASES[name](request, 0.3) as (a, b):
            claim = await a.claim(PROJECT, "s1", "turn-1")
            await asyncio.sleep(0.7)  # more than two leases: renewed meanwhile

            with pytest.raises(SessionBusyError):
                await b.claim(PROJECT, "s1", "turn-2")
            assert not claim.lost.is_aborted()
            await a.release(claim)
