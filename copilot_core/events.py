"""Events of a turn.

Two families:

* **Wire events** (:data:`WireEvent`) are what clients see: spec 000's ``content``,
  ``tool_call``, ``tool_start``, ``tool_end``, ``error``, ``abort``, ``done`` and
  ``heartbeat``, and spec 002's ``thinking``, ``status``, ``step``, ``plan``,
  ``answer`` and ``agent_error``. Each has a ``type`` and a :meth:`payload`.
* **Records** (:data:`TurnRecord`) are what an agent backend tells the chat
  service and no client sees: a step to persist, an LLM call to count, a title.

An agent backend yields both (:data:`AgentEvent`); the chat service stamps each
wire event with the session id and a per-turn sequence number (:class:`TurnEvent`).
"""

from __future__ import annotations

from dataclasses import field
from typing import Any, ClassVar

from copilot_core.messages import Message
from copilot_core.values import value

__all__ = [
    "AbortEvent",
    "AgentErrorEvent",
    "AgentEvent",
    "AnswerEvent",
    "ContentEvent",
    "DoneEvent",
    "ErrorEvent",
    "HeartbeatEvent",
    "LLMCallCompleted",
    "PlanEvent",
    "StatusEvent",
    "StepCompleted",
    "StepEvent",
    "ThinkingEvent",
    "TitleGenerated",
    "ToolCallEvent",
    "ToolEndEvent",
    "ToolProgressEvent",
    "ToolStartEvent",
    "TurnEvent",
    "TurnRecord",
    "WireEvent",
]


@value
class ContentEvent:
    """A piece of the answer's text.

    ``from_answer`` marks the whole answer of an agent that did not stream it, sent so
    that clients which render ``content`` see it; protocols that carry the ``answer``
    event itself skip it. It is not part of the payload.
    """

    type: ClassVar[str] = "content"
    content: str
    from_answer: bool = False

    def payload(self) -> dict[str, Any]:
        return {"content": self.content}


@value
class ToolCallEvent:
    """A tool call as the model writes it: arguments grow; the last one is ``complete``."""

    type: ClassVar[str] = "tool_call"
    id: str
    name: str
    arguments: str
    complete: bool = False

    def payload(self) -> dict[str, Any]:
        function: dict[str, Any] = {"name": self.name, "arguments": self.arguments}
        if self.complete:
            function["complete"] = True
        return {"tool_call": {"id": self.id, "type": "function", "function": function}}


@value
class ToolStartEvent:
    type: ClassVar[str] = "tool_start"
    tool_name: str
    tool_call_id: str

    def payload(self) -> dict[str, Any]:
        return {"tool_name": self.tool_name, "tool_call_id": self.tool_call_id}


@value
class ToolEndEvent:
    """A tool finished; ``tool_output`` is the text stored as the tool message."""

    type: ClassVar[str] = "tool_end"
    tool_name: str
    tool_call_id: str
    tool_output: str
    status: str = "success"

    def payload(self) -> dict[str, Any]:
        return {
            "tool_name": self.tool_name,
            "tool_call_id": self.tool_call_id,
            "tool_output": self.tool_output,
            "status": self.status,
        }


@value
class ToolProgressEvent:
    """What a running tool has produced since its previous progress event (console
    output as it arrives); ``tool_end`` still carries the whole output."""

    type: ClassVar[str] = "tool_progress"
    tool_name: str
    tool_call_id: str
    text: str
    device: str | None = None

    def payload(self) -> dict[str, Any]:
        return {
            "tool_name": self.tool_name,
            "tool_call_id": self.tool_call_id,
            "device": self.device,
            "text": self.text,
        }


@value
class ErrorEvent:
    """Something failed; ``error`` says what, for a person. ``code`` is machine-readable."""

    type: ClassVar[str] = "error"
    error: str
    code: str = "error"

    def payload(self) -> dict[str, Any]:
        return {"error": self.error, "code": self.code}


@value
class AbortEvent:
    type: ClassVar[str] = "abort"

    def payload(self) -> dict[str, Any]:
        return {}


@value
class DoneEvent:
    """The turn is over and saved; ``message_id`` is the final assistant message's id."""

    type: ClassVar[str] = "done"
    message_id: str | None

    def payload(self) -> dict[str, Any]:
        return {"message_id": self.message_id}


@value
class HeartbeatEvent:
    type: ClassVar[str] = "heartbeat"

    def payload(self) -> dict[str, Any]:
        return {}


@value
class ThinkingEvent:
    type: ClassVar[str] = "thinking"
    content: str

    def payload(self) -> dict[str, Any]:
        return {"content": self.content}


@value
class StatusEvent:
    """Progress: ``status`` is working, info, warning, complete…; ``message`` says more."""

    type: ClassVar[str] = "status"
    status: str
    message: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def payload(self) -> dict[str, Any]:
        return {"status": self.status, "message": self.message, **self.extra}


@value
class StepEvent:
    type: ClassVar[str] = "step"
    step: int
    total: int | None = None
    status: str = "started"

    def payload(self) -> dict[str, Any]:
        return {"step": self.step, "total": self.total, "status": self.status}


@value
class PlanEvent:
    type: ClassVar[str] = "plan"
    steps: tuple[str, ...]
    current_step: int | None = None

    def payload(self) -> dict[str, Any]:
        return {"steps": list(self.steps), "current_step": self.current_step}


@value
class AnswerEvent:
    type: ClassVar[str] = "answer"
    content: str
    elapsed: float | None = None
    steps: int | None = None
    tools_used: int | None = None

    def payload(self) -> dict[str, Any]:
        return {
            "content": self.content,
            "elapsed": self.elapsed,
            "steps": self.steps,
            "tools_used": self.tools_used,
        }


@value
class AgentErrorEvent:
    type: ClassVar[str] = "agent_error"
    content: str

    def payload(self) -> dict[str, Any]:
        return {"content": self.content}


WireEvent = (
    ContentEvent
    | ToolCallEvent
    | ToolStartEvent
    | ToolEndEvent
    | ToolProgressEvent
    | ErrorEvent
    | AbortEvent
    | DoneEvent
    | HeartbeatEvent
    | ThinkingEvent
    | StatusEvent
    | StepEvent
    | PlanEvent
    | AnswerEvent
    | AgentErrorEvent
)


# ------------------------------------------------------------------------ records
@value
class StepCompleted:
    """Messages to persist atomically: the user message, or an assistant message with
    every one of its tool results."""

    messages: tuple[Message, ...]


@value
class LLMCallCompleted:
    """One LLM call of the turn finished (or was cut short) with this usage."""

    input_tokens: int = 0
    output_tokens: int = 0


@value
class TitleGenerated:
    title: str


TurnRecord = StepCompleted | LLMCallCompleted | TitleGenerated
AgentEvent = WireEvent | TurnRecord


@value
class TurnEvent:
    """A wire event as sent: stamped with its session and its place in the turn.

    ``seq`` starts at 1 for each turn; heartbeats are not numbered (``seq == 0``)
    because they are not replayed.
    """

    seq: int
    session_id: str
    event: WireEvent

    @property
    def type(self) -> str:
        return self.event.type

    def to_wire(self) -> dict[str, Any]:
        return {"type": self.event.type, "session_id": self.session_id, **self.event.payload()}
