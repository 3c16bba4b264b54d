"""The Redis :class:`~copilot_core.ports.TurnControlRelay`: an abort or a decision sent on
any replica reaches the turn wherever it runs.

Keys (``P`` is the prefix):

* ``P:control:{project_id}:{session_id}``: a hash, the session's attached turn:
  ``turn`` (its id), ``owner`` (the replica running it), ``abort`` (the reason, once an
  abort was asked), and per approval the turn expects ``a:{approval_id}``: ``W`` while
  it waits, ``D`` once a decision was sent to it from another replica, ``R`` once the
  turn has its answer; ``d:{approval_id}`` holds that decision (JSON) until then;
  ``g:{approval_id}`` the call's digest (one for other arguments: ``other_arguments``). The
  owner renews its expiry (``lease`` seconds) every third of that, so the key of a
  replica that died goes away with it.
* ``P:turn:{turn_id}:reply:{approval_id}``: a list, the owner's answer (``accepted`` or
  ``already_decided``) to a decision sent from another replica, for that replica to
  wait on (``BLPOP``); it expires after a few seconds.
* Channels ``P:abort`` and ``P:decision``, which every replica listens to; a message is
  the turn's id, a newline, then the reason or the decision.

An abort or a decision sent on the replica that runs the turn goes straight to its
:class:`~copilot_core._approvals.TurnControl`. From another one, one script reads the
hash: no turn or no such approval is ``unknown``, ``D`` or ``R`` is
``already_decided``; ``W`` becomes ``D``, the decision is kept and published. The
script runs once per approval with ``W``, so only one decision can ever be sent. The
owner hands it to the turn's ``TurnControl`` and pushes what that answered to the
``reply`` list, which the sending replica waits for (``decision_wait`` seconds). The
owner also reads its hashes at every renewal and whenever its listener reconnects, so
an abort or a decision whose message it missed still arrives.

The rare race, the owner resolving a lapsed approval (timeout, abort) while a decision
from another replica is in flight, is settled by the owner's ``TurnControl``, the one
place both pass through: whichever reaches it first wins, and the sender is told the
truth. Only when the owner does not answer within ``decision_wait`` (its listener is
reconnecting, or the replica hung) does the sending replica answer ``accepted`` on the
strength of the recorded decision: the owner takes it at its next renewal, unless the
approval lapses first, or the replica is dead (then its turn ends with
``replica_lost``, see :mod:`adapters.redis._turnlog`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, cast

import redis.asyncio as aioredis
from redis.asyncio.client import PubSub
from redis.exceptions import RedisError

from adapters.redis._commands import Commands
from adapters.redis._encoding import decode_decision, encode_decision
from adapters.redis._keys import Keys, RenewalLoop, call, ms, text
from adapters.redis._scripts import (
    CONTROL_ABORT,
    CONTROL_ATTACH,
    CONTROL_DECIDE,
    CONTROL_DETACH,
    CONTROL_MARK,
    CONTROL_RENEW,
)
from copilot_core.ports import ApprovalDecision, DecisionOutcome, TurnControl, TurnInfo

__all__ = ["RedisTurnControlRelay"]

log = logging.getLogger(__name__)

_CLOSE_WAIT = 2.0  # seconds closing a subscription may take
_REPLY_TTL = 10.0  # seconds an owner's answer to a remote decision is kept
_WAITING, _RESOLVED = "W", "R"


@dataclass(eq=False, slots=True)
class _Attached:
    info: TurnInfo
    control: TurnControl
    #: Approvals a decision from another replica was handed over for (once each).
    delivered: set[str] = field(default_factory=set)


class RedisTurnControlRelay:
    """Aborts and approval decisions across replicas through Redis (module doc).

    ``client`` is a ``redis.asyncio.Redis`` (``decode_responses=False``). Lifecycle (the
    composition root's): :meth:`start` (listen, renew) before use, :meth:`stop` at the
    end. ``decision_wait``: how long a decision sent from this replica to another
    one's turn waits for that replica's answer.
    """

    def __init__(
        self,
        client: aioredis.Redis,
        *,
        lease: float = 15.0,
        prefix: str = "gns3-copilot",
        replica: str | None = None,
        decision_wait: float = 2.0,
    ) -> None:
        if lease <= 0 or decision_wait <= 0:
            raise ValueError("lease and decision_wait must be positive")
        self.client = client
        self.lease = lease
        self.decision_wait = decision_wait
        self.prefix = prefix
        self.replica = replica or uuid.uuid4().hex
        self._keys = Keys(prefix)
        self._turns: dict[str, _Attached] = {}
        self._sessions: dict[tuple[str, str], str] = {}  # (project, session) -> turn id
        self._background: set[asyncio.Task[None]] = set()
        self._listener: asyncio.Task[None] | None = None
        self._listening = asyncio.Event()
        self._renewals = RenewalLoop("redis-turn-controls", lease / 3, self._renew)
        self._commands = commands = Commands.of(client)
        self._attach_script = commands.script(CONTROL_ATTACH)
        self._detach_script = commands.script(CONTROL_DETACH)
        self._mark_script = commands.script(CONTROL_MARK)
        self._renew_script = commands.script(CONTROL_RENEW)
        self._abort_script = commands.script(CONTROL_ABORT)
        self._decide_script = commands.script(CONTROL_DECIDE)

    # ================================================================= lifecycle
    async def start(self) -> None:
        """Listen for aborts and decisions from other replicas; renew this replica's
        turns."""
        if self._listener is not None:
            return
        self._listener = asyncio.create_task(self._listen(), name="redis-turn-controls-listener")
        self._renewals.start()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(5):
                await self._listening.wait()

    async def stop(self) -> None:
        await self._renewals.stop()
        listener, self._listener = self._listener, None
        if listener is not None:
            listener.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await listener
        for task in list(self._background):
            task.cancel()

    # ====================================================================== owner
    async def attach(self, turn: TurnInfo, control: TurnControl) -> None:
        key = self._keys.control(turn.project_id, turn.session_id)
        self._turns[turn.turn_id] = _Attached(turn, control)
        self._sessions[(turn.project_id, turn.session_id)] = turn.turn_id
        try:
            await call(
                self._attach_script(keys=[key], args=[turn.turn_id, self.replica, ms(self.lease)])
            )
        except BaseException:
            self._forget(turn)
            raise

    async def detach(self, turn: TurnInfo) -> None:
        self._forget(turn)
        key = self._keys.control(turn.project_id, turn.session_id)
        await call(self._detach_script(keys=[key], args=[turn.turn_id]))

    async def expect(self, turn: TurnInfo, approval_id: str) -> asyncio.Future[ApprovalDecision]:
        attached = self._turns.get(turn.turn_id)
        if attached is None:
            raise RuntimeError(f"turn {turn.turn_id} is not attached to this replica")
        waiting = attached.control.expect(approval_id)
        try:
            digest = attached.control.digest_of(approval_id) or ""
            await self._mark(turn, approval_id, _WAITING, digest)
        except (RedisError, OSError) as exc:
            log.warning(
                "turn %s: %s can be decided on this replica only (%s)",
                turn.turn_id,
                approval_id,
                exc,
            )
        return waiting

    def resolved(self, turn: TurnInfo, approval_id: str) -> None:
        self._spawn(self._mark(turn, approval_id, _RESOLVED), f"resolved {approval_id}")

    async def _mark(self, turn: TurnInfo, approval: str, state: str, digest: str = "") -> None:
        key = self._keys.control(turn.project_id, turn.session_id)
        await self._mark_script(keys=[key], args=[turn.turn_id, approval, state, digest])

    def _forget(self, turn: TurnInfo) -> None:
        self._turns.pop(turn.turn_id, None)
        session = (turn.project_id, turn.session_id)
        if self._sessions.get(session) == turn.turn_id:
            del self._sessions[session]

    # ===================================================================== sender
    def _local(self, project_id: str, session_id: str) -> _Attached | None:
        turn_id = self._sessions.get((project_id, session_id))
        return self._turns.get(turn_id) if turn_id is not None else None

    async def request_abort(self, project_id: str, session_id: str, reason: str) -> bool:
        local = self._local(project_id, session_id)
        if local is not None:
            return local.control.abort.abort(reason)
        key = self._keys.control(project_id, session_id)
        sent = await call(self._abort_script(keys=[key], args=[reason, self._abort_channel]))
        return bool(text(sent))

    async def send_decision(
        self, project_id: str, session_id: str, approval_id: str, decision: ApprovalDecision
    ) -> DecisionOutcome:
        local = self._local(project_id, session_id)
        if local is not None:
            return local.control.decide(approval_id, decision)
        key = self._keys.control(project_id, session_id)
        args = [approval_id, encode_decision(decision), self._decision_channel, decision.digest]
        answer = await call(self._decide_script(keys=[key], args=[a or "" for a in args]))
        outcome = text(answer[0])
        if outcome != "sent":
            return DecisionOutcome(outcome)
        return await self._owner_reply(text(answer[1]), approval_id)

    async def _owner_reply(self, turn_id: str, approval_id: str) -> DecisionOutcome:
        """What the turn's replica answered to a decision sent from here; ``accepted``
        when it does not answer in time: the decision is recorded (module doc)."""
        try:
            answer = await self.client.blpop(
                [self._reply_key(turn_id, approval_id)], timeout=self.decision_wait
            )
        except (RedisError, OSError) as exc:
            log.warning("turn %s: waiting for its replica's answer failed: %s", turn_id, exc)
            return DecisionOutcome.ACCEPTED
        if answer is None:
            log.warning(
                "turn %s: its replica did not confirm the decision on %s within %s s; "
                "it is recorded and will be taken at the next renewal",
                turn_id,
                approval_id,
                self.decision_wait,
            )
            return DecisionOutcome.ACCEPTED
        try:
            return DecisionOutcome(text(answer[1]))
        except ValueError:
            return DecisionOutcome.ACCEPTED

    # ================================================================== delivery
    async def _renew(self) -> None:
        """Keep this replica's turns attached; deliver what their messages missed."""
        turns = list(self._turns.values())
        if not turns:
            return
        renewals = [
            self._renew_script(
                keys=[self._keys.control(turn.info.project_id, turn.info.session_id)],
                args=[turn.info.turn_id, ms(self.lease)],
            )
            for turn in turns
        ]
        for turn, fields in zip(turns, await asyncio.gather(*renewals), strict=True):
            if fields is None:
                if turn.info.turn_id in self._turns:
                    log.warning(
                        "turn %s is no longer reachable from other replicas", turn.info.turn_id
                    )
                continue
            self._deliver_missed(turn, _pairs(fields))

    async def _catch_up(self) -> None:
        """Deliver the aborts and decisions sent to this replica's turns while its
        listener was away (right after it subscribes again)."""
        turns = list(self._turns.values())
        if not turns:
            return
        reads = [
            self._commands.command(
                "HGETALL", self._keys.control(turn.info.project_id, turn.info.session_id)
            )
            for turn in turns
        ]
        for turn, raw in zip(turns, await asyncio.gather(*reads), strict=True):
            fields = _pairs(raw)
            if fields.get("turn") == turn.info.turn_id:
                self._deliver_missed(turn, fields)

    def _deliver_missed(self, turn: _Attached, fields: dict[str, str]) -> None:
        if "abort" in fields:
            turn.control.abort.abort(fields["abort"] or "aborted by user")
        for name, raw in fields.items():
            if name.startswith("d:"):
                with contextlib.suppress(ValueError, TypeError, KeyError):
                    self._deliver(turn, name[2:], decode_decision(raw))

    async def _listen(self) -> None:
        """Follow the abort and decision channels; reconnect (and catch up) when cut."""
        delay = 0.1
        channels: dict[str, Callable[[str], None]] = {
            self._abort_channel: self._on_abort,
            self._decision_channel: self._on_decision,
        }
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
                    handler = channels.get(text(message.get("channel")))
                    if handler is not None:
                        handler(text(message.get("data")))
            except (RedisError, OSError) as exc:
                log.warning("listening for aborts and decisions failed (%s); retrying", exc)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 2.0)
            finally:
                await _close_quietly(pubsub)

    def _on_abort(self, data: str) -> None:
        turn_id, _, reason = data.partition("\n")
        turn = self._turns.get(turn_id)
        if turn is not None:
            turn.control.abort.abort(reason or "aborted by user")

    def _on_decision(self, data: str) -> None:
        turn_id, _, rest = data.partition("\n")
        turn = self._turns.get(turn_id)
        if turn is None:
            return  # another replica's turn
        approval_id, _, record = rest.partition("\n")
        with contextlib.suppress(ValueError, TypeError, KeyError):
            self._deliver(turn, approval_id, decode_decision(record))

    def _deliver(self, turn: _Attached, approval_id: str, decision: ApprovalDecision) -> None:
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
        self._spawn(self._answer(turn.info.turn_id, approval_id, outcome), f"answer {approval_id}")

    async def _answer(self, turn_id: str, approval_id: str, outcome: DecisionOutcome) -> None:
        key = self._reply_key(turn_id, approval_id)
        pipe = self.client.pipeline(transaction=True)
        pipe.rpush(key, outcome.value)
        pipe.pexpire(key, ms(_REPLY_TTL))
        await pipe.execute()

    def _spawn(self, work: Awaitable[None], what: str) -> None:
        async def run() -> None:
            try:
                await work
            except (RedisError, OSError) as exc:
                log.warning("%s failed: %s", what, exc)

        task = asyncio.get_running_loop().create_task(run(), name=f"redis-turn-controls-{what}")
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def _reply_key(self, turn_id: str, approval_id: str) -> str:
        return self._keys.turn(turn_id, f"reply:{approval_id}")

    @property
    def _abort_channel(self) -> str:
        return self._keys.channel("abort")

    @property
    def _decision_channel(self) -> str:
        return self._keys.channel("decision")


def _pairs(fields: Any) -> dict[str, str]:
    """A hash as ``HGETALL`` gives it (a dict, or a flat list from a script)."""
    if isinstance(fields, dict):
        return {text(k): text(v) for k, v in fields.items()}
    items = [text(item) for item in fields]
    return dict(zip(items[::2], items[1::2], strict=True))


async def _close_quietly(pubsub: PubSub) -> None:
    """Close a subscription within a bound, then drop its connection without waiting:
    redis-py's ``aclose`` can wait forever for the socket to close (redis-py#3941), and
    it runs on the way out of a cancelled listener, which :meth:`stop` awaits."""
    with contextlib.suppress(Exception):
        async with asyncio.timeout(_CLOSE_WAIT):
            await cast(Any, pubsub).aclose()  # (typed from redis-py 8.2 on, not before)
            return
    connection: Any = getattr(pubsub, "connection", None)  # redis-py types it as None
    if connection is not None:
        with contextlib.suppress(Exception):
            await connection.disconnect(nowait=True)
