"""Streamed tool-call fragments in, growing ``tool_call`` events and parsed calls out."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from copilot_core._deltas import ToolCallDelta
from copilot_core._tools import ParsedToolCall
from copilot_core.events import ToolCallEvent

__all__ = ["ToolCallAccumulator"]


@dataclass(slots=True)
class _Call:
    id: str
    name: str
    arguments: str
    complete: bool = False


class ToolCallAccumulator:
    """Merges fragments of (possibly interleaved) tool calls by index.

    For each call it yields: one event with empty arguments when the call first
    appears, one event each time a fragment makes its arguments grow, and exactly
    one final event marked ``complete`` from :meth:`finish`. Then :meth:`calls`
    parses them: invalid JSON becomes a call carrying an ``error``, never an
    exception. Synchronous and I/O free.

    ``new_id`` supplies an id for a call whose fragments carry none.
    """

    __slots__ = ("_calls", "_finished", "_new_id")

    def __init__(self, new_id: Callable[[], str] | None = None) -> None:
        self._calls: dict[int, _Call] = {}
        self._finished = False
        self._new_id = new_id

    def add(self, delta: ToolCallDelta) -> list[ToolCallEvent]:
        """Take one fragment; return the events it causes (zero, one or two)."""
        if self._finished:
            raise RuntimeError("fragments after finish(); start a new accumulator per LLM call")
        events: list[ToolCallEvent] = []
        call = self._calls.get(delta.index)
        if call is None:
            call = _Call(delta.id or self._fallback_id(delta.index), delta.name or "", "")
            self._calls[delta.index] = call
            events.append(ToolCallEvent(call.id, call.name, ""))
        elif delta.name and not call.name:
            call.name = delta.name
        if delta.arguments:
            call.arguments += delta.arguments
            events.append(ToolCallEvent(call.id, call.name, call.arguments))
        return events

    def finish(self, reason: str | None = None) -> list[ToolCallEvent]:
        """The model stopped (for any ``reason``): one ``complete`` event per call, by index."""
        if self._finished:
            return []
        self._finished = True
        events = []
        for index in sorted(self._calls):
            call = self._calls[index]
            call.complete = True
            events.append(ToolCallEvent(call.id, call.name, call.arguments, complete=True))
        return events

    def calls(self) -> list[ParsedToolCall]:
        """The parsed calls in index order (only after :meth:`finish`)."""
        if not self._finished:
            raise RuntimeError("calls() before finish()")
        return [
            ParsedToolCall.parse(call.id, call.name, call.arguments)
            for _, call in sorted(self._calls.items())
        ]

    @property
    def has_calls(self) -> bool:
        return bool(self._calls)

    def _fallback_id(self, index: int) -> str:
        suffix = self._new_id() if self._new_id is not None else str(index)
        return f"call_{index}_{suffix}"
