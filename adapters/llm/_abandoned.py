"""Requests the service gave up on before the model's first token, per user and server.

A local model server reading a long prompt does not notice at once that its client hung
up: llama.cpp's ``llama-server`` finishes the prompt batch it is reading first, which on
a small CPU takes as long as the wait that was given up on. The next request of the same
user then queues behind work nobody reads any more, and would time out in its turn for
a reason the user cannot see. The service cannot know when the server is free again; it
says that it may not be (the ``waiting_for_model`` status carries :meth:`ServerWatch.note`)
until that server answers a request of this user, or until the user's first-token bound
has passed since the request was abandoned (a server that reads a prompt longer than
that is beyond what the user's settings allow anyway).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

__all__ = ["AbandonedRequests", "ServerWatch"]

_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class _Abandoned:
    at: datetime  # wall-clock time, for the note
    since: float  # ``monotonic`` time, for the expiry
    waited: float  # seconds the request had waited for its first token
    linger: float  # seconds the note stays (the user's first-token bound)


class AbandonedRequests:
    """The latest abandoned request of each (user, model server), until that server
    answers that user again or the request's first-token bound has passed.

    One per provider (the service's lifetime); single event loop, no locking needed.
    Entries go away once answered or expired, so the table holds only the pairs that
    gave up recently."""

    def __init__(
        self,
        *,
        monotonic: Callable[[], float] = time.monotonic,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._monotonic = monotonic
        self._now = now
        self._latest: dict[tuple[str, str], _Abandoned] = {}

    def watch(self, user_id: str, server: str, linger: float) -> ServerWatch:
        """What the models of one user's turn report to, for requests sent to ``server``
        (its base URL); ``linger`` is how long an abandoned request may keep it busy."""
        return ServerWatch(self, (user_id, server), linger)

    def _gave_up(self, key: tuple[str, str], waited: float, linger: float) -> None:
        self._latest[key] = _Abandoned(self._now(), self._monotonic(), waited, linger)
        _log.warning(
            "gave up on a request to %s after %.0f s without a first token; the server may "
            "stay busy with it for a while",
            key[1],
            waited,
        )

    def _answered(self, key: tuple[str, str]) -> None:
        self._latest.pop(key, None)

    def _note(self, key: tuple[str, str]) -> str | None:
        found = self._latest.get(key)
        if found is None:
            return None
        if self._monotonic() - found.since >= found.linger:
            del self._latest[key]
            return None
        return (
            "the model server may still be busy with the request abandoned at "
            f"{found.at:%H:%M:%S} UTC (no first token after {found.waited:.0f} s)"
        )


class ServerWatch:
    """One user's view of one model server: what a :class:`~adapters.llm.LangchainLanguageModel`
    tells (a request abandoned before its first token, or answered) and what the agent's
    waiting status says (:meth:`note`)."""

    __slots__ = ("_key", "_linger", "_table")

    def __init__(self, table: AbandonedRequests, key: tuple[str, str], linger: float) -> None:
        self._table = table
        self._key = key
        self._linger = linger

    def gave_up(self, waited: float) -> None:
        """The service closed a request after ``waited`` seconds without a first token."""
        self._table._gave_up(self._key, waited, self._linger)

    def answered(self) -> None:
        """The server answered a request (a token, or an error of its own): it is free."""
        self._table._answered(self._key)

    def note(self) -> str | None:
        """What the waiting status should add while the server may still be busy."""
        return self._table._note(self._key)
