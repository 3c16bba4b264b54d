"""The chat's settings: :class:`RunnerSettings` (how a turn runs) and
:class:`ChatSettings` (the chat as a whole: its requests, pages, history windows and
the turns it runs).

Each field is declared here once, with its default, its bounds and what it means: the
service's ``chat`` section *is* a :class:`ChatSettings` (``COPILOT_CHAT__<FIELD>``), so a
library user and the service start from the same values and the same checks. A
``ChatSettings`` is a ``RunnerSettings``: the one value is handed whole to the
:class:`~copilot_core.ChatService` and to its :class:`~copilot_core.TurnRunner`.
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import ConfigDict, Field
from pydantic.dataclasses import dataclass

from copilot_core._session import CopilotMode
from copilot_core.rules import MAX_MESSAGE_CHARS

__all__ = ["ChatSettings", "RunnerSettings"]

#: Settings refuse unknown fields: a typo is an error, not a silent default.
_CONFIG = ConfigDict(extra="forbid")


@dataclass(frozen=True, slots=True, config=_CONFIG)
class RunnerSettings:
    """How the :class:`~copilot_core.TurnRunner` runs a turn."""

    #: The copilot mode of a new session whose request names none.
    default_mode: ClassVar[CopilotMode] = CopilotMode.TEACHING_ASSISTANT

    approval_timeout: float = Field(
        default=600.0,
        gt=0,
        description="Seconds a tool call waits for the user's approval before it counts "
        "as rejected.",
    )
    draft_interval: float = Field(
        default=2.0, gt=0, description="Seconds between saves of an answer being streamed."
    )
    draft_chars: int = Field(
        default=2048,
        ge=1,
        description="…or characters streamed since the last save, whichever comes first.",
    )
    save_timeout: float = Field(
        default=30.0, gt=0, description="Seconds a turn's final save may take."
    )


@dataclass(frozen=True, slots=True, config=_CONFIG)
class ChatSettings(RunnerSettings):
    """The chat as a whole; :func:`copilot_core.bootstrap.build_chat_service` hands each
    part to the object that uses it (the runner takes this value whole)."""

    max_message_chars: int = Field(
        default=MAX_MESSAGE_CHARS,
        ge=1,
        le=MAX_MESSAGE_CHARS,
        description="Longest accepted user message (the core's ceiling is the maximum).",
    )
    max_page: int = Field(
        default=1000, ge=1, description="Most sessions or messages one page holds."
    )
    finished_turn_retention: float = Field(
        default=60.0, ge=0, description="Seconds a finished turn can still be re-attached."
    )
    history_chars_per_token: int | None = Field(
        default=16,
        ge=1,
        description="A turn reads the newest history that fits this many characters per "
        "token of the model's context; null reads it all.",
    )
    history_page: int = Field(default=256, ge=1, description="Messages read per page of history.")
    history_cache_sessions: int = Field(
        default=32, ge=0, description="Sessions whose history window stays in memory (0: none)."
    )
