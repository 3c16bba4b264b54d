"""Telnet for the console runner: one connection seen as text pieces and keys, and the
cleaning that turns console text into what a person reads.

The telnet protocol (option negotiation, ``IAC`` escaping) is telnetlib3's.
"""

from __future__ import annotations

import asyncio
import codecs
import re
from typing import Any

import telnetlib3

__all__ = ["ConsoleClosedError", "Telnet", "clean_text"]

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07|\x1b[()][A-Za-z0-9]|\x1b[=>78]")
_LINE_END = re.compile(r"\r*\n")


class ConsoleClosedError(Exception):
    """The console connection closed."""


def _render(line: str) -> str:
    """One line as a terminal shows it: ``\\r`` returns to column 0, ``\\b`` moves back."""
    if "\r" not in line and "\x08" not in line:
        return line
    cells: list[str] = []
    column = 0
    for char in line:
        if char == "\r":
            column = 0
        elif char == "\x08":
            column = max(0, column - 1)
        else:
            if column < len(cells):
                cells[column] = char
            else:
                cells.append(char)
            column += 1
    return "".join(cells).rstrip()


def clean_text(text: str) -> str:
    """Console text as a person reads it: ANSI escapes gone, ``\\r``/backspace overwrites
    applied, line endings (``\\r\\n``, ``\\r\\r\\n``…) made ``\\n``."""
    text = _ANSI.sub("", text).replace("\x00", "")
    return "\n".join(_render(line) for line in _LINE_END.split(text))


class Telnet:
    """One telnet connection (telnetlib3) seen as text pieces and keys."""

    def __init__(self, reader: Any, writer: Any) -> None:
        self._reader = reader
        self._writer = writer
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    @classmethod
    async def open(cls, host: str, port: int, within: float) -> Telnet:
        async with asyncio.timeout(within):
            reader, writer = await telnetlib3.open_connection(
                host,
                port,
                client_factory=telnetlib3.TelnetClient,
                encoding=False,
                connect_minwait=0.0,
                connect_maxwait=0.5,
                cols=250,
                rows=200,
            )
        return cls(reader, writer)

    async def read(self, within: float) -> str:
        """The next piece of text; ``TimeoutError`` after ``within`` s; EOF raises."""
        try:
            async with asyncio.timeout(max(within, 0.0)):
                while True:
                    data = await self._reader.read(65536)
                    if data:
                        return str(self._decoder.decode(data))
                    if self._reader.at_eof():
                        raise ConsoleClosedError
                    # woken by telnet negotiation alone: no text yet
        except TimeoutError:
            raise
        except (ConnectionError, OSError) as exc:
            raise ConsoleClosedError from exc

    async def send(self, text: str) -> None:
        if self._writer.is_closing():
            raise ConsoleClosedError
        try:
            self._writer.write(text.encode("utf-8"))
            await self._writer.drain()
        except (ConnectionError, OSError) as exc:
            raise ConsoleClosedError from exc

    def abort(self) -> None:
        transport = self._writer.transport
        if transport is not None:
            transport.abort()

    async def close(self) -> None:
        self._writer.close()
