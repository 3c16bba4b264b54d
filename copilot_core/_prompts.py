"""System prompts per copilot mode, the topology block, and session titles."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from copilot_core._session import CopilotMode

__all__ = ["TITLE_INSTRUCTION", "PromptBook", "clean_title", "fallback_title"]

_COMMON = """\
You are GNS3 Copilot, an assistant inside a GNS3 network lab. You see the lab's
topology below and act on it only through your tools. Name nodes exactly as the
topology names them. Before you run commands on a device, make sure it is started.
Keep answers short and concrete; show the commands you ran and what their output
means. When a tool returns an error, read it: it says what exists instead."""

_TEACHING = """\
Mode: teaching assistant. You diagnose; you never change a device's configuration.
You may read the topology, list templates, create, link, rename and start nodes,
run show/display commands, capture packets and read device skills. When a fix needs
configuration, explain which commands the student should type and why, and let them
do it."""

_AUTOMATION = """\
Mode: lab automation assistant. You may diagnose and also configure: run
configuration commands, VPCS commands, and stop or suspend nodes. Say what you are
about to change before you change it, and verify the result afterwards."""

TITLE_INSTRUCTION = (
    "Write a title of at most six words for the conversation below. "
    "Reply with the title only: no quotes, no punctuation at the end."
)

_TITLE_LIMIT = 40
_FALLBACK_LIMIT = 30


@dataclass(frozen=True, slots=True)
class PromptBook:
    """The system prompt of each mode; ``{topology}`` marks where the lab goes.

    Adapters may load their own (the skills directory) and hand them to the agent.
    """

    common: str = _COMMON
    modes: Mapping[CopilotMode, str] = field(
        default_factory=lambda: {
            CopilotMode.TEACHING_ASSISTANT: _TEACHING,
            CopilotMode.LAB_AUTOMATION_ASSISTANT: _AUTOMATION,
        }
    )

    def render(
        self, mode: CopilotMode, topology: Mapping[str, Any] | None, problem: str | None
    ) -> str:
        if topology is not None:
            lab = json.dumps(topology, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
        else:
            lab = f"(unavailable: {problem or 'not read'})"
        return f"{self.common}\n\n{self.modes[mode]}\n\nCurrent lab topology (JSON):\n{lab}"


def clean_title(raw: str) -> str:
    """A model's title made presentable: one line, no quotes, at most 40 characters."""
    text = " ".join(raw.replace("\r", " ").replace("\n", " ").split())
    text = text.strip().strip("\"'`“”‘’*#").strip()
    if text.lower().startswith("title:"):
        text = text[len("title:") :].strip().strip("\"'`“”‘’").strip()
    if len(text) > _TITLE_LIMIT:
        cut = text[:_TITLE_LIMIT]
        text = cut.rsplit(" ", 1)[0] if " " in cut[_TITLE_LIMIT // 2 :] else cut
    return text.rstrip(" .,:;-")


def fallback_title(message: str) -> str:
    """The title used when no model title could be made: the message's first 30 chars."""
    text = " ".join(message.split())
    return text[:_FALLBACK_LIMIT] or "New chat"
