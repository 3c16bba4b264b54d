"""Request bodies, validated before anything happens (unknown fields are refused)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator

from copilot_core.ports import ApprovalPolicy
from copilot_core.rules import MAX_COMMENT_CHARS
from copilot_core.session import CopilotMode

__all__ = ["ID_PATTERN", "ChatRequest", "DecisionRequest", "LLMConfigBody", "RenameRequest"]

#: Ids in paths and bodies: letters, digits, ``_`` and ``-`` (UUIDs), at most 128.
ID_PATTERN = r"^[A-Za-z0-9_-]{1,128}$"

#: The schema's bound on ``message``; the chat service may enforce a lower one.
MAX_MESSAGE_CHARS = 32_000


class ChatRequest(BaseModel):
    """One user message. Without ``session_id`` a new session is created."""

    model_config = ConfigDict(extra="forbid")

    message: str = Field(min_length=1, max_length=MAX_MESSAGE_CHARS, description="The user's text.")
    session_id: str | None = Field(
        default=None, pattern=ID_PATTERN, description="Continue this session."
    )
    stream: bool = Field(default=True, description="SSE when true, one JSON reply when false.")
    temperature: float | None = Field(
        default=None, ge=0.0, le=2.0, description="Overrides the user's temperature this turn."
    )
    max_tokens: int | None = Field(default=None, gt=0, le=1_000_000)
    mode: Literal["text"] = Field(default="text", description="Interaction mode; only 'text'.")
    agent_id: str | None = Field(default=None, pattern=ID_PATTERN)
    copilot_mode: CopilotMode | None = Field(
        default=None, description="teaching_assistant or lab_automation_assistant."
    )

    @field_validator("message")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("message must not be blank")
        return value


class DecisionRequest(BaseModel):
    """A decision on a tool call waiting for approval."""

    model_config = ConfigDict(extra="forbid")

    decision: Literal["approve", "reject"]
    comment: str = Field(default="", max_length=MAX_COMMENT_CHARS)


class RenameRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    title: str = Field(min_length=1, max_length=255)


class LLMConfigBody(BaseModel):
    """The caller's LLM settings. ``api_key`` is write-only: it is never returned."""

    model_config = ConfigDict(extra="forbid")

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
    copilot_mode: CopilotMode | None = None
    approval: ApprovalPolicy | None = Field(
        default=None,
        description="Which tool calls wait for your approval: changes (default: every call "
        "that can change a device or the topology), always, or never.",
    )

    def to_settings(self) -> dict[str, Any]:
        """The fields the client sent, with the key revealed (in memory only)."""
        values = self.model_dump(exclude_unset=True, exclude={"api_key"}, mode="json")
        if self.api_key is not None:
            values["api_key"] = self.api_key.get_secret_value()
        return values
