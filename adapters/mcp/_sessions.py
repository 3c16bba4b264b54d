"""Who holds which MCP session: the per-user cap and the idle expiry of the endpoint.

The SDK's session manager caps the sessions of the whole endpoint (and answers 503
beyond it); :class:`SessionLedger` caps each GNS3 user's on top of it, so that one user
can never fill the endpoint for everyone else. It follows each session as the SDK
does: a session is in use while one of its HTTP requests is in flight (a GET stream
included), idle otherwise, and expires once it has been idle for the idle timeout
(the SDK closes it then). The ledger's clock starts a little after the SDK's, so it
never counts a session as gone while the SDK still keeps it.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["SessionLedger", "TooManySessionsError"]


class TooManySessionsError(Exception):
    """A user asked for one more MCP session than they may hold."""

    def __init__(self, open_sessions: int, limit: int, idle_timeout: float, retry_after: float):
        self.open_sessions = open_sessions
        self.limit = limit
        self.idle_timeout = idle_timeout
        #: Seconds until one of the user's sessions expires (if it stays idle).
        self.retry_after = retry_after
        super().__init__(self.message)

    @property
    def message(self) -> str:
        return (
            f"You have {self.open_sessions} open MCP sessions, the most one user may have "
            f"({self.limit}). Close one you no longer use (an HTTP DELETE with its "
            f"Mcp-Session-Id header), or wait: a session expires after "
            f"{_duration(self.idle_timeout)} without a request, and the next of yours "
            f"expires in {_duration(self.retry_after)} unless it is used."
        )


@dataclass(slots=True)
class _Session:
    in_flight: int
    idle_since: float


class _Holder:
    __slots__ = ("opening", "sessions")

    def __init__(self) -> None:
        self.sessions: dict[str, _Session] = {}
        self.opening = 0  # requests opening a session, not answered yet

    def held(self) -> int:
        return len(self.sessions) + self.opening


class SessionLedger:
    """The open MCP sessions of each user (single event loop: no method awaits)."""

    def __init__(
        self,
        max_per_user: int,
        idle_timeout: float,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_per_user < 1:
            raise ValueError("max_per_user must be at least 1")
        if not (math.isfinite(idle_timeout) and idle_timeout > 0):
            raise ValueError("idle_timeout must be a positive number of seconds")
        self.max_per_user = max_per_user
        self.idle_timeout = idle_timeout
        self._clock = clock
        self._holders: dict[str, _Holder] = {}
        self._swept = clock()

    # ------------------------------------------------------------------ opening
    def reserve(self, user_id: str) -> None:
        """Counts a request that would open a session, or raises
        :class:`TooManySessionsError` when the user holds as many as they may."""
        now = self._clock()
        self._sweep(now)
        holder = self._holders.setdefault(user_id, _Holder())
        self._expire(holder, now)
        if holder.held() >= self.max_per_user:
            idle = [
                s.idle_since + self.idle_timeout - now
                for s in holder.sessions.values()
                if s.in_flight == 0
            ]
            retry_after = max(0.0, min(idle)) if idle else self.idle_timeout
            raise TooManySessionsError(
                holder.held(), self.max_per_user, self.idle_timeout, retry_after
            )
        holder.opening += 1

    def opened(self, user_id: str, session_id: str | None) -> None:
        """The reserved request has been answered: with a new session (its id), or not
        (``None``)."""
        holder = self._holders.get(user_id)
        if holder is None:
            return
        holder.opening = max(0, holder.opening - 1)
        if session_id is not None:
            holder.sessions[session_id] = _Session(0, self._clock())
        elif not holder.sessions and not holder.opening:
            del self._holders[user_id]

    # ------------------------------------------------------------------ using
    def enter(self, user_id: str, session_id: str) -> bool:
        """A request of one of the user's sessions starts (``False``: not theirs)."""
        holder = self._holders.get(user_id)
        session = holder.sessions.get(session_id) if holder is not None else None
        if session is None:
            return False
        session.in_flight += 1
        return True

    def leave(self, user_id: str, session_id: str, *, ended: bool) -> None:
        """The request has been answered; ``ended``: the session is gone (deleted by
        its client, or unknown to the SDK: expired)."""
        holder = self._holders.get(user_id)
        session = holder.sessions.get(session_id) if holder is not None else None
        if holder is None or session is None:
            return
        session.in_flight = max(0, session.in_flight - 1)
        session.idle_since = self._clock()
        if ended:
            del holder.sessions[session_id]
            if not holder.held():
                del self._holders[user_id]

    # ------------------------------------------------------------------ reading
    def open_sessions(self, user_id: str) -> int:
        holder = self._holders.get(user_id)
        if holder is None:
            return 0
        self._expire(holder, self._clock())
        return len(holder.sessions)

    def users(self) -> int:
        return len(self._holders)

    def clear(self) -> None:
        self._holders.clear()

    # ------------------------------------------------------------------ expiry
    def _expire(self, holder: _Holder, now: float) -> None:
        expired = [
            sid
            for sid, s in holder.sessions.items()
            if s.in_flight == 0 and now - s.idle_since >= self.idle_timeout
        ]
        for sid in expired:
            del holder.sessions[sid]

    def _sweep(self, now: float) -> None:
        """Forgets every user whose sessions all expired (at most once per half idle
        timeout, so the ledger does not grow with users who never come back)."""
        if now - self._swept < self.idle_timeout / 2:
            return
        self._swept = now
        for user_id, holder in list(self._holders.items()):
            self._expire(holder, now)
            if not holder.held():
                del self._holders[user_id]


def _duration(seconds: float) -> str:
    whole = max(1, math.ceil(seconds))
    minutes, rest = divmod(whole, 60)
    if not minutes:
        return f"{rest} s"
    return f"{minutes} min {rest} s" if rest else f"{minutes} min"
