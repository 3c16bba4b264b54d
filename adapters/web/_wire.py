"""The copilot SSE protocol (spec 000's events, extended): how each core event looks on
the wire. Every event becomes one JSON object with ``type`` and ``session_id``; see
docs/sse-protocol.md for the fields of each type."""

from __future__ import annotations

from typing import Any

from copilot_core.events import (
    AbortEvent,
    AgentErrorEvent,
    AnswerEvent,
    ApprovalRequiredEvent,
    ApprovalResolvedEvent,
    ContentEvent,
    DoneEvent,
    ErrorEvent,
    HeartbeatEvent,
    PlanEvent,
    StatusEvent,
    StepEvent,
    ThinkingEvent,
    ToolCallEvent,
    ToolEndEvent,
    ToolProgressEvent,
    ToolStartEvent,
    TurnEvent,
    WireEvent,
)
from copilot_core.ports import render_tool_output

__all__ = ["copilot_event"]


def copilot_event(stamped: TurnEvent) -> dict[str, Any]:
    """The wire object of one stamped event."""
    event = stamped.event
    if type(event) is ContentEvent:  # most of a turn's events: a streamed token
        return {"type": "content", "session_id": stamped.session_id, "content": event.content}
    return {"type": event.type, "session_id": stamped.session_id, **_fields(event)}


def _fields(event: WireEvent) -> dict[str, Any]:
    match event:
        case ContentEvent(content=content):
            return {"content": content}
        case ToolCallEvent():
            function: dict[str, Any] = {"name": event.name, "arguments": event.arguments}
            if event.complete:
                function["complete"] = True
            call = {"tool_call": {"id": event.id, "type": "function", "function": function}}
            return call if event.title is None else {**call, "title": event.title}
        case ToolStartEvent(tool_name=name, tool_call_id=call_id):
            return {"tool_name": name, "tool_call_id": call_id}
        case ToolProgressEvent():
            return {
                "tool_name": event.tool_name,
                "tool_call_id": event.tool_call_id,
                "device": event.device,
                "text": event.text,
            }
        case ToolEndEvent():
            return {
                "tool_name": event.tool_name,
                "tool_call_id": event.tool_call_id,
                # Exactly the text stored as the tool message.
                "tool_output": render_tool_output(event.output),
                "status": event.status,
            }
        case ApprovalRequiredEvent():
            return {
                "approval_id": event.approval_id,
                "tool_call_id": event.tool_call_id,
                "tool_name": event.tool_name,
                "arguments": event.arguments,
                "preview": event.preview,
                "digest": event.digest,
                "from_text": event.from_text,
            }
        case ApprovalResolvedEvent():
            return {
                "approval_id": event.approval_id,
                "tool_call_id": event.tool_call_id,
                "decision": event.decision,
                "by": event.by,
                "comment": event.comment,
                "reason": event.reason,
            }
        case ErrorEvent(error=error, code=code):
            return {"error": error, "code": code}
        case DoneEvent(message_id=message_id):
            return {"message_id": message_id}
        case AbortEvent() | HeartbeatEvent():
            return {}
        case ThinkingEvent(content=content) | AgentErrorEvent(content=content):
            return {"content": content}
        case StatusEvent():
            return {"status": event.status, "message": event.message, **event.extra}
        case StepEvent():
            return {"step": event.step, "total": event.total, "status": event.status}
        case PlanEvent():
            return {"steps": list(event.steps), "current_step": event.current_step}
        case AnswerEvent():
            return {
                "content": event.content,
                "elapsed": event.elapsed,
                "steps": event.steps,
                "tools_used": event.tools_used,
            }
