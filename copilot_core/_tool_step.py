"""Running a reply's tools: the step that answers every call of the reply, in call order.

:meth:`ToolStep.run` answers itself the calls it must not run: those past
``max_calls_per_reply`` or cut off by the reply's length limit
(:func:`~copilot_core._replay.unrun`), calls read from the reply's text that quote a
tool's output, and, through the turn's :class:`~copilot_core._guards.TurnGuard`, the
calls of a reply stopped at a runaway argument and repeats of a call that succeeded in
this turn (:func:`~copilot_core._steps.guarded`). The others go to the
:class:`~copilot_core._toolgate.ToolGate` with the turn's
:class:`~copilot_core._toolgate.TurnDecisions` (the user decides once per distinct call
in a turn). The step, the assistant message with one tool message per call, is yielded
as one ``StepCompleted``. :func:`struck` says when the model has looped too often: the
turn ends there.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import aclosing

from copilot_core._accumulator import StoppedCall
from copilot_core._agent_settings import AgentSettings
from copilot_core._agent_turn import AgentTurn
from copilot_core._guards import TurnGuard
from copilot_core._messages import Message
from copilot_core._replay import unrun
from copilot_core._reply_stream import ReplyStream
from copilot_core._steps import guarded
from copilot_core._toolgate import ToolGate
from copilot_core._tools import ToolResult, ToolStatus, render_tool_output
from copilot_core.events import AgentEvent, ToolEndEvent, ToolStartEvent
from copilot_core.ports import Clock, IdFactory

__all__ = ["ToolStep", "struck"]


class ToolStep:
    """Runs the calls of a reply and yields its step (see the module's docstring)."""

    __slots__ = ("_clock", "_gate", "_ids", "_settings")

    def __init__(
        self, gate: ToolGate, *, ids: IdFactory, clock: Clock, settings: AgentSettings
    ) -> None:
        self._gate = gate
        self._ids = ids
        self._clock = clock
        self._settings = settings

    async def run(
        self,
        turn: AgentTurn,
        stream: ReplyStream,
        assistant: Message,
        ends: dict[str, ToolEndEvent],
    ) -> AsyncGenerator[AgentEvent, None]:
        """Answer or run each call of ``stream``'s reply (their ends kept in ``ends``),
        then yield the step with ``assistant`` first."""
        reply = stream.reply
        answered = self._answered(turn, stream)
        for call in reply.calls:
            if call.id in answered:
                result = answered[call.id]
                yield ToolStartEvent(call.name, call.id)
                ends[call.id] = ToolEndEvent(
                    call.name, call.id, result.output, result.status.value, 0.0, result.metadata
                )
                yield ends[call.id]
        to_run = [call for call in reply.calls if call.id not in answered]
        if to_run:
            tools = self._gate.run(
                to_run, turn.context, from_text=stream.from_text, decided=turn.decided
            )
            async with aclosing(tools) as events:
                async for event in events:
                    if isinstance(event, ToolEndEvent):
                        ends[event.tool_call_id] = event
                    yield event
        for call in to_run:
            if ends[call.id].status == ToolStatus.SUCCESS.value:
                turn.guard.succeeded(call)
        step = (
            assistant,
            *(self._message(call.id, call.name, ends, reply.titles) for call in reply.calls),
        )
        yield turn.completed(step)
        turn.seen.add(step)
        for message in step[1:]:
            turn.outputs.add(message.content)
        if stream.stopped is not None:
            turn.guard.runaways += 1

    def _answered(self, turn: AgentTurn, stream: ReplyStream) -> dict[str, ToolResult]:
        """The calls answered without being run, by call id (calls past the bound, or
        cut off; quoted; stopped or repeated)."""
        reply = stream.reply
        return (
            unrun(reply.calls, reply.finish_reason, self._settings.max_calls_per_reply)
            | stream.quoted
            | guarded(reply.calls, stream.stopped, turn.guard)
        )

    def _message(
        self, call_id: str, name: str, ends: dict[str, ToolEndEvent], titles: dict[str, str]
    ) -> Message:
        """A call's tool message: its output as a tool message holds it, the end's
        metadata (an approval's decision) and the call's title."""
        end = ends[call_id]
        return Message.tool(
            self._ids.new_id(),
            call_id,
            name,
            render_tool_output(end.output),
            self._clock.now(),
            **(end.metadata or {}),
            **({"title": titles[call_id]} if call_id in titles else {}),
        )


def struck(guard: TurnGuard, stopped: StoppedCall | None, strikes: int) -> str | None:
    """The closing answer when the model has looped too often in this turn."""
    if guard.runaways >= strikes and stopped is not None:
        return (
            f"I stopped this turn: I wrote the call of {stopped.name} too long again "
            f"({stopped.reason}). Nothing was run for it. Ask again with a smaller "
            "request (fewer devices or commands)."
        )
    if guard.repeats >= strikes:
        return (
            "I stopped this turn: I kept asking for a call that had already succeeded "
            "with the same arguments, and it was not run again. What was done is "
            "above; tell me what to do next."
        )
    return None
