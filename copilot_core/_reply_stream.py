"""One model call of a step: the reply streamed as it comes, and its tool calls taken.

:meth:`ReplyStream.events` streams the reply through
:func:`~copilot_core._streams.abortable_batches` (the abort, the first-token and idle
timeouts, a ``waiting_for_model`` note while the model reads its prompt): a text delta
becomes a ``ContentEvent``, tool-call fragments go into the
:class:`~copilot_core._accumulator.ToolCallAccumulator` (growing ``tool_call`` events),
which closes the stream at a runaway argument or at the first call past
``max_calls_per_reply``. A failure of the model is the reply's ``error``, not raised.
:meth:`ReplyStream.finish` then takes the reply's calls: complete and titled, a runaway
one emptied, or read from the reply's text when it made none
(:func:`~copilot_core._textreply.calls_in_text`).

The token loop is inline in :meth:`~ReplyStream.events` (no generator per delta): most
of a turn's events are tokens.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncGenerator, Callable, Sequence
from contextlib import aclosing
from typing import Any

from copilot_core._accumulator import StoppedCall, ToolCallAccumulator
from copilot_core._agent_settings import AgentSettings
from copilot_core._agent_turn import AgentTurn
from copilot_core._deltas import TextDelta
from copilot_core._messages import Message
from copilot_core._steps import Reply, absorb, stopped_call, text_id, timed_out, titled
from copilot_core._streams import StreamTimeout, abortable_batches
from copilot_core._textreply import calls_in_text
from copilot_core._tokens import TokenCounter
from copilot_core._tools import ToolResult, ToolSpec
from copilot_core.errors import CopilotError
from copilot_core.events import AgentEvent, ContentEvent, StatusEvent

__all__ = ["ReplyStream", "waiting_note"]


class ReplyStream:
    """One model call of ``turn``'s step (see the module's docstring)."""

    __slots__ = (
        "_new_id",
        "_settings",
        "_turn",
        "accumulator",
        "from_text",
        "quoted",
        "reply",
        "started",
    )

    def __init__(self, turn: AgentTurn, settings: AgentSettings, new_id: Callable[[], str]) -> None:
        self._turn = turn
        self._settings = settings
        self._new_id = new_id
        self.reply = Reply()
        #: When the model was called (``time.monotonic()``).
        self.started = 0.0
        #: Calls read from the reply's text that occur in a tool's output: answered.
        self.quoted: dict[str, ToolResult] = {}
        #: Whether the reply's calls were read from its text.
        self.from_text = False
        self.accumulator = ToolCallAccumulator(
            new_id,
            limits=settings.argument_limits,
            coalescing=settings.tool_call_coalescing,
            taken=turn.used_ids,
            max_calls=settings.max_calls_per_reply,
        )

    @property
    def stopped(self) -> StoppedCall | None:
        """The runaway call the stream was closed at, if any."""
        return self.accumulator.stopped

    async def events(
        self, prompt: list[Message], waiting: Callable[[float], StatusEvent]
    ) -> AsyncGenerator[AgentEvent, None]:
        """Stream the reply to ``prompt``; ``waiting(started)`` makes the note shown while
        the model has not answered yet."""
        turn, settings, reply, accumulator = (
            self._turn,
            self._settings,
            self.reply,
            self.accumulator,
        )
        selection, abort = turn.selection, turn.abort
        timeouts = selection.timeouts or settings.model_timeouts
        self.started = started = time.monotonic()
        batches = abortable_batches(
            selection.model.stream(prompt, turn.specs, selection.options),
            abort,
            settings.stream_buffer,
            first_timeout=timeouts.first_token,
            idle_timeout=timeouts.between_tokens,
            tick=settings.waiting_interval,
        )
        try:
            async with aclosing(batches):
                async for batch in batches:
                    if not batch:  # the model has not answered yet
                        yield waiting(started)
                        continue
                    for delta in batch:
                        if abort.is_aborted():
                            break  # (nothing the user did not see goes in the reply)
                        if isinstance(delta, TextDelta):
                            if delta.text:
                                reply.text.append(delta.text)
                                yield ContentEvent(delta.text)
                        else:
                            for fragment in absorb(delta, reply, accumulator):
                                yield fragment
                            if accumulator.halted:
                                break  # a runaway call, or more calls than run: stop now
                    if accumulator.halted:
                        break
        except CopilotError as exc:
            reply.error = exc
        except StreamTimeout as exc:
            reply.error = timed_out(exc)

    def finish(self) -> list[AgentEvent]:
        """Take the reply's calls once it is streamed; the events that show them. (A
        reply that failed or was aborted has none: a half-written call is never run.)"""
        turn, reply, accumulator = self._turn, self.reply, self.accumulator
        if reply.error is not None or turn.abort.is_aborted():
            return []
        events: list[AgentEvent] = [
            titled(complete, turn.tools, reply.titles)
            for complete in accumulator.finish(reply.finish_reason)
        ]
        reply.calls = accumulator.calls() if accumulator.has_calls else []
        if accumulator.stopped is not None:
            reply.calls = [stopped_call(call, accumulator.stopped) for call in reply.calls]
        elif not reply.calls and turn.text_calls and reply.content:
            events += calls_in_text(
                reply,
                turn.tools,
                turn.used_ids,
                turn.outputs,
                self.quoted,
                turn.told,
                self._settings.argument_limits,
                self._new_id,
            )
            self.from_text = bool(reply.calls)
            turn.told = turn.told or bool(self.quoted)
        turn.used_ids.update(call.id for call in reply.calls)
        return events


def waiting_note(
    counter: TokenCounter,
    prompt: list[Message],
    lab_cost: int,
    specs: Sequence[ToolSpec],
    started: float,
    server_note: Callable[[], str | None] | None = None,
) -> StatusEvent:
    """The note that the model is still reading its prompt (its size, an estimate),
    and what the adapter knows of its server (``server_note``: e.g. still busy with
    a request given up on). (The user's message is counted as stored, without the
    lab's state: the counts are cached by message id; ``lab_cost`` is the lab's.)"""
    tools = json.dumps([spec.to_openai() for spec in specs], ensure_ascii=False)
    tokens = (
        counter.count(prompt)
        + lab_cost
        + counter.count((Message.system(text_id("tools", tools), tools),))
    )
    waited = time.monotonic() - started
    message = f"waiting for the model: {tokens} prompt tokens ({waited:.0f} s)"
    extra: dict[str, Any] = {"prompt_tokens": tokens, "waited": round(waited, 1)}
    note = server_note() if server_note is not None else None
    if note:
        message += f"; {note}"
        extra["server_note"] = note
    return StatusEvent("waiting_for_model", message, extra)
