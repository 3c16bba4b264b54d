"""Request bodies, validated before anything happens.

Every body model is a :class:`StrictBody`: unknown fields are refused and values must
have their JSON type (a string is never taken for a bool or a number, a float never
for an integer). The app validates bodies in pydantic's strict mode, which for enum
fields would want an enum instance: :data:`Mode` takes the JSON string instead.
"""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, SecretStr, field_validator

from adapters.web._ids import SessionIdField
from copilot_core.session import CopilotMode

__all__ = [
    "ID_PATTERN",
    "MAX_INT64",
    "ChatRequest",
    "LLMConfigBody",
    "Mode",
    "RenameRequest",
    "StrictBody",
]

E = TypeVar("E", bound=Enum)


def _from_value(kind: type[E]) -> BeforeValidator:
    """An enum field of a strict model that takes the member's JSON value."""
    names = ", ".join(str(member.value) for member in kind)

    def parse(value: object) -> object:
        if isinstance(value, kind):
            return value
        if isinstance(value, str):
            try:
                return kind(value)
            except ValueError:
                pass
        raise ValueError(f"must be one of: {names}")

    return BeforeValidator(parse)


#: A copilot mode, sent as its name (``teaching_assistant``, ``lab_automation_assistant``).
Mode = Annotated[CopilotMode, _from_value(CopilotMode)]


class StrictBody(BaseModel):
    """A request body: unknown fields refused, values of their exact JSON type."""

    model_config = ConfigDict(extra="forbid", strict=True)


#: Agent ids (``copilot``, configured names): letters, digits, ``_`` and ``-``, at most 128.
ID_PATTERN = r"^[A-Za-z0-9_-]{1,128}$"

#: The largest integer a query parameter takes (offsets and cursors are stored as
#: 64-bit signed integers).
MAX_INT64 = 2**63 - 1

#: The schema's bound on ``message``; the chat service may enforce a lower one.
MAX_MESSAGE_CHARS = 32_000


class ChatRequest(StrictBody):
    """One user message. Without ``session_id`` a new session is created."""

    message: str = Field(min_length=1, max_length=MAX_MESSAGE_CHARS, description="The user's text.")
    session_id: SessionIdField | None = Field(
        default=None, description="Continue this session (its UUID)."
    )
    stream: bool = Field(default=True, description="SSE when true, one JSON reply when false.")
    temperature: float | None = Field(
        default=None, ge=0.0, le=2.0, description="Overrides the user's temperature this turn."
    )
    max_tokens: int | None = Field(default=None, gt=0, le=1_000_000)
    mode: Literal["text"] = Field(default="text", description="Interaction mode; only 'text'.")
    agent_id: str | None = Field(default=None, pattern=ID_PATTERN)
    copilot_mode: Mode | None = Field(
        default=None, description="teaching_assistant or lab_automation_assistant."
    )

    @field_validator("message")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("message must not be blank")
        return value


class RenameRequest(StrictBody):
    title: str = Field(min_length=1, max_length=255)


class LLMConfigBody(StrictBody):
    """The caller's LLM settings. ``api_key`` is write-only: it is never returned."""

    provider: str = Field(
        min_length=1, max_length=64, description="openai, deepseek, ollama, vllm, lmstudio…"
    )
    model: str = Field(min_length=1, max_length=255)
    base_url: str | None = Field(default=None, max_length=2048, pattern=r"^https?://\S+$")
    api_key: SecretStr | None = Field(default=None, description="Stored encrypted; write-only.")
    temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    max_tokens: int | None = Field(default=None, gt=0, le=1_000_000)
    context_limit: int | None = Field(default=None, ge=1024, le=10_000_000)
    title_model: str | None = Field(default=None, min_length=1, max_length=255)
    copilot_mode: Mode | None = None

    def to_settings(self) -> dict[str, Any]:
        """The fields the client sent, with the key revealed (in memory only)."""
        values = self.model_dump(exclude_unset=True, exclude={"api_key"}, mode="json")
        if self.api_key is not None:
            values["api_key"] = self.api_key.get_secret_value()
        return values
