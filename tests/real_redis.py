"""The real Redis server the tests use, under a key prefix of their own.

The server is the machine's (127.0.0.1:6379; another one with
``GNS3_COPILOT_TEST_REDIS_URL``). Each test gets a prefix ``copilot-test-<random>`` and
its keys are deleted afterwards.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import AsyncIterator

import redis
import redis.asyncio as aioredis

__all__ = ["REDIS_URL", "RedisForTests"]

REDIS_URL = os.environ.get("GNS3_COPILOT_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


class RedisForTests:
    def __init__(self, url: str = REDIS_URL) -> None:
        self.url = url

    def check(self) -> None:
        try:
            redis.Redis.from_url(self.url, socket_connect_timeout=3).ping()
        except redis.RedisError as exc:
            raise RuntimeError(
                f"The tests need Redis at {self.url} ({exc}). Start it: redis-server "
                '--daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no'
            ) from exc

    @contextlib.asynccontextmanager
    async def client(self) -> AsyncIterator[aioredis.Redis]:
        client = aioredis.Redis.from_url(self.url)
        try:
            yield client
        finally:
            await client.aclose()

    @staticmethod
    def new_prefix() -> str:
        return f"copilot-test-{uuid.uuid4().hex[:12]}"

    @staticmethod
    async def delete_prefix(client: aioredis.Redis, prefix: str) -> None:
        keys = [key async for key in client.scan_iter(match=f"{prefix}:*", count=500)]
        if keys:
            await client.delete(*keys)
