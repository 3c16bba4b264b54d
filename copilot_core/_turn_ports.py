"""The ports of running turns, each with one job: the turn's events (:class:`TurnLog`), one
piece of work per session (:class:`SessionLeases`), and what reaches a running turn from
any request (:class:`TurnControlRelay`: aborts, approval decisions). Re-exported by
:mod:`copilot_core.ports`."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Protocol

from copilot_core._abort import AbortToken
from copilot_core._approvals import ApprovalDecision, DecisionOutcome, TurnControl
from copilot_core._turns import SessionClaim, TurnInfo, TurnState
from copilot_core.events import TurnEvent, WireEvent

__all__ = ["SessionLeases", "TurnControlRelay", "TurnLog"]


class TurnLog(Protocol):
    """The events of running turns, for every client that follows one.

    A turn's events are numbered from 1 in the order they are appended, kept while it
    runs and for a retention time after it closes, and can be followed from any
    sequence number: a client that lost its connection resumes with nothing missed and
    nothing repeated. The in-memory log serves one process; a shared one (Redis) lets
    any replica follow a turn that another replica runs, and ends a turn whose replica
    stopped responding for whoever follows it. Who may open a turn in a session is the
    :class:`SessionLeases`' business, not the log's.
    """

    async def open(self, turn: TurnInfo, abort: AbortToken) -> None:
        """Start the log of a new turn; it becomes the session's latest. ``abort``
        fires if the log is ended without its writer (a shared log ends a turn whose
        replica stopped responding; what is appended after that is dropped)."""
        ...

    def append(self, turn_id: str, event: WireEvent) -> TurnEvent:
        """Number and keep one event of an open turn; never blocks (a shared log writes
        in the background, in order)."""
        ...

    async def close(self, turn_id: str) -> None:
        """The turn has ended (its last event, ``done``, was appended): end every
        subscription once it has everything, and keep the events for the retention
        time."""
        ...

    async def discard(self, turn_id: str) -> None:
        """Forget a turn that never started (it has no events); the session's latest
        turn is the one before it again."""
        ...

    async def find(self, project_id: str, session_id: str) -> TurnState | None:
        """The session's latest turn while it runs, or after it closed within the
        retention time."""
        ...

    def subscribe(
        self, turn_id: str, *, after: int = 0, heartbeat: float | None = None
    ) -> AsyncIterator[TurnEvent]:
        """Every event with ``seq > after``, then live ones until the turn closes.

        With ``heartbeat`` set, a heartbeat (``seq == 0``) is yielded whenever that
        many seconds pass without an event. An unknown or expired turn yields nothing.
        """
        ...


class SessionLeases(Protocol):
    """One running piece of work per session across the deployment: a turn, a
    rollback. The in-memory leases serve one process; shared ones (Redis) expire when
    the replica holding them stops renewing them, so a session is never held by a
    replica that died."""

    async def claim(self, project_id: str, session_id: str, holder: str) -> SessionClaim:
        """Hold the session for ``holder`` (a turn's id, a rollback's id); raises
        :class:`~copilot_core.errors.SessionBusyError` while someone holds it. A shared
        lease fires the claim's ``lost`` token if it cannot keep it."""
        ...

    async def release(self, claim: SessionClaim) -> None:
        """Let the session go (nothing happens when the claim was lost meanwhile)."""
        ...

    async def holder(self, project_id: str, session_id: str) -> str | None:
        """Who holds the session now (the ``holder`` its claim was made for), or None:
        to tell a client what it waits for (a turn, a rollback)."""
        ...


class TurnControlRelay(Protocol):
    """What reaches a running turn from wherever a request arrives: the abort signal
    and the decisions on its pending approvals. The turn's runner attaches it with its
    :class:`TurnControl`; any process then addresses it by its session. The in-memory
    relay serves one process; a shared one (Redis) carries aborts and decisions to the
    replica that runs the turn."""

    async def attach(self, turn: TurnInfo, control: TurnControl) -> None:
        """Make the turn reachable: an abort requested for its session sets
        ``control.abort``; a decision on an approval it :meth:`expect`\\ s reaches
        ``control.decide``. Called by the holder of the session's lease."""
        ...

    async def detach(self, turn: TurnInfo) -> None:
        """The turn no longer takes aborts or decisions (it is ending)."""
        ...

    async def expect(self, turn: TurnInfo, approval_id: str) -> asyncio.Future[ApprovalDecision]:
        """The turn waits for a decision on ``approval_id``: from now on one may be sent
        from anywhere, once; returns the future it completes (``control.expect``: the
        one the turn registered there already, when it did: the future its waiting call
        awaits). Call it before clients can see the ``approval_required``."""
        ...

    def resolved(self, turn: TurnInfo, approval_id: str) -> None:
        """The turn has its answer on ``approval_id`` (decided, or lapsed): a later
        decision is ``already_decided`` everywhere. Never blocks."""
        ...

    async def request_abort(self, project_id: str, session_id: str, reason: str) -> bool:
        """Abort the session's attached turn wherever it runs; False when none is."""
        ...

    async def send_decision(
        self, project_id: str, session_id: str, approval_id: str, decision: ApprovalDecision
    ) -> DecisionOutcome:
        """Deliver a decision on one of the attached turn's pending approvals, wherever
        it runs: accepted once; ``already_decided`` after; ``unknown`` when no attached
        turn of the session expects that approval."""
        ...
