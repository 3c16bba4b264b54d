"""``POST /v3/copilot/reload/skills``: re-read device skills, the forbidden-command
list and the system prompts without restarting the service."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from adapters.gns3 import SkillLibrary
from copilot_core import BuiltinAgent, CopilotMode, PromptBook
from copilot_core.ports import Line

__all__ = ["PROMPTS_DIR", "SKILLS_TOOL", "SkillsReloader", "load_prompts", "platform_guides"]

#: Inside the skills directory: ``common.md`` and ``<copilot_mode>.md`` replace the
#: built-in system prompts (the lab topology is appended to them).
PROMPTS_DIR = "prompts"

#: The GNS3 tool that reads a skill: a guide's pointer to more topics needs it offered.
SKILLS_TOOL = "device_skills"


def load_prompts(skills_dir: Path | None) -> tuple[PromptBook, list[str]]:
    """The prompt book with any overrides found under ``skills_dir/prompts``."""
    book = PromptBook()
    loaded: list[str] = []
    if skills_dir is None:
        return book, loaded
    directory = Path(skills_dir) / PROMPTS_DIR
    common = book.common
    modes = dict(book.modes)
    if (directory / "common.md").is_file():
        common = (directory / "common.md").read_text(encoding="utf-8").strip()
        loaded.append("common")
    for mode in CopilotMode:
        path = directory / f"{mode.value}.md"
        if path.is_file():
            modes[mode] = path.read_text(encoding="utf-8").strip()
            loaded.append(mode.value)
    return PromptBook(common=common, modes=modes), loaded


def platform_guides(skills: SkillLibrary) -> dict[str, tuple[Line, ...]]:
    """Each platform's guide for the prompt: its ``basics`` skill, and the names of its
    other topics (the model reads those with the skills tool when it needs them: a line
    the prompt keeps only when the request offers that tool)."""
    guides: dict[str, tuple[Line, ...]] = {}
    for device_type in skills.device_types():
        topics = skills.list(device_type)
        basics = next((skill for skill in topics if skill.topic == "basics"), None)
        if basics is None:
            continue
        others = sorted(skill.topic for skill in topics if skill.topic != "basics")
        more = f"(More in the skills tool: {', '.join(others)}.)"
        guides[device_type] = (Line(basics.content),) + (
            (Line(more, tools=(SKILLS_TOOL,)),) if others else ()
        )
    return guides


class SkillsReloader:
    """Reloads the skill library and the agent's prompts; returns what it loaded."""

    def __init__(self, skills: SkillLibrary, agent: BuiltinAgent, skills_dir: Path | None) -> None:
        self._skills = skills
        self._agent = agent
        self._skills_dir = Path(skills_dir) if skills_dir else None
        prompts, _ = load_prompts(self._skills_dir)
        agent.prompts = replace(prompts, platforms=platform_guides(skills))

    async def __call__(self) -> Mapping[str, Any]:
        summary = await asyncio.to_thread(self._skills.reload)
        prompts, loaded = await asyncio.to_thread(load_prompts, self._skills_dir)
        self._agent.prompts = replace(prompts, platforms=platform_guides(self._skills))
        return {**summary, "prompts": loaded or ["built-in"]}
