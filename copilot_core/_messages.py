"""Messages in the OpenAI chat shape, and their exact conversion to and from plain dicts.

A message is immutable. ``tool_calls`` carry their arguments as JSON *text*, exactly
as the OpenAI wire format does; :meth:`Message.from_dict` also accepts an arguments
object (older histories stored one) and turns it into canonical JSON text.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

__all__ = ["FunctionCall", "Message", "Role", "ToolCall"]


class Role(StrEnum):
    """Who speaks a message."""

    SYSTEM = "system"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class FunctionCall(_Frozen):
    """The function part of a tool call: a name and its arguments as JSON text."""

    name: str
    arguments: str = ""


class ToolCall(_Frozen):
    """One tool call requested by an assistant message."""

    id: str
    type: Literal["function"] = "function"
    function: FunctionCall

    @property
    def name(self) -> str:
        return self.function.name


class Message(_Frozen):
    """One message of a conversation, in the OpenAI shape.

    ``metadata`` holds ``created_at`` (ISO 8601) and any other annotations, such as
    ``aborted: true`` on a partial answer.
    """

    id: str
    role: Role
    content: str = ""
    tool_calls: tuple[ToolCall, ...] | None = None
    tool_call_id: str | None = None
    name: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    # ----------------------------------------------------------------- builders
    @classmethod
    def user(cls, id: str, content: str, created_at: datetime) -> Message:
        return cls(id=id, role=Role.USER, content=content, metadata=_stamp(created_at))

    @classmethod
    def system(cls, id: str, content: str) -> Message:
        return cls(id=id, role=Role.SYSTEM, content=content)

    @classmethod
    def assistant(
        cls,
        id: str,
        content: str,
        created_at: datetime,
        tool_calls: tuple[ToolCall, ...] | None = None,
        **metadata: Any,
    ) -> Message:
        return cls(
            id=id,
            role=Role.ASSISTANT,
            content=content,
            tool_calls=tool_calls or None,
            metadata=_stamp(created_at) | metadata,
        )

    @classmethod
    def tool(
        cls,
        id: str,
        tool_call_id: str,
        name: str,
        content: str,
        created_at: datetime,
        **metadata: Any,
    ) -> Message:
        return cls(
            id=id,
            role=Role.TOOL,
            content=content,
            tool_call_id=tool_call_id,
            name=name,
            metadata=_stamp(created_at) | metadata,
        )

    # --------------------------------------------------------------- conversion
    def to_dict(self) -> dict[str, Any]:
        """The plain OpenAI-shaped dict; optional fields that are unset are left out."""
        out: dict[str, Any] = {"id": self.id, "role": self.role.value, "content": self.content}
        if self.tool_calls is not None:
            out["tool_calls"] = [
                {
                    "id": call.id,
                    "type": call.type,
                    "function": {"name": call.function.name, "arguments": call.function.arguments},
                }
                for call in self.tool_calls
            ]
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        if self.name is not None:
            out["name"] = self.name
        out["metadata"] = dict(self.metadata)
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Message:
        """Build a message from its dict; the inverse of :meth:`to_dict`.

        Raises ``pydantic.ValidationError`` on a dict that is not a message.
        """
        calls = data.get("tool_calls")
        if calls is not None:
            data = dict(data)
            data["tool_calls"] = [_normalise_call(call) for call in calls]
        if data.get("content") is None and "content" in data:
            data = dict(data, content="")
        return cls.model_validate(data)

    @classmethod
    def from_json_texts(cls, texts: Sequence[str], first: int = 1) -> list[Message]:
        """Messages from the JSON texts a store keeps (one :meth:`to_dict` each), in order.

        One pydantic-core pass when every text allows it; otherwise text by text, through
        :meth:`from_dict` (older shapes) and ``json.loads`` (pydantic-core's parser refuses
        an escaped lone surrogate, a model's half emoji). ``first`` is the sequence number
        of the first text; ``ValueError`` names the first text that is not a message.
        """
        if not texts:
            return []
        try:
            return _MESSAGE_LIST.validate_json("[" + ",".join(texts) + "]")
        except ValidationError:
            pass
        messages: list[Message] = []
        for offset, text in enumerate(texts):
            try:
                messages.append(cls.from_dict(json.loads(text)))
            except (ValueError, TypeError) as exc:
                raise ValueError(f"stored message #{first + offset} is not a message") from exc
        return messages

    @property
    def created_at(self) -> str | None:
        value = self.metadata.get("created_at")
        return value if isinstance(value, str) else None


_MESSAGE_LIST: TypeAdapter[list[Message]] = TypeAdapter(list[Message])


def _stamp(created_at: datetime) -> dict[str, Any]:
    return {"created_at": created_at.isoformat()}


def _normalise_call(call: Any) -> Any:
    if not isinstance(call, dict):
        return call
    function = call.get("function")
    if isinstance(function, dict) and not isinstance(function.get("arguments", ""), str):
        arguments = json.dumps(function["arguments"], ensure_ascii=False)
        call = dict(call, function=dict(function, arguments=arguments))
    return call
