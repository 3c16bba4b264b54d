"""System prompts per copilot mode, the topology block, and session titles.

A prompt is a sequence of :class:`Line` objects, each declaring the tools (and tool
arguments) it talks about; :meth:`PromptBook.system` keeps a line only when the request
offers what it needs. A small model told to "call verify_intent" by a prompt whose
request does not offer that tool writes the call as prose or invents its result (issue
40), so the prompt never names a tool the request lacks.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from copilot_core._session import CopilotMode
from copilot_core._tools import ToolSpec

__all__ = ["TITLE_INSTRUCTION", "Line", "Prompt", "PromptBook", "clean_title", "fallback_title"]


@dataclass(frozen=True, slots=True)
class Line:
    """One line of a system prompt and what it needs from the request's tools.

    ``tools``: tool names that must all be offered; ``arguments``: argument names that
    some offered tool must each take (the compact set leaves the verification
    arguments out, ``ToolSpec.compact_omits``); ``unless``: tool names none of which may
    be offered (the line says what to do without them). A line that names a tool lists
    it, so the builder, not string editing, decides what the model reads.
    """

    text: str
    tools: tuple[str, ...] = ()
    arguments: tuple[str, ...] = ()
    unless: tuple[str, ...] = ()

    def fits(self, names: frozenset[str], arguments: frozenset[str]) -> bool:
        """Whether the request's tools (``names``, their ``arguments``) give what it needs."""
        return (
            all(name in names for name in self.tools)
            and all(argument in arguments for argument in self.arguments)
            and not any(name in names for name in self.unless)
        )


#: A prompt: lines that declare their tools, or an operator's own text (kept whole).
Prompt = str | tuple[Line, ...]

_CHECKS = "(reachability, ospf_neighbor, bgp_session, route, interface, config_line)"

_COMMON: tuple[Line, ...] = (
    Line(
        "You are GNS3 Copilot, an assistant inside a GNS3 network lab. The user's latest "
        "message comes with the lab's current state between <lab> tags (its topology, and "
        "guides for the platforms of its nodes); act on the lab only through your tools."
    ),
    Line(
        "Name nodes exactly as the topology names them. Before you run commands on a "
        "device, make sure it is started."
    ),
    Line(
        "Keep answers short and concrete; show the commands you ran and what their output "
        "means. When a tool returns an error, read it: it says what exists instead."
    ),
    Line(
        'To answer "does it work?" or "did it work?", call verify_intent with checks '
        f"{_CHECKS} rather than judging raw output yourself.",
        tools=("verify_intent",),
    ),
    Line(
        'To answer "does it work?" or "did it work?", run the test with your tools (a '
        "ping, a show command) and report what it printed; never write output no tool "
        "returned.",
        unless=("verify_intent",),
    ),
)

_TEACHING: tuple[Line, ...] = (
    Line(
        "Mode: teaching assistant. You diagnose; you never change a device's configuration. "
        "You may read the topology, list templates, create, link, rename and start nodes, "
        "and run show/display commands."
    ),
    Line("You may capture packets.", tools=("packet_capture",)),
    Line("You may read device skills.", tools=("device_skills",)),
    Line(
        "When a request or fix needs configuration, say first that you do not make it in "
        "teaching mode, then show the commands to type and why."
    ),
)

_AUTOMATION: tuple[Line, ...] = (
    Line(
        "Mode: lab automation assistant. You may diagnose and also configure: run "
        "configuration commands and VPCS commands."
    ),
    Line("You may stop or suspend nodes.", tools=("stop_gns3_node", "suspend_gns3_node")),
    Line("Say what you are about to change before you change it."),
    Line(
        "State what a change must achieve as checks: pass them as verify on the changing "
        "call (e.g. verify [{kind: reachability, from: PC1, to: PC2}]); the service runs "
        "them after the change and rolls the change back when one fails, so report the "
        "verification, not your own reading.",
        arguments=("verify",),
    ),
    Line(
        "To undo a change, use restore_point: the service keeps one before each change.",
        tools=("restore_point",),
    ),
    Line(
        "After a change, close with one or two sentences: what you changed, and what you "
        "checked and what it showed, or that you did not check it. Do not ask the user "
        "whether it works."
    ),
)

TITLE_INSTRUCTION = (
    "Write a title of at most six words for the conversation below. "
    "Reply with the title only: no quotes, no punctuation at the end."
)

_TITLE_LIMIT = 40
_FALLBACK_LIMIT = 30


@dataclass(frozen=True, slots=True)
class PromptBook:
    """The system prompt of each mode, and the lab's state as the model reads it.

    :meth:`system` is the same for every turn of a mode with the same tools, so a
    provider's prompt cache keeps it (and the tools after it), and names no tool the
    request does not offer; :meth:`lab` is this turn's facts: the topology
    (an empty lab says so), and the guide of each platform in the lab (``platforms``:
    device type to guide, the platforms' skills), not of every platform. The
    agent sends the facts with the user's latest message. Adapters may load their own
    prompts (the skills directory) and hand them to the agent.
    """

    common: Prompt = _COMMON
    modes: Mapping[CopilotMode, Prompt] = field(
        default_factory=lambda: {
            CopilotMode.TEACHING_ASSISTANT: _TEACHING,
            CopilotMode.LAB_AUTOMATION_ASSISTANT: _AUTOMATION,
        }
    )
    platforms: Mapping[str, Prompt] = field(default_factory=dict)

    def system(self, mode: CopilotMode, tools: Sequence[ToolSpec] | None = None) -> str:
        """The system prompt of ``mode`` for a request offering ``tools``.

        Only the lines whose tools and arguments ``tools`` offers (``None``: every line,
        as for a client that is shown the prompt with the whole catalogue). The same for
        the same offer, so a provider's prompt cache keeps it from turn to turn.
        """
        return f"{_text(self.common, tools)}\n\n{_text(self.modes[mode], tools)}"

    def lab(
        self,
        topology: Mapping[str, Any] | None,
        problem: str | None,
        tools: Sequence[ToolSpec] | None = None,
    ) -> str:
        """The lab's state now: its topology, and the guides of its platforms (their
        lines that the offered ``tools`` fit, as in :meth:`system`)."""
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
            guide = _text(self.platforms.get(device_type, ""), tools)
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


def _text(prompt: Prompt, tools: Sequence[ToolSpec] | None) -> str:
    """A prompt's text: an operator's text whole; of lines, those the tools fit."""
    if isinstance(prompt, str):
        return prompt
    if tools is None:
        return "\n".join(line.text for line in prompt if not line.unless)
    names = frozenset(spec.name for spec in tools)
    arguments = frozenset(
        name
        for spec in tools
        if isinstance(properties := spec.parameters.get("properties"), dict)
        for name in properties
    )
    return "\n".join(line.text for line in prompt if line.fits(names, arguments))


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
