"""The in-memory checkpoint store (:class:`InMemoryCheckpointStore`), a fake of the
store's ports that behaves like the SQLite store; public in :mod:`copilot_core.testing`."""

from __future__ import annotations

import copy
import itertools
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from copilot_core._messages import Message, Role
from copilot_core._restore_point import RestorePoint
from copilot_core._search import excerpt
from copilot_core._session import CopilotMode, Session
from copilot_core._stats import Usage, stamp_usage
from copilot_core.errors import InvalidRequestError, NotFoundError, SessionNotFoundError
from copilot_core.ports import HistoryPage, IntentRun, SessionMatch, StandingIntentRecord

__all__ = ["InMemoryCheckpointStore"]

# What search looks in: questions and answers, never tool output.
_SEARCHED = (Role.USER, Role.ASSISTANT)


class InMemoryCheckpointStore:
    """A :class:`~copilot_core.ports.CheckpointStore` in dictionaries.

    Behaves like the SQLite store, including ordering and paging; the contract
    tests run the same assertions on both.
    """

    def __init__(self) -> None:
        self._sessions: dict[str, dict[str, Session]] = {}
        self._messages: dict[tuple[str, str], list[Message]] = {}
        self._points: dict[tuple[str, str], list[RestorePoint]] = {}
        self._intents: dict[tuple[str, str], StandingIntentRecord] = {}
        self._row_ids = itertools.count(1)

    async def standing_intent(self, project_id: str, user_id: str) -> StandingIntentRecord | None:
        return copy.deepcopy(self._intents.get((project_id, user_id)))

    async def save_standing_intent(
        self, project_id: str, user_id: str, record: StandingIntentRecord
    ) -> None:
        self._intents[(project_id, user_id)] = copy.deepcopy(record)

    async def save_intent_run(
        self, project_id: str, user_id: str, checks: list[dict[str, Any]], run: IntentRun
    ) -> bool:
        record = self._intents.get((project_id, user_id))
        if record is None or record.checks != checks:
            return False
        self._intents[(project_id, user_id)] = replace(record, last_run=copy.deepcopy(run))
        return True

    async def create_session(self, session: Session, messages: Sequence[Message] = ()) -> Session:
        project = self._sessions.setdefault(session.project_id, {})
        if session.thread_id in project:
            raise ValueError(f"session {session.thread_id!r} exists already")
        first = list(messages)  # all or none, even if iterating fails
        project[session.thread_id] = session.model_copy(update={"id": next(self._row_ids)})
        self._messages[(session.project_id, session.thread_id)] = first
        self._count(session.project_id, session.thread_id, len(first), None)
        return project[session.thread_id]

    async def get_session(self, project_id: str, thread_id: str) -> Session | None:
        return self._sessions.get(project_id, {}).get(thread_id)

    async def list_sessions(
        self,
        project_id: str,
        user_id: str,
        *,
        limit: int = 100,
        offset: int = 0,
        copilot_mode: CopilotMode | None = None,
    ) -> list[Session]:
        mine = [
            s
            for s in self._sessions.get(project_id, {}).values()
            if s.user_id == user_id and (copilot_mode is None or s.copilot_mode == copilot_mode)
        ]
        mine.sort(key=lambda s: (s.pinned, s.updated_at, s.id or 0), reverse=True)
        return mine[offset : offset + limit]

    async def append_messages(
        self,
        project_id: str,
        thread_id: str,
        messages: Sequence[Message],
        *,
        usage: Usage | None = None,
        replaces: str | None = None,
    ) -> None:
        log = self._log(project_id, thread_id)
        new = stamp_usage(list(messages), usage)  # all or none, even if iterating fails
        removed = 1 if replaces is not None and log and log[-1].id == replaces else 0
        if removed:
            self._uncount(project_id, thread_id, [log.pop()])
        log.extend(new)
        self._count(project_id, thread_id, len(new), usage)

    async def history(
        self,
        project_id: str,
        thread_id: str,
        *,
        limit: int | None = None,
        before: int | None = None,
    ) -> HistoryPage:
        log = self._log(project_id, thread_id)
        end = len(log) if before is None else min(max(before - 1, 0), len(log))
        start = 0 if limit is None else max(end - limit, 0)
        return HistoryPage(list(log[start:end]), start + 1 if start > 0 else None)

    async def record_turn(
        self,
        project_id: str,
        thread_id: str,
        at: datetime,
        *,
        usage: Usage | None = None,
        title: str | None = None,
    ) -> None:
        self._count(project_id, thread_id, 0, usage)
        session = self._require(project_id, thread_id)
        update: dict[str, Any] = {"last_message_at": at, "updated_at": at}
        if title is not None:
            update["title"] = title
        self._sessions[project_id][thread_id] = session.model_copy(update=update)

    def _uncount(self, project_id: str, thread_id: str, removed: Sequence[Message]) -> None:
        """Take removed messages, and the usage they recorded, off the counters."""
        usage = sum((Usage.of(m.metadata) for m in removed), Usage())
        session = self._require(project_id, thread_id)
        self._sessions[project_id][thread_id] = session.model_copy(
            update={
                "message_count": session.message_count - len(removed),
                "question_count": self._questions(project_id, thread_id),
                "llm_calls_count": max(session.llm_calls_count - usage.llm_calls, 0),
                "input_tokens": max(session.input_tokens - usage.input_tokens, 0),
                "output_tokens": max(session.output_tokens - usage.output_tokens, 0),
                "total_tokens": max(session.total_tokens - usage.total_tokens, 0),
            }
        )

    def _questions(self, project_id: str, thread_id: str) -> int:
        log = self._messages.get((project_id, thread_id), [])
        return sum(message.role is Role.USER for message in log)

    def _count(self, project_id: str, thread_id: str, messages: int, usage: Usage | None) -> None:
        session = self._require(project_id, thread_id)
        usage = usage or Usage()
        self._sessions[project_id][thread_id] = session.model_copy(
            update={
                "message_count": session.message_count + messages,
                "question_count": self._questions(project_id, thread_id),
                "llm_calls_count": session.llm_calls_count + usage.llm_calls,
                "input_tokens": session.input_tokens + usage.input_tokens,
                "output_tokens": session.output_tokens + usage.output_tokens,
                "total_tokens": session.total_tokens + usage.total_tokens,
            }
        )

    async def search_sessions(
        self, project_id: str, user_id: str, text: str, *, limit: int = 20
    ) -> list[SessionMatch]:
        needle = text.lower()
        mine = [s for s in self._sessions.get(project_id, {}).values() if s.user_id == user_id]
        mine.sort(key=lambda s: (s.updated_at, s.id or 0), reverse=True)
        found: list[SessionMatch] = []
        for session in mine:
            hit = next(
                (
                    m
                    for m in reversed(self._messages[(project_id, session.thread_id)])
                    if m.role in _SEARCHED and needle in m.content.lower()
                ),
                None,
            )
            if hit is not None:
                found.append(SessionMatch(session, excerpt(hit.content, text), hit.id))
            elif needle in session.title.lower():
                found.append(SessionMatch(session, session.title))
        return found[:limit]

    async def truncate(self, project_id: str, thread_id: str, message_id: str) -> int:
        log = self._log(project_id, thread_id)
        index = next((n for n, m in enumerate(log) if m.id == message_id), None)
        if index is None:
            raise InvalidRequestError(f"message {message_id!r} is not in this session.")
        removed = log[index:]
        del log[index:]
        self._uncount(project_id, thread_id, removed)
        return len(removed)

    async def rename_session(
        self, project_id: str, thread_id: str, title: str, at: datetime
    ) -> Session | None:
        session = await self.get_session(project_id, thread_id)
        if session is None:
            return None
        renamed = session.model_copy(update={"title": title, "updated_at": at})
        self._sessions[project_id][thread_id] = renamed
        return renamed

    async def set_pinned(self, project_id: str, thread_id: str, pinned: bool) -> Session | None:
        session = await self.get_session(project_id, thread_id)
        if session is None:
            return None
        updated = session.model_copy(update={"pinned": pinned})
        self._sessions[project_id][thread_id] = updated
        return updated

    async def set_mode(self, project_id: str, thread_id: str, mode: CopilotMode) -> Session | None:
        session = await self.get_session(project_id, thread_id)
        if session is None:
            return None
        updated = session.model_copy(update={"copilot_mode": mode})
        self._sessions[project_id][thread_id] = updated
        return updated

    async def delete_session(self, project_id: str, thread_id: str) -> bool:
        if self._sessions.get(project_id, {}).pop(thread_id, None) is None:
            return False
        del self._messages[(project_id, thread_id)]
        self._points.pop((project_id, thread_id), None)
        return True

    # ------------------------------------------------------------- restore points
    async def save_restore_point(self, point: RestorePoint) -> None:
        self._require(point.project_id, point.session_id)
        self._points.setdefault((point.project_id, point.session_id), []).append(point)

    async def restore_points(self, project_id: str, thread_id: str) -> list[RestorePoint]:
        self._require(project_id, thread_id)
        return list(self._points.get((project_id, thread_id), []))

    async def restore_point(
        self, project_id: str, thread_id: str, point_id: str
    ) -> RestorePoint | None:
        points = self._points.get((project_id, thread_id), [])
        return next((point for point in points if point.id == point_id), None)

    async def update_restore_point(self, point: RestorePoint) -> None:
        points = self._points.get((point.project_id, point.session_id), [])
        for n, kept in enumerate(points):
            if kept.id == point.id:
                points[n] = replace(  # what it holds; who took it, when and before what stay
                    point,
                    created_at=kept.created_at,
                    tool_call_id=kept.tool_call_id,
                    tool_name=kept.tool_name,
                    summary=kept.summary,
                )
                return
        raise NotFoundError(f"There is no restore point {point.id!r} in this session.")

    async def delete_project_sessions(self, project_id: str) -> int:
        sessions = self._sessions.pop(project_id, {})
        for thread_id in sessions:
            del self._messages[(project_id, thread_id)]
            self._points.pop((project_id, thread_id), None)
        return len(sessions)

    def _require(self, project_id: str, thread_id: str) -> Session:
        session = self._sessions.get(project_id, {}).get(thread_id)
        if session is None:
            raise SessionNotFoundError(thread_id)
        return session

    def _log(self, project_id: str, thread_id: str) -> list[Message]:
        self._require(project_id, thread_id)
        return self._messages[(project_id, thread_id)]
