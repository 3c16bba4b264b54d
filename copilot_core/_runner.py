"""The turn runner: the one path every turn takes, from start to ``done``.

:class:`TurnRunner` starts a turn (claims the session in the
:class:`~copilot_core.ports.SessionLeases`, opens its
:class:`~copilot_core.ports.TurnLog` and attaches it to the
:class:`~copilot_core.ports.TurnControlRelay`), resolves the user's model, creates the session or
loads its history window, saves the user message), drives the agent backend in a task
of its own (so a client that disconnects does not stop it), attaches clients to it,
aborts it and shuts everything down. It is the only sender of ``abort`` and ``done``:
backends just stop when the turn's :class:`~copilot_core._abort.AbortToken` fires.

For each event the backend yields:

* a wire event goes to the turn log (numbered) and to the observers; once ``abort``
  was sent, the backend's further wire events (but errors) are dropped;
* a step (:class:`~copilot_core.events.StepCompleted`) goes through the turn's
  :class:`~copilot_core._conversation.Conversation` (which refuses anything that would
  make it invalid) and then the store, in one transaction with its counters;
* the answer's text is also saved as a draft every ``draft_interval`` seconds or
  ``draft_chars`` characters, replaced by the step when it completes, so a crash loses
  at most that much of what was streamed.

Whatever happens inside a turn — the backend fails, a save fails, the session is
deleted, the task is cancelled — the turn ends with ``error`` (when something failed),
``abort`` (when it was aborted), then ``done``, and releases its session. Such a turn
marks its last saved message ``metadata.incomplete`` (why, with the error's code and
message), so the history shows it.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Awaitable, Sequence
from contextlib import aclosing, suppress
from dataclasses import dataclass

from copilot_core._approvals import (
    ApprovalDecision,
    ApprovalPolicy,
    DecisionOutcome,
    TurnControl,
)
from copilot_core._asking import TurnApprovals
from copilot_core._history import HistoryWindows
from copilot_core._incomplete import mark_incomplete
from copilot_core._leases import SessionClaim
from copilot_core._live import LiveTurn, TurnHandle
from copilot_core._messages import Message, Role
from copilot_core._model_choice import choose_model
from copilot_core._prompts import fallback_title
from copilot_core._question import question_in_session
from copilot_core._session import CopilotMode, Session
from copilot_core._session_key import SessionKey, takes_session_key
from copilot_core._stats import Usage, stamp_usage
from copilot_core._tools import ToolContext
from copilot_core._turns import TurnInfo, TurnRequest, TurnResult
from copilot_core.errors import (
    ConversationInvariantError,
    CopilotError,
    ServiceUnavailableError,
    SessionBusyError,
    error_code,
)
from copilot_core.events import (
    AbortEvent,
    AgentEvent,
    ApprovalNeeded,
    ApprovalResolvedEvent,
    ContentEvent,
    DoneEvent,
    ErrorEvent,
    LLMCallCompleted,
    StepCompleted,
    TitleGenerated,
    WireEvent,
)
from copilot_core.ports import (
    AgentBackend,
    AgentRunConfig,
    CheckpointStore,
    Clock,
    EventSink,
    IdFactory,
    LanguageModelProvider,
    ModelSelection,
    SessionLeases,
    TurnControlRelay,
    TurnLog,
)
from copilot_core.rollback import held_by_rollback

__all__ = ["RunnerSettings", "TurnHandle", "TurnRunner"]

log = logging.getLogger(__name__)

_INTERNAL = "The turn failed with an internal error; what was said so far is saved."


@dataclass(frozen=True, slots=True)
class RunnerSettings:
    default_mode: CopilotMode = CopilotMode.TEACHING_ASSISTANT
    #: The streamed answer is saved as a draft at least this often (seconds)…
    draft_interval: float = 2.0
    #: …and whenever this many characters arrived since the last save.
    draft_chars: int = 2048
    #: A turn's final save gives up after this many seconds (the turn still ends).
    save_timeout: float = 30.0
    #: A call waiting for the user's approval counts as rejected after this many seconds.
    approval_timeout: float = 600.0


def _approval(request: TurnRequest, selection: ModelSelection | None) -> ApprovalPolicy:
    """The user's approval setting, raised to the least the operator's policy allows."""
    approval = selection.approval if selection is not None else ApprovalPolicy.NEVER
    return approval if request.limits is None else request.limits.floor_approval(approval)


class TurnRunner:
    """Starts, drives, attaches to, aborts and shuts down turns (see the module docstring)."""

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
        settings: RunnerSettings | None = None,
        observers: Sequence[EventSink] = (),
    ) -> None:
        self._store = store
        self._log = turn_log
        self._leases = leases
        self._controls = controls
        self._models = models
        self._clock = clock
        self._ids = ids
        self.windows = windows
        self.settings = settings or RunnerSettings()
        self._observers = tuple(observers)
        self._live: dict[str, LiveTurn] = {}
        self._closing = False

    @property
    def closing(self) -> bool:
        """True once :meth:`shutdown` began: no new turn starts."""
        return self._closing

    # ===================================================================== start
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
        ports cannot be reached), SessionBusyError, LLMNotConfiguredError, the store's
        errors. A model that cannot be built is no refusal: the turn starts and ends with
        that error (:mod:`copilot_core._model_choice`). The log opens and the relay
        attaches at once, while the model is resolved and a new session saved: shared ones
        cost the turn one round trip, hidden there.
        """
        if self._closing:
            raise ServiceUnavailableError(
                "The copilot is shutting down; send your message again in a moment.",
                retry_after=5,
            )
        loop = asyncio.get_running_loop()
        session_id = session.thread_id if session is not None else self._ids.new_id()
        info = TurnInfo(self._ids.new_id(), request.project_id, session_id, request.user_id)
        turn = LiveTurn(info, TurnControl(), loop.create_future(), backend, query)
        try:  # SessionBusyError: nothing to undo
            turn.claim = await self._leases.claim(request.project_id, session_id, info.turn_id)
        except SessionBusyError as exc:
            if await held_by_rollback(self._leases, request.project_id, session_id):
                raise SessionBusyError(session_id, rollback=True) from exc
            raise
        turn.claim.lost.on_abort(functools.partial(_lost, turn, turn.claim))
        self._live[info.turn_id] = turn
        if self.closing:  # shutdown began while we claimed the session
            turn.abort.abort("the service is shutting down")
        opening = asyncio.ensure_future(
            _together(self._log.open(info, turn.abort), self._controls.attach(info, turn.control))
        )
        created = False
        try:
            choice = await choose_model(self._models, backend, request)
            selection = choice.selection
            mode = (
                request.copilot_mode
                or (session.copilot_mode if session else None)
                or (selection.copilot_mode if selection else None)
                or self.settings.default_mode
            )
            if request.limits is not None:  # the operator's policy: at most its mode
                mode = request.limits.cap_mode(mode)
            now = self._clock.now()
            user_message = Message.user(self._ids.new_id(), query, now)
            if session is None:  # created with its first message: one write
                session = await self._store.create_session(
                    Session(
                        thread_id=session_id,
                        user_id=request.user_id,
                        project_id=request.project_id,
                        copilot_mode=mode,
                        created_at=now,
                        updated_at=now,
                        metadata={"agent_id": agent_id},
                    ),
                    [user_message],
                )
                created = True
                await opening
            else:
                await opening  # before anything in the session changes
                session, user_message = await question_in_session(
                    self._store, self.windows, request, session, mode, user_message
                )
                turn.history = await self.windows.load(
                    session, selection.context_limit if selection else None
                )
                turn.stored_before = session.message_count
                await self._store.append_messages(request.project_id, session_id, [user_message])
        except BaseException:
            del self._live[info.turn_id]
            turn.result.cancel()
            with suppress(Exception):  # opened (or not) before anything is undone
                await opening
            if created:  # the turn could not open: its new session goes too
                with suppress(Exception):
                    await self._store.delete_session(request.project_id, session_id)
            with suppress(Exception):
                await self._log.discard(info.turn_id)
            await self._let_go(turn)
            raise
        turn.session = session
        turn.conversation.append(user_message)
        turn.added.append(user_message)
        turn.stats.messages_added(1)
        turn.draft.saved_at = time.monotonic()
        turn.config = AgentRunConfig(
            context=ToolContext(
                project_id=request.project_id,
                user_id=request.user_id,
                session_id=session_id,
                mode=mode,
                abort=turn.abort,
                credentials=request.credentials,
                approval=_approval(request, selection),
            ),
            model=selection,
            generate_title=not session.title,
            agent_id=agent_id,
        )
        turn.task = asyncio.create_task(
            self._drive(turn, choice.failure), name=f"turn-{session_id}"
        )
        return TurnHandle(info, self._log, live=turn)

    # ==================================================================== clients
    @takes_session_key
    async def attach(self, key: SessionKey) -> TurnHandle | None:
        """The session's running turn (or one that ended moments ago), for re-attaching."""
        state = await self._log.find(key.project_id, key.session_id)
        if state is None or state.info.user_id != key.user_id:
            return None
        return TurnHandle(
            state.info,
            self._log,
            last_seq=state.last_seq,
            finished=state.finished,
            pending=state.pending,
            live=self._live.get(state.info.turn_id),
        )

    async def running(self, project_id: str, session_id: str) -> bool:
        """Whether the session has a turn that has not ended (in any process)."""
        state = await self._log.find(project_id, session_id)
        return state is not None and not state.finished

    async def abort(
        self, project_id: str, session_id: str, reason: str = "aborted by user"
    ) -> bool:
        """Abort the session's running turn wherever it runs; False when none runs."""
        turn = self._running(project_id, session_id)
        if turn is not None:
            return turn.abort.abort(reason)
        return await self._controls.request_abort(project_id, session_id, reason)

    async def decide(
        self, project_id: str, session_id: str, approval_id: str, decision: ApprovalDecision
    ) -> DecisionOutcome:
        """Deliver a decision on a pending approval of the session's turn, wherever it runs."""
        turn = self._running(project_id, session_id)
        if turn is not None:
            return turn.control.decide(approval_id, decision)
        return await self._controls.send_decision(project_id, session_id, approval_id, decision)

    def _running(self, project_id: str, session_id: str) -> LiveTurn | None:
        """The session's turn in this process that still holds the session (the newest:
        one that is ending may still be here, having let the session go)."""
        for turn in reversed(self._live.values()):
            if (turn.info.project_id, turn.info.session_id) == (project_id, session_id):
                return turn
        return None

    async def stop(self, project_id: str, session_id: str | None, reason: str) -> None:
        """Abort the running turns of a session (or of every session of a project) and wait
        for this process's ones to end."""
        ours = [
            turn
            for turn in self._live.values()
            if turn.info.project_id == project_id and session_id in (None, turn.info.session_id)
        ]
        for turn in ours:
            turn.abort.abort(reason)
        if session_id is not None and not ours:
            await self._controls.request_abort(project_id, session_id, reason)
        if ours:
            await asyncio.wait([asyncio.shield(turn.result) for turn in ours])

    async def shutdown(self, grace: float = 10.0) -> None:
        """Refuse new turns, abort every running one and give them ``grace`` seconds to
        save; turns still running after that are cancelled (they still end ``done``)."""
        self._closing = True
        turns = list(self._live.values())
        for turn in turns:
            turn.abort.abort("the service is shutting down")
        if not turns:
            return
        results = {asyncio.shield(turn.result) for turn in turns}
        _, late = await asyncio.wait(results, timeout=grace)
        if not late:
            return
        for turn in turns:
            if turn.task is not None and not turn.result.done():
                turn.task.cancel()
        _, stuck = await asyncio.wait(late, timeout=5.0)
        if stuck:
            log.error("%d turn(s) did not end after shutdown was requested", len(stuck))

    # ===================================================================== drive
    async def _drive(self, turn: LiveTurn, failure: Exception | None = None) -> None:
        assert turn.backend is not None
        assert turn.config is not None
        try:
            if failure is not None:  # no model could be built: that is the turn's answer
                raise failure
            events = turn.backend.run(turn.query, turn.history, turn.config)
            async with aclosing(events):
                async for event in events:
                    # A streamed token is most of a turn's events: handled here, without
                    # a coroutine of its own unless its draft is due.
                    if type(event) is ContentEvent:
                        if self._content(turn, event):
                            await self._save_draft(turn)
                    else:
                        await self._handle(turn, event)
        except CopilotError as exc:
            self._fail(turn, exc.message, error_code(exc))
        except Exception:
            log.exception("turn %s of session %s failed", turn.info.turn_id, turn.info.session_id)
            self._fail(turn, _INTERNAL, "internal")
        finally:
            await self._finish(turn)

    def _content(self, turn: LiveTurn, event: ContentEvent) -> bool:
        """Publish a token and add it to the draft; whether the draft is due to be saved."""
        self._publish(turn, event)
        draft = turn.draft
        draft.parts.append(event.content)
        draft.chars += len(event.content)
        return (
            draft.chars - draft.saved_chars >= self.settings.draft_chars
            or time.monotonic() - draft.saved_at >= self.settings.draft_interval
        )

    async def _handle(self, turn: LiveTurn, event: AgentEvent) -> None:
        """Every event but a streamed token (:meth:`_drive` gives those to :meth:`_content`)."""
        match event:
            case StepCompleted(messages=messages):
                await self._save_step(turn, messages)
            case LLMCallCompleted(input_tokens=input_tokens, output_tokens=output_tokens):
                turn.stats.llm_call(input_tokens, output_tokens)
                turn.unsaved_usage += Usage(1, input_tokens, output_tokens)
                self._observe(turn, event)
            case TitleGenerated(title=title):
                turn.title = title
                self._observe(turn, event)
            case ApprovalNeeded():
                await self._approvals(turn).ask(event)
            case AbortEvent() | DoneEvent():
                pass  # the runner's own to send
            case ErrorEvent(error=message, code=code):
                if turn.error is None:
                    turn.error, turn.error_code = message, code
                self._publish(turn, event)
            case _:
                self._publish(turn, event)

    async def _save_step(self, turn: LiveTurn, messages: Sequence[Message]) -> None:
        if turn.abort.is_aborted():
            self._send_abort(turn)  # clients learn it before the save
        if not turn.conversation.can_append(messages):
            raise ConversationInvariantError(
                f"the agent produced a step that would leave the conversation invalid: "
                f"{[m.role.value for m in messages]}"
            )
        info = turn.info
        usage = turn.unsaved_usage
        messages = stamp_usage(messages, usage)  # as the store keeps them
        await self._store.append_messages(
            info.project_id,
            info.session_id,
            messages,
            usage=usage or None,
            replaces=turn.draft.id,
        )
        turn.conversation.extend(messages)
        turn.added.extend(messages)
        turn.stats.messages_added(len(messages))
        turn.unsaved_usage = Usage()
        turn.draft.reset(time.monotonic())
        self._observe(turn, StepCompleted(tuple(messages)))

    async def _save_draft(self, turn: LiveTurn) -> None:
        draft = turn.draft
        previous = draft.id
        draft.id = draft.id or self._ids.new_id()
        message = Message.assistant(
            draft.id, "".join(draft.parts), self._clock.now(), None, partial=True
        )
        info = turn.info
        await self._store.append_messages(
            info.project_id, info.session_id, [message], replaces=previous
        )
        draft.saved_chars = draft.chars
        draft.saved_at = time.monotonic()

    async def _finish(self, turn: LiveTurn) -> None:
        """End the turn whatever happened: abort, the counters, ``done``; never raises."""
        info = turn.info
        try:
            if turn.abort.is_aborted():
                self._send_abort(turn)
            session = turn.session
            title = turn.title
            if title is None and session is not None and not session.title:
                title = fallback_title(turn.query)
            try:
                async with asyncio.timeout(self.settings.save_timeout):
                    await mark_incomplete(self._store, turn, self._clock.now())
                    await self._store.record_turn(
                        info.project_id,
                        info.session_id,
                        self._clock.now(),
                        usage=turn.unsaved_usage or None,
                        title=title,
                    )
                turn.unsaved_usage = Usage()
            except CopilotError as exc:
                self._fail(turn, exc.message, error_code(exc))
            except Exception:
                log.exception("saving the end of turn %s failed", info.turn_id)
                self._fail(turn, _INTERNAL, "internal")
            self.windows.forget(info.project_id, info.session_id)
            if (
                session is not None
                and turn.error is None
                and turn.draft.id is None
                and turn.config is not None
            ):
                model = turn.config.model
                self.windows.keep(
                    session,
                    [*turn.history, *turn.added],
                    turn.stored_before + len(turn.added),
                    model.context_limit if model is not None else None,
                )
        except Exception:
            log.exception("ending turn %s failed", info.turn_id)
        finally:
            try:  # its work is saved: the session is free for a new turn, then ``done``
                await self._let_go(turn)
            finally:
                final = next((m for m in reversed(turn.added) if m.role is Role.ASSISTANT), None)
                result = TurnResult(
                    session_id=info.session_id,
                    message_id=final.id if final else None,
                    content=final.content if final else "",
                    messages=tuple(turn.added),
                    stats=turn.stats.snapshot(),
                    # sent, not asked: an abort that comes once the end began (while
                    # the session is let go) finds the turn's work done
                    aborted=turn.abort_sent,
                    error=turn.error,
                )
                if turn.approvals is not None:
                    turn.approvals.settle("aborted")  # the turn ended while they waited
                self._publish(turn, DoneEvent(result.message_id, result.content), final=True)
                with suppress(Exception):
                    await self._log.close(info.turn_id)
                self._live.pop(info.turn_id, None)
                if not turn.result.done():
                    turn.result.set_result(result)

    async def _let_go(self, turn: LiveTurn) -> None:
        """Detach the turn from the relay and release its session; never raises."""
        claim, turn.claim = turn.claim, None
        if claim is None:
            return
        try:  # at once, as they were taken
            await _together(self._controls.detach(turn.info), self._leases.release(claim))
        except Exception:
            log.exception("letting go of turn %s failed", turn.info.turn_id)

    # ================================================================ approvals
    def _approvals(self, turn: LiveTurn) -> TurnApprovals:
        """The turn's pending approvals: the gate asks (an ``ApprovalNeeded`` record of
        the agent's), the runner answers (see :mod:`copilot_core._asking`)."""
        if turn.approvals is None:
            info = turn.info
            turn.approvals = TurnApprovals(
                turn.control,
                self._ids.new_id,
                lambda event: self._publish(turn, event),
                self.settings.approval_timeout,
                expect=functools.partial(self._controls.expect, info),
                resolved=functools.partial(self._controls.resolved, info),
            )
        return turn.approvals

    # ================================================================== publish
    def _publish(self, turn: LiveTurn, event: WireEvent, *, final: bool = False) -> None:
        if (
            turn.abort_sent
            and not final
            and not isinstance(event, ErrorEvent | AbortEvent | ApprovalResolvedEvent)
        ):
            return  # the backend's late words after abort
        try:
            self._log.append(turn.info.turn_id, event)
        except Exception:
            log.exception("the turn log refused an event of turn %s", turn.info.turn_id)
        if self._observers:
            self._observe(turn, event)

    def _send_abort(self, turn: LiveTurn) -> None:
        if turn.approvals is not None:
            turn.approvals.settle("aborted")  # resolved before clients learn of the abort
        if not turn.abort_sent:
            self._publish(turn, AbortEvent())
            turn.abort_sent = True

    def _fail(self, turn: LiveTurn, message: str, code: str) -> None:
        if turn.error is None:
            turn.error, turn.error_code = message, code
        self._publish(turn, ErrorEvent(message, code))

    def _observe(self, turn: LiveTurn, event: AgentEvent) -> None:
        for observer in self._observers:
            try:
                observer.emit(turn.info, event)
            except Exception:
                log.exception("observer %r failed", observer)


async def _together(*steps: Awaitable[None]) -> None:
    """Run ``steps`` at once; the first error is raised once every one has ended."""
    for result in await asyncio.gather(*steps, return_exceptions=True):
        if isinstance(result, BaseException):
            raise result


def _lost(turn: LiveTurn, claim: SessionClaim) -> None:
    if turn.claim is claim:  # still held by the turn: someone else may have it now
        turn.abort.abort(claim.lost.reason or "the turn lost its claim on the session")
