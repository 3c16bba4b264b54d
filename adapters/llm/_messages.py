"""Conversion between the core's OpenAI-shaped messages and LangChain messages.

The conversion is exact both ways (``from_langchain(to_langchain(m)) == m``):

* ``id`` becomes the LangChain message ``id``; ``name`` its ``name``.
* ``metadata`` (``created_at`` and the rest) rides in ``additional_kwargs["metadata"]``,
  which langchain-openai does not send to the provider.
* An assistant's tool calls become LangChain ``tool_calls`` (arguments parsed) or,
  when the argument text is not a JSON object, ``invalid_tool_calls`` (raw text).
  The exact argument text is also kept, in OpenAI's own shape, in
  ``additional_kwargs["tool_calls"]``, so that nothing is lost by a parse/dump.
* A tool message becomes a ``ToolMessage`` with ``tool_call_id`` and ``name``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    InvalidToolCall,
    SystemMessage,
    ToolMessage,
)
from langchain_core.messages import (
    ToolCall as LcToolCall,
)

from copilot_core import Message, Role
from copilot_core.ports import FunctionCall, ToolCall

__all__ = [
    "content_text",
    "from_langchain",
    "message_from_langchain",
    "message_to_langchain",
    "to_langchain",
]

_METADATA = "metadata"
_TOOL_CALLS = "tool_calls"


def to_langchain(messages: Iterable[Message]) -> list[BaseMessage]:
    """Core messages as LangChain messages, in order."""
    return [message_to_langchain(message) for message in messages]


def from_langchain(messages: Iterable[BaseMessage]) -> list[Message]:
    """LangChain messages as core messages, in order."""
    return [message_from_langchain(message) for message in messages]


def message_to_langchain(message: Message) -> BaseMessage:
    extra: dict[str, Any] = {_METADATA: dict(message.metadata)}
    if message.role is Role.SYSTEM:
        return SystemMessage(
            content=message.content, id=message.id, name=message.name, additional_kwargs=extra
        )
    if message.role is Role.USER:
        return HumanMessage(
            content=message.content, id=message.id, name=message.name, additional_kwargs=extra
        )
    if message.role is Role.TOOL:
        return ToolMessage(
            content=message.content,
            id=message.id,
            name=message.name,
            tool_call_id=message.tool_call_id or "",
            additional_kwargs=extra,
        )
    valid: list[LcToolCall] = []
    invalid: list[InvalidToolCall] = []
    if message.tool_calls is not None:
        extra[_TOOL_CALLS] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.function.name, "arguments": call.function.arguments},
            }
            for call in message.tool_calls
        ]
        for call in message.tool_calls:
            args = _parse_object(call.function.arguments)
            if args is None:
                invalid.append(
                    InvalidToolCall(
                        type="invalid_tool_call",
                        id=call.id,
                        name=call.function.name,
                        args=call.function.arguments,
                        error=None,
                    )
                )
            else:
                valid.append(
                    LcToolCall(type="tool_call", id=call.id, name=call.function.name, args=args)
                )
    return AIMessage(
        content=message.content,
        id=message.id,
        name=message.name,
        tool_calls=valid,
        invalid_tool_calls=invalid,
        additional_kwargs=extra,
    )


def message_from_langchain(message: BaseMessage) -> Message:
    """One LangChain message as a core message (a ``ValueError`` for other kinds)."""
    metadata = message.additional_kwargs.get(_METADATA)
    common: dict[str, Any] = {
        "id": message.id or "",
        "content": content_text(message.content),
        "name": message.name,
        "metadata": dict(metadata) if isinstance(metadata, dict) else {},
    }
    if isinstance(message, SystemMessage):
        return Message(role=Role.SYSTEM, **common)
    if isinstance(message, HumanMessage):
        return Message(role=Role.USER, **common)
    if isinstance(message, ToolMessage):
        return Message(role=Role.TOOL, tool_call_id=message.tool_call_id, **common)
    if isinstance(message, AIMessage):
        return Message(role=Role.ASSISTANT, tool_calls=_tool_calls(message), **common)
    raise ValueError(f"cannot convert a LangChain {type(message).__name__} to a core message")


def _tool_calls(message: AIMessage) -> tuple[ToolCall, ...] | None:
    raw = message.additional_kwargs.get(_TOOL_CALLS)
    if isinstance(raw, list):
        return tuple(
            ToolCall(
                id=str(call.get("id") or ""),
                function=FunctionCall(
                    name=str(call["function"].get("name") or ""),
                    arguments=str(call["function"].get("arguments") or ""),
                ),
            )
            for call in raw
            if isinstance(call, dict) and isinstance(call.get("function"), dict)
        )
    calls = [
        ToolCall(
            id=call.get("id") or "",
            function=FunctionCall(
                name=call["name"], arguments=json.dumps(call["args"], ensure_ascii=False)
            ),
        )
        for call in message.tool_calls
    ]
    calls.extend(
        ToolCall(
            id=call.get("id") or "",
            function=FunctionCall(name=call.get("name") or "", arguments=call.get("args") or ""),
        )
        for call in message.invalid_tool_calls
    )
    return tuple(calls) or None


def _parse_object(text: str) -> dict[str, Any] | None:
    if not text.strip():
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def content_text(content: str | Sequence[str | dict[str, Any]]) -> str:
    """Text of a message's content: a plain string, or the text parts of content blocks."""
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for block in content:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict) and block.get("type") == "text":
            parts.append(str(block.get("text", "")))
    return "".join(parts)
