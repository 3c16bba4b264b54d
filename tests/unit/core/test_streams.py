"""``abortable``: the consumer wakes at once on abort, and the helper that drains the
source never outlives the consumer (it once stayed blocked on a full buffer nobody
read, which kept the service from exiting on SIGTERM)."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing

import pytest

from copilot_core import AbortToken
from copilot_core._streams import StreamTimeout, abortable, abortable_batches
from tests.fakes.loop_clock import stepping_loop_clock


class Firehose:
    """A source that produces as fast as it can, and says whether it was closed."""

    def __init__(self) -> None:
        self.closed = False
        self.produced = 0

    async def items(self) -> AsyncGenerator[int, None]:
        try:
            for n in itertools.count():
                self.produced += 1
                yield n
                await asyncio.sleep(0)
        finally:
            self.closed = True


def helpers() -> set[asyncio.Task[object]]:
    current = asyncio.current_task()
    return {task for task in asyncio.all_tasks() if task is not current and not task.done()}


async def test_the_helper_ends_when_the_consumer_stops_reading_a_full_buffer() -> None:
    source = Firehose()
    async with aclosing(abortable(source.items(), AbortToken(), buffer=2)) as items:
        async for item in items:
            if item == 0:
                await asyncio.sleep(0.05)  # the helper fills the buffer and waits for room
                break
    async with asyncio.timeout(2):
        while helpers():
            await asyncio.sleep(0.001)
    assert source.closed
    assert source.produced < 10


async def test_the_helper_ends_when_the_consumer_is_cancelled_while_the_buffer_is_full() -> None:
    source = Firehose()
    reading = asyncio.Event()

    async def consume() -> None:
        async with aclosing(abortable(source.items(), AbortToken(), buffer=1)) as items:
            async for _ in items:
                reading.set()
                await asyncio.Event().wait()  # stuck holding one item, never reading on

    task = asyncio.create_task(consume())
    await asyncio.wait_for(reading.wait(), 2)
    await asyncio.sleep(0.01)
    task.cancel()
    async with asyncio.timeout(2):
        while helpers():
            await asyncio.sleep(0.001)
    assert task.cancelled()
    assert source.closed


async def test_abort_wakes_the_consumer_while_the_source_is_silent() -> None:
    abort = AbortToken()

    async def silent() -> AsyncGenerator[int, None]:
        await asyncio.Event().wait()
        yield 1

    loop = asyncio.get_running_loop()
    loop.call_later(0.02, abort.abort)
    async with asyncio.timeout(2):
        got = [item async for item in abortable(silent(), abort)]
    assert got == []
    async with asyncio.timeout(2):
        while helpers():
            await asyncio.sleep(0.001)


async def test_a_timed_stream_ticks_while_silent_then_times_out_before_its_first_item() -> None:
    never = asyncio.Event()
    closed: list[bool] = []

    async def silent() -> AsyncIterator[int]:
        try:
            await never.wait()  # nothing ever comes: only the timeout ends the wait
            yield 1
        finally:
            closed.append(True)

    ticks: list[float] = []  # when each empty batch came, on the stepped clock

    async def consume() -> None:
        async for batch in abortable_batches(
            silent(), AbortToken(), first_timeout=0.5, idle_timeout=5, tick=0.125
        ):
            assert batch == []
            ticks.append(clock.now - start)

    with stepping_loop_clock() as clock:
        start = clock.now
        consuming = asyncio.create_task(consume())
        assert not await clock.until(consuming.done, passes=50)  # time stands still: no tick
        assert ticks == []
        await clock.advance(0.375, step=0.125)
        assert ticks == [0.125, 0.25, 0.375]  # one every tick while nothing came
        assert not consuming.done()
        await clock.advance(0.125)  # the first item's bound
        assert await clock.until(consuming.done)
    with pytest.raises(StreamTimeout) as raised:
        consuming.result()
    assert raised.value.first and raised.value.limit == 0.5
    assert ticks == [0.125, 0.25, 0.375]  # no tick at the bound: the timeout
    assert closed == [True]  # the source was closed


async def test_a_timed_stream_bounds_the_pause_between_items_and_stops_ticking() -> None:
    async def stalls() -> AsyncIterator[int]:
        yield 1
        yield 2
        await asyncio.sleep(10)
        yield 3

    seen: list[list[int]] = []
    with pytest.raises(StreamTimeout) as raised:
        async for batch in abortable_batches(
            stalls(), AbortToken(), first_timeout=5, idle_timeout=0.3, tick=0.05
        ):
            seen.append(batch)
    assert not raised.value.first and raised.value.limit == 0.3
    assert [item for batch in seen for item in batch] == [1, 2]
    assert [] not in seen  # ticks only before the first item
