"""The pieces of one agent step that need no agent: what one model call produced, the
calls the agent answers itself (guards), a call's title, the timeout errors, the lab's
state in the prompt.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace

from copilot_core._accumulator import StoppedCall, ToolCallAccumulator
from copilot_core._approvals import call_digest
from copilot_core._deltas import FinishDelta, ToolCallDelta, UsageDelta
from copilot_core._guards import TurnGuard
from copilot_core._messages import Message, Role
from copilot_core._prompts import PromptBook
from copilot_core._streams import StreamTimeout
from copilot_core._tools import ParsedToolCall, ToolResult, ToolSpec, call_title
from copilot_core.errors import (
    CopilotError,
    LLMError,
    LLMStreamInterruptedError,
    LLMUnavailableError,
)
from copilot_core.events import ToolCallEvent

__all__ = [
    "Reply",
    "absorb",
    "guarded",
    "stopped_call",
    "text_id",
    "timed_out",
    "titled",
    "with_lab",
]


@dataclass(slots=True)
class Reply:
    """What one LLM call produced."""

    text: list[str] = field(default_factory=list)
    calls: list[ParsedToolCall] = field(default_factory=list)
    input_tokens: int = 0
    output_tokens: int = 0
    finish_reason: str | None = None
    error: CopilotError | None = None
    #: Each call's plain-language title (by call id), as its complete event carried it.
    titles: dict[str, str] = field(default_factory=dict)

    @property
    def content(self) -> str:
        return "".join(self.text)


def timed_out(exc: StreamTimeout) -> LLMError:
    if exc.first:
        return LLMUnavailableError(
            f"The model did not start answering within {exc.limit:g} s. A slow (local) "
            "model may need longer: raise first_token_timeout in your LLM settings."
        )
    return LLMStreamInterruptedError(
        f"The model stopped sending its reply for {exc.limit:g} s (token_timeout in your "
        "LLM settings). The partial answer was kept; try again."
    )


def text_id(kind: str, text: str) -> str:
    """An id for a prompt's own message, one per text (token counts are cached by id)."""
    return f"{kind}-{hashlib.sha256(text.encode()).hexdigest()[:16]}"


def with_lab(prompt: list[Message], lab: str) -> list[Message]:
    """``prompt`` with the lab's state in front of its latest user message (only in what
    the model reads: the stored message is the user's own)."""
    for index in range(len(prompt) - 1, -1, -1):
        message = prompt[index]
        if message.role is Role.USER:
            content = PromptBook.with_lab(message.content, lab)
            prompt[index] = message.model_copy(update={"content": content})
            break
    return prompt


def stopped_call(call: ParsedToolCall, stopped: StoppedCall) -> ParsedToolCall:
    """The runaway call is kept with empty arguments (the cut text is not valid JSON,
    and the model should not read it again); it is never run."""
    if call.id != stopped.id:
        return call
    return ParsedToolCall(call.id, call.name, "{}", None, stopped.reason)


def guarded(
    calls: list[ParsedToolCall], stopped: StoppedCall | None, guard: TurnGuard
) -> dict[str, ToolResult]:
    """The calls the agent answers itself, without running them: the calls of a reply
    stopped for a runaway argument, and repeats of a call that succeeded in this turn."""
    if stopped is not None:
        return {
            call.id: ToolResult.error(
                f"Not run: the call of {stopped.name} was stopped while being written: "
                f"{stopped.reason}. Make a smaller call (fewer items, shorter text; "
                "split the work into several calls)."
                if call.id == stopped.id
                else f"Not run: the reply was stopped because the call of {stopped.name} "
                "grew too long. Make this call again if it is still needed."
            )
            for call in calls
        }
    answers: dict[str, ToolResult] = {}
    seen: dict[str, str] = {}
    for call in calls:
        earlier = guard.repeat_of(call)
        if earlier is not None:
            answers[call.id] = guard.refuse_repeat(call, earlier)
        elif call.is_valid:
            key = call_digest(call.name, call.arguments or {})
            if key in seen:
                answers[call.id] = ToolResult.error(
                    f"Not run: the same call is already made in this message (call "
                    f"{seen[key]}); its result is above."
                )
            else:
                seen[key] = call.id
    return answers


def absorb(
    delta: ToolCallDelta | UsageDelta | FinishDelta, reply: Reply, accumulator: ToolCallAccumulator
) -> list[ToolCallEvent]:
    """Take in a non-text delta of the model's reply; the events it causes."""
    if isinstance(delta, ToolCallDelta):
        return accumulator.add(delta)
    if isinstance(delta, UsageDelta):
        reply.input_tokens += delta.input_tokens
        reply.output_tokens += delta.output_tokens
    else:
        reply.finish_reason = delta.reason
    return []


def titled(
    event: ToolCallEvent, specs: dict[str, ToolSpec], titles: dict[str, str]
) -> ToolCallEvent:
    """A call's complete event with its tool's title for it (kept in ``titles``, which
    goes into the call's tool message as ``metadata.title``)."""
    call = ParsedToolCall.parse(event.id, event.name, event.arguments)
    title = call_title(specs.get(event.name), call)
    if title is None:
        return event
    titles[event.id] = title
    return replace(event, title=title)
