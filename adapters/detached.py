"""Blocking start-up work (imports, mostly) that a shutdown does not wait for.

``asyncio.to_thread`` runs in the loop's default executor, which ``asyncio.run`` joins as
it ends (and ``concurrent.futures`` again at exit): a warm-up still importing a large SDK
there holds a SIGTERM's exit until the import is done, and an import cannot be
interrupted. :func:`in_daemon_thread` runs the work in a daemon thread of its own instead
(the interpreter does not join those as it exits); :func:`unless_set` waits for it unless
a stop signal comes first, and then stops waiting at once.

A caller that stops waiting leaves the thread to finish alone: what it returns or raises
then is dropped without touching the loop once it has closed (no callback on a closed
loop, no "exception was never retrieved", nothing logged at exit).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Awaitable, Callable
from typing import ParamSpec, TypeVar

__all__ = ["in_daemon_thread", "unless_set"]

P = ParamSpec("P")
T = TypeVar("T")


def in_daemon_thread(
    function: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs
) -> asyncio.Future[T]:
    """``function(*args, **kwargs)`` in a new daemon thread; a future of the running loop
    with its result. Cancelling the future stops the waiting, not the thread."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def settle(result: T | None, error: BaseException | None) -> None:  # on the loop
        if future.done():  # nobody waits any more (cancelled)
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)  # type: ignore[arg-type]  # T, when error is None

    def run() -> None:
        result: T | None = None
        error: BaseException | None = None
        try:
            result = function(*args, **kwargs)
        except BaseException as exc:  # handed to the waiter, never printed by the thread
            error = exc
        # A loop that has closed (the service has stopped) refuses: nobody waits any more.
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(settle, result, error)

    name = getattr(function, "__name__", "work")
    threading.Thread(target=run, name=f"detached-{name}", daemon=True).start()
    return future


async def unless_set(work: Awaitable[T], *stops: asyncio.Event) -> bool:
    """Wait for ``work`` unless one of ``stops`` is set first (then ``work`` is cancelled:
    for :func:`in_daemon_thread`'s future, the thread is no longer waited for). Whether
    ``work`` finished; its exception, if it raised one."""
    task = asyncio.ensure_future(work)
    waits = [asyncio.ensure_future(stop.wait()) for stop in stops]
    try:
        if not any(stop.is_set() for stop in stops):
            await asyncio.wait([task, *waits], return_when=asyncio.FIRST_COMPLETED)
    finally:
        for wait in waits:
            wait.cancel()
        finished = task.done()
        if not finished:
            task.cancel()
    if not finished:
        return False
    task.result()
    return True
