"""The commands of the Redis adapters, sent together: what the turn log, the session
leases and the turn control relay ask of one client during one pass of the event loop
goes out as one pipeline (one write, one read), in the order it was asked.

A turn's runner opens its log and attaches it to the relay at once, and detaches it and
releases its session at once (see :mod:`copilot_core._runner`): each pair costs one
round trip, not two; the writers of turns running side by side share theirs too. A
command still completes only once Redis has answered it, so each port's ``await`` keeps
its meaning. Scripts go as ``EVALSHA``, without redis-py's ``SCRIPT EXISTS`` before
each pipeline that holds one (a round trip of its own); one that Redis no longer knows
(it restarted) is sent again once with its text (``EVAL``, which also caches it).

Blocking reads (``XREAD BLOCK``, ``BLPOP``) and the subscription do not come here:
they would hold up everything behind them.
"""

from __future__ import annotations

import asyncio
import functools
import weakref
from collections.abc import Sequence
from typing import Any, ClassVar

import redis.asyncio as aioredis
from redis.commands.core import AsyncScript
from redis.exceptions import NoScriptError

__all__ = ["Commands", "Script"]

_Queued = tuple[tuple[Any, ...], "asyncio.Future[Any]", AsyncScript | None]


class Commands:
    """The one queue of commands of a client (:meth:`of`)."""

    __slots__ = ("__weakref__", "_client", "_flushes", "_queue")

    _shared: ClassVar[weakref.WeakKeyDictionary[aioredis.Redis, Commands]] = (
        weakref.WeakKeyDictionary()
    )

    def __init__(self, client: aioredis.Redis) -> None:
        self._client = client
        self._queue: list[_Queued] = []
        self._flushes: set[asyncio.Task[None]] = set()

    @classmethod
    def of(cls, client: aioredis.Redis) -> Commands:
        """The queue every adapter on ``client`` shares."""
        commands = cls._shared.get(client)
        if commands is None:
            commands = cls._shared[client] = cls(client)
        return commands

    def script(self, text: str) -> Script:
        """A Lua script, called as redis-py's are: ``await script(keys=[…], args=[…])``."""
        return Script(self, self._client.register_script(text))

    def command(self, *args: Any) -> asyncio.Future[Any]:
        """Any command that does not block, as ``execute_command`` takes it (the reply
        as redis-py's method of that name gives it)."""
        return self._queued(args, None)

    def _queued(self, args: tuple[Any, ...], script: AsyncScript | None) -> asyncio.Future[Any]:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        self._queue.append((args, future, script))
        if len(self._queue) == 1:  # the first of this pass: send them all once it ends
            task = loop.create_task(self._flush(), name="redis-commands")
            self._flushes.add(task)
            task.add_done_callback(self._flushes.discard)
        return future

    async def _flush(self) -> None:
        queued, self._queue = self._queue, []
        pipe = self._client.pipeline(transaction=False)
        for args, _, _ in queued:
            pipe.execute_command(*args)
        try:
            replies = await pipe.execute(raise_on_error=False)
        except asyncio.CancelledError:
            for _, future, _ in queued:
                future.cancel()
            raise
        except Exception as exc:  # the connection: every command failed alike
            for _, future, _ in queued:
                if not future.done():
                    future.set_exception(exc)
            return
        for (args, future, script), reply in zip(queued, replies, strict=True):
            if future.done():  # its caller stopped waiting
                continue
            if isinstance(reply, NoScriptError) and script is not None:
                # Redis lost its scripts (a restart): once more with the script's text.
                retry = self._queued(("EVAL", script.script, *args[2:]), None)
                retry.add_done_callback(functools.partial(_pass_on, future))
            elif isinstance(reply, BaseException):
                future.set_exception(reply)
            else:
                future.set_result(reply)


class Script:
    """A Lua script whose calls go through the client's :class:`Commands`."""

    __slots__ = ("_commands", "_script")

    def __init__(self, commands: Commands, script: AsyncScript) -> None:
        self._commands = commands
        self._script = script

    def __call__(self, *, keys: Sequence[str], args: Sequence[Any]) -> asyncio.Future[Any]:
        args = ("EVALSHA", self._script.sha, len(keys), *keys, *args)
        return self._commands._queued(args, self._script)


def _pass_on(future: asyncio.Future[Any], done: asyncio.Future[Any]) -> None:
    if future.done():
        return
    if done.cancelled():
        future.cancel()
    elif (exc := done.exception()) is not None:
        future.set_exception(exc)
    else:
        future.set_result(done.result())
