"""Structured show output: TextFSM rows from the ntc-templates collection (and, for FRR,
which it has no templates for, our own parsers in :mod:`adapters.gns3.model._frr_parsing`).

:class:`ShowParser` turns a show command's output into rows (``[{column: value}]``, column
names in lower case) when ntc-templates has a template for the platform and command
(abbreviations included: ``sh ip int br``), else ``None``. The template index (~1,000
entries) is read once, on first use or by :meth:`ShowParser.warm` (~0.15 s), off the event
loop; each parse then takes about a millisecond.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import ntc_templates
from textfsm import clitable
from textfsm.parser import TextFSMError

from adapters.gns3.model._frr_parsing import parse_frr

__all__ = ["ShowParser"]

_TEMPLATES = Path(ntc_templates.__file__).resolve().parent / "templates"


class ShowParser:
    """TextFSM rows for the show commands ntc-templates knows."""

    def __init__(self, template_dir: Path = _TEMPLATES) -> None:
        self.template_dir = template_dir
        self._table: clitable.CliTable | None = None
        self._lock = threading.Lock()

    @property
    def is_warm(self) -> bool:
        """Whether the template index has been read."""
        return self._table is not None

    def warm(self) -> None:
        """Read the template index now (blocking; a thread may call it)."""
        with self._lock:
            if self._table is None:
                self._table = clitable.CliTable("index", str(self.template_dir))

    async def ready(self) -> None:
        """Read the template index in a thread unless it is already read."""
        if self._table is None:
            await asyncio.to_thread(self.warm)

    def parse(self, platform: str, command: str, output: str) -> list[dict[str, Any]] | None:
        """The rows of ``output``, or ``None`` when no template knows the command (FRR's
        commands are parsed by our own parsers: ntc-templates has none for FRR)."""
        if platform == "frr":
            return parse_frr(command, output)
        self.warm()
        table = self._table
        assert table is not None
        try:
            table.ParseCmd(output, {"Command": command.strip(), "Platform": platform})
        except (clitable.CliTableError, TextFSMError, IndexError, KeyError, ValueError):
            return None
        header = [str(name).lower() for name in table.header]
        return [dict(zip(header, row, strict=False)) for row in table]
