"""The in-memory :class:`~copilot_core.ports.TurnLog`: one process serves every turn.

Events are kept for the whole turn, and for ``retention`` seconds after it, so that a
client that lost its connection can re-attach and replay what it missed before
following live (a :class:`~copilot_core._turnfeed.TurnEventFeed` per turn). Appending
never blocks; any number of clients may follow a turn.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass

from copilot_core._abort import AbortToken
from copilot_core._turnfeed import TurnEventFeed
from copilot_core._turns import TurnInfo, TurnState
from copilot_core.events import TurnEvent, WireEvent

__all__ = ["InMemoryTurnLog"]


@dataclass(eq=False, slots=True)
class _Turn:
    info: TurnInfo
    previous: str | None
    feed: TurnEventFeed


class InMemoryTurnLog:
    """Turn logs in this process's memory (the default; see ``adapters.redis`` for a
    log shared by several replicas)."""

    def __init__(self, *, retention: float = 60.0) -> None:
        self.retention = retention
        self._turns: dict[str, _Turn] = {}
        self._latest: dict[tuple[str, str], str] = {}  # (project, session) -> turn id

    async def open(self, turn: TurnInfo, abort: AbortToken) -> None:
        key = (turn.project_id, turn.session_id)
        previous = self._latest.get(key)
        self._turns[turn.turn_id] = _Turn(turn, previous, TurnEventFeed(turn.session_id))
        self._latest[key] = turn.turn_id

    def append(self, turn_id: str, event: WireEvent) -> TurnEvent:
        feed = self._turns[turn_id].feed
        if feed.closed:
            raise RuntimeError(f"turn {turn_id} is closed")
        return feed.append(event)

    async def close(self, turn_id: str) -> None:
        turn = self._turns.get(turn_id)
        if turn is None or turn.feed.closed:
            return
        turn.feed.close()
        asyncio.get_running_loop().call_later(self.retention, self._forget, turn_id)

    async def discard(self, turn_id: str) -> None:
        turn = self._turns.pop(turn_id, None)
        if turn is None:
            return
        turn.feed.close()
        key = (turn.info.project_id, turn.info.session_id)
        if self._latest.get(key) == turn_id:
            if turn.previous is not None and turn.previous in self._turns:
                self._latest[key] = turn.previous
            else:
                del self._latest[key]

    async def find(self, project_id: str, session_id: str) -> TurnState | None:
        turn_id = self._latest.get((project_id, session_id))
        if turn_id is None:
            return None
        turn = self._turns[turn_id]
        events, closed = turn.feed.events, turn.feed.closed
        pending = () if closed else events.waiting_approvals()
        return TurnState(turn.info, len(events), closed, pending)

    def subscribe(
        self, turn_id: str, *, after: int = 0, heartbeat: float | None = None
    ) -> AsyncIterator[TurnEvent]:
        turn = self._turns.get(turn_id)
        if turn is None:
            return _nothing()
        return turn.feed.follow(after, heartbeat)

    def _forget(self, turn_id: str) -> None:
        turn = self._turns.get(turn_id)
        if turn is None or not turn.feed.closed:
            return
        del self._turns[turn_id]
        key = (turn.info.project_id, turn.info.session_id)
        if self._latest.get(key) == turn_id:
            del self._latest[key]


async def _nothing() -> AsyncIterator[TurnEvent]:
    return
    yield
