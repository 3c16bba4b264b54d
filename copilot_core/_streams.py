"""Async plumbing that makes waiting abortable without slowing the hot path."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable
from contextlib import aclosing, suppress
from typing import TypeVar

from copilot_core._abort import AbortToken

__all__ = ["Aborted", "StreamTimeout", "abortable", "abortable_batches", "race_abort"]

T = TypeVar("T")


class Aborted(Exception):
    """Raised by :func:`race_abort` when the token fires first."""


class StreamTimeout(Exception):
    """Raised by :func:`abortable_batches` when its source stays silent too long:
    ``first`` before its first item, else between two items; ``limit`` in seconds."""

    def __init__(self, first: bool, limit: float) -> None:
        where = "before its first item" if first else "between two items"
        super().__init__(f"the stream was silent for {limit:g} s {where}")
        self.first = first
        self.limit = limit


class _Failed:
    __slots__ = ("error",)

    def __init__(self, error: BaseException) -> None:
        self.error = error


_END = object()


class _Channel:
    """A bounded single-producer, single-consumer buffer without per-item locking:
    a deque and at most one waiting future on each side. The end of the source (or its
    failure) is not an item: it is kept aside, so that the consumer can take whatever is
    buffered in one go. Once :meth:`close` is called the producer is never blocked
    again (it finds ``closed`` and stops)."""

    __slots__ = ("closed", "end", "getter", "items", "limit", "loop", "putter")

    def __init__(self, limit: int) -> None:
        self.items: deque[object] = deque()
        self.limit = limit
        self.loop = asyncio.get_running_loop()
        self.getter: asyncio.Future[None] | None = None
        self.putter: asyncio.Future[None] | None = None
        self.end: object = None  # _END, a _Failed, or None while the source goes on
        self.closed = False

    def put(self, item: object) -> None:
        self.items.append(item)
        if self.getter is not None:
            self.wake()

    def finish(self, end: object) -> None:
        self.end = end
        self.wake()

    def wake(self) -> None:
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
        """Until there is something to take, the source ended, or :meth:`wake`."""
        self.getter = self.loop.create_future()
        await self.getter

    def take_all(self) -> list[object]:
        items = list(self.items)
        self.items.clear()
        self._release_putter()
        return items

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


async def abortable_batches(
    source: AsyncIterator[T],
    abort: AbortToken,
    buffer: int = 256,
    *,
    first_timeout: float | None = None,
    idle_timeout: float | None = None,
    tick: float | None = None,
) -> AsyncGenerator[list[T], None]:
    """Iterate ``source`` until it ends or ``abort`` fires, whichever comes first,
    taking everything it has produced so far at each step (a list of at least one item).

    ``source`` is drained by a helper task into a bounded buffer; the token's
    callback wakes the consumer at once, even while ``source`` is blocked waiting
    for the network, and the helper task is cancelled, which closes ``source``.
    An exception raised by ``source`` is re-raised here, after the items it produced
    before it. When the token fires the iteration simply ends: check
    ``abort.is_aborted()`` afterwards, and between the items of a batch when acting on
    an item after the token fired matters (:func:`abortable` does).

    Handing out batches spares a fast source one generator step per item: a model
    streaming a long answer yields thousands of tokens.

    The helper never outlives the consumer by more than a moment: when the consumer
    stops (abort, an error, ``aclose``, cancellation) the buffer is closed, so the
    helper cannot stay blocked on a full buffer nobody reads, and closing the source
    is given at most a second.

    Timed: ``first_timeout`` bounds the wait for the first item and ``idle_timeout`` the
    wait for each next one (:class:`StreamTimeout`, and ``source`` is closed); while no
    item has come yet, an empty batch is handed out every ``tick`` seconds, so that the
    consumer can say it is still waiting. A timer is only armed when the consumer has
    to wait.
    """
    if abort.is_aborted():
        return
    channel = _Channel(max(buffer, 1))
    task = asyncio.create_task(_pump(source, channel))
    remove = abort.on_abort(channel.wake)
    timed = first_timeout is not None or idle_timeout is not None or tick is not None
    waits = _Waits(channel.loop, first_timeout, idle_timeout, tick) if timed else None
    try:
        while True:
            if not channel.items and channel.end is None and not abort.is_aborted():
                if waits is None:
                    await channel.wait()
                elif await waits.wait(channel, abort):
                    yield []  # still waiting for the first item
                    continue
            if abort.is_aborted():
                return  # (buffered items are not handed out once the token fired)
            if channel.items:
                if waits is not None:
                    waits.seen()
                yield channel.take_all()  # type: ignore[misc]
                continue
            if isinstance(channel.end, _Failed):
                raise channel.end.error
            if channel.end is _END:
                return
    finally:
        remove()
        channel.close()
        if not task.done():
            task.cancel()
            # Let the cancellation close the source, but never wait long for it.
            await asyncio.wait({task}, timeout=1.0)


async def _pump(source: AsyncIterator[T], channel: _Channel) -> None:
    """Drain ``source`` into ``channel`` (waiting for room), then mark how it ended; close
    ``source`` at the end, giving that at most a second."""
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
        channel.finish(_Failed(exc))
    else:
        channel.finish(_END)
    finally:
        close = getattr(source, "aclose", None)
        if close is not None:
            with suppress(Exception, TimeoutError):
                async with asyncio.timeout(1.0):
                    await close()


class _Waits:
    """The consumer's timers in :func:`abortable_batches`: the bound on the first item
    and on each next one, and the tick while none has come yet. A timer is armed only
    for a wait that happens."""

    __slots__ = ("_first", "_idle", "_last", "_loop", "_next_tick", "_received", "_tick")

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        first: float | None,
        idle: float | None,
        tick: float | None,
    ) -> None:
        self._loop, self._first, self._idle, self._tick = loop, first, idle, tick
        self._last = loop.time()  # when the latest item (or the start) was seen
        self._received = False
        self._next_tick = self._last + tick if tick is not None else None

    def seen(self) -> None:
        """Items came now."""
        self._received = True
        self._last = self._loop.time()

    async def wait(self, channel: _Channel, abort: AbortToken) -> bool:
        """Wait for ``channel`` (or the token) at most until the next bound; True when a
        tick is due (nothing came yet). :class:`StreamTimeout` when a bound passed."""
        limit = self._idle if self._received else self._first
        deadline = self._last + limit if limit is not None else None
        ticking = self._next_tick if not self._received else None
        wake_at = min(t for t in (deadline, ticking, float("inf")) if t is not None)
        timer = self._loop.call_at(wake_at, channel.wake) if wake_at != float("inf") else None
        try:
            await channel.wait()
        finally:
            if timer is not None:
                timer.cancel()
        if channel.items or channel.end is not None or abort.is_aborted():
            return False
        now = self._loop.time()
        if deadline is not None and limit is not None and now >= deadline:
            raise StreamTimeout(not self._received, limit)
        if ticking is not None and self._tick is not None and now >= ticking:
            self._next_tick = now + self._tick
            return True
        return False


async def abortable(
    source: AsyncIterator[T], abort: AbortToken, buffer: int = 256
) -> AsyncGenerator[T, None]:
    """:func:`abortable_batches` one item at a time; no item is handed out once the
    token fired."""
    async with aclosing(abortable_batches(source, abort, buffer)) as batches:
        async for batch in batches:
            for item in batch:
                if abort.is_aborted():
                    return
                yield item


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
