"""Response bodies, typed, so that the OpenAPI document has a schema for each."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from copilot_core.messages import Message
from copilot_core.turns import TurnResult

__all__ = [
    "ChatMessage",
    "FunctionCall",
    "Readiness",
    "ToolCall",
    "TurnReply",
    "TurnStatsBody",
    "messages_body",
    "turn_reply",
]


@dataclass
class Readiness:
    """``/readyz``: every check's outcome (``ok`` or ``failed: <why>``)."""

    status: Literal["ready", "not_ready", "starting"]
    checks: dict[str, str]


@dataclass
class FunctionCall:
    name: str
    #: The arguments as the model wrote them (a JSON object, as text).
    arguments: str


@dataclass
class ToolCall:
    id: str
    type: Literal["function"]
    function: FunctionCall


@dataclass
class ChatMessage:
    """One message in the OpenAI shape; optional fields are left out when unset."""

    id: str
    role: Literal["system", "user", "assistant", "tool"]
    content: str
    #: ``created_at`` (ISO 8601), and flags such as ``aborted`` or ``error``.
    metadata: dict[str, Any] = field(default_factory=dict)
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None
    name: str | None = None


@dataclass
class TurnStatsBody:
    messages: int
    llm_calls: int
    input_tokens: int
    output_tokens: int
    total_tokens: int


@dataclass
class TurnReply:
    """A turn's reply with ``"stream": false``, sent once the turn is saved."""

    session_id: str
    message_id: str | None
    content: str
    messages: list[ChatMessage]
    stats: TurnStatsBody
    aborted: bool
    error: str | None


def messages_body(messages: tuple[Message, ...] | list[Message]) -> list[dict[str, Any]]:
    return [message.to_dict() for message in messages]


def turn_reply(result: TurnResult) -> dict[str, Any]:
    """The :class:`TurnReply` of a finished turn, as JSON."""
    stats = result.stats
    return {
        "session_id": result.session_id,
        "message_id": result.message_id,
        "content": result.content,
        "messages": messages_body(result.messages),
        "stats": {
            "messages": stats.messages,
            "llm_calls": stats.llm_calls,
            "input_tokens": stats.input_tokens,
            "output_tokens": stats.output_tokens,
            "total_tokens": stats.total_tokens,
        },
        "aborted": result.aborted,
        "error": result.error,
    }
