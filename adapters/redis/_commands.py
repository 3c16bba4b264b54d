"""The commands of the Redis adapters, sent together: what the turn log, the session
leases and the turn control relay ask of one client during one pass of the event loop
goes out as one write on one of the client's pooled connections, its replies read in
turn, in the order it was asked.

A turn's runner opens its log and attaches it to the relay at once, and detaches it and
releases its session at once (see :mod:`copilot_core._runner`): each pair costs one
round trip, not two; the writers of turns running side by side share theirs too. A
command still completes only once Redis has answered it, so each port's ``await`` keeps
its meaning. Scripts go as ``EVALSHA``, without redis-py's ``SCRIPT EXISTS`` before
each pipeline that holds one (a round trip of its own); one that Redis no longer knows
(it restarted) is sent again once with its text (``EVAL``, which also caches it). The
write goes straight on the connection, without a redis-py pipeline object per pass (that
one's bookkeeping was ~40 µs of the ~210 µs a pass of three commands took on 127.0.0.1);
a connection that fails is connected again and the write sent again as the client's
``Retry`` says, as redis-py does for its pipelines.

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
from redis.asyncio.connection import Connection
from redis.commands.core import AsyncScript
from redis.exceptions import NoScriptError, ResponseError

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
        try:
            replies = await self._round_trip([args for args, _, _ in queued])
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

    async def _round_trip(self, commands: list[tuple[Any, ...]]) -> list[Any]:
        """Every command in one write on a pooled connection, and each one's reply (a
        ``ResponseError`` in its place for one Redis refused)."""
        pool = self._client.connection_pool
        conn: Connection = await pool.get_connection()  # type: ignore[no-untyped-call]
        try:
            return await conn.retry.call_with_retry(
                lambda: self._exchange(conn, commands),
                lambda error: conn.disconnect(),  # connected again on the next write
            )
        finally:
            await pool.release(conn)

    async def _exchange(self, conn: Connection, commands: list[tuple[Any, ...]]) -> list[Any]:
        # Whatever interrupts the read (an error, a cancellation), redis-py's connection
        # disconnects: no reply is left on it for its next user.
        await conn.send_packed_command(conn.pack_commands(commands))
        replies: list[Any] = []
        for args in commands:
            try:
                replies.append(await self._client.parse_response(conn, args[0]))
            except ResponseError as exc:
                replies.append(exc)
        return replies


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
