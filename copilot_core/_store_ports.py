"""The store's ports: a session's history and counters (:class:`CheckpointStore`), the
user's standing intent (:class:`IntentStore`) and restore points
(:class:`RestorePointStore`), with the values they speak; public in
:mod:`copilot_core.ports`. :func:`owned_session` reads a session by its
:class:`~copilot_core._session_key.SessionKey`, the one way the core's use cases do."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from copilot_core._messages import Message
from copilot_core._restore_point import RestorePoint
from copilot_core._session import CopilotMode, Session
from copilot_core._session_key import SessionKey
from copilot_core._stats import Usage
from copilot_core.errors import SessionNotFoundError

__all__ = [
    "CheckpointStore",
    "HistoryPage",
    "IntentRun",
    "IntentStore",
    "RestorePointStore",
    "SessionMatch",
    "StandingIntentRecord",
    "owned_session",
]


@dataclass(frozen=True, slots=True)
class SessionMatch:
    """A session found by a search: where the text was found (``message_id`` ``None``:
    in the title) and an excerpt around it."""

    session: Session
    snippet: str
    message_id: str | None = None


@dataclass(frozen=True, slots=True)
class HistoryPage:
    """The newest messages before a cursor, oldest first; ``next_cursor`` pages back."""

    messages: list[Message]
    next_cursor: int | None


class CheckpointStore(Protocol):
    """Sessions and their append-only message logs, per project.

    Every method is scoped by ``project_id``. User scoping is the caller's duty
    (:class:`~copilot_core._service.ChatService` does it) except in
    :meth:`list_sessions`, which filters by user.
    """

    async def create_session(self, session: Session, messages: Sequence[Message] = ()) -> Session:
        """Store a new session with its first ``messages`` (a turn's question), in one
        transaction: the session and all of them, or nothing.

        The messages are stored and counted as :meth:`append_messages` without ``usage``
        would. Returns the session as stored: its ``id`` set and ``message_count`` counting
        the messages. Raises ``ValueError`` when the thread id exists (then nothing is
        written).
        """
        ...

    async def get_session(self, project_id: str, thread_id: str) -> Session | None: ...

    async def list_sessions(
        self,
        project_id: str,
        user_id: str,
        *,
        limit: int = 100,
        offset: int = 0,
        copilot_mode: CopilotMode | None = None,
    ) -> list[Session]:
        """The user's sessions: pinned first, then ``updated_at`` newest first."""
        ...

    async def append_messages(
        self,
        project_id: str,
        thread_id: str,
        messages: Sequence[Message],
        *,
        usage: Usage | None = None,
        replaces: str | None = None,
    ) -> None:
        """Append one step's messages and count them, in one transaction: all or nothing.

        ``message_count`` grows by the number of messages appended, less the draft they
        replace, so it always equals the history's length; ``usage`` (the LLM calls that
        produced the step) is added to the session's counters in the same transaction and
        recorded in the step's first message as ``metadata.usage``
        (:func:`~copilot_core._stats.stamp_usage`), so that :meth:`truncate` can take it off
        again.
        ``replaces`` is the id of a draft (a partial answer saved while it streamed) that
        these messages supersede: when it is the session's last message it is deleted in
        the same transaction; otherwise nothing is deleted. (The turn runner also replaces
        a failed turn's last message by itself with a mark, passing the usage it carried.)

        Raises :class:`~copilot_core.errors.SessionNotFoundError` when the session does
        not exist (then nothing is written).
        """
        ...

    async def history(
        self,
        project_id: str,
        thread_id: str,
        *,
        limit: int | None = None,
        before: int | None = None,
    ) -> HistoryPage:
        """The newest ``limit`` messages (all when ``None``) older than cursor ``before``."""
        ...

    async def record_turn(
        self,
        project_id: str,
        thread_id: str,
        at: datetime,
        *,
        usage: Usage | None = None,
        title: str | None = None,
    ) -> None:
        """The end of a turn: add ``usage`` (LLM calls not counted with a step), set
        ``last_message_at``/``updated_at`` to ``at`` and, when given, the title. One
        transaction. Raises :class:`~copilot_core.errors.SessionNotFoundError`."""
        ...

    async def search_sessions(
        self, project_id: str, user_id: str, text: str, *, limit: int = 20
    ) -> list[SessionMatch]:
        """The user's sessions whose title or the text of a question or answer (user or
        assistant message; tool output is not searched) contains ``text`` (case does not
        matter for ASCII letters), most recently updated first, each with an excerpt of
        its newest match."""
        ...

    async def truncate(self, project_id: str, thread_id: str, message_id: str) -> int:
        """Delete ``message_id`` and every later message of the session, and take them off
        its counters (``message_count``; the LLM calls and tokens each removed message
        carries in ``metadata.usage``), in one transaction; returns how many went.

        Raises :class:`~copilot_core.errors.SessionNotFoundError`, or
        :class:`~copilot_core.errors.InvalidRequestError` when the session has no such
        message (then nothing changes).
        """
        ...

    async def rename_session(
        self, project_id: str, thread_id: str, title: str, at: datetime
    ) -> Session | None: ...

    async def set_pinned(self, project_id: str, thread_id: str, pinned: bool) -> Session | None: ...

    async def set_mode(self, project_id: str, thread_id: str, mode: CopilotMode) -> Session | None:
        """The mode the session's next turns run in (``None``: no such session)."""
        ...

    async def delete_session(self, project_id: str, thread_id: str) -> bool:
        """Delete the session and all its messages in one transaction."""
        ...

    async def delete_project_sessions(self, project_id: str) -> int:
        """Delete every session of the project; returns how many there were."""
        ...


async def owned_session(store: CheckpointStore, key: SessionKey) -> Session:
    """The session ``key`` names, if it is its user's: another user's session is
    :class:`SessionNotFoundError`, exactly like one that does not exist."""
    session = await store.get_session(key.project_id, key.session_id)
    if session is None or session.user_id != key.user_id:
        raise SessionNotFoundError(key.session_id)
    return session


@dataclass(frozen=True, slots=True)
class IntentRun:
    """The last run of a user's standing intent: when it ended and its result, as
    ``verify_intent`` answers it (``status``, ``summary``, ``waited_s``, ``checks``)."""

    at: datetime
    result: dict[str, Any]


@dataclass(frozen=True, slots=True)
class StandingIntentRecord:
    """A user's standing intent in a project: the checks (as JSON objects, already
    validated), when they were last set, and their last run (``None``: not run since
    they were set)."""

    checks: list[dict[str, Any]]
    updated_at: datetime
    last_run: IntentRun | None = None


class IntentStore(Protocol):
    """Where each user's standing intent per project is kept (the checks that should
    always hold in that lab); another user of the project has their own."""

    async def standing_intent(self, project_id: str, user_id: str) -> StandingIntentRecord | None:
        """The user's checks in the project, ``None`` when never set."""
        ...

    async def save_standing_intent(
        self, project_id: str, user_id: str, record: StandingIntentRecord
    ) -> None:
        """Replace the user's checks in the project, and their last run with the record's."""
        ...

    async def save_intent_run(
        self, project_id: str, user_id: str, checks: list[dict[str, Any]], run: IntentRun
    ) -> bool:
        """Keep ``run`` as the last run of the user's checks when they are still
        ``checks`` (the checks it ran); ``False``, and nothing kept, when they were set
        to others meanwhile or never set."""
        ...


class RestorePointStore(Protocol):
    """Restore points, kept with their session (they survive a restart and go when the
    session is deleted)."""

    async def save_restore_point(self, point: RestorePoint) -> None:
        """Keep ``point``; raises :class:`~copilot_core.errors.SessionNotFoundError`."""
        ...

    async def restore_points(self, project_id: str, thread_id: str) -> list[RestorePoint]:
        """The session's restore points, oldest first."""
        ...

    async def restore_point(
        self, project_id: str, thread_id: str, point_id: str
    ) -> RestorePoint | None: ...

    async def update_restore_point(self, point: RestorePoint) -> None:
        """Replace what a kept point (same project, session and id) holds: what its
        change did, once it ran; that it was rolled back; the ids its rollback gave anew;
        the tool source's ``kept``. Who took it, when and before what stay. Raises
        :class:`~copilot_core.errors.NotFoundError` when no such point is kept."""
        ...
