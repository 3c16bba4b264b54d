"""Test doubles for the core's ports, for library users and for our own tests.

* :class:`ScriptedLanguageModel`: replies from a script, fragment by fragment.
* :class:`InMemoryCheckpointStore`: a complete store in memory.
* :class:`FakeToolExecutor`: tools as plain Python functions.
* :class:`FakeTopologySource`, :class:`StaticModelProvider`,
  :class:`RecordingEventSink`, :class:`SteppingClock`, :class:`SequentialIds`,
  :class:`FakeWaitClock` (time that moves only when something sleeps or spends it).

The reply builders :func:`text_reply` and :func:`tool_reply` produce the deltas
a real provider streams.
"""

from __future__ import annotations

import asyncio
import copy
import inspect
import itertools
import json
from collections.abc import AsyncGenerator, Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from copilot_core._approvals import Assessment, ChangePreview, RestorePoint, ToolEffect
from copilot_core._deltas import FinishDelta, ModelDelta, TextDelta, ToolCallDelta, UsageDelta
from copilot_core._messages import Message, Role
from copilot_core._search import excerpt
from copilot_core._session import CopilotMode, Session
from copilot_core._stats import Usage, stamp_usage
from copilot_core._tools import (
    NOT_CLEARED,
    Clearance,
    ParsedToolCall,
    ToolContext,
    ToolResult,
    ToolSpec,
)
from copilot_core._turns import TurnInfo
from copilot_core.errors import (
    InvalidRequestError,
    LLMError,
    LLMNotConfiguredError,
    NotFoundError,
    SessionNotFoundError,
)
from copilot_core.events import (
    AgentEvent,
    ApprovalNeeded,
    LLMCallCompleted,
    StepCompleted,
    TitleGenerated,
)
from copilot_core.ports import (
    CallOptions,
    HistoryPage,
    IntentRun,
    ModelOverrides,
    ModelSelection,
    SessionMatch,
    StandingIntentRecord,
)

__all__ = [
    "FakeTool",
    "FakeToolExecutor",
    "FakeTopologySource",
    "FakeWaitClock",
    "Hang",
    "InMemoryCheckpointStore",
    "ModelCall",
    "RecordingEventSink",
    "ScriptedLanguageModel",
    "SequentialIds",
    "StaticModelProvider",
    "SteppingClock",
    "text_reply",
    "tool_reply",
]

# What search looks in: questions and answers, never tool output.
_SEARCHED = (Role.USER, Role.ASSISTANT)


# ================================================================ language model
@dataclass(frozen=True, slots=True)
class Hang:
    """A script item that blocks for ``seconds`` (forever when ``None``) until cancelled."""

    seconds: float | None = None


ScriptItem = ModelDelta | BaseException | Hang
Reply = (
    Sequence[ScriptItem] | Callable[[Sequence[Message], Sequence[ToolSpec]], Sequence[ScriptItem]]
)


@dataclass(frozen=True, slots=True)
class ModelCall:
    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...]
    options: CallOptions


class ScriptedLanguageModel:
    """Streams scripted replies, one per call, in order.

    A reply is a list of deltas (and optionally exceptions to raise or
    :class:`Hang` pauses), or a function of the call's messages and tools that
    returns one. ``delay`` sleeps before every item; ``default`` answers once the
    script is used up (otherwise an :class:`LLMError` says so).
    """

    def __init__(
        self, replies: Iterable[Reply] = (), *, delay: float = 0.0, default: Reply | None = None
    ) -> None:
        self._replies: list[Reply] = list(replies)
        self.delay = delay
        self.default = default
        self.calls: list[ModelCall] = []
        self.closed_early = 0

    def add(self, *replies: Reply) -> None:
        self._replies.extend(replies)

    def clear(self) -> None:
        """Forget the replies not used yet."""
        self._replies.clear()

    @property
    def remaining(self) -> int:
        return len(self._replies)

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], options: CallOptions
    ) -> AsyncGenerator[ModelDelta, None]:
        self.calls.append(ModelCall(tuple(messages), tuple(tools), options))
        if self._replies:
            reply = self._replies.pop(0)
        elif self.default is not None:
            reply = self.default
        else:
            raise LLMError("the scripted model has no reply left")
        items = reply(messages, tools) if callable(reply) else reply
        finished = False
        try:
            for item in items:
                if self.delay:
                    await asyncio.sleep(self.delay)
                if isinstance(item, Hang):
                    if item.seconds is None:
                        await asyncio.Event().wait()
                    else:
                        await asyncio.sleep(item.seconds)
                elif isinstance(item, BaseException):
                    raise item
                else:
                    yield item
            finished = True
        finally:
            if not finished:
                self.closed_early += 1


def text_reply(
    text: str, *, chunk: int = 4, usage: tuple[int, int] | None = (10, 5)
) -> list[ModelDelta]:
    """A plain answer streamed ``chunk`` characters at a time, with usage and finish."""
    deltas: list[ModelDelta] = [TextDelta(text[i : i + chunk]) for i in range(0, len(text), chunk)]
    deltas.append(FinishDelta("stop"))
    if usage is not None:
        deltas.append(UsageDelta(*usage))
    return deltas


def tool_reply(
    *calls: tuple[str, dict[str, Any] | str],
    text: str = "",
    chunk: int = 7,
    ids: Sequence[str] | None = None,
    usage: tuple[int, int] | None = (20, 8),
) -> list[ModelDelta]:
    """A reply calling tools: ``(name, arguments)`` pairs; a ``str`` argument is sent
    verbatim (to script malformed JSON). Fragments of each call come in order."""
    deltas: list[ModelDelta] = [TextDelta(text)] if text else []
    for index, (name, arguments) in enumerate(calls):
        raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
        call_id = ids[index] if ids else f"call_{index}"
        deltas.append(ToolCallDelta(index, call_id, name, ""))
        deltas.extend(
            ToolCallDelta(index, None, None, raw[i : i + chunk]) for i in range(0, len(raw), chunk)
        )
    deltas.append(FinishDelta("tool_calls"))
    if usage is not None:
        deltas.append(UsageDelta(*usage))
    return deltas


class StaticModelProvider:
    """Gives every user the same selection; ``None`` means nobody has configured one."""

    def __init__(self, selection: ModelSelection | None) -> None:
        self.selection = selection
        self.overrides: list[ModelOverrides] = []

    async def for_user(self, user_id: str, overrides: ModelOverrides) -> ModelSelection:
        self.overrides.append(overrides)
        if self.selection is None:
            raise LLMNotConfiguredError()
        return self.selection


# ========================================================================= tools
Handler = Callable[[dict[str, Any], ToolContext], Any]


@dataclass(slots=True)
class FakeTool:
    spec: ToolSpec
    handler: Handler
    modes: frozenset[CopilotMode] = frozenset(CopilotMode)
    #: How a call is assessed: ``None`` (read-only), or the change it makes.
    changes: Callable[[dict[str, Any]], ChangePreview] | None = None


@dataclass(slots=True)
class FakeToolExecutor:
    """Tools backed by Python callables (sync or async); records every execution, and
    how the gate cleared it (``clearances``, in the same order)."""

    tools: dict[str, FakeTool] = field(default_factory=dict)
    executed: list[ParsedToolCall] = field(default_factory=list)
    clearances: list[Clearance] = field(default_factory=list)
    cancelled: list[str] = field(default_factory=list)

    def add(
        self,
        name: str,
        handler: Handler,
        *,
        modes: Iterable[CopilotMode] = tuple(CopilotMode),
        mutates_topology: bool = False,
        description: str = "",
        parameters: dict[str, Any] | None = None,
        changes: Callable[[dict[str, Any]], ChangePreview] | None = None,
        effect: ToolEffect | None = None,
        title: Callable[[dict[str, Any]], str | None] | None = None,
    ) -> FakeToolExecutor:
        """Add a tool; ``changes`` makes its calls changes of the lab, previewed by it;
        ``title`` names a call (``ToolSpec.title``).

        Its declared ``effect`` is, unless given, ``read_only`` for a tool without
        ``changes`` and ``device_change`` for one with.
        """
        if effect is None:
            effect = ToolEffect.READ_ONLY if changes is None else ToolEffect.DEVICE_CHANGE
        spec = ToolSpec(
            name,
            description or f"The {name} tool.",
            parameters or {"type": "object", "properties": {}},
            mutates_topology,
            effect,
            title=title,
        )
        self.tools[name] = FakeTool(spec, handler, frozenset(modes), changes)
        return self

    def specs(self, mode: CopilotMode) -> Sequence[ToolSpec]:
        return [tool.spec for tool in self.tools.values() if mode in tool.modes]

    async def assess(self, call: ParsedToolCall, context: ToolContext) -> Assessment:
        changes = self.tools[call.name].changes
        if changes is None:
            return Assessment.read_only()
        return Assessment(True, changes(dict(call.arguments or {})))

    async def execute(
        self, call: ParsedToolCall, context: ToolContext, clearance: Clearance = NOT_CLEARED
    ) -> ToolResult:
        self.executed.append(call)
        self.clearances.append(clearance)
        tool = self.tools[call.name]
        try:
            value = tool.handler(dict(call.arguments or {}), context)
            if inspect.isawaitable(value):
                value = await value
        except asyncio.CancelledError:
            self.cancelled.append(call.id)
            raise
        return value if isinstance(value, ToolResult) else ToolResult(value)


class FakeTopologySource:
    """A fixed topology (a dict you may mutate between reads); counts reads."""

    def __init__(
        self, topology: dict[str, Any] | None = None, error: Exception | None = None
    ) -> None:
        self.topology = topology if topology is not None else {"nodes": [], "links": []}
        self.error = error
        self.reads = 0

    async def read(self, context: ToolContext) -> dict[str, Any]:
        self.reads += 1
        if self.error is not None:
            raise self.error
        return copy.deepcopy(self.topology)


# ========================================================================= store
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
                points[n] = replace(kept, state=dict(point.state))
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


# ================================================================== small fakes
class RecordingEventSink:
    """Keeps every event and record it is sent, with the turn it belongs to."""

    def __init__(self) -> None:
        self.seen: list[tuple[TurnInfo, AgentEvent]] = []

    def emit(self, turn: TurnInfo, event: AgentEvent) -> None:
        self.seen.append((turn, event))

    @property
    def events(self) -> list[AgentEvent]:
        return [event for _, event in self.seen]

    def types(self) -> list[str]:
        """The types of the wire events seen (records are left out)."""
        records = (StepCompleted, LLMCallCompleted, TitleGenerated, ApprovalNeeded)
        return [event.type for event in self.events if not isinstance(event, records)]


class SteppingClock:
    """A clock that starts at ``start`` and moves ``step`` forward at every reading."""

    def __init__(
        self,
        start: datetime = datetime(2026, 1, 1, tzinfo=UTC),
        step: timedelta = timedelta(milliseconds=1),
    ) -> None:
        self._now = start
        self._step = step

    def now(self) -> datetime:
        self._now += self._step
        return self._now


class SequentialIds:
    def __init__(self, prefix: str = "id") -> None:
        self._prefix = prefix
        self._counter = itertools.count(1)

    def new_id(self) -> str:
        return f"{self._prefix}-{next(self._counter)}"


class FakeWaitClock:
    """A :class:`~copilot_core.intent.WaitClock` whose time moves only when something
    sleeps on it or :meth:`spend` is called (a scripted device taking time to answer);
    ``sleeps`` records every sleep asked for."""

    def __init__(self, start: float = 1000.0) -> None:
        self.now = start
        self.sleeps: list[float] = []

    def monotonic(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += max(0.0, seconds)
        await asyncio.sleep(0)

    def spend(self, seconds: float) -> None:
        self.now += seconds
