"""A running turn: its event log, its subscribers and its outcome.

Events are kept for the whole turn so that a client that lost its connection can
re-attach and replay what it missed (``after`` = the last sequence number it saw)
before following live. Publishing never blocks; any number of clients may follow.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass

from copilot_core.abort import AbortToken
from copilot_core.events import HeartbeatEvent, TurnEvent, WireEvent
from copilot_core.messages import Message
from copilot_core.ports import EventSink
from copilot_core.stats import TurnStats

__all__ = ["RunningTurn", "TurnResult"]


@dataclass(frozen=True, slots=True)
class TurnResult:
    """How a turn ended and what it added."""

    session_id: str
    message_id: str | None
    content: str
    messages: tuple[Message, ...]
    stats: TurnStats
    aborted: bool = False
    error: str | None = None


_HEARTBEAT = "heartbeat"


class RunningTurn:
    """One turn of one session, from its first event to its result."""

    def __init__(
        self,
        turn_id: str,
        project_id: str,
        session_id: str,
        user_id: str,
        observers: Sequence[EventSink] = (),
    ) -> None:
        self.turn_id = turn_id
        self.project_id = project_id
        self.session_id = session_id
        self.user_id = user_id
        self.abort = AbortToken()
        self._observers = tuple(observers)
        self._events: list[TurnEvent] = []
        self._waiters: list[asyncio.Future[str | None]] = []
        self._result: TurnResult | None = None
        self._finished = asyncio.Event()

    # ------------------------------------------------------------------ producer
    def publish(self, event: WireEvent) -> TurnEvent:
        if self._result is not None:
            raise RuntimeError("the turn is finished")
        stamped = TurnEvent(len(self._events) + 1, self.session_id, event)
        self._events.append(stamped)
        self._wake(None)
        for observer in self._observers:
            observer.emit(stamped)
        return stamped

    def finish(self, result: TurnResult, final: WireEvent | None = None) -> None:
        """End the turn with ``result``; ``final`` (``done``) is its last event.

        Subscribers that receive ``final`` always find :attr:`result` already set.
        """
        if final is not None:
            self.publish(final)  # wakes subscribers, which run only after we return
        self._result = result
        self._finished.set()
        self._wake(None)

    # ----------------------------------------------------------------- consumers
    @property
    def finished(self) -> bool:
        return self._result is not None

    @property
    def result(self) -> TurnResult | None:
        return self._result

    @property
    def last_seq(self) -> int:
        return len(self._events)

    def events_after(self, after: int) -> list[TurnEvent]:
        return self._events[max(after, 0) :]

    async def wait(self) -> TurnResult:
        await self._finished.wait()
        assert self._result is not None
        return self._result

    async def subscribe(
        self, after: int = 0, heartbeat: float | None = None
    ) -> AsyncIterator[TurnEvent]:
        """Every event with ``seq > after``, then live ones until the turn ends.

        With ``heartbeat`` set, a heartbeat (``seq == 0``) is yielded whenever that
        many seconds pass without an event.
        """
        index = max(after, 0)
        loop = asyncio.get_running_loop()
        while True:
            while index < len(self._events):
                yield self._events[index]
                index += 1
            if self._result is not None:
                return
            waiter: asyncio.Future[str | None] = loop.create_future()
            self._waiters.append(waiter)
            timer = loop.call_later(heartbeat, _settle, waiter, _HEARTBEAT) if heartbeat else None
            try:
                woke_for = await waiter
            finally:
                if timer is not None:
                    timer.cancel()
                if waiter in self._waiters:
                    self._waiters.remove(waiter)
            if woke_for == _HEARTBEAT and index >= len(self._events) and self._result is None:
                yield TurnEvent(0, self.session_id, HeartbeatEvent())

    def _wake(self, why: str | None) -> None:
        if not self._waiters:
            return
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            _settle(waiter, why)


def _settle(waiter: asyncio.Future[str | None], why: str | None) -> None:
    if not waiter.done():
        waiter.set_result(why)
