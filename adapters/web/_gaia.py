"""Spec 002's wire protocol (``?protocol=gaia``) for clients built for it.

The turn's events are translated, one core event into zero, one or two spec 002
events: ``chunk``, ``answer``, ``thinking``, ``status``, ``step``, ``plan``,
``tool_start``, ``tool_args``, ``tool_result``, ``tool_end``, ``agent_error``,
``done`` (``message_id`` and ``content``) and ``error`` (``content``). Every event
also carries ``session_id``. Heartbeats become ``status`` ``heartbeat`` events (spec
002 clients ignore statuses they do not show), an abort a ``status`` ``aborted``.
"""

from __future__ import annotations

import json
from typing import Any

from adapters.web._wire import copilot_event
from copilot_core.events import (
    AbortEvent,
    ApprovalRequiredEvent,
    ApprovalResolvedEvent,
    ContentEvent,
    DoneEvent,
    ErrorEvent,
    HeartbeatEvent,
    ToolCallEvent,
    ToolEndEvent,
    ToolProgressEvent,
    ToolStartEvent,
    TurnEvent,
)
from copilot_core.ports import render_tool_output

__all__ = ["GAIA_EVENT_TYPES", "GaiaTranslator"]

GAIA_EVENT_TYPES = frozenset(
    {
        "chunk", "answer", "thinking", "status", "step", "plan", "tool_start",
        "tool_args", "tool_result", "tool_end", "agent_error", "done", "error",
    }
)  # fmt: skip

_SUMMARY_CHARS = 200


class GaiaTranslator:
    """Translates one stream's events; keeps what spec 002 needs across events."""

    def __init__(self) -> None:
        self._text: list[str] = []

    def translate(self, stamped: TurnEvent) -> list[dict[str, Any]]:
        event = stamped.event
        out: list[dict[str, Any]]
        if isinstance(event, ContentEvent):
            # An answer's echo is not a chunk: spec 002 clients get the answer event.
            self._text.append(event.content)
            out = [] if event.from_answer else [{"type": "chunk", "content": event.content}]
        elif isinstance(event, ToolCallEvent):
            out = self._tool_call(event)
        elif isinstance(event, ToolStartEvent):
            out = []  # announced by the first tool_call fragment already
        elif isinstance(event, ToolEndEvent):
            out = self._tool_end(event)
        elif isinstance(event, ApprovalRequiredEvent):
            # Spec 002 has no approval event: a status its clients show, with the request.
            summary = event.preview.get("summary", "")
            out = [
                {
                    **copilot_event(stamped),
                    "type": "status",
                    "status": "approval_required",
                    "message": f"Approve {event.tool_name}? {summary}".strip(),
                }
            ]
        elif isinstance(event, ApprovalResolvedEvent):
            verdict = "approved" if event.decision == "approve" else "rejected"
            out = [
                {
                    **copilot_event(stamped),
                    "type": "status",
                    "status": "approval_resolved",
                    "message": f"The change was {verdict}"
                    + (f" ({event.reason})" if event.reason != "decided" else "")
                    + ".",
                }
            ]
        elif isinstance(event, ToolProgressEvent):
            out = [
                {
                    "type": "status",
                    "status": "progress",
                    "message": event.text,
                    "tool": event.tool_name,
                    "device": event.device,
                }
            ]
        elif isinstance(event, DoneEvent):
            content = event.content if event.message_id is not None else "".join(self._text)
            out = [{"type": "done", "message_id": event.message_id, "content": content}]
        elif isinstance(event, ErrorEvent):
            out = [{"type": "error", "content": event.error}]
        elif isinstance(event, AbortEvent):
            out = [{"type": "status", "status": "aborted", "message": "Stopped by the user."}]
        elif isinstance(event, HeartbeatEvent):
            out = [{"type": "status", "status": "heartbeat", "message": ""}]
        else:  # answer, thinking, status, step, plan, agent_error: the same shape
            out = [copilot_event(stamped)]
        return [{**item, "session_id": stamped.session_id} for item in out]

    @staticmethod
    def _tool_call(event: ToolCallEvent) -> list[dict[str, Any]]:
        if event.complete:
            try:
                args: Any = json.loads(event.arguments) if event.arguments.strip() else {}
            except ValueError:
                args = event.arguments
            detail = event.title or ""  # the call in plain words, when its tool names it
            return [{"type": "tool_args", "tool": event.name, "args": args, "detail": detail}]
        if event.arguments == "":
            return [{"type": "tool_start", "tool": event.name, "detail": ""}]
        return []  # growing arguments: spec 002 shows them once complete

    @staticmethod
    def _tool_end(event: ToolEndEvent) -> list[dict[str, Any]]:
        success = event.status == "success"
        output = event.output
        result: dict[str, Any] = {
            "type": "tool_result",
            "title": event.tool_name,
            "summary": _summary(render_tool_output(output)),
            "success": success,
        }
        if isinstance(output, str):
            result["command_output"] = {"output": output}
        elif isinstance(output, dict) and _SPEC_002_RESULT_KEYS & output.keys():
            # An external agent's own tool_result, saved as it was: send it back as such.
            for key in ("title", "summary", "result_data", "command_output"):
                if key in output:
                    result[key] = output[key]
        else:
            result["result_data"] = output
        return [result, {"type": "tool_end", "success": success}]


#: Keys that mark a tool output as a spec 002 ``tool_result`` (what external agents send).
_SPEC_002_RESULT_KEYS = frozenset({"summary", "result_data", "command_output"})


def _summary(output: str) -> str:
    line = " ".join(output.split())
    return line if len(line) <= _SUMMARY_CHARS else line[: _SUMMARY_CHARS - 1] + "…"
