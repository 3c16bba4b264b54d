"""chunk_reader — a program's own model client, read with the core's accumulator and stats.

A program that talks to its model over its own transport (here: the chunks of an
OpenAI-style streaming response, as parsed JSON objects) still wants the core's rules for
what it streams: tool calls whose arguments grow fragment by fragment, interleaved by
index when the model calls several tools at once, one final event per call, broken JSON
arguments as an error and never a crash; and a turn's statistics summed over its model
calls. :func:`read_reply` does that with :class:`~copilot_core.ToolCallAccumulator` and
:class:`~copilot_core.StatsCollector`; ``test_chunk_reader.py`` next to it is the
program's own property test (hypothesis) of what it promises its users. See
``docs/embedding.md``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from copilot_core import ParsedToolCall, StatsCollector, ToolCallAccumulator, TurnStats
from copilot_core.events import ToolCallEvent
from copilot_core.ports import ToolCallDelta

__all__ = ["Reply", "read_reply", "read_turn"]


@dataclass
class Reply:
    """What one streamed model response came to."""

    text: str = ""
    #: Every ``tool_call`` event, in the order a client would have been sent them.
    events: list[ToolCallEvent] = field(default_factory=list)
    #: The calls, parsed (``error`` set on one whose arguments are not a JSON object).
    calls: list[ParsedToolCall] = field(default_factory=list)
    input_tokens: int = 0
    output_tokens: int = 0


def read_reply(chunks: Iterable[Mapping[str, Any]]) -> Reply:
    """One streamed response: ``chunks`` are the ``data:`` objects of an OpenAI-style
    stream (``choices[0].delta`` with ``content`` and ``tool_calls`` fragments; ``usage``
    on the last chunk)."""
    reply = Reply()
    accumulator = ToolCallAccumulator()
    text: list[str] = []
    for chunk in chunks:
        for choice in chunk.get("choices") or ():
            delta = choice.get("delta") or {}
            if delta.get("content"):
                text.append(delta["content"])
            for fragment in delta.get("tool_calls") or ():
                function = fragment.get("function") or {}
                reply.events += accumulator.add(
                    ToolCallDelta(
                        index=fragment["index"],
                        id=fragment.get("id"),
                        name=function.get("name"),
                        arguments=function.get("arguments") or "",
                    )
                )
        usage = chunk.get("usage")
        if usage:
            reply.input_tokens = usage.get("prompt_tokens", 0)
            reply.output_tokens = usage.get("completion_tokens", 0)
    reply.events += accumulator.finish()
    reply.calls = accumulator.calls()
    reply.text = "".join(text)
    return reply


def read_turn(responses: Iterable[Iterable[Mapping[str, Any]]], messages: int) -> TurnStats:
    """A turn of several model calls that added ``messages`` messages: its statistics."""
    stats = StatsCollector()
    stats.messages_added(messages)
    for chunks in responses:
        reply = read_reply(chunks)
        stats.llm_call(reply.input_tokens, reply.output_tokens)
    return stats.snapshot()
