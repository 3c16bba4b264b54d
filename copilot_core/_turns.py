"""What a turn is, from the outside: the request that starts it, who and where it runs,
the claim it holds on its session (a rollback holds one too), where it stands, and how
it ended: the values the ports of running turns speak."""

from __future__ import annotations

from dataclasses import dataclass, field

from copilot_core._abort import AbortToken
from copilot_core._limits import UNLIMITED, UserLimits
from copilot_core._messages import Message
from copilot_core._session import CopilotMode
from copilot_core._session_key import SessionKey
from copilot_core._stats import TurnStats
from copilot_core.events import TurnEvent

__all__ = ["SessionClaim", "TurnInfo", "TurnRequest", "TurnResult", "TurnState"]


@dataclass(frozen=True, slots=True)
class TurnRequest:
    """One user message to answer. ``credentials`` (the GNS3 token) stays in memory."""

    project_id: str
    user_id: str
    message: str
    session_id: str | None = None
    agent_id: str | None = None
    copilot_mode: CopilotMode | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    credentials: str | None = None
    #: Edit or regenerate: the id of the session's last user message; it and everything
    #: after it are dropped (and taken off the counters) before this message is answered.
    replace_from: str | None = None
    #: The user's limits under the operator's policy: a ``copilot_mode`` above
    #: ``max_mode`` is refused (PermissionDeniedError), a session's or stored mode above
    #: it runs at it, an approval setting below ``min_approval`` is raised to it.
    limits: UserLimits = UNLIMITED

    @property
    def key(self) -> SessionKey | None:
        """The session the message is asked in (``None``: a new session)."""
        if self.session_id is None:
            return None
        return SessionKey(self.project_id, self.session_id, self.user_id)

    def __repr__(self) -> str:
        return (
            f"TurnRequest(project_id={self.project_id!r}, user_id={self.user_id!r}, "
            f"session_id={self.session_id!r}, agent_id={self.agent_id!r}, "
            f"message={len(self.message)} chars)"
        )


@dataclass(frozen=True, slots=True)
class TurnInfo:
    """Which turn: its id, and the project, session and user it belongs to."""

    turn_id: str
    project_id: str
    session_id: str
    user_id: str

    @property
    def key(self) -> SessionKey:
        """The session the turn belongs to."""
        return SessionKey(self.project_id, self.session_id, self.user_id)


@dataclass(frozen=True, slots=True)
class SessionClaim:
    """A held session: who holds it (``holder``, a turn's or a rollback's id) and a
    token that fires when the claim is lost before it is released (a shared lease that
    could not be renewed: someone else may hold the session now, so stop)."""

    project_id: str
    session_id: str
    holder: str
    lost: AbortToken = field(default_factory=AbortToken, compare=False)


@dataclass(frozen=True, slots=True)
class TurnState:
    """Where a turn stands in its log: events so far, whether it has ended, and the
    ``approval_required`` events still waiting for a decision (to show them again to a
    client that re-attaches after them)."""

    info: TurnInfo
    last_seq: int
    finished: bool
    pending: tuple[TurnEvent, ...] = ()


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
