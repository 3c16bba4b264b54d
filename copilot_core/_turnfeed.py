"""A turn's events in memory, as turn logs keep them and clients follow them.

:class:`TurnEventBuffer` keeps a turn's wire events in order (a streamed token as its
text alone); :class:`TurnEventFeed` is the one subscribe loop of every turn log: replay
after a sequence number, then live events, with heartbeats. The in-memory log
(:mod:`copilot_core._turnlog`) and a shared one (``adapters.redis``) are built on them;
public in :mod:`copilot_core.ports`, beside the :class:`~copilot_core.ports.TurnLog`
port.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable

from copilot_core.events import (
    ApprovalRequiredEvent,
    ApprovalResolvedEvent,
    ContentEvent,
    HeartbeatEvent,
    TurnEvent,
    WireEvent,
)

__all__ = ["TurnEventBuffer", "TurnEventFeed", "pending_approvals"]


def pending_approvals(events: Iterable[TurnEvent]) -> tuple[TurnEvent, ...]:
    """The ``approval_required`` events of a turn not followed by their
    ``approval_resolved``, oldest first."""
    waiting: dict[str, TurnEvent] = {}
    for stamped in events:
        event = stamped.event
        if isinstance(event, ApprovalRequiredEvent):
            waiting[event.approval_id] = stamped
        elif isinstance(event, ApprovalResolvedEvent):
            waiting.pop(event.approval_id, None)
    return tuple(waiting.values())


class TurnEventBuffer:
    """A turn's wire events, in order, as a turn log keeps them in memory.

    A streamed token is kept as its text alone: a turn keeps thousands of them for as
    long as it is retained, and a string, unlike an event object, is not something the
    garbage collector visits again and again. :meth:`stamped` makes the event a client
    receives. Sequence numbers start at 1.
    """

    __slots__ = ("_items", "session_id")

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self._items: list[WireEvent | str] = []

    def __len__(self) -> int:
        return len(self._items)

    def append(self, event: WireEvent) -> TurnEvent:
        """Keep ``event``; returns it stamped with its sequence number."""
        items = self._items
        items.append(
            event.content if type(event) is ContentEvent and not event.from_answer else event
        )
        return TurnEvent(len(items), self.session_id, event)

    def stamped(self, seq: int) -> TurnEvent:
        """Event ``seq`` as a client receives it."""
        item = self._items[seq - 1]
        event = ContentEvent(item) if isinstance(item, str) else item
        return TurnEvent(seq, self.session_id, event)

    def approvals(self, after: int = 0) -> list[TurnEvent]:
        """The ``approval_required`` and ``approval_resolved`` events after ``after``."""
        return [
            TurnEvent(seq, self.session_id, item)
            for seq, item in enumerate(self._items[after:], start=after + 1)
            if isinstance(item, ApprovalRequiredEvent | ApprovalResolvedEvent)
        ]

    def waiting_approvals(self) -> tuple[TurnEvent, ...]:
        """The ``approval_required`` events not followed by their ``approval_resolved``."""
        return pending_approvals(self.approvals())


class TurnEventFeed:
    """A running turn's events in memory, followed by any number of clients.

    :meth:`follow` replays every event after a sequence number, then yields live ones
    as they are appended, until the turn is closed; it is the one subscribe loop of
    every turn log (the in-memory one, and a shared one for the turns its process
    runs). A log that shows an event only once it is stored elsewhere overrides
    :meth:`visible` and calls :meth:`wake` when more becomes visible.
    """

    __slots__ = ("_waiters", "closed", "events")

    def __init__(self, session_id: str) -> None:
        self.events = TurnEventBuffer(session_id)
        self.closed = False
        self._waiters: list[asyncio.Future[bool]] = []

    def append(self, event: WireEvent) -> TurnEvent:
        """Keep ``event`` and wake the followers; returns it stamped."""
        stamped = self.events.append(event)
        if self._waiters:
            self.wake()
        return stamped

    def close(self) -> None:
        """No more events: every follower ends once it has yielded what is visible."""
        self.closed = True
        self.wake()

    def wake(self) -> None:
        """Let the followers look again (more events are visible, or the turn closed)."""
        if not self._waiters:
            return
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            _settle(waiter, False)

    def visible(self) -> int:
        """How many events, from the first, followers may be shown (all of them here)."""
        return len(self.events)

    async def follow(
        self, after: int = 0, heartbeat: float | None = None
    ) -> AsyncIterator[TurnEvent]:
        """Every event with ``seq > after``, then live ones until the turn closes; a
        heartbeat (``seq == 0``) whenever ``heartbeat`` seconds pass without one."""
        index = max(after, 0)
        events = self.events
        loop = asyncio.get_running_loop()
        while True:
            limit = self.visible()
            if index < limit:
                while index < limit:
                    index += 1
                    yield events.stamped(index)
                continue  # more may have come while a client read
            if self.closed:
                return
            waiter: asyncio.Future[bool] = loop.create_future()
            self._waiters.append(waiter)
            timer = loop.call_later(heartbeat, _settle, waiter, True) if heartbeat else None
            try:
                beat = await waiter
            finally:
                if timer is not None:
                    timer.cancel()
                if waiter in self._waiters:
                    self._waiters.remove(waiter)
            if beat and index >= self.visible() and not self.closed:
                yield TurnEvent(0, events.session_id, HeartbeatEvent())


def _settle(waiter: asyncio.Future[bool], beat: bool) -> None:
    if not waiter.done():
        waiter.set_result(beat)
