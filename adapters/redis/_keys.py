"""What the Redis adapters share: key names under one prefix, errors translated at the
edge, and small conversions.

Every key starts with the prefix (``gns3-copilot`` by default), so that several
deployments can share one Redis. Each port's module says which keys it owns.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from redis.exceptions import RedisError

from copilot_core.errors import ServiceUnavailableError

__all__ = ["Keys", "RenewalLoop", "call", "ms", "text"]

log = logging.getLogger(__name__)

T = TypeVar("T")


class Keys:
    """The names of the keys under ``prefix``."""

    __slots__ = ("prefix",)

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix

    def lease(self, project_id: str, session_id: str) -> str:
        return f"{self.prefix}:lease:{project_id}:{session_id}"

    def pointer(self, project_id: str, session_id: str) -> str:
        return f"{self.prefix}:session:{project_id}:{session_id}"

    def control(self, project_id: str, session_id: str) -> str:
        return f"{self.prefix}:control:{project_id}:{session_id}"

    def turn(self, turn_id: str, part: str = "") -> str:
        return f"{self.prefix}:turn:{turn_id}{':' + part if part else ''}"

    def turn_keys(self, turn_id: str, project_id: str, session_id: str) -> list[str]:
        """A turn's hash, events, waiting approvals, writer, and its session's pointer to
        its latest turn: the keys the turn log's scripts take, in that order."""
        return [
            self.turn(turn_id),
            self.turn(turn_id, "events"),
            self.turn(turn_id, "waiting"),
            self.turn(turn_id, "writer"),
            self.pointer(project_id, session_id),
        ]

    def channel(self, name: str) -> str:
        return f"{self.prefix}:{name}"


async def call(awaitable: Awaitable[T], what: str = "turn log") -> T:
    """Await a Redis command; a Redis that cannot be reached is a
    ``ServiceUnavailableError`` that says so."""
    try:
        return await awaitable
    except (RedisError, OSError) as exc:
        raise ServiceUnavailableError(
            f"The {what.removeprefix('the ')} (Redis) cannot be reached: "
            f"{str(exc).rstrip('.') or type(exc).__name__}. Try again in a moment.",
            retry_after=2,
        ) from None


def ms(seconds: float) -> int:
    return max(1, round(seconds * 1000))


def text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bytes):
        return value.decode()
    return str(value)


class RenewalLoop:
    """A task that runs ``renew`` every ``interval`` seconds until stopped; a renewal
    that fails is logged and tried again at the next tick."""

    __slots__ = ("_interval", "_name", "_renew", "task")

    def __init__(self, name: str, interval: float, renew: Callable[[], Awaitable[None]]) -> None:
        self._name = name
        self._interval = interval
        self._renew = renew
        self.task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self.task is None:
            self.task = asyncio.create_task(self._run(), name=self._name)

    async def stop(self) -> None:
        task, self.task = self.task, None
        if task is None:
            return
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self._interval)
            try:
                await self._renew()
            except (RedisError, OSError) as exc:
                log.warning("%s failed: %s", self._name, exc)
