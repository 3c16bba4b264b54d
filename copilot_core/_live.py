"""A running turn: as its clients see it (:class:`TurnHandle`) and as the
:class:`~copilot_core._runner.TurnRunner` drives it in this process (:class:`LiveTurn`,
with the streamed answer's :class:`Draft`)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from copilot_core._abort import AbortToken
from copilot_core._approvals import TurnControl
from copilot_core._asking import TurnApprovals
from copilot_core._conversation import Conversation
from copilot_core._messages import Message
from copilot_core._session import Session
from copilot_core._stats import StatsCollector, Usage
from copilot_core._turns import SessionClaim, TurnInfo, TurnResult
from copilot_core.events import TurnEvent
from copilot_core.ports import AgentBackend, AgentRunConfig, TurnLog

__all__ = ["Draft", "LiveTurn", "TurnHandle"]


class TurnHandle:
    """A turn as its clients see it: follow its events; wait for its result when this
    process runs it."""

    __slots__ = (
        "_finished",
        "_live",
        "_log",
        "info",
        "last_seq",
        "pending",
        "session_id",
        "turn_id",
    )

    def __init__(
        self,
        info: TurnInfo,
        turn_log: TurnLog,
        *,
        last_seq: int = 0,
        finished: bool = False,
        pending: tuple[TurnEvent, ...] = (),
        live: LiveTurn | None = None,
    ) -> None:
        self.info = info
        self.turn_id: str = info.turn_id
        self.session_id: str = info.session_id
        #: How many events the turn had when this handle was made.
        self.last_seq = last_seq
        #: Its ``approval_required`` events still waiting for a decision, then.
        self.pending = pending
        self._finished = finished
        self._log = turn_log
        self._live = live

    @property
    def finished(self) -> bool:
        """Whether the turn has ended (as of when this handle was made, for a turn that
        another process runs)."""
        return self._live.result.done() if self._live is not None else self._finished

    def subscribe(self, after: int = 0, heartbeat: float | None = None) -> AsyncIterator[TurnEvent]:
        """Every event after ``after``, then live ones until ``done`` (see ``TurnLog``)."""
        return self._log.subscribe(self.info.turn_id, after=after, heartbeat=heartbeat)

    @property
    def result(self) -> TurnResult | None:
        """The outcome, once a turn run by this process has ended."""
        if self._live is None or not self._live.result.done():
            return None
        return self._live.result.result()

    async def wait(self) -> TurnResult:
        """The outcome of a turn run by this process, once it has ended and been saved."""
        if self._live is None:
            raise RuntimeError("this turn runs in another process; follow it with subscribe()")
        return await asyncio.shield(self._live.result)


@dataclass(eq=False, slots=True)
class Draft:
    """The answer's text streamed since the last step, and how much of it is saved."""

    id: str | None = None
    parts: list[str] = field(default_factory=list)
    chars: int = 0
    saved_chars: int = 0
    saved_at: float = 0.0

    def reset(self, now: float) -> None:
        self.id = None
        self.parts.clear()
        self.chars = self.saved_chars = 0
        self.saved_at = now


@dataclass(eq=False, slots=True)
class LiveTurn:
    """A turn this process runs: everything the driver needs and what it produced."""

    info: TurnInfo
    control: TurnControl
    result: asyncio.Future[TurnResult]
    backend: AgentBackend | None = None
    query: str = ""
    history: list[Message] = field(default_factory=list)
    config: AgentRunConfig | None = None
    session: Session | None = None
    #: The messages the session held before this turn (0 for a new one).
    stored_before: int = 0
    #: The turn's one conversation: the history window as replayed, the question, each
    #: step once saved (``AgentRunConfig.conversation``: the agent reads it).
    conversation: Conversation = field(default_factory=Conversation)
    added: list[Message] = field(default_factory=list)
    stats: StatsCollector = field(default_factory=StatsCollector)
    unsaved_usage: Usage = field(default_factory=Usage)
    title: str | None = None
    error: str | None = None
    #: The machine-readable code of :attr:`error` (an ``error`` event's ``code``).
    error_code: str | None = None
    abort_sent: bool = False
    #: The session, held for the turn until its work is saved.
    claim: SessionClaim | None = None
    draft: Draft = field(default_factory=Draft)
    task: asyncio.Task[None] | None = None
    #: The calls that wait for the user's decision (made at the first).
    approvals: TurnApprovals | None = None

    @property
    def abort(self) -> AbortToken:
        return self.control.abort
