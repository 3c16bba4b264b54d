"""Events of a turn.

Two families:

* **Wire events** (:data:`WireEvent`) are what clients see: spec 000's ``content``,
  ``tool_call``, ``tool_start``, ``tool_end``, ``error``, ``abort``, ``done`` and
  ``heartbeat``, ours ``tool_progress``, ``approval_required`` and
  ``approval_resolved``, and spec 002's ``thinking``, ``status``,
  ``step``, ``plan``, ``answer`` and ``agent_error``. Each has a ``type`` and carries
  structured data; how an event looks on the wire (the copilot SSE protocol, spec
  002's protocol) is decided by the adapter that sends it.
* **Records** (:data:`TurnRecord`) are what an agent backend tells the turn runner
  and no client sees: a step to persist, an LLM call to count, a title, a call that
  waits for the user's decision (which the runner answers).

An agent backend yields both (:data:`AgentEvent`); the turn runner stamps each wire
event with the session id and a per-turn sequence number (:class:`TurnEvent`) in the
turn's :class:`~copilot_core.ports.TurnLog`, which keeps them in a
:class:`~copilot_core.ports.TurnEventFeed` for the clients that follow the turn.
:func:`event_to_record` and :func:`event_from_record` turn a wire event into plain JSON
data and back, for turn logs that are shared between processes.

This module holds values only (and their JSON codec): what keeps and follows a turn's
events is in :mod:`copilot_core._turnfeed`, and the record that carries a call's
waiting for a decision (it holds the future the decision completes) in
:mod:`copilot_core._approval_needed`; it is re-exported here, as the record it is.
"""

from __future__ import annotations

from dataclasses import field, fields
from typing import Any, ClassVar

from copilot_core._approval_needed import ApprovalNeeded
from copilot_core._messages import Message
from copilot_core._values import value

__all__ = [
    "AbortEvent",
    "AgentErrorEvent",
    "AgentEvent",
    "AnswerEvent",
    "ApprovalNeeded",
    "ApprovalRequiredEvent",
    "ApprovalResolvedEvent",
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
    "event_from_record",
    "event_to_record",
]


@value
class ContentEvent:
    """A piece of the answer's text.

    ``from_answer`` marks the whole answer of an agent that did not stream it, sent so
    that clients which render ``content`` see it; protocols that carry the ``answer``
    event itself skip it.
    """

    type: ClassVar[str] = "content"
    content: str
    from_answer: bool = False


@value
class ToolCallEvent:
    """A tool call as the model writes it: ``arguments`` is the whole argument text so
    far (it grows); the last event of a call is ``complete``, with the call's ``title``
    when its tool names it (:attr:`~copilot_core.ports.ToolSpec.title`)."""

    type: ClassVar[str] = "tool_call"
    id: str
    name: str
    arguments: str
    complete: bool = False
    title: str | None = None


@value
class ToolStartEvent:
    type: ClassVar[str] = "tool_start"
    tool_name: str
    tool_call_id: str


@value
class ToolProgressEvent:
    """What a running tool has produced since its previous progress event (console
    output as it arrives); ``tool_end`` still carries the whole output."""

    type: ClassVar[str] = "tool_progress"
    tool_name: str
    tool_call_id: str
    text: str
    device: str | None = None


@value
class ToolEndEvent:
    """A tool finished: ``output`` is its JSON-serialisable result (a string, or data
    that is stored as JSON text in the tool message); ``status`` is ``success``,
    ``error`` or ``aborted``; ``elapsed`` the seconds it ran, when measured."""

    type: ClassVar[str] = "tool_end"
    tool_name: str
    tool_call_id: str
    output: Any
    status: str = "success"
    elapsed: float | None = None
    #: Kept with the tool message (an approval's decision), not sent as such.
    metadata: dict[str, Any] | None = None


@value
class ApprovalRequiredEvent:
    """The turn waits for the user's decision on a tool call: ``preview`` says per device
    the exact commands, or the exact topology change (``ChangePreview.to_dict()``)."""

    type: ClassVar[str] = "approval_required"
    approval_id: str
    tool_call_id: str
    tool_name: str
    arguments: dict[str, Any]
    preview: dict[str, Any]
    #: The ``call_digest`` of the tool and these arguments: the decision is bound to it.
    digest: str = ""
    #: The model wrote this call in its reply's text instead of making it (it asks
    #: whatever the approval setting; the card says so).
    from_text: bool = False


@value
class ApprovalResolvedEvent:
    """A pending approval was decided (``decision`` approve or reject, ``by`` whom), or
    lapsed (``reason`` timeout or aborted, then ``decision`` is reject)."""

    type: ClassVar[str] = "approval_resolved"
    approval_id: str
    tool_call_id: str
    decision: str
    by: str | None = None
    comment: str = ""
    reason: str = "decided"


@value
class ErrorEvent:
    """Something failed; ``error`` says what, for a person. ``code`` is machine-readable."""

    type: ClassVar[str] = "error"
    error: str
    code: str = "error"


@value
class AbortEvent:
    type: ClassVar[str] = "abort"


@value
class DoneEvent:
    """The turn is over and saved; ``message_id`` is the final assistant message's id
    and ``content`` its text."""

    type: ClassVar[str] = "done"
    message_id: str | None
    content: str = ""


@value
class HeartbeatEvent:
    type: ClassVar[str] = "heartbeat"


@value
class ThinkingEvent:
    type: ClassVar[str] = "thinking"
    content: str


@value
class StatusEvent:
    """Progress: ``status`` is working, info, warning, complete…; ``message`` says more."""

    type: ClassVar[str] = "status"
    status: str
    message: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


@value
class StepEvent:
    type: ClassVar[str] = "step"
    step: int
    total: int | None = None
    status: str = "started"


@value
class PlanEvent:
    type: ClassVar[str] = "plan"
    steps: tuple[str, ...]
    current_step: int | None = None


@value
class AnswerEvent:
    type: ClassVar[str] = "answer"
    content: str
    elapsed: float | None = None
    steps: int | None = None
    tools_used: int | None = None


@value
class AgentErrorEvent:
    type: ClassVar[str] = "agent_error"
    content: str


WireEvent = (
    ContentEvent
    | ToolCallEvent
    | ToolStartEvent
    | ToolProgressEvent
    | ToolEndEvent
    | ApprovalRequiredEvent
    | ApprovalResolvedEvent
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
    """Messages to persist atomically: an assistant message with every one of its tool
    results, or an assistant message alone."""

    messages: tuple[Message, ...]


@value
class LLMCallCompleted:
    """One LLM call of the turn finished (or was cut short) with this usage;
    ``seconds`` is how long it took, when measured."""

    input_tokens: int = 0
    output_tokens: int = 0
    seconds: float | None = None


@value
class TitleGenerated:
    title: str


TurnRecord = StepCompleted | LLMCallCompleted | TitleGenerated | ApprovalNeeded
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


# ------------------------------------------------------------------------ codec
_WIRE_TYPES: dict[str, type[WireEvent]] = {
    cls.type: cls
    for cls in (
        ContentEvent,
        ToolCallEvent,
        ToolStartEvent,
        ToolProgressEvent,
        ToolEndEvent,
        ApprovalRequiredEvent,
        ApprovalResolvedEvent,
        ErrorEvent,
        AbortEvent,
        DoneEvent,
        HeartbeatEvent,
        ThinkingEvent,
        StatusEvent,
        StepEvent,
        PlanEvent,
        AnswerEvent,
        AgentErrorEvent,
    )
}


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def _field_names(kind: type) -> tuple[str, ...]:
    names = _FIELD_NAMES.get(kind)
    if names is None:
        names = _FIELD_NAMES[kind] = tuple(item.name for item in fields(kind))
    return names


def event_to_record(event: WireEvent) -> dict[str, Any]:
    """The event as plain JSON data: ``{"type": ..., <field>: ...}``."""
    record: dict[str, Any] = {"type": event.type}
    for name in _field_names(type(event)):
        record[name] = getattr(event, name)
    if isinstance(event, PlanEvent):
        record["steps"] = list(event.steps)
    return record


def event_from_record(record: dict[str, Any]) -> WireEvent:
    """The inverse of :func:`event_to_record`; raises ``ValueError`` for an unknown type."""
    data = dict(record)
    kind = _WIRE_TYPES.get(str(data.pop("type", "")))
    if kind is None:
        raise ValueError(f"not a wire event: {record.get('type')!r}")
    if kind is PlanEvent:
        data["steps"] = tuple(data.get("steps", ()))
    return kind(**data)
