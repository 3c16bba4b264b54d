"""Whose turn it is on a console: one run at a time, a person's before background work.

A GNS3 console is one command stream, so runs on it take turns. Background work (standing
intent runs, lab-state captures) may queue many runs on one console; a chat turn's
command must not wait behind all of them. :class:`ConsoleLock` hands the console, when it
is let go, to the oldest :attr:`ConsolePriority.INTERACTIVE` waiter first, then to the
oldest background one; the run that holds the console is never cut short.

A caller says its priority with ``ConsoleRunner.run(priority=...)``, or for a whole
stretch of work with :func:`background_console_use` (a context variable, so a standing
intent run marks every console run it makes without each layer passing it on).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from enum import StrEnum

__all__ = ["ConsoleLock", "ConsolePriority", "background_console_use", "current_priority"]


class ConsolePriority(StrEnum):
    """Who waits for a console: a person (a chat turn, an MCP call) or background work."""

    INTERACTIVE = "interactive"
    BACKGROUND = "background"


_PRIORITY: ContextVar[ConsolePriority] = ContextVar(
    "console_priority", default=ConsolePriority.INTERACTIVE
)


def current_priority() -> ConsolePriority:
    """The priority of console runs made here (interactive unless marked background)."""
    return _PRIORITY.get()


@contextmanager
def background_console_use() -> Iterator[None]:
    """Console runs made inside (and in tasks started inside) wait as background work."""
    token = _PRIORITY.set(ConsolePriority.BACKGROUND)
    try:
        yield
    finally:
        _PRIORITY.reset(token)


class ConsoleLock:
    """One console's turns: FIFO within a priority, interactive waiters first."""

    def __init__(self) -> None:
        self._held = False
        self._waiting: dict[ConsolePriority, deque[asyncio.Future[None]]] = {
            ConsolePriority.INTERACTIVE: deque(),
            ConsolePriority.BACKGROUND: deque(),
        }

    def waiting(self, priority: ConsolePriority) -> int:
        """How many runs of ``priority`` wait for the console."""
        return sum(1 for future in self._waiting[priority] if not future.done())

    def locked(self) -> bool:
        return self._held

    async def acquire(self, priority: ConsolePriority = ConsolePriority.INTERACTIVE) -> None:
        """Wait for the console's turn; a cancelled wait leaves the queue (or, when the
        turn had just been handed over, passes it on)."""
        if not self._held and not any(self._waiting.values()):
            self._held = True
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        queue = self._waiting[priority]
        queue.append(future)
        try:
            await future
        except asyncio.CancelledError:
            if future.done() and not future.cancelled():
                self.release()  # the turn came with the cancellation: hand it on
            elif future in queue:
                queue.remove(future)
            raise

    def release(self) -> None:
        """Hand the console to the next waiter (interactive first), else free it."""
        for priority in (ConsolePriority.INTERACTIVE, ConsolePriority.BACKGROUND):
            queue = self._waiting[priority]
            while queue:
                future = queue.popleft()
                if not future.done():
                    future.set_result(None)  # still held: the waiter's now
                    return
        self._held = False
