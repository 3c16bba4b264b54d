"""A session: one conversation's metadata and counters (spec 000's ``chat_sessions`` row)."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from copilot_core._session_key import SessionKey

__all__ = ["CopilotMode", "Session"]


class CopilotMode(StrEnum):
    """What the agent may do: diagnose only, or also change the lab's configuration."""

    TEACHING_ASSISTANT = "teaching_assistant"
    LAB_AUTOMATION_ASSISTANT = "lab_automation_assistant"


class Session(BaseModel):
    """One conversation of one user in one GNS3 project.

    ``thread_id`` is the session id clients use. ``id`` is the store's row number
    (``None`` until stored). Counters only ever grow, by whole turns.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    thread_id: str
    user_id: str
    project_id: str
    title: str = ""
    copilot_mode: CopilotMode = CopilotMode.TEACHING_ASSISTANT
    pinned: bool = False
    message_count: int = 0
    #: The questions asked: the user messages of the history (stores count them).
    question_count: int = 0
    llm_calls_count: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    last_message_at: datetime | None = None
    created_at: datetime
    updated_at: datetime
    metadata: dict[str, Any] = Field(default_factory=dict)
    stats: dict[str, Any] = Field(default_factory=dict)
    id: int | None = None

    @property
    def key(self) -> SessionKey:
        """How the chat service names this session."""
        return SessionKey(self.project_id, self.thread_id, self.user_id)

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape clients see (spec 000's session object)."""
        return self.model_dump(mode="json")
