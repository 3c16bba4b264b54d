"""Starting a turn: from a user's request to a turn that runs, or a refusal with nothing
stored.

:class:`TurnStarter` refuses while the service shuts down, names the turn, claims its
session in the :class:`~copilot_core.ports.SessionLeases` (a session a rollback holds
says so), opens its :class:`~copilot_core.ports.TurnLog` and attaches it to the
:class:`~copilot_core.ports.TurnControlRelay` (at once, while the model is resolved and
a new session saved: shared ones cost the turn one round trip, hidden there), resolves
the user's model, settles the turn's mode, mints the user's message — once: the message
the store keeps is the one the agent reads (``AgentRunConfig.question``) — creates the
session with it or asks it in the session, opens the turn's one
:class:`~copilot_core._conversation.Conversation` (the history window and the question;
``AgentRunConfig.conversation``), and hands the turn to the driver in a task of its own
(so a client that disconnects does not stop it). Whatever fails before that is undone:
the session it created, the log it opened, the claim it took.

:func:`let_go` gives back what starting took (the relay's attachment, the claim); the
driver calls it once the turn's work is saved.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine
from contextlib import suppress
from datetime import datetime
from typing import Any

from copilot_core._approvals import ApprovalPolicy, TurnControl
from copilot_core._chat_settings import RunnerSettings
from copilot_core._conversation import Conversation
from copilot_core._history import HistoryWindows
from copilot_core._live import LiveTurn, TurnHandle
from copilot_core._live_turns import LiveTurns
from copilot_core._messages import Message
from copilot_core._model_choice import choose_model
from copilot_core._question import question_in_session
from copilot_core._replay import replayable
from copilot_core._session import CopilotMode, Session
from copilot_core._tools import ToolContext
from copilot_core._turns import SessionClaim, TurnInfo, TurnRequest
from copilot_core.errors import (
    ConversationInvariantError,
    ServiceUnavailableError,
    SessionBusyError,
)
from copilot_core.ports import (
    AgentBackend,
    AgentRunConfig,
    CheckpointStore,
    Clock,
    IdFactory,
    LanguageModelProvider,
    ModelSelection,
    SessionLeases,
    TurnControlRelay,
    TurnLog,
)
from copilot_core.rollback import held_by_rollback

__all__ = ["Drive", "TurnStarter", "let_go"]

log = logging.getLogger(__name__)

#: What runs a started turn to its end (``failure``: no model could be built).
Drive = Callable[[LiveTurn, Exception | None], Coroutine[Any, Any, None]]


class TurnStarter:
    """Starts turns (see the module's docstring)."""

    def __init__(
        self,
        store: CheckpointStore,
        turn_log: TurnLog,
        windows: HistoryWindows,
        *,
        leases: SessionLeases,
        controls: TurnControlRelay,
        models: LanguageModelProvider | None,
        clock: Clock,
        ids: IdFactory,
        settings: RunnerSettings,
        turns: LiveTurns,
        drive: Drive,
    ) -> None:
        self._store = store
        self._log = turn_log
        self._windows = windows
        self._leases = leases
        self._controls = controls
        self._models = models
        self._clock = clock
        self._ids = ids
        self._settings = settings
        self._turns = turns
        self._drive = drive

    async def start(
        self,
        request: TurnRequest,
        backend: AgentBackend,
        *,
        agent_id: str,
        query: str,
        session: Session | None,
    ) -> TurnHandle:
        """Start a turn on ``session`` (``None``: a new session) and return at once.

        Raises with nothing stored: ServiceUnavailableError (shutting down, or the turn
        ports cannot be reached), PermissionDeniedError (a ``copilot_mode`` above what
        the operator's policy allows the user), SessionBusyError, LLMNotConfiguredError, the store's
        errors. A model that cannot be built is no refusal: the turn starts and ends with
        that error (:mod:`copilot_core._model_choice`).
        """
        if self._turns.closing:
            raise ServiceUnavailableError(
                "The copilot is shutting down; send your message again in a moment.",
                retry_after=5,
            )
        # The operator's policy, the turn's one place: a mode asked for above the user's
        # highest is refused here, a session's or stored one is capped (``_mode``); the
        # approval setting is the gate's to raise (``ToolGate.admit``).
        request.limits.require_mode(request.copilot_mode, "This message")
        session_id = session.thread_id if session is not None else self._ids.new_id()
        info = TurnInfo(self._ids.new_id(), request.project_id, session_id, request.user_id)
        turn = LiveTurn(
            info, TurnControl(), asyncio.get_running_loop().create_future(), backend, query
        )
        await self._claim(turn)
        opening = asyncio.ensure_future(
            _together(self._log.open(info, turn.abort), self._controls.attach(info, turn.control))
        )
        created = False
        try:
            choice = await choose_model(self._models, backend, request)
            mode = self._mode(request, session, choice.selection)
            now = self._clock.now()
            question = Message.user(self._ids.new_id(), query, now)  # the one user message
            if session is None:  # created with its first message: one write
                session = await self._store.create_session(
                    _new_session(request, session_id, mode, now, agent_id), [question]
                )
                created = True
                await opening
            else:
                await opening  # before anything in the session changes
                session, question = await self._ask_in(
                    turn, request, session, mode, question, choice.selection
                )
        except BaseException:
            await self._undo(turn, opening, created)
            raise
        shared = _begin(turn, session, question)
        turn.config = _run_config(
            turn, request, session, mode, choice.selection, agent_id, shared=shared
        )
        turn.task = asyncio.create_task(
            self._drive(turn, choice.failure), name=f"turn-{session_id}"
        )
        return TurnHandle(info, self._log, live=turn)

    async def _claim(self, turn: LiveTurn) -> None:
        """Hold the turn's session (SessionBusyError: nothing to undo) and register the
        turn; one claimed while shutdown began starts aborted."""
        info = turn.info
        try:
            turn.claim = await self._leases.claim(info.project_id, info.session_id, info.turn_id)
        except SessionBusyError as exc:
            if await held_by_rollback(self._leases, info.project_id, info.session_id):
                raise SessionBusyError(info.session_id, rollback=True) from exc
            raise
        turn.claim.lost.on_abort(functools.partial(_lost, turn, turn.claim))
        self._turns.add(turn)
        if self._turns.closing:  # shutdown began while we claimed the session
            turn.abort.abort("the service is shutting down")

    def _mode(
        self, request: TurnRequest, session: Session | None, selection: ModelSelection | None
    ) -> CopilotMode:
        """The turn's mode: the request's, the session's, the user's, the default; at most
        the one the operator's policy allows."""
        mode = (
            request.copilot_mode
            or (session.copilot_mode if session else None)
            or (selection.copilot_mode if selection else None)
            or self._settings.default_mode
        )
        return request.limits.cap_mode(mode)

    async def _ask_in(
        self,
        turn: LiveTurn,
        request: TurnRequest,
        session: Session,
        mode: CopilotMode,
        question: Message,
        selection: ModelSelection | None,
    ) -> tuple[Session, Message]:
        """Ask ``question`` in the session (cut back or switched to ``mode`` when the
        request says so), with its history window loaded; the session and the question
        as saved."""
        session, question = await question_in_session(
            self._store, self._windows, request, session, mode, question
        )
        turn.history = await self._windows.load(
            session, selection.context_limit if selection else None
        )
        turn.stored_before = session.message_count
        await self._store.append_messages(request.project_id, turn.info.session_id, [question])
        return session, question

    async def _undo(self, turn: LiveTurn, opening: Awaitable[None], created: bool) -> None:
        """The turn could not start: undo what was done, in order."""
        info = turn.info
        self._turns.remove(turn)
        turn.result.cancel()
        with suppress(Exception):  # opened (or not) before anything is undone
            await opening
        if created:  # the turn could not open: its new session goes too
            with suppress(Exception):
                await self._store.delete_session(info.project_id, info.session_id)
        with suppress(Exception):
            await self._log.discard(info.turn_id)
        await let_go(turn, self._controls, self._leases)


async def let_go(turn: LiveTurn, controls: TurnControlRelay, leases: SessionLeases) -> None:
    """Detach the turn from the relay and release its session; never raises."""
    claim, turn.claim = turn.claim, None
    if claim is None:
        return
    try:  # at once, as they were taken
        await _together(controls.detach(turn.info), leases.release(claim))
    except Exception:
        log.exception("letting go of turn %s failed", turn.info.turn_id)


def _new_session(
    request: TurnRequest, session_id: str, mode: CopilotMode, now: datetime, agent_id: str
) -> Session:
    return Session(
        thread_id=session_id,
        user_id=request.user_id,
        project_id=request.project_id,
        copilot_mode=mode,
        created_at=now,
        updated_at=now,
        metadata={"agent_id": agent_id},
    )


def _begin(turn: LiveTurn, session: Session, question: Message) -> bool:
    """The turn holds its session, and its one conversation: the history window as it
    is replayed, then the question (the agent reads it; the driver appends each step).
    False when the stored window cannot be replayed: the conversation is then the turn's
    alone (the question and its steps) and the agent, given none, fails on the history
    itself, as it did before it read the runner's."""
    turn.session = session
    shared = True
    try:
        turn.conversation = Conversation.restore(replayable(turn.history))
    except ConversationInvariantError:
        shared = False
    turn.conversation.append(question)
    turn.added.append(question)
    turn.stats.messages_added(1)
    turn.draft.saved_at = time.monotonic()
    return shared


def _run_config(
    turn: LiveTurn,
    request: TurnRequest,
    session: Session,
    mode: CopilotMode,
    selection: ModelSelection | None,
    agent_id: str,
    *,
    shared: bool = True,
) -> AgentRunConfig:
    """What the agent runs with: the turn's context, model and the question as saved."""
    approval = selection.approval if selection is not None else ApprovalPolicy.NEVER
    return AgentRunConfig(
        context=ToolContext(
            project_id=request.project_id,
            user_id=request.user_id,
            session_id=turn.info.session_id,
            mode=mode,
            abort=turn.abort,
            credentials=request.credentials,
            approval=approval,  # the gate raises it to the least the limits allow
            limits=request.limits,
        ),
        model=selection,
        generate_title=not session.title,
        agent_id=agent_id,
        question=turn.added[0],  # the question as saved (one id: stored, and read by the model)
        conversation=turn.conversation if shared else None,
    )


async def _together(*steps: Awaitable[None]) -> None:
    """Run ``steps`` at once; the first error is raised once every one has ended."""
    for result in await asyncio.gather(*steps, return_exceptions=True):
        if isinstance(result, BaseException):
            raise result


def _lost(turn: LiveTurn, claim: SessionClaim) -> None:
    if turn.claim is claim:  # still held by the turn: someone else may have it now
        turn.abort.abort(claim.lost.reason or "the turn lost its claim on the session")
