"""The abort signal of one running turn.

Set from any task of the event loop (the abort endpoint), observed by the turn:
polled with :meth:`AbortToken.is_aborted`, awaited with :meth:`AbortToken.wait`, or
reacted to at once through :meth:`AbortToken.on_abort` callbacks. Setting it never
blocks. It is not thread-safe: use it from the loop's thread.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

__all__ = ["AbortToken"]


class AbortToken:
    """A one-shot flag with callbacks; synchronous apart from :meth:`wait`."""

    __slots__ = ("_callbacks", "_next_key", "_reason", "_waiters")

    def __init__(self) -> None:
        self._reason: str | None = None
        self._next_key = 0
        self._callbacks: dict[int, Callable[[], None]] = {}
        self._waiters: list[asyncio.Future[None]] = []

    def is_aborted(self) -> bool:
        return self._reason is not None

    @property
    def reason(self) -> str | None:
        return self._reason

    def abort(self, reason: str = "aborted by user") -> bool:
        """Set the flag; returns False when it was already set (then nothing happens)."""
        if self._reason is not None:
            return False
        self._reason = reason
        callbacks, self._callbacks = list(self._callbacks.values()), {}
        for callback in callbacks:
            callback()
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)
        return True

    def on_abort(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call ``callback`` once when the token is set (at once if it already is).

        Returns a function that unregisters the callback.
        """
        if self._reason is not None:
            callback()
            return _noop
        key = self._next_key
        self._next_key += 1
        self._callbacks[key] = callback

        def remove() -> None:
            self._callbacks.pop(key, None)

        return remove

    async def wait(self) -> None:
        """Return once the token is set."""
        if self._reason is not None:
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await waiter
        finally:
            if waiter in self._waiters:
                self._waiters.remove(waiter)


def _noop() -> None:
    return None
