"""The ports of running turns, opened for the container: on Redis when ``redis_url`` is
set (every replica shares them), else in this process's memory.

The Redis client is one resource (a clear ``ServiceUnavailableError`` when Redis cannot
be used); the turn log, the session leases and the turn control relay each start their
background work over it when opened and stop it when closed.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Protocol, TypeVar

from pydantic import SecretStr

from copilot_core.bootstrap import InMemorySessionLeases, InMemoryTurnControlRelay, InMemoryTurnLog

if TYPE_CHECKING:  # imported when Redis is used (the client library costs start-up time)
    import redis.asyncio as aioredis

    from adapters.redis import RedisSessionLeases, RedisTurnControlRelay, RedisTurnLog

__all__ = ["open_redis", "open_session_leases", "open_turn_controls", "open_turn_log"]


class _Started(Protocol):
    async def start(self) -> None: ...

    async def stop(self) -> None: ...


S = TypeVar("S", bound=_Started)


@asynccontextmanager
async def _running(part: S) -> AsyncIterator[S]:
    await part.start()
    try:
        yield part
    finally:
        await part.stop()


async def open_redis(url: SecretStr | None) -> AsyncIterator[aioredis.Redis | None]:
    """A checked Redis client when ``redis_url`` is set, else ``None``."""
    if url is None:
        yield None
        return
    from adapters.redis import connect_redis

    client = await connect_redis(url.get_secret_value())
    try:
        yield client
    finally:
        await client.aclose()


async def open_turn_log(
    client: aioredis.Redis | None, retention: float, lease: float, prefix: str
) -> AsyncIterator[RedisTurnLog | InMemoryTurnLog]:
    """Running turns' events, kept ``retention`` seconds after each turn."""
    if client is None:
        yield InMemoryTurnLog(retention=retention)
        return
    from adapters.redis import RedisTurnLog

    async with _running(
        RedisTurnLog(client, retention=retention, lease=lease, prefix=prefix)
    ) as turn_log:
        yield turn_log


async def open_session_leases(
    client: aioredis.Redis | None, lease: float, prefix: str
) -> AsyncIterator[RedisSessionLeases | InMemorySessionLeases]:
    """Who holds each session (a turn, a rollback)."""
    if client is None:
        yield InMemorySessionLeases()
        return
    from adapters.redis import RedisSessionLeases

    async with _running(RedisSessionLeases(client, lease=lease, prefix=prefix)) as leases:
        yield leases


async def open_turn_controls(
    client: aioredis.Redis | None, lease: float, prefix: str
) -> AsyncIterator[RedisTurnControlRelay | InMemoryTurnControlRelay]:
    """Aborts and approval decisions, to the turn wherever it runs."""
    if client is None:
        yield InMemoryTurnControlRelay()
        return
    from adapters.redis import RedisTurnControlRelay

    async with _running(RedisTurnControlRelay(client, lease=lease, prefix=prefix)) as relay:
        yield relay
