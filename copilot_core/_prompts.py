"""System prompts per copilot mode, the topology block, and session titles."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from copilot_core._session import CopilotMode

__all__ = ["TITLE_INSTRUCTION", "PromptBook", "clean_title", "fallback_title"]

_COMMON = """\
You are GNS3 Copilot, an assistant inside a GNS3 network lab. The user's latest
message comes with the lab's current state between <lab> tags (its topology, and
guides for the platforms of its nodes); act on the lab only through your tools.
Name nodes exactly as the topology names them. Before you run commands on a
device, make sure it is started.
Keep answers short and concrete; show the commands you ran and what their output
means. When a tool returns an error, read it: it says what exists instead.
To answer "does it work?" or "did it work?", call verify_intent with checks
(reachability, ospf_neighbor, bgp_session, route, interface, config_line) rather
than judging raw output yourself."""

_TEACHING = """\
Mode: teaching assistant. You diagnose; you never change a device's configuration.
You may read the topology, list templates, create, link, rename and start nodes,
run show/display commands, capture packets and read device skills. When a fix needs
configuration, explain which commands the student should type and why, and let them
do it."""

_AUTOMATION = """\
Mode: lab automation assistant. You may diagnose and also configure: run
configuration commands, VPCS commands, and stop or suspend nodes. Say what you are
about to change before you change it, and state what it must achieve as checks:
pass them as verify on the changing call (e.g. verify [{kind: reachability, from:
PC1, to: PC2}]); the service runs them after the change and rolls the change back
when one fails, so report the verification, not your own reading."""

TITLE_INSTRUCTION = (
    "Write a title of at most six words for the conversation below. "
    "Reply with the title only: no quotes, no punctuation at the end."
)

_TITLE_LIMIT = 40
_FALLBACK_LIMIT = 30


@dataclass(frozen=True, slots=True)
class PromptBook:
    """The system prompt of each mode, and the lab's state as the model reads it.

    :meth:`system` is the same for every turn of a mode, so a provider's prompt cache
    keeps it (and the tools after it); :meth:`lab` is this turn's facts: the topology
    (an empty lab says so), and the guide of each platform in the lab (``platforms``:
    device type to guide text, the platforms' skills), not of every platform. The
    agent sends the facts with the user's latest message. Adapters may load their own
    prompts (the skills directory) and hand them to the agent.
    """

    common: str = _COMMON
    modes: Mapping[CopilotMode, str] = field(
        default_factory=lambda: {
            CopilotMode.TEACHING_ASSISTANT: _TEACHING,
            CopilotMode.LAB_AUTOMATION_ASSISTANT: _AUTOMATION,
        }
    )
    platforms: Mapping[str, str] = field(default_factory=dict)

    def system(self, mode: CopilotMode) -> str:
        """The system prompt of ``mode``: stable from turn to turn."""
        return f"{self.common}\n\n{self.modes[mode]}"

    def lab(self, topology: Mapping[str, Any] | None, problem: str | None) -> str:
        """The lab's state now: its topology, and the guides of its platforms."""
        if topology is None:
            return f"Current lab topology: unavailable ({problem or 'not read'})."
        nodes = topology.get("nodes")
        nodes = nodes if isinstance(nodes, list) else []
        text = json.dumps(topology, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
        parts = []
        if not nodes and not topology.get("links"):
            parts.append(
                "The lab is empty: it has no nodes and no links. (Platform names in tool "
                "descriptions or skills are what can be added, not what is there.)"
            )
        parts.append(f"Current lab topology (JSON):\n{text}")
        present: dict[str, list[str]] = {}
        for node in nodes:
            if isinstance(node, Mapping) and isinstance(node.get("device_type"), str):
                present.setdefault(node["device_type"], []).append(str(node.get("name")))
        for device_type, names in sorted(present.items()):
            guide = self.platforms.get(device_type)
            if guide:
                parts.append(
                    f"Guide for the {device_type} nodes ({', '.join(names)}); use their own "
                    f"commands, not another platform's:\n{guide}"
                )
        return "\n\n".join(parts)

    def render(
        self, mode: CopilotMode, topology: Mapping[str, Any] | None, problem: str | None
    ) -> str:
        """The system prompt and the lab's state as one text (for clients that take one,
        such as MCP's prompts)."""
        return f"{self.system(mode)}\n\n{self.lab(topology, problem)}"

    @staticmethod
    def with_lab(query: str, lab: str) -> str:
        """The user's latest message as the model reads it: the lab's state first."""
        return f"<lab>\n{lab}\n</lab>\n\n{query}"


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
