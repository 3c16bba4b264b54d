"""A replica's stop cannot hang on closing its subscription: redis-py's ``PubSub.aclose``
can wait forever for the socket to close (redis-py#3941; a replica's stop hung 120 s in
CI). The close is bounded, and the connection is then dropped without waiting."""

from __future__ import annotations

import asyncio
from typing import Any

from adapters.redis import _relay


class _Connection:
    def __init__(self) -> None:
        self.dropped: list[bool] = []

    async def disconnect(self, nowait: bool = False) -> None:
        self.dropped.append(nowait)


class _HangingSubscription:
    def __init__(self) -> None:
        self.connection = _Connection()

    async def aclose(self) -> None:
        await asyncio.Event().wait()  # as the socket's wait_closed that never returns


async def test_a_close_that_never_returns_is_given_up_and_the_connection_dropped(
    monkeypatch: Any,
) -> None:
    monkeypatch.setattr(_relay, "_CLOSE_WAIT", 0.2)
    pubsub = _HangingSubscription()
    async with asyncio.timeout(30):  # without the bound, this would wait for good
        await _relay._close_quietly(pubsub)  # type: ignore[arg-type]
    assert pubsub.connection.dropped == [True]
