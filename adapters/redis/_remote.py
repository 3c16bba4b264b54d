"""Reading a turn that another replica runs, from Redis: following its stream, where
it stands, and ending it when its replica stopped responding (see
:mod:`adapters.redis._turnlog` for the keys)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import cast

import redis.asyncio as aioredis

from adapters.redis._commands import Commands
from adapters.redis._encoding import (
    REPLICA_LOST,
    REPLICA_LOST_MESSAGE,
    decode,
    encode,
    turn_fields,
    waiting_events,
)
from adapters.redis._keys import Keys, call, ms, text
from adapters.redis._scripts import LOG_REAP
from copilot_core.events import DoneEvent, ErrorEvent, HeartbeatEvent, TurnEvent
from copilot_core.ports import TurnInfo, TurnState

__all__ = ["RemoteTurns"]

log = logging.getLogger(__name__)

_LIVENESS_CHECK = 1.0  # seconds between checks of a remote turn's writer, when quiet
_XREAD_COUNT = 512


class RemoteTurns:
    """The turns in Redis as any replica reads them."""

    def __init__(self, client: aioredis.Redis, keys: Keys, retention: float) -> None:
        self.client = client
        self.retention = retention
        self._keys = keys
        self._reap_script = Commands.of(client).script(LOG_REAP)

    async def find(self, turn_id: str, project_id: str, session_id: str) -> TurnState | None:
        """Where the turn stands, in one snapshot (the approvals still waiting are those
        of the events counted); a turn whose writer is gone is ended first."""
        pipe = self.client.pipeline(transaction=True)
        pipe.hgetall(self._keys.turn(turn_id))
        pipe.hgetall(self._keys.turn(turn_id, "waiting"))
        pipe.xrevrange(self._keys.turn(turn_id, "events"), count=1)
        fields, waiting, newest = await call(pipe.execute())
        if not fields:
            return None
        info, closed = turn_fields(turn_id, fields)
        if not closed and await self.reap(turn_id, project_id, session_id):
            return await self.find(turn_id, project_id, session_id)  # with its end
        last_seq = int(text(newest[0][0]).split("-", 1)[0]) if newest else 0
        pending = () if closed else waiting_events(info.session_id, waiting)
        return TurnState(info, last_seq, closed, pending)

    async def follow(
        self, turn_id: str, after: int, heartbeat: float | None
    ) -> AsyncIterator[TurnEvent]:
        state = await self._state(turn_id)
        if state is None:
            return
        info, _ = state
        stream = self._keys.turn(turn_id, "events")
        last = max(after, 0)
        loop = asyncio.get_running_loop()
        quiet_since = checked = loop.time()
        while True:
            timeout = _LIVENESS_CHECK
            if heartbeat:
                timeout = min(timeout, max(quiet_since + heartbeat - loop.time(), 0.001))
            entries = cast(
                "list[tuple[bytes, list[tuple[bytes, dict[bytes, bytes]]]]] | None",
                await call(
                    self.client.xread(
                        {stream: f"{last}-0"}, count=_XREAD_COUNT, block=max(1, ms(timeout))
                    )
                ),
            )
            done = False
            for _, items in entries or []:
                for entry_id, values in items:
                    newest = int(text(entry_id).split("-", 1)[0])
                    events = decode(values)
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
                state = await self._state(turn_id)
                if state is None:
                    return  # expired, or discarded
                if state[1] and await self._last_seq(turn_id) <= last:
                    return  # closed, and we have everything
                if not state[1]:
                    await self.reap(turn_id, info.project_id, info.session_id)

    async def _state(self, turn_id: str) -> tuple[TurnInfo, bool] | None:
        fields = await call(self.client.hgetall(self._keys.turn(turn_id)))
        if not fields:
            return None
        return turn_fields(turn_id, fields)

    async def _last_seq(self, turn_id: str) -> int:
        newest = await call(self.client.xrevrange(self._keys.turn(turn_id, "events"), count=1))
        if not newest:
            return 0
        return int(text(newest[0][0]).split("-", 1)[0])

    async def reap(self, turn_id: str, project_id: str, session_id: str) -> bool:
        """End a turn whose writer key expired while it was open; True when this call
        did."""
        reaped = await call(
            self._reap_script(
                keys=self._keys.turn_keys(turn_id, project_id, session_id),
                args=[
                    turn_id,
                    encode(ErrorEvent(REPLICA_LOST_MESSAGE, REPLICA_LOST)),
                    encode(DoneEvent(None, "")),
                    ms(self.retention),
                ],
            )
        )
        if reaped:
            log.warning(
                "ended turn %s of session %s: its replica stopped renewing its writer key",
                turn_id,
                session_id,
            )
        return bool(reaped)
