"""Device skills: short, accurate know-how per device type and topic, reloadable.

A skill is a Markdown file with a YAML front matter (``device_type``, ``topic``,
``title``, ``summary``) or a YAML file with the same keys plus ``content``. The
library reads the skills shipped in ``adapters/gns3/skills`` and then each extra
directory given (later files override earlier ones with the same device type and
topic). ``forbidden_commands.txt`` in the last directory that has one sets the
forbidden-command filter. :meth:`SkillLibrary.reload` re-reads everything; a file
that cannot be parsed is skipped and reported.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from adapters.gns3.model import DEFAULT_FORBIDDEN_COMMANDS, ForbiddenCommandFilter

__all__ = ["BUILTIN_SKILLS_DIR", "Skill", "SkillLibrary"]

BUILTIN_SKILLS_DIR = Path(__file__).resolve().parent / "skills"
FORBIDDEN_FILE = "forbidden_commands.txt"


@dataclass(frozen=True, slots=True)
class Skill:
    device_type: str
    topic: str
    title: str
    summary: str
    content: str
    source: str
    #: The platform's right forms in a line (front matter ``hint``): told to the model
    #: with a command the device refused or that was not sent.
    hint: str = ""

    def summary_dict(self) -> dict[str, str]:
        return {
            "device_type": self.device_type,
            "topic": self.topic,
            "title": self.title,
            "summary": self.summary,
        }


def _parse(path: Path) -> Skill:
    text = path.read_text(encoding="utf-8")
    meta: Any
    if path.suffix == ".md":
        if not text.startswith("---"):
            raise ValueError("no YAML front matter")
        _, front, body = text.split("---", 2)
        meta = yaml.safe_load(front)
        content = body.strip()
    else:
        meta = yaml.safe_load(text)
        content = str(meta.get("content", "")).strip() if isinstance(meta, dict) else ""
    if not isinstance(meta, dict) or not meta.get("device_type") or not meta.get("topic"):
        raise ValueError("device_type and topic are required")
    return Skill(
        device_type=str(meta["device_type"]).strip().lower(),
        topic=str(meta["topic"]).strip().lower(),
        title=str(meta.get("title") or meta["topic"]),
        summary=str(meta.get("summary") or ""),
        content=content,
        source=path.name,
        hint=" ".join(str(meta.get("hint") or "").split()),
    )


class SkillLibrary:
    """The loaded skills and the forbidden-command filter; :meth:`reload` refreshes both."""

    def __init__(self, extra_dirs: Sequence[Path] = ()) -> None:
        self.directories = [BUILTIN_SKILLS_DIR, *extra_dirs]
        self._skills: dict[tuple[str, str], Skill] = {}
        self._forbidden = ForbiddenCommandFilter(DEFAULT_FORBIDDEN_COMMANDS)
        self.problems: list[str] = []
        self.reload()

    @property
    def forbidden(self) -> ForbiddenCommandFilter:
        return self._forbidden

    def reload(self) -> dict[str, Any]:
        """Re-read every directory; returns what was loaded and what was skipped."""
        skills: dict[tuple[str, str], Skill] = {}
        forbidden = ForbiddenCommandFilter(DEFAULT_FORBIDDEN_COMMANDS)
        problems: list[str] = []
        for directory in self.directories:
            if not directory.is_dir():
                problems.append(f"{directory}: not a directory")
                continue
            for path in sorted(directory.iterdir()):
                if path.suffix not in (".md", ".yaml", ".yml") or path.name.startswith("."):
                    continue
                try:
                    skill = _parse(path)
                except (OSError, ValueError, yaml.YAMLError) as exc:
                    problems.append(f"{path.name}: {exc}")
                    continue
                skills[(skill.device_type, skill.topic)] = skill
            forbidden_file = directory / FORBIDDEN_FILE
            if forbidden_file.is_file():
                forbidden = ForbiddenCommandFilter.from_lines(
                    forbidden_file.read_text(encoding="utf-8").splitlines()
                )
        self._skills, self._forbidden, self.problems = skills, forbidden, problems
        return {
            "skills": len(skills),
            "forbidden_commands": len(forbidden.prefixes),
            "problems": list(problems),
        }

    def device_types(self) -> list[str]:
        return sorted({device_type for device_type, _ in self._skills})

    def list(self, device_type: str | None = None) -> list[Skill]:
        wanted = device_type.strip().lower() if device_type else None
        return [
            skill
            for key, skill in sorted(self._skills.items())
            if wanted is None or key[0] == wanted
        ]

    def hint(self, device_type: str) -> str:
        """The platform's right forms in a line, from its skills (``basics`` first)."""
        skills = sorted(self.list(device_type), key=lambda skill: skill.topic != "basics")
        return next((skill.hint for skill in skills if skill.hint), "")

    def get(self, device_type: str, topic: str) -> Skill | None:
        return self._skills.get((device_type.strip().lower(), topic.strip().lower()))
