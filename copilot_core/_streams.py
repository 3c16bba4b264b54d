"""Async plumbing that makes waiting abortable without slowing the hot path."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable
from contextlib import suppress
from typing import TypeVar

from copilot_core._abort import AbortToken

__all__ = ["Aborted", "abortable", "race_abort"]

T = TypeVar("T")


class Aborted(Exception):
    """Raised by :func:`race_abort` when the token fires first."""


class _End:
    __slots__ = ()


class _Failed:
    __slots__ = ("error",)

    def __init__(self, error: BaseException) -> None:
        self.error = error


_END = _End()
_ABORTED = _End()


class _Channel:
    """A bounded single-producer, single-consumer buffer without per-item locking:
    a deque and at most one waiting future on each side. Once :meth:`close` is called
    the producer is never blocked again (it finds ``closed`` and stops)."""

    __slots__ = ("closed", "getter", "items", "limit", "loop", "putter")

    def __init__(self, limit: int) -> None:
        self.items: deque[object] = deque()
        self.limit = limit
        self.loop = asyncio.get_running_loop()
        self.getter: asyncio.Future[None] | None = None
        self.putter: asyncio.Future[None] | None = None
        self.closed = False

    def put(self, item: object) -> None:
        self.items.append(item)
        getter = self.getter
        if getter is not None:
            self.getter = None
            if not getter.done():
                getter.set_result(None)

    async def room(self) -> None:
        while len(self.items) >= self.limit and not self.closed:
            self.putter = self.loop.create_future()
            await self.putter

    async def wait(self) -> None:
        while not self.items:
            self.getter = self.loop.create_future()
            await self.getter

    def take(self) -> object:
        item = self.items.popleft()
        if self.putter is not None:
            self._release_putter()
        return item

    def close(self) -> None:
        """The consumer is gone: drop what is buffered and let the producer through."""
        self.closed = True
        self.items.clear()
        self._release_putter()

    def _release_putter(self) -> None:
        putter = self.putter
        if putter is not None and (self.closed or len(self.items) < self.limit):
            self.putter = None
            if not putter.done():
                putter.set_result(None)


async def abortable(
    source: AsyncIterator[T], abort: AbortToken, buffer: int = 256
) -> AsyncGenerator[T, None]:
    """Iterate ``source`` until it ends or ``abort`` fires, whichever comes first.

    ``source`` is drained by a helper task into a bounded buffer; the token's
    callback wakes the consumer at once, even while ``source`` is blocked waiting
    for the network, and the helper task is cancelled, which closes ``source``.
    An exception raised by ``source`` is re-raised here. When the token fires the
    iteration simply ends: check ``abort.is_aborted()`` afterwards.

    The helper never outlives the consumer by more than a moment: when the consumer
    stops (abort, an error, ``aclose``, cancellation) the buffer is closed, so the
    helper cannot stay blocked on a full buffer nobody reads, and closing the source
    is given at most a second.
    """
    if abort.is_aborted():
        return
    channel = _Channel(max(buffer, 1))

    async def pump() -> None:
        try:
            async for item in source:
                if len(channel.items) >= channel.limit:
                    await channel.room()
                if channel.closed:
                    return
                channel.put(item)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            channel.put(_Failed(exc))
        else:
            channel.put(_END)
        finally:
            close = getattr(source, "aclose", None)
            if close is not None:
                with suppress(Exception, TimeoutError):
                    async with asyncio.timeout(1.0):
                        await close()

    task = asyncio.create_task(pump())
    remove = abort.on_abort(lambda: channel.put(_ABORTED))
    try:
        while True:
            if not channel.items:
                await channel.wait()
            item = channel.take()
            if isinstance(item, _End) or abort.is_aborted():
                return  # (buffered items are not handed out once the token fired)
            if isinstance(item, _Failed):
                raise item.error
            yield item  # type: ignore[misc]
    finally:
        remove()
        channel.close()
        if not task.done():
            task.cancel()
            # Let the cancellation close the source, but never wait long for it.
            await asyncio.wait({task}, timeout=1.0)


async def race_abort(awaitable: Awaitable[T], abort: AbortToken, limit: float | None) -> T:
    """Await ``awaitable`` unless ``abort`` fires first (:class:`Aborted`) or ``limit``
    seconds pass (:class:`TimeoutError`); the loser is cancelled."""
    if abort.is_aborted():
        if asyncio.iscoroutine(awaitable):
            awaitable.close()
        raise Aborted
    work = asyncio.ensure_future(awaitable)
    waiter = asyncio.ensure_future(abort.wait())
    try:
        done, _ = await asyncio.wait(
            {work, waiter}, timeout=limit, return_when=asyncio.FIRST_COMPLETED
        )
        if work in done:
            return work.result()
        if waiter in done:
            raise Aborted
        raise TimeoutError
    finally:
        waiter.cancel()
        if not work.done():
            work.cancel()
