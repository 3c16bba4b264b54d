"""Spec 002's JSON-line vocabulary turned into the core's events and history.

One :class:`EventTranslator` per run. It keeps the conversation valid whatever the
program prints: a tool is recorded as an assistant message with one tool call and
the tool message answering it, as soon as the tool is over, and :meth:`finish`
closes a tool left open and records the final answer.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from copilot_core import Message
from copilot_core.events import (
    AgentErrorEvent,
    AgentEvent,
    AnswerEvent,
    ContentEvent,
    PlanEvent,
    StatusEvent,
    StepCompleted,
    StepEvent,
    ThinkingEvent,
    ToolCallEvent,
    ToolEndEvent,
    ToolStartEvent,
)
from copilot_core.ports import Clock, FunctionCall, IdFactory, ToolCall, render_tool_output

__all__ = ["EventTranslator", "Outcome"]

Outcome = Literal["ok", "aborted", "error"]

#: Warnings about bad lines are capped per run, so garbage cannot flood the stream.
MAX_WARNINGS = 20
_PREVIEW_CHARS = 80
#: Keys a status event's extra fields cannot take: the wire event's own.
_RESERVED_STATUS_KEYS = frozenset({"type", "status", "message", "session_id", "id", "seq"})


@dataclass(slots=True)
class _Tool:
    id: str
    name: str
    #: The text streamed before the tool started: the content of its assistant message.
    preamble: str = ""
    arguments: str | None = None
    result: dict[str, Any] | None = None
    ended: bool = False
    success: bool = True


@dataclass(slots=True)
class _Counters:
    warnings: int = 0
    tools: int = 0


class EventTranslator:
    """Feeds on the program's stdout lines; yields wire events and records."""

    def __init__(self, agent_id: str, agent_name: str, clock: Clock, ids: IdFactory) -> None:
        self._agent_id = agent_id
        self._agent_name = agent_name
        self._clock = clock
        self._ids = ids
        self._text: list[str] = []
        self._answer: str | None = None
        self._tool: _Tool | None = None
        self._counters = _Counters()

    @property
    def tools_used(self) -> int:
        return self._counters.tools

    # ------------------------------------------------------------------- input
    def line(self, raw: bytes) -> list[AgentEvent]:
        """One stdout line (without its newline)."""
        text = raw.decode("utf-8", errors="replace").strip()
        if not text:
            return []
        try:
            value = json.loads(text)
        except ValueError:
            return self.warning(f"skipped a line that is not JSON: {_preview(text)}")
        if not isinstance(value, dict) or not isinstance(value.get("type"), str):
            return self.warning(f"skipped a JSON line that is not an event: {_preview(text)}")
        return self.event(value)

    def warning(self, message: str) -> list[AgentEvent]:
        """A ``status`` warning about the program's output (capped per run)."""
        self._counters.warnings += 1
        if self._counters.warnings > MAX_WARNINGS:
            return []
        if self._counters.warnings == MAX_WARNINGS:
            message += " (further warnings of this run are not shown)"
        return [StatusEvent("warning", f"Agent {self._agent_name}: {message}")]

    def event(self, data: dict[str, Any]) -> list[AgentEvent]:
        kind = data["type"]
        out: list[AgentEvent] = []
        tool = self._tool
        if tool is not None and tool.ended and kind != "tool_result":
            out += self._close_tool()
        handler = _HANDLERS.get(kind)
        if handler is None:
            if kind == "done":
                return out  # the service sends done itself, after saving
            return out + self.warning(f"skipped an event of unknown type {_preview(kind)!r}")
        try:
            out += handler(self, data)
        except (TypeError, ValueError) as exc:
            out += self.warning(f"skipped a malformed {kind!r} event ({exc})")
        return out

    # ---------------------------------------------------------------- handlers
    def _on_chunk(self, data: dict[str, Any]) -> list[AgentEvent]:
        content = _text(data.get("content"))
        if not content:
            return []
        self._text.append(content)
        return [ContentEvent(content)]

    def _on_answer(self, data: dict[str, Any]) -> list[AgentEvent]:
        content = _text(data.get("content"))
        self._answer = content
        # An agent that did not stream its answer: clients of the default protocol
        # render `content` events, so they get the answer as one.
        echo: list[AgentEvent] = (
            [ContentEvent(content, from_answer=True)] if content and not self._text else []
        )
        return [
            *echo,
            AnswerEvent(
                content,
                elapsed=_float(data.get("elapsed")),
                steps=_int(data.get("steps")),
                tools_used=_int(data.get("tools_used")),
            ),
        ]

    def _on_thinking(self, data: dict[str, Any]) -> list[AgentEvent]:
        return [ThinkingEvent(_text(data.get("content")))]

    def _on_status(self, data: dict[str, Any]) -> list[AgentEvent]:
        extra = {k: v for k, v in data.items() if k not in _RESERVED_STATUS_KEYS}
        return [StatusEvent(_text(data.get("status")) or "info", _text(data.get("message")), extra)]

    def _on_step(self, data: dict[str, Any]) -> list[AgentEvent]:
        step = _int(data.get("step"))
        if step is None:
            raise ValueError("step is not a number")
        total = _int(data.get("total"))
        return [StepEvent(step, total, _text(data.get("status")) or "started")]

    def _on_plan(self, data: dict[str, Any]) -> list[AgentEvent]:
        steps = data.get("steps")
        if not isinstance(steps, list):
            raise ValueError("steps is not a list")
        return [PlanEvent(tuple(_text(step) for step in steps), _int(data.get("current_step")))]

    def _on_tool_start(self, data: dict[str, Any]) -> list[AgentEvent]:
        out = self._close_tool() if self._tool is not None else []
        return out + self._open_tool(_text(data.get("tool")))

    def _on_tool_args(self, data: dict[str, Any]) -> list[AgentEvent]:
        out = [] if self._tool is not None else self._open_tool(_text(data.get("tool")))
        tool = self._tool
        assert tool is not None
        if tool.arguments is not None:
            return out  # announced already; a call's arguments do not change
        tool.arguments = _arguments(data.get("args"))
        return [*out, *self._announce(tool)]

    def _on_tool_result(self, data: dict[str, Any]) -> list[AgentEvent]:
        out: list[AgentEvent] = []
        if self._tool is None or self._tool.result is not None:
            if self._tool is not None:
                out += self._close_tool()
            out += self._open_tool(_text(data.get("tool")) or _text(data.get("title")))
        tool = self._tool
        assert tool is not None
        if tool.arguments is None:
            tool.arguments = "{}"
            out += self._announce(tool)
        tool.result = {k: v for k, v in data.items() if k != "type"}
        if data.get("success") is False:
            tool.success = False
        if tool.ended:
            out += self._close_tool()
        return out

    def _on_tool_end(self, data: dict[str, Any]) -> list[AgentEvent]:
        tool = self._tool
        if tool is None:
            return self.warning("skipped a tool_end event with no tool running")
        out: list[AgentEvent] = []
        if tool.arguments is None:
            tool.arguments = "{}"
            out += self._announce(tool)
        tool.ended = True
        if data.get("success") is False:
            tool.success = False
        if tool.result is not None:
            out += self._close_tool()
        return out

    def _on_agent_error(self, data: dict[str, Any]) -> list[AgentEvent]:
        content = _text(data.get("content")) or _text(data.get("message")) or "agent error"
        return [AgentErrorEvent(content)]

    # ------------------------------------------------------------------- tools
    def _open_tool(self, name: str) -> list[AgentEvent]:
        tool = _Tool(
            id=f"call_{self._ids.new_id()}", name=name or "tool", preamble="".join(self._text)
        )
        self._text.clear()
        self._tool = tool
        self._counters.tools += 1
        return [ToolCallEvent(tool.id, tool.name, "")]

    @staticmethod
    def _announce(tool: _Tool) -> list[AgentEvent]:
        return [
            ToolCallEvent(tool.id, tool.name, tool.arguments or "{}", complete=True),
            ToolStartEvent(tool.name, tool.id),
        ]

    def _close_tool(self, outcome: Outcome = "ok") -> list[AgentEvent]:
        tool, self._tool = self._tool, None
        if tool is None:
            return []
        out: list[AgentEvent] = []
        if tool.arguments is None:
            tool.arguments = "{}"
            out += self._announce(tool)
        status = "success" if tool.success else "error"
        if tool.result is not None:
            result: dict[str, Any] = tool.result
        elif tool.ended:
            result = {"success": tool.success}
        elif outcome == "aborted":
            result, status = {"status": "aborted"}, "aborted"
        else:
            why = "stopped before the tool finished" if outcome == "error" else "reported no result"
            result, status = {"status": "error", "error": f"the agent {why}"}, "error"
        output = render_tool_output(result)
        now = self._clock.now()
        call = ToolCall(id=tool.id, function=FunctionCall(name=tool.name, arguments=tool.arguments))
        assistant = Message.assistant(
            self._ids.new_id(), tool.preamble, now, (call,), agent_id=self._agent_id
        )
        answer = Message.tool(self._ids.new_id(), tool.id, tool.name, output, now)
        out.append(ToolEndEvent(tool.name, tool.id, result, status))
        out.append(StepCompleted((assistant, answer)))
        return out

    # ------------------------------------------------------------------ ending
    def finish(self, outcome: Outcome) -> list[AgentEvent]:
        """Close what is open and record the final assistant message (if it has text)."""
        out = self._close_tool(outcome)
        content = self._answer if self._answer is not None else "".join(self._text)
        self._text.clear()
        if content:
            flags: dict[str, Any] = {"agent_id": self._agent_id}
            if outcome == "aborted":
                flags["aborted"] = True
            elif outcome == "error":
                flags["error"] = True
            message = Message.assistant(self._ids.new_id(), content, self._clock.now(), **flags)
            out.append(StepCompleted((message,)))
        elif outcome == "ok":
            out += self.warning("ended without an answer")
        return out


_HANDLERS = {
    "chunk": EventTranslator._on_chunk,
    "answer": EventTranslator._on_answer,
    "thinking": EventTranslator._on_thinking,
    "status": EventTranslator._on_status,
    "step": EventTranslator._on_step,
    "plan": EventTranslator._on_plan,
    "tool_start": EventTranslator._on_tool_start,
    "tool_args": EventTranslator._on_tool_args,
    "tool_result": EventTranslator._on_tool_result,
    "tool_end": EventTranslator._on_tool_end,
    "agent_error": EventTranslator._on_agent_error,
    "error": EventTranslator._on_agent_error,
}


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def _float(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _int(value: Any) -> int | None:
    number = _float(value)
    return None if number is None else int(number)


def _arguments(value: Any) -> str:
    """Tool arguments as OpenAI wants them: the text of a JSON object."""
    if value is None:
        return "{}"
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict):
            return value
        return json.dumps({"input": value}, ensure_ascii=False)
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False)
    return json.dumps({"input": value}, ensure_ascii=False)


def _preview(text: str) -> str:
    return text if len(text) <= _PREVIEW_CHARS else text[:_PREVIEW_CHARS] + "…"
