"""The Redis :class:`~copilot_core.ports.TurnLog`: any replica follows any turn.

Keys (``P`` is the prefix, ``gns3-copilot`` by default):

* ``P:turn:{turn_id}``: a hash: project, session, user, owner (the replica running it),
  ``closed`` (0/1), ``previous`` (the session's turn before it).
* ``P:turn:{turn_id}:events``: a stream; each entry holds consecutive events (a JSON
  array, field ``e``: what the writer had pending, so a stream of tokens costs a few
  commands, not one per token) and has the id ``{seq}-0`` of its last event. Redis
  refuses an id that does not grow, so a sequence number is never written twice.
* ``P:turn:{turn_id}:waiting``: a hash, approval id → ``{seq}|{event}`` (the
  ``approval_required`` record) until its ``approval_resolved`` is written: what
  ``find`` reports as pending. The script that appends the events updates it.
* ``P:turn:{turn_id}:writer``: the running replica's id while it writes the turn,
  expiring after ``lease`` seconds unless that replica renews it (every third of that).
* ``P:session:{project_id}:{session_id}``: the id of the session's latest turn.

The replica running a turn keeps its events in memory too (a
:class:`~copilot_core.ports.TurnEventFeed`): its own clients follow it from there,
while a background writer appends them to the stream in order (``append`` never
blocks). Its clients see an event only once it is in the stream (a round trip later): a
client whose replica dies re-attaches on another one right after the last event it
saw, which is there, and so are the ``error`` and ``done`` that end the turn after it
(while Redis refuses writes, nobody else can follow, and the events are shown at once,
but an ``approval_required``, which another replica could not show again). What is
still pending when the turn closes (``done`` at least) goes in with the close script:
ending a turn is one round trip. Other replicas read the stream (``XREAD BLOCK``).

A turn whose writer key expired while it was open (its replica died or hung) is ended
by whichever replica notices first (a follower, ``find``, the session's next turn): an
``error`` (code ``replica_lost``) then ``done`` appended by one atomic script; the
writer, if it comes back, finds its turn closed, drops what it had and fires the turn's
abort token. When a turn closes, its keys expire after ``retention`` seconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import AsyncIterator

import redis.asyncio as aioredis
from redis.exceptions import RedisError, ResponseError

from adapters.redis._commands import Commands
from adapters.redis._encoding import (
    REPLICA_LOST,
    Pending,
    batch_args,
    encode,
)
from adapters.redis._keys import Keys, RenewalLoop, call, ms, text
from adapters.redis._remote import RemoteTurns
from adapters.redis._scripts import (
    LOG_APPEND,
    LOG_CLOSE,
    LOG_DISCARD,
    LOG_OPEN,
    LOG_RENEW,
)
from copilot_core import AbortToken
from copilot_core.events import (
    ApprovalRequiredEvent,
    ApprovalResolvedEvent,
    TurnEvent,
    WireEvent,
)
from copilot_core.ports import TurnEventFeed, TurnInfo, TurnState

__all__ = ["REPLICA_LOST", "RedisTurnLog"]

_encode = encode  # (what the encoding test reads)

log = logging.getLogger(__name__)

_LIVENESS_CHECK = 1.0  # seconds between checks of a remote turn's writer, when quiet
_XREAD_COUNT = 512


class _Local(TurnEventFeed):
    """A turn this replica runs: its events in memory, and their writer to Redis."""

    __slots__ = ("abort", "closing", "info", "pending", "previous", "unshared", "writer", "written")

    def __init__(self, info: TurnInfo, abort: AbortToken, previous: str) -> None:
        super().__init__(info.session_id)
        self.info = info
        self.abort = abort
        self.previous = previous
        #: Events not yet in Redis: (seq, event, approval changes as flat pairs).
        self.pending: list[Pending] = []
        #: The events up to this one are in Redis (or were given up on).
        self.written = 0
        #: The last write to Redis failed: this replica's clients are not held back meanwhile.
        self.unshared = False
        self.writer: asyncio.Task[None] | None = None
        #: ``close`` writes what is still pending itself, with the close script.
        self.closing = False

    def visible(self) -> int:
        """Events are shown once in Redis, or at once while Redis refuses writes, but an
        ``approval_required`` (module doc)."""
        if self.closed:
            return len(self.events)
        if not self.unshared:
            return self.written
        return self.first_unwritten_approval() - 1

    def first_unwritten_approval(self) -> int:
        """The sequence number of the first ``approval_required`` not in Redis yet, or
        one past the last event."""
        for stamped in self.events.approvals(after=self.written):
            if isinstance(stamped.event, ApprovalRequiredEvent):
                return stamped.seq
        return len(self.events) + 1

    def given_up(self) -> None:
        """Nothing pending will be written: stop holding anything back for it."""
        self.pending.clear()
        self.written = len(self.events)
        self.wake()


class RedisTurnLog:
    """A :class:`~copilot_core.ports.TurnLog` shared by every replica through Redis.

    ``client`` is a ``redis.asyncio.Redis`` (``decode_responses=False``). Lifecycle (the
    composition root's): :meth:`start` (renew this replica's writer keys) before use,
    :meth:`stop` at the end. See the module doc for the keys.
    """

    def __init__(
        self,
        client: aioredis.Redis,
        *,
        retention: float = 60.0,
        lease: float = 15.0,
        prefix: str = "gns3-copilot",
        replica: str | None = None,
    ) -> None:
        if lease <= 0 or retention < 0:
            raise ValueError("lease must be positive and retention not negative")
        self.client = client
        self.retention = retention
        self.lease = lease
        self.prefix = prefix
        self.replica = replica or uuid.uuid4().hex
        self._keys = Keys(prefix)
        self._local: dict[str, _Local] = {}
        self._forget: dict[str, asyncio.TimerHandle] = {}
        self._commands = commands = Commands.of(client)
        self._open_script = commands.script(LOG_OPEN)
        self._close_script = commands.script(LOG_CLOSE)
        self._discard_script = commands.script(LOG_DISCARD)
        self._renew_script = commands.script(LOG_RENEW)
        self._append_script = commands.script(LOG_APPEND)
        self._remote = RemoteTurns(client, self._keys, retention)
        self._renewals = RenewalLoop("redis-turn-log-writers", lease / 3, self._renew)

    # ================================================================= lifecycle
    async def start(self) -> None:
        """Renew the writer keys of this replica's open turns every third of a lease."""
        self._renewals.start()

    async def stop(self) -> None:
        """Stop renewing; flush what is still being written."""
        for turn in list(self._local.values()):
            if turn.writer is not None and not turn.writer.done():
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(2):
                        await self._flushed(turn)
        await self._renewals.stop()
        for turn in self._local.values():
            if turn.writer is not None:
                turn.writer.cancel()
            turn.given_up()
        for handle in self._forget.values():
            handle.cancel()

    async def flush(self, turn_id: str) -> None:
        """Wait until every event appended so far to this replica's turn is in Redis."""
        turn = self._local.get(turn_id)
        if turn is not None:
            await self._flushed(turn)

    async def ping(self) -> None:
        """One round trip (readiness); raises ``ServiceUnavailableError``."""
        await call(self.client.ping())

    # ======================================================================= port
    async def open(self, turn: TurnInfo, abort: AbortToken) -> None:
        keys = self._keys
        previous = text(
            await call(
                self._open_script(
                    keys=[
                        keys.pointer(turn.project_id, turn.session_id),
                        keys.turn(turn.turn_id),
                        keys.turn(turn.turn_id, "writer"),
                    ],
                    args=[
                        turn.turn_id,
                        turn.project_id,
                        turn.session_id,
                        turn.user_id,
                        self.replica,
                        ms(self.lease),
                    ],
                )
            )
        )
        self._local[turn.turn_id] = _Local(turn, abort, previous)
        if previous and previous not in self._local:
            # The session's previous turn: if its replica died before it closed, end it
            # now for whoever still follows it.
            await self._remote.reap(previous, turn.project_id, turn.session_id)

    def append(self, turn_id: str, event: WireEvent) -> TurnEvent:
        turn = self._local.get(turn_id)
        if turn is None:
            raise RuntimeError(f"turn {turn_id} does not run in this replica")
        if turn.closed:
            raise RuntimeError(f"turn {turn_id} is closed")
        stamped = turn.events.append(event)
        # Encoded as JSON by the writer, a batch at a time (a turn streams hundreds).
        changes: tuple[str, ...] = ()
        if isinstance(event, ApprovalRequiredEvent):
            changes = (event.approval_id, f"{stamped.seq}|{encode(event)}")
        elif isinstance(event, ApprovalResolvedEvent):
            changes = (event.approval_id, "")
        turn.pending.append((stamped.seq, event, changes))
        if turn.writer is None or turn.writer.done():
            turn.writer = asyncio.get_running_loop().create_task(
                self._write(turn), name=f"redis-turnlog-writer-{turn_id}"
            )
        turn.wake()
        return stamped

    async def close(self, turn_id: str) -> None:
        turn = self._local.get(turn_id)
        if turn is None or turn.closed:
            return
        # The writer stops after the batch it is writing; the rest (``done`` at least)
        # goes with the close script: ending a turn costs one round trip.
        turn.closing = True
        if turn.writer is not None and not turn.writer.done():
            with contextlib.suppress(Exception):
                await asyncio.shield(turn.writer)
        keys = self._turn_keys(turn.info)
        batch = list(turn.pending)
        try:
            try:
                await self._close_script(
                    keys=keys, args=[turn_id, ms(self.retention), *batch_args(batch)]
                )
                turn.pending.clear()
            except (RedisError, OSError) as exc:
                # The slow way, which retries writing the events for up to a lease.
                log.warning("turn %s: closing it in one step failed (%s)", turn_id, exc)
                turn.closing = False
                await self._flushed(turn)
                await call(self._close_script(keys=keys, args=[turn_id, ms(self.retention)]))
        finally:
            turn.close()
            # Forget it here a little before its keys expire in Redis (which serves it
            # meanwhile), never after: once they have expired, no replica has it.
            early = min(1.0, self.retention / 2)
            self._forget[turn_id] = asyncio.get_running_loop().call_later(
                self.retention - early, self._drop, turn_id
            )

    async def discard(self, turn_id: str) -> None:
        turn = self._local.pop(turn_id, None)
        if turn is None:
            return
        turn.close()
        if turn.writer is not None:
            turn.writer.cancel()
        previous = self._keys.turn(turn.previous or "-")
        await call(
            self._discard_script(
                keys=[*self._turn_keys(turn.info), previous], args=[turn_id, turn.previous]
            )
        )

    async def find(self, project_id: str, session_id: str) -> TurnState | None:
        pointer = self._keys.pointer(project_id, session_id)
        turn_id = text(await call(self._commands.command("GET", pointer)))
        if not turn_id:
            return None
        local = self._local.get(turn_id)
        if local is not None:
            if local.first_unwritten_approval() <= len(local.events) and not local.closed:
                await self._flushed(local)  # an approval is shown once it is in Redis
            events, closed = local.events, local.closed
            pending = () if closed else events.waiting_approvals()
            return TurnState(local.info, len(events), closed, pending)
        return await self._remote.find(turn_id, project_id, session_id)

    def subscribe(
        self, turn_id: str, *, after: int = 0, heartbeat: float | None = None
    ) -> AsyncIterator[TurnEvent]:
        local = self._local.get(turn_id)
        if local is not None:
            return local.follow(after, heartbeat)
        return self._remote.follow(turn_id, after, heartbeat)

    # ============================================================ local turns
    async def _write(self, turn: _Local) -> None:
        """Append the turn's pending events to its stream, in order, in batches.

        While Redis cannot be reached, it retries for up to a lease; then the pending
        events are dropped (this replica's own clients still had them; others could not
        follow anyway), so that ending the turn never hangs.
        """
        delay = 0.05
        failing_since: float | None = None
        loop = asyncio.get_running_loop()
        keys = self._turn_keys(turn.info)[:3]
        while turn.pending and not turn.closing:
            batch = list(turn.pending)
            turn_id = turn.info.turn_id
            try:
                written = await self._append_script(keys=keys, args=batch_args(batch))
            except ResponseError as exc:
                written = 0  # an id that does not grow: as below
                log.warning("turn %s: its stream refused events (%s)", turn_id, exc)
            except (RedisError, OSError) as exc:
                log.warning("turn %s: writing events to Redis failed (%s)", turn_id, exc)
                if not turn.unshared:
                    turn.unshared = True
                    turn.wake()
                failing_since = failing_since or loop.time()
                if loop.time() - failing_since > self.lease:
                    log.error("turn %s: dropped %s events Redis refused", turn_id, len(batch))
                    turn.given_up()
                    break
                await asyncio.sleep(delay)
                delay = min(delay * 2, 1.0)
                continue
            if not written:
                self._ended_elsewhere(turn)
                break
            del turn.pending[: len(batch)]
            turn.written = max(turn.written, batch[-1][0])
            turn.unshared = False
            turn.wake()
            delay = 0.05
            failing_since = None

    @staticmethod
    def _ended_elsewhere(turn: _Local) -> None:
        # Another replica ended this turn, taking this one for dead (its writer key
        # expired): nothing more of it can be written.
        log.warning("turn %s was ended by another replica", turn.info.turn_id)
        turn.abort.abort("another copilot replica ended this turn")
        turn.given_up()

    async def _flushed(self, turn: _Local) -> None:
        """Wait until the pending events are written (by the close, once it closes)."""
        while (turn.pending and not turn.closing) or (
            turn.writer is not None and not turn.writer.done()
        ):
            if turn.writer is None or turn.writer.done():
                turn.writer = asyncio.get_running_loop().create_task(self._write(turn))
            await asyncio.shield(turn.writer)

    def _drop(self, turn_id: str) -> None:
        self._forget.pop(turn_id, None)
        turn = self._local.get(turn_id)
        if turn is not None and turn.closed:
            del self._local[turn_id]

    async def _renew(self) -> None:
        turns = [turn for turn in self._local.values() if not turn.closed]
        if not turns:
            return
        renewals = [
            self._renew_script(
                keys=[
                    self._keys.turn(turn.info.turn_id),
                    self._keys.turn(turn.info.turn_id, "writer"),
                ],
                args=[self.replica, ms(self.lease)],
            )
            for turn in turns
        ]
        for turn, renewed in zip(turns, await asyncio.gather(*renewals), strict=True):
            if not renewed and not turn.closed:
                self._ended_elsewhere(turn)

    def _turn_keys(self, info: TurnInfo) -> list[str]:
        return self._keys.turn_keys(info.turn_id, info.project_id, info.session_id)
