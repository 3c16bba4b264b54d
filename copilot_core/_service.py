"""The application service: what adapters (the web API, an embedding program) call.

:class:`ChatService` is a thin facade. It checks requests and ownership, then hands
turns to the :class:`~copilot_core._runner.TurnRunner` and session operations to the
:class:`~copilot_core.ports.CheckpointStore`. Everything is scoped by project and
user: a session is named by its :class:`~copilot_core.SessionKey`, and another user's
session behaves exactly like one that does not exist.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import aclosing

from copilot_core._approvals import ApprovalDecision, DecisionOutcome
from copilot_core._chat_settings import ChatSettings
from copilot_core._messages import Role
from copilot_core._runner import TurnHandle, TurnRunner
from copilot_core._session import CopilotMode, Session
from copilot_core._session_key import SessionKey
from copilot_core._store_ports import owned_session
from copilot_core._turns import TurnRequest
from copilot_core.errors import (
    AgentNotFoundError,
    ApprovalNotFoundError,
    ConflictError,
    InvalidRequestError,
    SessionNotFoundError,
)
from copilot_core.events import TurnEvent
from copilot_core.ports import (
    AgentBackend,
    AgentInfo,
    CheckpointStore,
    Clock,
    HistoryPage,
    SessionMatch,
)
from copilot_core.rules import (
    MAX_COMMENT_CHARS,
    MAX_CURSOR,
    MAX_SEARCH_CHARS,
    TITLE_MAX_CHARS,
    check_message,
    check_overrides,
)

__all__ = ["ChatService", "ChatSettings"]


class ChatService:
    """Chat turns and sessions for adapters (see the module docstring).

    It takes what it uses and builds nothing: the composition root (the service's
    container, or :func:`copilot_core.bootstrap.build_chat_service` for a library user)
    builds the ``runner`` with its turn log and history windows from the settings, and
    hands it in.
    """

    def __init__(
        self,
        store: CheckpointStore,
        agents: Mapping[str, AgentBackend],
        runner: TurnRunner,
        *,
        clock: Clock,
        settings: ChatSettings | None = None,
        default_agent: str = "copilot",
    ) -> None:
        self.settings = settings or ChatSettings()
        self._store = store
        self._agents = dict(agents)
        if default_agent not in self._agents:
            raise ValueError(f"the default agent {default_agent!r} is not given")
        #: The agent a turn uses when its request names none.
        self.default_agent_id = default_agent
        self.runner = runner
        self._clock = clock

    # ===================================================================== turns
    async def start_turn(self, request: TurnRequest) -> TurnHandle:
        """Check the request, save the user message and start the turn in the background.

        Raises (before anything is stored): InvalidRequestError, AgentNotFoundError,
        SessionNotFoundError, SessionBusyError, LLMNotConfiguredError,
        ServiceUnavailableError.
        """
        query = check_message(request.message, self.settings.max_message_chars)
        check_overrides(request.temperature, request.max_tokens)
        agent_id = request.agent_id or self.default_agent_id
        backend = self._agents.get(agent_id)
        if backend is None:
            raise AgentNotFoundError(agent_id, list(self._agents))
        key = request.key
        session = None if key is None else await self._owned(key)
        if request.replace_from is not None:
            if session is None:
                raise InvalidRequestError("replace_from needs the session_id it belongs to.")
            await self._check_last_question(session, request.replace_from)
        return await self.runner.start(
            request, backend, agent_id=agent_id, query=query, session=session
        )

    async def stream_turn(
        self, request: TurnRequest, heartbeat: float | None = None
    ) -> AsyncIterator[TurnEvent]:
        """Start a turn and follow it to its end (a convenience for library users)."""
        turn = await self.start_turn(request)
        async with aclosing(turn.subscribe(heartbeat=heartbeat)) as events:  # type: ignore[type-var]
            async for event in events:
                yield event

    async def attach(self, key: SessionKey) -> TurnHandle | None:
        """The session's running turn (or one that ended moments ago), for re-attaching."""
        return await self.runner.attach(key)

    async def abort(self, key: SessionKey, reason: str = "aborted by user") -> bool:
        """Abort the session's running turn; False when none was running. ``reason`` is
        kept in the history's mark of the cut-off turn (``metadata.incomplete``)."""
        await self._owned(key)
        return await self.runner.abort(key.project_id, key.session_id, reason)

    async def decide(
        self,
        key: SessionKey,
        approval_id: str,
        *,
        approve: bool,
        comment: str = "",
        digest: str | None = None,
    ) -> None:
        """The session owner's decision on a call waiting for approval.

        ``digest``, when given, is the ``digest`` of the ``approval_required`` the user
        decided on: a decision for other arguments is refused (:class:`ConflictError`),
        and the call runs only with arguments of that digest. Raises
        :class:`ApprovalNotFoundError` when the session's running turn has no such
        approval (or the session is not the caller's), :class:`ConflictError` when it was
        decided already (or lapsed).
        """
        if len(comment) > MAX_COMMENT_CHARS:
            raise InvalidRequestError(f"comment must be at most {MAX_COMMENT_CHARS} characters.")
        await self._owned(key)
        outcome = await self.runner.decide(
            key.project_id,
            key.session_id,
            approval_id,
            ApprovalDecision(approve, user_id=key.user_id, comment=comment.strip(), digest=digest),
        )
        if outcome is DecisionOutcome.UNKNOWN:
            raise ApprovalNotFoundError(approval_id)
        if outcome is DecisionOutcome.ALREADY_DECIDED:
            raise ConflictError(f"Approval {approval_id!r} was already decided.")
        if outcome is DecisionOutcome.OTHER_ARGUMENTS:
            raise ConflictError(
                f"Approval {approval_id!r} is for other arguments than digest {digest}; "
                "nothing was decided."
            )

    async def shutdown(self, grace: float = 10.0) -> None:
        """Refuse new turns; abort every running one and give them ``grace`` seconds to save."""
        await self.runner.shutdown(grace)

    # ================================================================== sessions
    async def get_session(self, key: SessionKey) -> Session:
        """The caller's session (``SessionNotFoundError`` when it is not theirs)."""
        return await self._owned(key)

    async def list_sessions(
        self,
        project_id: str,
        user_id: str,
        *,
        limit: int = 100,
        offset: int = 0,
        copilot_mode: CopilotMode | None = None,
    ) -> list[Session]:
        self._check_page(limit)
        if not 0 <= offset <= MAX_CURSOR:
            raise InvalidRequestError(f"offset must be between 0 and {MAX_CURSOR}.")
        return await self._store.list_sessions(
            project_id, user_id, limit=limit, offset=offset, copilot_mode=copilot_mode
        )

    async def history(
        self,
        key: SessionKey,
        *,
        limit: int = 100,
        before: int | None = None,
    ) -> tuple[Session, HistoryPage]:
        """A page of the session's messages. The draft of a turn that is still running
        (its answer so far) is left out: clients get it from the turn's events."""
        self._check_page(limit)
        if before is not None and not 0 <= before <= MAX_CURSOR:
            raise InvalidRequestError(f"cursor must be between 0 and {MAX_CURSOR}.")
        session = await self._owned(key)
        page = await self._store.history(key.project_id, key.session_id, limit=limit, before=before)
        messages = page.messages
        if (
            before is None
            and messages
            and messages[-1].role is Role.ASSISTANT
            and messages[-1].metadata.get("partial")
            and await self.runner.running(key.project_id, key.session_id)
        ):
            page = HistoryPage(messages[:-1], page.next_cursor)
        return session, page

    async def search_sessions(
        self, project_id: str, user_id: str, text: str, *, limit: int = 20
    ) -> list[SessionMatch]:
        """The caller's sessions whose title or messages contain ``text``, newest first."""
        needle = " ".join(text.split())
        if not 1 <= len(needle) <= MAX_SEARCH_CHARS:
            raise InvalidRequestError(
                f"the search text must be 1 to {MAX_SEARCH_CHARS} characters."
            )
        self._check_page(limit)
        return await self._store.search_sessions(project_id, user_id, needle, limit=limit)

    async def rename(self, key: SessionKey, title: str) -> Session:
        clean = " ".join(title.split())
        if not 1 <= len(clean) <= TITLE_MAX_CHARS:
            raise InvalidRequestError(f"title must be 1 to {TITLE_MAX_CHARS} characters long.")
        await self._owned(key)
        renamed = await self._store.rename_session(
            key.project_id, key.session_id, clean, self._clock.now()
        )
        if renamed is None:
            raise SessionNotFoundError(key.session_id)
        return renamed

    async def set_pinned(self, key: SessionKey, pinned: bool) -> Session:
        await self._owned(key)
        updated = await self._store.set_pinned(key.project_id, key.session_id, pinned)
        if updated is None:
            raise SessionNotFoundError(key.session_id)
        return updated

    async def delete(self, key: SessionKey) -> None:
        """Delete a session and its messages; a running turn is aborted first."""
        await self._owned(key)
        await self.runner.stop(key.project_id, key.session_id, "the session is being deleted")
        self.runner.windows.forget(key.project_id, key.session_id)
        if not await self._store.delete_session(key.project_id, key.session_id):
            raise SessionNotFoundError(key.session_id)

    async def forget_project(self, project_id: str, reason: str) -> None:
        """End the project's running turns (``reason`` tells their clients why) and forget
        what is kept in memory about it; its stored sessions are the caller's business."""
        await self.runner.stop(project_id, None, reason)
        self.runner.windows.forget(project_id)

    async def delete_project(self, project_id: str) -> int:
        """Delete every session of a project (the project is being deleted)."""
        await self.forget_project(project_id, "the project is being deleted")
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
        return self._agents[self.default_agent_id]

    # ================================================================= internals
    async def _owned(self, key: SessionKey) -> Session:
        return await owned_session(self._store, key)

    async def _check_last_question(self, session: Session, message_id: str) -> None:
        """Only the session's last user message can be edited or regenerated."""
        page = await self._store.history(session.project_id, session.thread_id, limit=256)
        last = next((m for m in reversed(page.messages) if m.role is Role.USER), None)
        if last is None or last.id != message_id:
            raise InvalidRequestError(
                "Only the last question of a session can be edited or asked again; "
                f"{message_id!r} is not it."
            )

    def _check_page(self, limit: int) -> None:
        if not 1 <= limit <= self.settings.max_page:
            raise InvalidRequestError(f"limit must be between 1 and {self.settings.max_page}.")
