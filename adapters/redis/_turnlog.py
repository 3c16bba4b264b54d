"""The Redis :class:`~copilot_core.ports.TurnLog`: any replica follows, aborts or decides
on any turn.

Keys (``P`` is the prefix, ``gns3-copilot`` by default):

* ``P:turn:{turn_id}``: a hash: project, session, user, owner (the replica running it),
  ``closed`` (0/1), ``previous`` (the session's turn before it).
* ``P:turn:{turn_id}:events``: a stream; each entry holds consecutive events (a JSON
  array, field ``e``: what the writer had pending, so a stream of tokens costs a few
  commands, not one per token) and has the id ``{seq}-0`` of its last event. Redis
  refuses an id that does not grow, so a sequence number is never written twice.
* ``P:session:{project_id}:{session_id}``: the id of the session's latest turn.
* ``P:lease:{project_id}:{session_id}``: the session's claim: the running turn's id,
  expiring after ``lease`` seconds unless the replica running it renews it (every
  third of that). One open turn per session across the deployment: claiming is
  ``SET NX``.
* ``P:turn:{turn_id}:abort``: an abort asked of the turn (also published on the
  channel ``P:abort``, which every replica listens to, so it arrives at once; the key
  catches a message missed while reconnecting, at the next renewal).
* ``P:turn:{turn_id}:approvals``: a hash, one field per approval the turn asked for:
  ``W`` while it waits, ``D`` once a decision was sent to it from another replica,
  ``R`` once the turn resolved it (``approval_resolved``).
* ``P:turn:{turn_id}:waiting``: a hash, approval id → ``{seq}|{event}`` (the
  ``approval_required`` record) until it is resolved: what ``find`` reports as pending.
  The owner's event writer updates both hashes in the same script that appends
  ``approval_required`` / ``approval_resolved`` to the stream, and the owner shows an
  ``approval_required`` to its own clients only once it is written, so the state in
  Redis is never behind what any client could have seen.
* ``P:turn:{turn_id}:decisions``: a hash, approval id → the decision sent from another
  replica (JSON), until the turn resolves that approval.
* ``P:turn:{turn_id}:reply:{approval_id}``: a list: the owner's answer (``accepted`` or
  ``already_decided``) to a decision sent from another replica, for that replica to wait
  on (``BLPOP``); it expires after a few seconds.

The replica running a turn keeps its events in memory too: its own clients follow it
from there, as with the in-memory log, while a background writer appends them to the
stream in order (``append`` never blocks). Its clients see an event only once it is in
the stream (a round trip later): a client whose replica dies re-attaches on another one
right after the last event it saw, which is there, and so are the ``error`` and ``done``
that end the turn after it (while Redis refuses writes, nobody else can follow, and the
events are shown at once). What is still pending when the turn closes (``done`` at
least) goes in with the close script: ending a turn is one round trip. Other replicas
read the stream (``XREAD BLOCK``). A turn whose lease expired while it was open (its
replica died) is ended by whichever replica notices first: an ``error`` (code
``replica_lost``) then ``done`` appended by one atomic script, after which the session
accepts a new turn. When a turn closes, its keys expire after ``retention`` seconds.

A decision sent on the replica that runs the turn goes straight to its
:class:`~copilot_core._approvals.TurnControl`. From another replica, one script checks
the approval's state and answers ``unknown`` (no open turn, or no such approval),
``already_decided`` (``D`` or ``R``), or moves it from ``W`` to ``D``, keeps the
decision and publishes it on ``P:decision`` (every replica listens; the owner also
reads the ``decisions`` hash at every lease renewal and whenever its listener
reconnects, so a missed message still arrives). The script runs once per approval with
``W``, so only one decision can ever be sent; the owner hands it to the turn's
``TurnControl`` and pushes what that answered to the ``reply`` list, which the sending
replica waits for (``decision_wait`` seconds) and returns.

The rare race, the owner resolving a lapsed approval (timeout, abort) while a decision
from another replica is in flight, is settled by the owner's ``TurnControl``, the one
place both pass through: whichever reaches it first wins, and the sender is told the
truth. If the lapse came first (or a decision sent on the owner's replica itself),
``TurnControl`` answers ``already_decided`` and so does the sending replica, although
its script had found ``W`` (the ``approval_resolved`` being still on its way to Redis);
if the remote decision came first, the turn uses it and the lapse is ignored. Only
when the owner does not answer within ``decision_wait`` (its listener is reconnecting,
or the replica hung) does the sending replica answer ``accepted`` on the strength of
the recorded decision: the owner takes it at its next renewal, unless the approval
lapses first (then its ``approval_resolved`` says ``timeout`` or ``aborted``), or the
replica is dead (then the turn ends with ``replica_lost``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar, cast

import redis.asyncio as aioredis
from redis.exceptions import RedisError, ResponseError

from copilot_core import AbortToken
from copilot_core.errors import ServiceUnavailableError, SessionBusyError
from copilot_core.events import (
    ApprovalRequiredEvent,
    ApprovalResolvedEvent,
    ContentEvent,
    DoneEvent,
    ErrorEvent,
    HeartbeatEvent,
    TurnEvent,
    TurnEventFeed,
    WireEvent,
    event_from_record,
    event_to_record,
)
from copilot_core.ports import ApprovalDecision, DecisionOutcome, TurnControl, TurnInfo, TurnState

__all__ = ["REPLICA_LOST", "RedisTurnLog"]

log = logging.getLogger(__name__)

T = TypeVar("T")

REPLICA_LOST = "replica_lost"
"""The ``code`` of the ``error`` that ends a turn whose replica stopped responding."""

_REPLICA_LOST_MESSAGE = (
    "The copilot replica running this turn stopped responding, so the turn was ended. "
    "What it had saved is kept; send your message again."
)
_LIVENESS_CHECK = 1.0  # seconds between checks of a remote turn's lease, when quiet
_XREAD_COUNT = 512
_REPLY_TTL = 10.0  # seconds an owner's answer to a remote decision is kept
_WAITING, _RESOLVED = "W", "R"  # states of an approval (module doc)

# KEYS: lease, session pointer, turn hash
# ARGV: turn id, lease ms, project, session, user, owner
_OPEN = """
if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return {0, redis.call('GET', KEYS[1]) or ''}
end
local previous = redis.call('GET', KEYS[2]) or ''
redis.call('SET', KEYS[2], ARGV[1])
redis.call('HSET', KEYS[3], 'project', ARGV[3], 'session', ARGV[4], 'user', ARGV[5],
  'owner', ARGV[6], 'closed', '0', 'previous', previous)
return {1, previous}
"""

# Lua: append an entry of events to a turn's stream and apply its approval changes. From
# ARGV[first]: the entry id, the entry, then for each approval_required of the entry
# (approval id, 'W', '{seq}|{event}') and for each approval_resolved (approval id, 'R', '').
_WRITE_ENTRY = """
local function write_entry(events, approvals, waiting, decisions, first)
  redis.call('XADD', events, ARGV[first], 'e', ARGV[first + 1])
  for i = first + 2, #ARGV, 3 do
    redis.call('HSET', approvals, ARGV[i], ARGV[i + 1])
    if ARGV[i + 1] == 'W' then
      redis.call('HSET', waiting, ARGV[i], ARGV[i + 2])
    else
      redis.call('HDEL', waiting, ARGV[i])
      redis.call('HDEL', decisions, ARGV[i])
    end
  end
end
"""
# KEYS: lease, turn hash, events, session pointer, then the turn's approval keys
# (approvals, waiting, decisions)
# ARGV: turn id, retention ms, then optionally the turn's last entry as ``_APPEND`` takes
# it: written first, unless the turn was already closed (another replica ended it for
# dead), so that ending a turn is one round trip.
_CLOSE = (
    _WRITE_ENTRY
    + """
if #ARGV > 2 and redis.call('HGET', KEYS[2], 'closed') == '0' then
  write_entry(KEYS[3], KEYS[5], KEYS[6], KEYS[7], 3)
end
redis.call('HSET', KEYS[2], 'closed', '1')
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
for i = 2, #KEYS do
  if i ~= 4 then redis.call('PEXPIRE', KEYS[i], ARGV[2]) end
end
if redis.call('GET', KEYS[4]) == ARGV[1] then redis.call('PEXPIRE', KEYS[4], ARGV[2]) end
return 1
"""
)

# KEYS: lease, turn hash, events, session pointer, previous turn hash, then the turn's
# approval keys
# ARGV: turn id, previous turn id
_DISCARD = """
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
if redis.call('GET', KEYS[4]) == ARGV[1] then
  local ttl = ARGV[2] ~= '' and redis.call('PTTL', KEYS[5]) or -2
  if ttl > 0 then
    redis.call('SET', KEYS[4], ARGV[2], 'PX', ttl)
  elseif ttl == -1 then
    redis.call('SET', KEYS[4], ARGV[2])
  else
    redis.call('DEL', KEYS[4])
  end
end
redis.call('DEL', KEYS[2], KEYS[3])
for i = 6, #KEYS do redis.call('DEL', KEYS[i]) end
return 1
"""

# KEYS: lease, turn hash, events, session pointer, then the turn's approval keys
# ARGV: turn id, error record, done record, retention ms
_REAP = """
if redis.call('EXISTS', KEYS[2]) == 0 then return 0 end
if redis.call('HGET', KEYS[2], 'closed') == '1' then return 0 end
if redis.call('GET', KEYS[1]) == ARGV[1] then return 0 end
local last = 0
local newest = redis.call('XREVRANGE', KEYS[3], '+', '-', 'COUNT', 1)
if #newest > 0 then last = tonumber(string.match(newest[1][1], '^(%d+)')) end
redis.call('XADD', KEYS[3], (last + 2) .. '-0', 'e', '[' .. ARGV[2] .. ',' .. ARGV[3] .. ']')
redis.call('HSET', KEYS[2], 'closed', '1')
for i = 2, #KEYS do
  if i ~= 4 then redis.call('PEXPIRE', KEYS[i], ARGV[4]) end
end
if redis.call('GET', KEYS[4]) == ARGV[1] then redis.call('PEXPIRE', KEYS[4], ARGV[4]) end
return 1
"""

# KEYS: turn hash, events, approvals, waiting, decisions
# ARGV: an entry as ``_WRITE_ENTRY`` takes it.
# Nothing is written once the turn is closed (another replica ended it for dead).
_APPEND = (
    _WRITE_ENTRY
    + """
if redis.call('HGET', KEYS[1], 'closed') ~= '0' then return 0 end
write_entry(KEYS[2], KEYS[3], KEYS[4], KEYS[5], 1)
return 1
"""
)

# KEYS: turn hash, lease, approvals, decisions
# ARGV: turn id, approval id, decision, channel, message
# A decision from a replica that does not run the turn: 'unknown', 'already_decided',
# 'lost' (the turn's lease expired: its replica is gone) or 'sent' (recorded and
# published: the owner answers on the reply list).
_DECIDE = """
if redis.call('HGET', KEYS[1], 'closed') ~= '0' then return 'unknown' end
if redis.call('GET', KEYS[2]) ~= ARGV[1] then return 'lost' end
local state = redis.call('HGET', KEYS[3], ARGV[2])
if not state then return 'unknown' end
if state ~= 'W' then return 'already_decided' end
redis.call('HSET', KEYS[3], ARGV[2], 'D')
redis.call('HSET', KEYS[4], ARGV[2], ARGV[3])
redis.call('PUBLISH', ARGV[4], ARGV[5])
return 'sent'
"""

# KEYS: lease; ARGV: turn id, lease ms
_RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
"""


#: An event not yet in Redis: its sequence number, the event and the approval changes
#: it brings, as flat triples (``_APPEND``'s arguments).
_Pending = tuple[int, WireEvent, tuple[str, ...]]


@dataclass(frozen=True, slots=True)
class _SessionKeys:
    lease: str
    pointer: str


class _Local(TurnEventFeed):
    """A turn this replica runs: its events in memory, and their writer to Redis."""

    __slots__ = (
        "closing",
        "control",
        "delivered",
        "info",
        "pending",
        "previous",
        "unshared",
        "writer",
        "written",
    )

    def __init__(self, info: TurnInfo, control: TurnControl, previous: str) -> None:
        super().__init__(info.session_id)
        self.info = info
        self.control = control
        self.previous = previous
        #: Events not yet in Redis: (seq, event, approval changes as flat triples).
        self.pending: list[_Pending] = []
        #: Approvals a decision from another replica was handed over for (once each).
        self.delivered: set[str] = set()
        #: The events up to this one are in Redis (or were given up on).
        self.written = 0
        #: The last write to Redis failed: this replica's clients are not held back meanwhile.
        self.unshared = False
        self.writer: asyncio.Task[None] | None = None
        #: ``close`` writes what is still pending itself, with the close script.
        self.closing = False

    @property
    def abort(self) -> AbortToken:
        return self.control.abort

    def visible(self) -> int:
        """This replica's clients see an event only once it is in Redis, so that a
        client who re-attaches on another replica (this one may die at any moment) goes
        on right after it, and a decision sent on another replica finds an
        ``approval_required``. While Redis refuses writes, other replicas cannot follow
        anyway: every event up to the first unwritten ``approval_required`` is shown."""
        if self.closed:
            return len(self.events)
        if not self.unshared:
            return self.written
        for stamped in self.events.approvals(after=self.written):
            if isinstance(stamped.event, ApprovalRequiredEvent):
                return stamped.seq - 1
        return len(self.events)

    def unwritten_approval(self) -> bool:
        return not self.closed and any(
            isinstance(stamped.event, ApprovalRequiredEvent)
            for stamped in self.events.approvals(after=self.written)
        )


class RedisTurnLog:
    """A :class:`~copilot_core.ports.TurnLog` shared by every replica through Redis.

    ``client`` is a ``redis.asyncio.Redis`` (``decode_responses=False``). Lifecycle (the
    composition root's): :meth:`start` (listen for aborts and decisions, renew leases)
    before use, :meth:`stop` at the end. ``decision_wait``: how long a decision sent from
    this replica to another one's turn waits for that replica's answer (module doc). See
    the module doc for the keys.
    """

    def __init__(
        self,
        client: aioredis.Redis,
        *,
        retention: float = 60.0,
        lease: float = 15.0,
        prefix: str = "gns3-copilot",
        replica: str | None = None,
        decision_wait: float = 2.0,
    ) -> None:
        if lease <= 0 or retention < 0 or decision_wait <= 0:
            raise ValueError("lease and decision_wait must be positive and retention not negative")
        self.client = client
        self.retention = retention
        self.lease = lease
        self.decision_wait = decision_wait
        self.prefix = prefix
        self.replica = replica or uuid.uuid4().hex
        self._local: dict[str, _Local] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._forget: dict[str, asyncio.TimerHandle] = {}
        self._replies: set[asyncio.Task[None]] = set()
        self._open_script = client.register_script(_OPEN)
        self._close_script = client.register_script(_CLOSE)
        self._discard_script = client.register_script(_DISCARD)
        self._reap_script = client.register_script(_REAP)
        self._renew_script = client.register_script(_RENEW)
        self._append_script = client.register_script(_APPEND)
        self._decide_script = client.register_script(_DECIDE)
        self._listening = asyncio.Event()

    # ================================================================= lifecycle
    async def start(self) -> None:
        """Listen for aborts and decisions from other replicas and renew this replica's
        leases."""
        if self._tasks:
            return
        self._tasks = [
            asyncio.create_task(self._listen(), name="redis-turnlog-listener"),
            asyncio.create_task(self._renew_leases(), name="redis-turnlog-leases"),
        ]
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(5):
                await self._listening.wait()

    async def stop(self) -> None:
        """Stop listening and renewing; flush what is still being written."""
        for turn in list(self._local.values()):
            if turn.writer is not None and not turn.writer.done():
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(2):
                        await self._flushed(turn)
        tasks, self._tasks = self._tasks, []
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        for turn in self._local.values():
            if turn.writer is not None:
                turn.writer.cancel()
            self._given_up(turn)
        for handle in self._forget.values():
            handle.cancel()
        for reply in list(self._replies):
            reply.cancel()

    async def flush(self, turn_id: str) -> None:
        """Wait until every event appended so far to this replica's turn is in Redis."""
        turn = self._local.get(turn_id)
        if turn is not None:
            await self._flushed(turn)

    async def ping(self) -> None:
        """One round trip (readiness); raises ``ServiceUnavailableError``."""
        await self._call(self.client.ping())

    # ======================================================================= port
    async def open(self, turn: TurnInfo, control: TurnControl) -> None:
        keys = self._session_keys(turn.project_id, turn.session_id)
        for _ in range(2):
            result = await self._call(
                self._open_script(
                    keys=[keys.lease, keys.pointer, self._hash(turn.turn_id)],
                    args=[
                        turn.turn_id,
                        _ms(self.lease),
                        turn.project_id,
                        turn.session_id,
                        turn.user_id,
                        self.replica,
                    ],
                )
            )
            claimed, other = int(result[0]), _text(result[1])
            if claimed:
                if other and other not in self._local:
                    # The session's previous turn: if its replica died before it
                    # closed, end it now for whoever still follows it.
                    await self._reap(other, turn.project_id, turn.session_id)
                self._local[turn.turn_id] = _Local(turn, control, other)
                return
            if other in self._local or not other:
                break
            if not await self._reap(other, turn.project_id, turn.session_id):
                break
        raise SessionBusyError(turn.session_id)

    def append(self, turn_id: str, event: WireEvent) -> TurnEvent:
        turn = self._local.get(turn_id)
        if turn is None:
            raise RuntimeError(f"turn {turn_id} does not run in this replica")
        if turn.closed:
            raise RuntimeError(f"turn {turn_id} is closed")
        stamped = turn.events.append(event)
        # Encoded as JSON by the writer, a batch at a time (a turn streams hundreds).
        states: tuple[str, ...] = ()
        if isinstance(event, ApprovalRequiredEvent):
            states = (event.approval_id, _WAITING, f"{stamped.seq}|{_encode(event)}")
        elif isinstance(event, ApprovalResolvedEvent):
            states = (event.approval_id, _RESOLVED, "")
        turn.pending.append((stamped.seq, event, states))
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
        info = turn.info
        keys = self._session_keys(info.project_id, info.session_id)
        script_keys = [
            keys.lease,
            self._hash(turn_id),
            self._events(turn_id),
            keys.pointer,
            *self._approval_keys(turn_id),
        ]
        batch = list(turn.pending)
        try:
            try:
                await self._close_script(
                    keys=script_keys,
                    args=[turn_id, _ms(self.retention), *_batch_args(batch)],
                )
                turn.pending.clear()
            except (RedisError, OSError) as exc:
                # The slow way, which retries writing the events for up to a lease.
                log.warning("turn %s: closing it in one step failed (%s)", turn_id, exc)
                turn.closing = False
                await self._flushed(turn)
                await self._call(
                    self._close_script(keys=script_keys, args=[turn_id, _ms(self.retention)])
                )
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
        info = turn.info
        keys = self._session_keys(info.project_id, info.session_id)
        await self._call(
            self._discard_script(
                keys=[
                    keys.lease,
                    self._hash(turn_id),
                    self._events(turn_id),
                    keys.pointer,
                    self._hash(turn.previous) if turn.previous else self._hash("-"),
                    *self._approval_keys(turn_id),
                ],
                args=[turn_id, turn.previous],
            )
        )

    async def find(self, project_id: str, session_id: str) -> TurnState | None:
        keys = self._session_keys(project_id, session_id)
        turn_id = _text(await self._call(self.client.get(keys.pointer)))
        if not turn_id:
            return None
        local = self._local.get(turn_id)
        if local is not None:
            if local.unwritten_approval():  # shown only once another replica can decide
                await self._flushed(local)
            return TurnState(
                local.info,
                len(local.events),
                local.closed,
                () if local.closed else local.events.waiting_approvals(),
            )
        # One snapshot: the approvals still waiting are those of the events counted.
        pipe = self.client.pipeline(transaction=True)
        pipe.hgetall(self._hash(turn_id))
        pipe.hgetall(self._waiting(turn_id))
        pipe.xrevrange(self._events(turn_id), count=1)
        fields, waiting, newest = await self._call(pipe.execute())
        if not fields:
            return None
        info, closed = _turn_fields(turn_id, fields)
        if not closed and await self._reap(turn_id, project_id, session_id):
            closed = True
        last_seq = int(_text(newest[0][0]).split("-", 1)[0]) if newest else 0
        pending = () if closed else _waiting_events(info.session_id, waiting)
        return TurnState(info, last_seq, closed, pending)

    async def request_abort(self, project_id: str, session_id: str, reason: str) -> bool:
        keys = self._session_keys(project_id, session_id)
        turn_id = _text(await self._call(self.client.get(keys.pointer)))
        if not turn_id:
            return False
        local = self._local.get(turn_id)
        if local is not None:
            return False if local.closed else local.abort.abort(reason)
        closed = _text(await self._call(self.client.hget(self._hash(turn_id), "closed")))
        if closed != "0":
            return False
        pipe = self.client.pipeline(transaction=False)
        pipe.set(self._abort_key(turn_id), reason, px=_ms(self.lease * 2))
        pipe.publish(self._channel, json.dumps({"turn": turn_id, "reason": reason}))
        await self._call(pipe.execute())
        return True

    async def send_decision(
        self, project_id: str, session_id: str, approval_id: str, decision: ApprovalDecision
    ) -> DecisionOutcome:
        keys = self._session_keys(project_id, session_id)
        turn_id = _text(await self._call(self.client.get(keys.pointer)))
        if not turn_id:
            return DecisionOutcome.UNKNOWN
        local = self._local.get(turn_id)
        if local is not None:
            if local.closed:
                return DecisionOutcome.UNKNOWN
            return local.control.decide(approval_id, decision)
        message = json.dumps(
            {"turn": turn_id, "approval": approval_id, "decision": _decision_record(decision)}
        )
        sent = _text(
            await self._call(
                self._decide_script(
                    keys=[
                        self._hash(turn_id),
                        keys.lease,
                        self._approvals(turn_id),
                        self._decisions(turn_id),
                    ],
                    args=[
                        turn_id,
                        approval_id,
                        json.dumps(_decision_record(decision)),
                        self._decision_channel,
                        message,
                    ],
                )
            )
        )
        if sent == "lost":
            await self._reap(turn_id, project_id, session_id)
            return DecisionOutcome.UNKNOWN
        if sent != "sent":
            return DecisionOutcome(sent)
        return await self._owner_reply(turn_id, approval_id)

    def subscribe(
        self, turn_id: str, *, after: int = 0, heartbeat: float | None = None
    ) -> AsyncIterator[TurnEvent]:
        local = self._local.get(turn_id)
        if local is not None:
            return local.follow(after, heartbeat)
        return self._follow_remote(turn_id, after, heartbeat)

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
        while turn.pending and not turn.closing:
            batch = list(turn.pending)
            turn_id = turn.info.turn_id
            try:
                written = await self._append_script(
                    keys=[
                        self._hash(turn_id),
                        self._events(turn_id),
                        *self._approval_keys(turn_id),
                    ],
                    args=_batch_args(batch),
                )
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
                    self._given_up(turn)
                    break
                await asyncio.sleep(delay)
                delay = min(delay * 2, 1.0)
                continue
            if not written:
                # Another replica ended this turn, taking this one for dead (its lease
                # expired): nothing more of it can be written.
                log.warning("turn %s was ended by another replica", turn_id)
                turn.abort.abort("another copilot replica ended this turn")
                self._given_up(turn)
                break
            del turn.pending[: len(batch)]
            turn.written = max(turn.written, batch[-1][0])
            turn.unshared = False
            turn.wake()
            delay = 0.05
            failing_since = None

    @staticmethod
    def _given_up(turn: _Local) -> None:
        """Nothing pending will be written: stop holding anything back for it."""
        turn.pending.clear()
        turn.written = len(turn.events)
        turn.wake()

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

    async def _renew_leases(self) -> None:
        """Renew the leases of this replica's open turns every third of a lease, and
        deliver the aborts and decisions sent while this replica was not listening."""
        while True:
            await asyncio.sleep(self.lease / 3)
            turns = [turn for turn in self._local.values() if not turn.closed]
            if not turns:
                continue
            pipe = self.client.pipeline(transaction=False)
            for turn in turns:
                keys = self._session_keys(turn.info.project_id, turn.info.session_id)
                await self._renew_script(
                    keys=[keys.lease], args=[turn.info.turn_id, _ms(self.lease)], client=pipe
                )
                pipe.get(self._abort_key(turn.info.turn_id))
                pipe.hgetall(self._decisions(turn.info.turn_id))
            try:
                results = await pipe.execute()
            except (RedisError, OSError) as exc:
                log.warning("renewing turn leases failed: %s", exc)
                continue
            for n, turn in enumerate(turns):
                renewed, asked, decisions = results[3 * n : 3 * n + 3]
                self._deliver_missed(turn, asked, decisions)
                if not renewed and not turn.closed:
                    log.warning("turn %s lost its session's lease", turn.info.turn_id)
                    turn.abort.abort("this copilot replica lost its claim on the session")

    async def _catch_up(self) -> None:
        """Deliver the aborts and decisions sent to this replica's open turns while its
        listener was away (right after it subscribes again)."""
        turns = [turn for turn in self._local.values() if not turn.closed]
        if not turns:
            return
        pipe = self.client.pipeline(transaction=False)
        for turn in turns:
            pipe.get(self._abort_key(turn.info.turn_id))
            pipe.hgetall(self._decisions(turn.info.turn_id))
        results = await pipe.execute()
        for n, turn in enumerate(turns):
            self._deliver_missed(turn, results[2 * n], results[2 * n + 1])

    def _deliver_missed(self, turn: _Local, asked: Any, decisions: dict[Any, Any]) -> None:
        if asked is not None and not turn.closed:
            turn.abort.abort(_text(asked) or "aborted by user")
        for approval_id, raw in (decisions or {}).items():
            with contextlib.suppress(ValueError, TypeError, KeyError):
                self._deliver_decision(turn, _text(approval_id), _decision_from(json.loads(raw)))

    async def _listen(self) -> None:
        """Follow the abort and decision channels; reconnect (and catch up) when cut."""
        delay = 0.1
        channels = {self._channel: self._on_abort, self._decision_channel: self._on_decision}
        while True:
            pubsub = self.client.pubsub(ignore_subscribe_messages=True)
            try:
                await pubsub.subscribe(*channels)
                self._listening.set()
                delay = 0.1
                await self._catch_up()
                while True:
                    message = await pubsub.get_message(timeout=5.0)
                    if message is None or message.get("type") != "message":
                        continue
                    handler = channels.get(_text(message.get("channel")))
                    if handler is not None:
                        handler(message.get("data"))
            except (RedisError, OSError) as exc:
                log.warning("listening for aborts and decisions failed (%s); retrying", exc)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 2.0)
            finally:
                with contextlib.suppress(Exception):
                    await pubsub.reset()

    def _on_abort(self, data: Any) -> None:
        try:
            request = json.loads(data)
            turn = self._local.get(str(request["turn"]))
        except (ValueError, TypeError, KeyError):
            return
        if turn is not None and not turn.closed:
            turn.abort.abort(str(request.get("reason") or "aborted by user"))

    def _on_decision(self, data: Any) -> None:
        try:
            message = json.loads(data)
            turn = self._local.get(str(message["turn"]))
            approval_id = str(message["approval"])
            decision = _decision_from(message["decision"])
        except (ValueError, TypeError, KeyError):
            return
        if turn is not None:  # another replica's turn otherwise
            self._deliver_decision(turn, approval_id, decision)

    def _deliver_decision(self, turn: _Local, approval_id: str, decision: ApprovalDecision) -> None:
        """Hand a decision sent from another replica to the turn, once, and answer the
        sender with what the turn's ``TurnControl`` said."""
        if approval_id in turn.delivered:
            return  # the same decision, met again (message and catch-up)
        turn.delivered.add(approval_id)
        outcome = turn.control.decide(approval_id, decision)
        if outcome is not DecisionOutcome.ACCEPTED:
            log.info(
                "turn %s: a decision on %s from another replica came too late (%s)",
                turn.info.turn_id,
                approval_id,
                outcome.value,
            )
        reply = asyncio.get_running_loop().create_task(
            self._answer(turn.info.turn_id, approval_id, outcome),
            name=f"redis-turnlog-reply-{approval_id}",
        )
        self._replies.add(reply)
        reply.add_done_callback(self._replies.discard)

    async def _answer(self, turn_id: str, approval_id: str, outcome: DecisionOutcome) -> None:
        key = self._reply(turn_id, approval_id)
        pipe = self.client.pipeline(transaction=True)
        pipe.rpush(key, outcome.value)
        pipe.pexpire(key, _ms(_REPLY_TTL))
        try:
            await pipe.execute()
        except (RedisError, OSError) as exc:
            log.warning("turn %s: answering a decision on %s failed: %s", turn_id, approval_id, exc)

    async def _owner_reply(self, turn_id: str, approval_id: str) -> DecisionOutcome:
        """What the turn's replica answered to a decision sent from here; ``accepted``
        when it does not answer in time: the decision is recorded (module doc)."""
        try:
            answer = await self.client.blpop(
                [self._reply(turn_id, approval_id)], timeout=self.decision_wait
            )
        except (RedisError, OSError) as exc:
            log.warning("turn %s: waiting for its replica's answer failed: %s", turn_id, exc)
            return DecisionOutcome.ACCEPTED
        if answer is None:
            log.warning(
                "turn %s: its replica did not confirm the decision on %s within %s s; "
                "it is recorded and will be taken at the next lease renewal",
                turn_id,
                approval_id,
                self.decision_wait,
            )
            return DecisionOutcome.ACCEPTED
        try:
            return DecisionOutcome(_text(answer[1]))
        except ValueError:
            return DecisionOutcome.ACCEPTED

    # =========================================================== remote turns
    async def _follow_remote(
        self, turn_id: str, after: int, heartbeat: float | None
    ) -> AsyncIterator[TurnEvent]:
        state = await self._remote_state(turn_id)
        if state is None:
            return
        info, _ = state
        stream = self._events(turn_id)
        last = max(after, 0)
        loop = asyncio.get_running_loop()
        quiet_since = loop.time()
        checked = loop.time()
        while True:
            timeout = _LIVENESS_CHECK
            if heartbeat:
                timeout = min(timeout, max(quiet_since + heartbeat - loop.time(), 0.001))
            entries = cast(
                "list[tuple[bytes, list[tuple[bytes, dict[bytes, bytes]]]]] | None",
                await self._call(
                    self.client.xread(
                        {stream: f"{last}-0"}, count=_XREAD_COUNT, block=max(1, _ms(timeout))
                    )
                ),
            )
            done = False
            for _, items in entries or []:
                for entry_id, values in items:
                    newest = int(_text(entry_id).split("-", 1)[0])
                    events = _decode(values)
                    quiet_since = loop.time()
                    for offset, event in enumerate(events):
                        seq = newest - len(events) + 1 + offset
                        if seq <= last:
                            continue  # before the follower's point (a batch spans it)
                        yield TurnEvent(seq, info.session_id, event)
                        done = done or isinstance(event, DoneEvent)
                    last = newest
            if done:
                return
            now = loop.time()
            if heartbeat and now - quiet_since >= heartbeat:
                quiet_since = now
                yield TurnEvent(0, info.session_id, HeartbeatEvent())
            if now - checked >= _LIVENESS_CHECK:
                checked = now
                state = await self._remote_state(turn_id)
                if state is None:
                    return  # expired, or discarded
                if state[1] and await self._last_seq(turn_id) <= last:
                    return  # closed, and we have everything
                if not state[1]:
                    await self._reap(turn_id, info.project_id, info.session_id)

    async def _remote_state(self, turn_id: str) -> tuple[TurnInfo, bool] | None:
        fields = await self._call(self.client.hgetall(self._hash(turn_id)))
        if not fields:
            return None
        return _turn_fields(turn_id, fields)

    async def _last_seq(self, turn_id: str) -> int:
        newest = await self._call(self.client.xrevrange(self._events(turn_id), count=1))
        if not newest:
            return 0
        return int(_text(newest[0][0]).split("-", 1)[0])

    async def _reap(self, turn_id: str, project_id: str, session_id: str) -> bool:
        """End a turn whose lease expired while it was open; True when this call did."""
        keys = self._session_keys(project_id, session_id)
        reaped = await self._call(
            self._reap_script(
                keys=[
                    keys.lease,
                    self._hash(turn_id),
                    self._events(turn_id),
                    keys.pointer,
                    *self._approval_keys(turn_id),
                ],
                args=[
                    turn_id,
                    _encode(ErrorEvent(_REPLICA_LOST_MESSAGE, REPLICA_LOST)),
                    _encode(DoneEvent(None, "")),
                    _ms(self.retention),
                ],
            )
        )
        if reaped:
            log.warning(
                "ended turn %s of session %s: its replica stopped renewing its lease",
                turn_id,
                session_id,
            )
        return bool(reaped)

    # ================================================================== helpers
    def _session_keys(self, project_id: str, session_id: str) -> _SessionKeys:
        return _SessionKeys(
            lease=f"{self.prefix}:lease:{project_id}:{session_id}",
            pointer=f"{self.prefix}:session:{project_id}:{session_id}",
        )

    def _hash(self, turn_id: str) -> str:
        return f"{self.prefix}:turn:{turn_id}"

    def _events(self, turn_id: str) -> str:
        return f"{self.prefix}:turn:{turn_id}:events"

    def _abort_key(self, turn_id: str) -> str:
        return f"{self.prefix}:turn:{turn_id}:abort"

    def _approvals(self, turn_id: str) -> str:
        return f"{self.prefix}:turn:{turn_id}:approvals"

    def _waiting(self, turn_id: str) -> str:
        return f"{self.prefix}:turn:{turn_id}:waiting"

    def _decisions(self, turn_id: str) -> str:
        return f"{self.prefix}:turn:{turn_id}:decisions"

    def _approval_keys(self, turn_id: str) -> list[str]:
        """The keys of a turn's approvals, in the order the scripts take them."""
        return [self._approvals(turn_id), self._waiting(turn_id), self._decisions(turn_id)]

    def _reply(self, turn_id: str, approval_id: str) -> str:
        return f"{self.prefix}:turn:{turn_id}:reply:{approval_id}"

    @property
    def _channel(self) -> str:
        return f"{self.prefix}:abort"

    @property
    def _decision_channel(self) -> str:
        return f"{self.prefix}:decision"

    async def _call(self, awaitable: Awaitable[T]) -> T:
        try:
            return await awaitable
        except (RedisError, OSError) as exc:
            raise ServiceUnavailableError(
                f"The turn log (Redis) cannot be reached: {exc}. Try again in a moment.",
                retry_after=2,
            ) from None


def _batch_args(batch: list[_Pending]) -> list[str]:
    """Pending events as ``_APPEND`` (and ``_CLOSE``) take them: the entry's id (its last
    event's sequence number), the entry (a JSON array), the approval changes."""
    if not batch:
        return []
    entry = "[" + ",".join([_encode(event) for _, event, _ in batch]) + "]"
    return [f"{batch[-1][0]}-0", entry, *(part for _, _, changes in batch for part in changes)]


def _ms(seconds: float) -> int:
    return max(1, round(seconds * 1000))


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bytes):
        return value.decode()
    return str(value)


_ENCODER = json.JSONEncoder(ensure_ascii=True, separators=(",", ":"))
_quote: Callable[[str], str] = json.encoder.encode_basestring_ascii


def _encode(event: WireEvent) -> str:
    """The event's record as JSON. A streamed token (most of a turn's events) is
    written out directly, the same text that encoding its record gives."""
    if type(event) is ContentEvent:
        tail = ',"from_answer":true}' if event.from_answer else ',"from_answer":false}'
        return '{"type":"content","content":' + _quote(event.content) + tail
    return _ENCODER.encode(event_to_record(event))


def _decode(values: dict[Any, Any]) -> list[WireEvent]:
    raw = values.get(b"e", values.get("e"))
    return [event_from_record(record) for record in json.loads(_text(raw))]


def _turn_fields(turn_id: str, fields: dict[Any, Any]) -> tuple[TurnInfo, bool]:
    """A turn's hash: who and where it runs, and whether it closed."""
    data = {_text(k): _text(v) for k, v in fields.items()}
    return TurnInfo(turn_id, data["project"], data["session"], data["user"]), (
        data.get("closed") == "1"
    )


def _waiting_events(session_id: str, waiting: dict[Any, Any]) -> tuple[TurnEvent, ...]:
    """A remote turn's ``approval_required`` events not yet resolved (its ``waiting``
    hash), oldest first."""
    found: list[TurnEvent] = []
    for raw in waiting.values():
        seq, _, record = _text(raw).partition("|")
        found.append(TurnEvent(int(seq), session_id, event_from_record(json.loads(record))))
    return tuple(sorted(found, key=lambda stamped: stamped.seq))


def _decision_record(decision: ApprovalDecision) -> dict[str, Any]:
    return {
        "approve": decision.approve,
        "user_id": decision.user_id,
        "comment": decision.comment,
        "reason": decision.reason,
    }


def _decision_from(record: dict[str, Any]) -> ApprovalDecision:
    user_id = record.get("user_id")
    return ApprovalDecision(
        approve=record["approve"] is True,
        user_id=str(user_id) if user_id is not None else None,
        comment=str(record.get("comment") or ""),
        reason=str(record.get("reason") or "decided"),
    )
