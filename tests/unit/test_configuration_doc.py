"""docs/configuration.md's tables and the settings models name the same settings: a
setting added without its row, or a row left after its setting went, fails here."""

from __future__ import annotations

import re
from pathlib import Path

from entrypoints.settings import SECTIONS, Settings, section_fields

DOC = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"


def declared() -> set[str]:
    """Every setting, as ``name`` (top-level) or ``section.field``."""
    names: set[str] = set()
    for name in Settings.model_fields:
        if name in SECTIONS:
            names |= {f"{name}.{field}" for field in section_fields(SECTIONS[name])}
        else:
            names.add(name)
    return names


def documented() -> set[str]:
    """The settings the tables name: the first column of ``### Top-level`` and of each
    ``### `section`: …`` table (a row may name several: ``a`` / ``b``)."""
    text = DOC.read_text(encoding="utf-8")
    names: set[str] = set()
    for block in text.split("\n### ")[1:]:
        title, _, body = block.partition("\n")
        section = re.match(r"`(\w+)`:", title)
        if section is None and not title.startswith("Top-level"):
            continue
        for line in body.split("\n## ", 1)[0].splitlines():
            if not line.startswith("| ") or line.startswith(("| setting", "| field", "|---")):
                continue
            first = line.split(" | ", 1)[0].removeprefix("| ")
            for name in re.findall(r"`?(\w+)`?", first):
                names.add(f"{section.group(1)}.{name}" if section else name)
    return names


def test_every_setting_has_its_row_and_every_row_its_setting() -> None:
    assert documented() - declared() == set(), "rows without a setting"
    assert declared() - documented() == set(), "settings without a row"
