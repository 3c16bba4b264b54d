"""The application service: what adapters call to chat and to manage sessions.

Everything is scoped by project and user: another user's session behaves exactly
like one that does not exist. A turn runs in its own task, so a client that
disconnects does not stop it; clients follow it through
:meth:`RunningTurn.subscribe`. Each step is persisted as it completes, the
counters once at the end by increments, and ``done`` is published only after the
final save.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass

from copilot_core.agent import error_code
from copilot_core.errors import (
    AgentNotFoundError,
    CopilotError,
    InvalidRequestError,
    LLMNotConfiguredError,
    SessionBusyError,
    SessionNotFoundError,
)
from copilot_core.events import (
    AbortEvent,
    DoneEvent,
    ErrorEvent,
    LLMCallCompleted,
    StepCompleted,
    TitleGenerated,
    TurnEvent,
)
from copilot_core.messages import Message, Role
from copilot_core.ports import (
    AgentBackend,
    AgentInfo,
    AgentRunConfig,
    CheckpointStore,
    Clock,
    EventSink,
    HistoryPage,
    IdFactory,
    LanguageModelProvider,
    ModelOverrides,
    ModelSelection,
)
from copilot_core.prompts import fallback_title
from copilot_core.session import CopilotMode, Session
from copilot_core.stats import StatsCollector
from copilot_core.streams import closing
from copilot_core.tools import ToolContext
from copilot_core.turns import RunningTurn, TurnResult

__all__ = ["ChatService", "ChatSettings", "TurnRequest"]

log = logging.getLogger(__name__)

# What an agent yields that clients do not see as it is (the rest is published).
_RECORDS = (StepCompleted, LLMCallCompleted, TitleGenerated, DoneEvent)

MAX_TITLE_CHARS = 255


@dataclass(frozen=True, slots=True)
class ChatSettings:
    max_message_chars: int = 32_000
    default_agent: str = "copilot"
    default_mode: CopilotMode = CopilotMode.TEACHING_ASSISTANT
    #: How long a finished turn stays attachable, so a client that reconnects just
    #: after the end still gets the events it missed.
    finished_turn_retention: float = 60.0
    max_page: int = 1000
    #: A turn gives the agent the newest part of the history that could still fit in
    #: the model's context, not all of it: messages are read newest first, in pages of
    #: ``history_page``, until they hold ``history_chars_per_token`` x the model's
    #: ``context_limit`` characters, or ``context_limit`` messages. Anything older
    #: would be trimmed from the prompt anyway (no tokenizer packs 16 characters of
    #: chat into one token on average). ``None`` reads the whole history every turn;
    #: so does a backend that does not use the user's model settings.
    history_chars_per_token: int | None = 16
    history_page: int = 256
    #: Sessions whose history window is kept in memory after a turn, for the next one
    #: (least recently used ones are forgotten; 0 keeps none). A kept window is used
    #: only while the stored session still has the row id and ``message_count`` it had
    #: when the window was kept, so a change made by anyone else is seen.
    history_cache_sessions: int = 32


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

    def __repr__(self) -> str:
        return (
            f"TurnRequest(project_id={self.project_id!r}, user_id={self.user_id!r}, "
            f"session_id={self.session_id!r}, agent_id={self.agent_id!r}, "
            f"message={len(self.message)} chars)"
        )


class ChatService:
    def __init__(
        self,
        store: CheckpointStore,
        agents: Mapping[str, AgentBackend],
        *,
        models: LanguageModelProvider | None,
        clock: Clock,
        ids: IdFactory,
        settings: ChatSettings | None = None,
        observers: Sequence[EventSink] = (),
    ) -> None:
        self._store = store
        self._agents = dict(agents)
        self._models = models
        self._clock = clock
        self._ids = ids
        self.settings = settings or ChatSettings()
        self._observers = tuple(observers)
        self._running: dict[tuple[str, str], RunningTurn] = {}
        self._recent: dict[tuple[str, str], RunningTurn] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._windows: OrderedDict[tuple[str, str], _Window] = OrderedDict()

    # ===================================================================== turns
    async def start_turn(self, request: TurnRequest) -> RunningTurn:
        """Validate, persist the user message and start the turn in the background.

        Raises (before anything is stored): InvalidRequestError, AgentNotFoundError,
        SessionNotFoundError, SessionBusyError, LLMNotConfiguredError.
        """
        query = self._validate_message(request.message)
        _validate_overrides(request)
        agent_id = request.agent_id or self.settings.default_agent
        backend = self._agents.get(agent_id)
        if backend is None:
            raise AgentNotFoundError(agent_id, list(self._agents))

        existing: Session | None = None
        if request.session_id is not None:
            existing = await self._owned(request.project_id, request.session_id, request.user_id)
        session_id = request.session_id or self._ids.new_id()
        key = (request.project_id, session_id)
        if key in self._running:
            raise SessionBusyError(session_id)
        turn = RunningTurn(
            self._ids.new_id(), request.project_id, session_id, request.user_id, self._observers
        )
        self._running[key] = turn  # reserved before the first await below
        try:
            selection = await self._select_model(backend, request)
            mode = (
                request.copilot_mode
                or (existing.copilot_mode if existing else None)
                or (selection.copilot_mode if selection else None)
                or self.settings.default_mode
            )
            now = self._clock.now()
            history: list[Message] = []
            if existing is None:
                existing = await self._store.create_session(
                    Session(
                        thread_id=session_id,
                        user_id=request.user_id,
                        project_id=request.project_id,
                        copilot_mode=mode,
                        created_at=now,
                        updated_at=now,
                        metadata={"agent_id": agent_id},
                    )
                )
            else:
                history = await self._recent_history(existing, selection)
            user_message = Message.user(self._ids.new_id(), query, now)
            await self._store.append_messages(request.project_id, session_id, [user_message])
        except BaseException:
            del self._running[key]
            raise

        config = AgentRunConfig(
            context=ToolContext(
                project_id=request.project_id,
                user_id=request.user_id,
                session_id=session_id,
                mode=mode,
                abort=turn.abort,
                credentials=request.credentials,
            ),
            model=selection,
            generate_title=not existing.title,
            agent_id=agent_id,
        )
        task = asyncio.create_task(
            self._drive(turn, backend, query, history, config, user_message, existing),
            name=f"turn-{session_id}",
        )
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return turn

    async def stream_turn(
        self, request: TurnRequest, heartbeat: float | None = None
    ) -> AsyncIterator[TurnEvent]:
        """Start a turn and follow it to its end (a convenience for library users)."""
        turn = await self.start_turn(request)
        async with closing(turn.subscribe(heartbeat=heartbeat)) as events:
            async for event in events:
                yield event

    def attach(self, project_id: str, session_id: str, user_id: str) -> RunningTurn | None:
        """The session's running turn (or one that ended moments ago), for re-attaching."""
        key = (project_id, session_id)
        turn = self._running.get(key) or self._recent.get(key)
        if turn is None or turn.user_id != user_id:
            return None
        return turn

    async def abort(self, project_id: str, session_id: str, user_id: str) -> bool:
        """Abort the session's running turn; False when none was running."""
        await self._owned(project_id, session_id, user_id)
        turn = self._running.get((project_id, session_id))
        if turn is None:
            return False
        return turn.abort.abort("aborted by user")

    async def shutdown(self, grace: float = 10.0) -> None:
        """Abort every running turn and give them ``grace`` seconds to save."""
        for turn in list(self._running.values()):
            turn.abort.abort("the service is shutting down")
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=grace)

    # ================================================================== sessions
    async def get_session(self, project_id: str, session_id: str, user_id: str) -> Session:
        return await self._owned(project_id, session_id, user_id)

    async def list_sessions(
        self,
        project_id: str,
        user_id: str,
        *,
        limit: int = 100,
        offset: int = 0,
        copilot_mode: CopilotMode | None = None,
    ) -> list[Session]:
        if not 1 <= limit <= self.settings.max_page:
            raise InvalidRequestError(f"limit must be between 1 and {self.settings.max_page}.")
        if offset < 0:
            raise InvalidRequestError("offset must not be negative.")
        return await self._store.list_sessions(
            project_id, user_id, limit=limit, offset=offset, copilot_mode=copilot_mode
        )

    async def history(
        self,
        project_id: str,
        session_id: str,
        user_id: str,
        *,
        limit: int = 100,
        before: int | None = None,
    ) -> tuple[Session, HistoryPage]:
        if not 1 <= limit <= self.settings.max_page:
            raise InvalidRequestError(f"limit must be between 1 and {self.settings.max_page}.")
        if before is not None and before < 0:
            raise InvalidRequestError("cursor must not be negative.")
        session = await self._owned(project_id, session_id, user_id)
        page = await self._store.history(project_id, session_id, limit=limit, before=before)
        return session, page

    async def rename(self, project_id: str, session_id: str, user_id: str, title: str) -> Session:
        clean = " ".join(title.split())
        if not 1 <= len(clean) <= MAX_TITLE_CHARS:
            raise InvalidRequestError(f"title must be 1 to {MAX_TITLE_CHARS} characters long.")
        await self._owned(project_id, session_id, user_id)
        renamed = await self._store.rename_session(project_id, session_id, clean, self._clock.now())
        if renamed is None:
            raise SessionNotFoundError(session_id)
        return renamed

    async def set_pinned(
        self, project_id: str, session_id: str, user_id: str, pinned: bool
    ) -> Session:
        await self._owned(project_id, session_id, user_id)
        updated = await self._store.set_pinned(project_id, session_id, pinned)
        if updated is None:
            raise SessionNotFoundError(session_id)
        return updated

    async def delete(self, project_id: str, session_id: str, user_id: str) -> None:
        """Delete a session and its messages; a running turn is aborted first."""
        await self._owned(project_id, session_id, user_id)
        await self._stop_turns(lambda key: key == (project_id, session_id))
        self._windows.pop((project_id, session_id), None)
        if not await self._store.delete_session(project_id, session_id):
            raise SessionNotFoundError(session_id)

    async def delete_project(self, project_id: str) -> int:
        """Delete every session of a project (the project is being deleted)."""
        await self._stop_turns(lambda key: key[0] == project_id)
        for key in [key for key in self._windows if key[0] == project_id]:
            del self._windows[key]
        return await self._store.delete_project_sessions(project_id)

    # ==================================================================== agents
    def agents(self) -> list[tuple[AgentInfo, AgentBackend]]:
        listed: list[tuple[AgentInfo, AgentBackend]] = []
        for agent_id, backend in self._agents.items():
            infos = [info for info in backend.agents() if info.id == agent_id] or [
                AgentInfo(agent_id, agent_id, "")
            ]
            listed.append((infos[0], backend))
        return listed

    def default_agent(self) -> AgentBackend:
        return self._agents[self.settings.default_agent]

    # ================================================================= internals
    async def _drive(
        self,
        turn: RunningTurn,
        backend: AgentBackend,
        query: str,
        history: list[Message],
        config: AgentRunConfig,
        user_message: Message,
        session: Session,
    ) -> None:
        project_id, session_id = turn.project_id, turn.session_id
        stats = StatsCollector()
        stats.messages_added(1)  # the user message, saved by start_turn
        added: list[Message] = [user_message]
        title: str | None = None
        error: str | None = None
        try:
            async with closing(backend.run(query, history, config)) as events:
                async for event in events:
                    if not isinstance(event, _RECORDS):
                        if isinstance(event, ErrorEvent):
                            error = event.error
                        turn.publish(event)
                    elif isinstance(event, StepCompleted):
                        await self._store.append_messages(project_id, session_id, event.messages)
                        stats.messages_added(len(event.messages))
                        added.extend(event.messages)
                    elif isinstance(event, LLMCallCompleted):
                        stats.llm_call(event.input_tokens, event.output_tokens)
                    elif isinstance(event, TitleGenerated):
                        title = event.title
                    # DoneEvent: done is ours to send, after the save.
        except CopilotError as exc:
            error = exc.message
            turn.publish(ErrorEvent(exc.message, error_code(exc)))
        except Exception:
            log.exception("turn %s of session %s failed", turn.turn_id, session_id)
            error = "The turn failed with an internal error; what was said so far is saved."
            turn.publish(ErrorEvent(error, "internal"))
        finally:
            aborted = turn.abort.is_aborted()
            if aborted and not any(e.type == "abort" for e in turn.events_after(0)):
                turn.publish(AbortEvent())
            if title is None and not session.title:
                title = fallback_title(query)
            snapshot = stats.snapshot()
            self._windows.pop((project_id, session_id), None)
            try:
                await self._store.record_turn(
                    project_id, session_id, snapshot, self._clock.now(), title=title
                )
                self._keep_window(session, history, added, snapshot.messages, config.model)
            except CopilotError as exc:
                error = error or exc.message
                turn.publish(ErrorEvent(exc.message, error_code(exc)))
            final = next((m for m in reversed(added) if m.role is Role.ASSISTANT), None)
            turn.finish(
                TurnResult(
                    session_id=session_id,
                    message_id=final.id if final else None,
                    content=final.content if final else "",
                    messages=tuple(added),
                    stats=snapshot,
                    aborted=aborted,
                    error=error,
                ),
                DoneEvent(final.id if final else None),
            )
            self._retire(turn)

    def _retire(self, turn: RunningTurn) -> None:
        key = (turn.project_id, turn.session_id)
        if self._running.get(key) is turn:
            del self._running[key]
        self._recent[key] = turn
        loop = asyncio.get_running_loop()
        loop.call_later(self.settings.finished_turn_retention, self._forget, key, turn)

    def _forget(self, key: tuple[str, str], turn: RunningTurn) -> None:
        if self._recent.get(key) is turn:
            del self._recent[key]

    async def _stop_turns(self, match: Callable[[tuple[str, str]], bool]) -> None:
        turns = [turn for key, turn in self._running.items() if match(key)]
        for turn in turns:
            turn.abort.abort("the session is being deleted")
        for turn in turns:
            await turn.wait()

    async def _owned(self, project_id: str, session_id: str, user_id: str) -> Session:
        session = await self._store.get_session(project_id, session_id)
        if session is None or session.user_id != user_id:
            raise SessionNotFoundError(session_id)
        return session

    async def _recent_history(
        self, session: Session, selection: ModelSelection | None
    ) -> list[Message]:
        """The newest messages that could fit in the model's context (see ChatSettings)."""
        project_id, session_id = session.project_id, session.thread_id
        per_token = self.settings.history_chars_per_token
        if selection is None or per_token is None:
            return (await self._store.history(project_id, session_id)).messages
        kept = self._windows.get((project_id, session_id))
        if (
            kept is not None
            and kept.row_id == session.id
            and kept.message_count == session.message_count
        ):
            self._windows.move_to_end((project_id, session_id))
            return list(kept.messages)
        wanted_chars = selection.context_limit * per_token
        pages: list[list[Message]] = []
        chars = count = 0
        before: int | None = None
        while True:
            page = await self._store.history(
                project_id, session_id, limit=self.settings.history_page, before=before
            )
            pages.append(page.messages)
            count += len(page.messages)
            chars += sum(_chars(message) for message in page.messages)
            if (
                page.next_cursor is None
                or chars >= wanted_chars
                or count >= selection.context_limit
            ):
                break
            before = page.next_cursor
        # A step cut in two at the oldest end leaves tool results without their call;
        # agents drop those (they would have been trimmed with the rest).
        return [message for page in reversed(pages) for message in page]

    def _keep_window(
        self,
        session: Session,
        history: list[Message],
        added: list[Message],
        saved: int,
        selection: ModelSelection | None,
    ) -> None:
        """Remember the window for the session's next turn (history + this turn)."""
        per_token = self.settings.history_chars_per_token
        if selection is None or per_token is None or self.settings.history_cache_sessions < 1:
            return
        messages = [*history, *added]
        chars = sum(_chars(message) for message in messages)
        wanted_chars = selection.context_limit * per_token
        start = 0
        # Forget the oldest messages that the window no longer needs.
        while len(messages) - start > selection.context_limit or (
            start < len(messages) and chars - _chars(messages[start]) >= wanted_chars
        ):
            chars -= _chars(messages[start])
            start += 1
        key = (session.project_id, session.thread_id)
        self._windows[key] = _Window(session.id, session.message_count + saved, messages[start:])
        while len(self._windows) > self.settings.history_cache_sessions:
            self._windows.popitem(last=False)

    async def _select_model(
        self, backend: AgentBackend, request: TurnRequest
    ) -> ModelSelection | None:
        if not backend.capabilities().uses_llm_settings:
            return None
        if self._models is None:
            raise LLMNotConfiguredError()
        overrides = ModelOverrides(temperature=request.temperature, max_tokens=request.max_tokens)
        return await self._models.for_user(request.user_id, overrides)

    def _validate_message(self, message: str) -> str:
        text = message.strip()
        if not text:
            raise InvalidRequestError("message must not be empty.")
        if len(text) > self.settings.max_message_chars:
            raise InvalidRequestError(
                f"message is {len(text)} characters long; the limit is "
                f"{self.settings.max_message_chars}."
            )
        return text


def _validate_overrides(request: TurnRequest) -> None:
    if request.temperature is not None and not 0.0 <= request.temperature <= 2.0:
        raise InvalidRequestError("temperature must be between 0 and 2.")
    if request.max_tokens is not None and request.max_tokens <= 0:
        raise InvalidRequestError("max_tokens must be a positive integer.")


def _chars(message: Message) -> int:
    chars = len(message.content)
    for call in message.tool_calls or ():
        chars += len(call.function.name) + len(call.function.arguments)
    return chars


@dataclass(frozen=True, slots=True)
class _Window:
    """A session's history window as it was after its last turn."""

    row_id: int | None
    message_count: int
    messages: list[Message]
