"""A stepping clock for the running event loop: its timers fire when the test says so.

A test that asserts how long something took fails on a loaded machine and proves little
on an idle one. With :func:`stepping_loop_clock` the loop's clock (``loop.time()``, which
``asyncio.sleep``, ``call_later``, ``asyncio.timeout`` and ``wait_for`` all read) stands
still until the test moves it with :meth:`SteppingLoopClock.advance`: what happens while
it stands still happened because of an event (a callback, I/O, a task ending), never
because time passed, and a timeout fires at the step the test chose, however slow the
machine is. Real I/O still wakes the loop; only its timers wait for the test.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager

__all__ = ["SteppingLoopClock", "stepping_loop_clock"]


class SteppingLoopClock:
    """The running loop's time, moved only by :meth:`advance`."""

    def __init__(self, start: float) -> None:
        #: The loop's time now (a whole second at the start, so that steps of a power of
        #: two, such as 0.125 or 0.25, add up exactly).
        self.now = start

    def time(self) -> float:
        return self.now

    async def advance(self, seconds: float, *, step: float | None = None) -> None:
        """Move time ``seconds`` forward, ``step`` at a time (so that a timer armed again
        at each firing fires at each step), letting the loop run after each step."""
        step = step or seconds
        moved = 0.0
        while moved < seconds:
            this = min(step, seconds - moved)
            self.now += this
            moved += this
            await settle()

    async def until(self, done: Callable[[], bool], passes: int = 1000) -> bool:
        """Let the loop run, time standing still, until ``done()`` (True) or ``passes``
        rounds of the loop went by (False): what ends so ended on events alone."""
        for _ in range(passes):
            if done():
                return True
            await asyncio.sleep(0)
        return done()


async def settle(passes: int = 20) -> None:
    """Let every callback that is ready run (and the ones they make ready, ``passes``
    rounds deep), without moving the clock."""
    for _ in range(passes):
        await asyncio.sleep(0)


@contextmanager
def stepping_loop_clock() -> Iterator[SteppingLoopClock]:
    """Stop the running loop's clock for the block (see the module)."""
    loop = asyncio.get_running_loop()
    clock = SteppingLoopClock(float(math.floor(loop.time())))
    loop.time = clock.time  # type: ignore[method-assign]
    try:
        yield clock
    finally:
        del loop.time  # the class's own again
