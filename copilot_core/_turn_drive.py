"""Driving a turn: from the agent's first event to ``done``.

:class:`TurnDriver` runs in the turn's own task. For each event the backend yields:

* a wire event goes to the turn log (numbered) and to the observers; once ``abort``
  was sent, the backend's further wire events (but errors) are dropped;
* a step (:class:`~copilot_core.events.StepCompleted`) goes through the turn's one
  :class:`~copilot_core._conversation.Conversation` (which refuses anything that would
  make it invalid), then the store, in one transaction with its counters, then into
  the conversation, before the backend goes on (the built-in agent reads it there);
* the answer's text is also saved as a draft every ``draft_interval`` seconds or
  ``draft_chars`` characters, replaced by the step when it completes, so a crash loses
  at most that much of what was streamed;
* a model call and a title go to the turn's stats; an approval the gate asks for goes
  to the turn's :class:`~copilot_core._asking.TurnApprovals`.

It is the only sender of ``abort`` and ``done``: backends just stop when the turn's
:class:`~copilot_core._abort.AbortToken` fires. Whatever happens inside a turn — the
backend fails, a save fails, the session is deleted, the task is cancelled — the turn
ends with ``error`` (when something failed), ``abort`` (when it was aborted), then
``done``, and releases its session. Such a turn marks its last saved message
``metadata.incomplete`` (why, with the error's code and message), so the history shows
it.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Sequence
from contextlib import aclosing, suppress

from copilot_core._asking import TurnApprovals
from copilot_core._chat_settings import RunnerSettings
from copilot_core._history import HistoryWindows
from copilot_core._incomplete import mark_incomplete
from copilot_core._live import LiveTurn
from copilot_core._live_turns import LiveTurns
from copilot_core._messages import Message, Role
from copilot_core._prompts import fallback_title
from copilot_core._stats import Usage, stamp_usage
from copilot_core._turn_start import let_go
from copilot_core._turns import TurnResult
from copilot_core.errors import ConversationInvariantError, CopilotError, error_code
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
    CheckpointStore,
    Clock,
    EventSink,
    IdFactory,
    SessionLeases,
    TurnControlRelay,
    TurnLog,
)

__all__ = ["TurnDriver"]

log = logging.getLogger(__name__)

_INTERNAL = "The turn failed with an internal error; what was said so far is saved."


class TurnDriver:
    """Drives started turns to their end (see the module's docstring)."""

    def __init__(
        self,
        store: CheckpointStore,
        turn_log: TurnLog,
        windows: HistoryWindows,
        *,
        leases: SessionLeases,
        controls: TurnControlRelay,
        clock: Clock,
        ids: IdFactory,
        settings: RunnerSettings,
        turns: LiveTurns,
        observers: Sequence[EventSink] = (),
    ) -> None:
        self._store = store
        self._log = turn_log
        self._windows = windows
        self._leases = leases
        self._controls = controls
        self._clock = clock
        self._ids = ids
        self._settings = settings
        self._turns = turns
        self._observers = tuple(observers)

    async def drive(self, turn: LiveTurn, failure: Exception | None = None) -> None:
        """Run the turn's backend to its end, then end the turn (never raises)."""
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

    # ==================================================================== events
    def _content(self, turn: LiveTurn, event: ContentEvent) -> bool:
        """Publish a token and add it to the draft; whether the draft is due to be saved."""
        self._publish(turn, event)
        draft = turn.draft
        draft.parts.append(event.content)
        draft.chars += len(event.content)
        return (
            draft.chars - draft.saved_chars >= self._settings.draft_chars
            or time.monotonic() - draft.saved_at >= self._settings.draft_interval
        )

    async def _handle(self, turn: LiveTurn, event: AgentEvent) -> None:
        """Every event but a streamed token (:meth:`drive` gives those to :meth:`_content`)."""
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

    def _approvals(self, turn: LiveTurn) -> TurnApprovals:
        """The turn's pending approvals: the gate asks (an ``ApprovalNeeded`` record of
        the agent's), the runner answers (see :mod:`copilot_core._asking`)."""
        if turn.approvals is None:
            info = turn.info
            turn.approvals = TurnApprovals(
                turn.control,
                self._ids.new_id,
                lambda event: self._publish(turn, event),
                self._settings.approval_timeout,
                expect=functools.partial(self._controls.expect, info),
                resolved=functools.partial(self._controls.resolved, info),
            )
        return turn.approvals

    # ===================================================================== end
    async def _finish(self, turn: LiveTurn) -> None:
        """End the turn whatever happened: abort, the counters, ``done``; never raises."""
        try:
            if turn.abort.is_aborted():
                self._send_abort(turn)
            await self._save_end(turn)
            self._keep_window(turn)
        except Exception:
            log.exception("ending turn %s failed", turn.info.turn_id)
        finally:
            try:  # its work is saved: the session is free for a new turn, then ``done``
                await let_go(turn, self._controls, self._leases)
            finally:
                await self._end(turn)

    async def _save_end(self, turn: LiveTurn) -> None:
        """Mark a turn that did not end well and record the turn (its time, the usage
        not saved with a step, the title) within ``save_timeout``; a failure is the
        turn's error."""
        info, session = turn.info, turn.session
        title = turn.title
        if title is None and session is not None and not session.title:
            title = fallback_title(turn.query)
        try:
            async with asyncio.timeout(self._settings.save_timeout):
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

    def _keep_window(self, turn: LiveTurn) -> None:
        """Keep the session's history window for its next turn: the window this turn
        read plus what it added (not after an error, nor with a draft left)."""
        info, session = turn.info, turn.session
        self._windows.forget(info.project_id, info.session_id)
        if session is None or turn.error is not None or turn.draft.id is not None:
            return
        if turn.config is None:
            return
        model = turn.config.model
        self._windows.keep(
            session,
            [*turn.history, *turn.added],
            turn.stored_before + len(turn.added),
            model.context_limit if model is not None else None,
        )

    async def _end(self, turn: LiveTurn) -> None:
        """The turn's result: approvals still waiting resolved, ``done`` published, the
        log closed, the turn off the registry, its result set."""
        info = turn.info
        final = next((m for m in reversed(turn.added) if m.role is Role.ASSISTANT), None)
        result = TurnResult(
            session_id=info.session_id,
            message_id=final.id if final else None,
            content=final.content if final else "",
            messages=tuple(turn.added),
            stats=turn.stats.snapshot(),
            # sent, not asked: an abort that comes once the end began (while the session
            # is let go) finds the turn's work done
            aborted=turn.abort_sent,
            error=turn.error,
        )
        if turn.approvals is not None:
            turn.approvals.settle("aborted")  # the turn ended while they waited
        self._publish(turn, DoneEvent(result.message_id, result.content), final=True)
        with suppress(Exception):
            await self._log.close(info.turn_id)
        self._turns.remove(turn)
        if not turn.result.done():
            turn.result.set_result(result)

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
