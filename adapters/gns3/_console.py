"""The console runner: commands over GNS3's telnet consoles, one stream per console.

Telnet is spoken directly on asyncio streams: negotiation (``IAC`` sequences) is
parsed out of the data and answered (we accept the server's ECHO, SGA and BINARY
and refuse everything else), so no deprecated ``telnetlib`` is involved.

A run on one console:

1. connect to ``host:port`` (bounded by ``connect_timeout``);
2. send a newline, read to the device's prompt, then drain briefly and discard
   (a GNS3 console is shared: a buffered banner or another client's output may
   still be arriving);
3. for each command: send it, read to the next prompt (``--More--`` is answered
   with a space), strip the echo, the prompt, ANSI escapes and backspace erasures;
   stop at ``command_timeout`` with a timeout outcome, then interrupt the command
   (Ctrl-C, and Ctrl-^ on Cisco) so the console stays usable;
4. close the connection. Cancellation closes it at once (``transport.abort``).

Output beyond ``max_output_chars`` per command is dropped and flagged ``truncated``.
"""

from __future__ import annotations

import asyncio
import codecs
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from adapters.gns3._command_policy import DeviceKind

__all__ = ["CommandOutcome", "ConsoleRunner", "ConsoleTarget", "ConsoleTranscript"]

# Telnet bytes.
IAC, DONT, DO, WONT, WILL, SB, SE = 255, 254, 253, 252, 251, 250, 240
ECHO, BINARY, SGA = 1, 0, 3
_ACCEPTED_WILL = {ECHO, SGA, BINARY}
_ACCEPTED_DO = {SGA, BINARY}

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07|\x1b[()][A-Za-z0-9]|\x1b[=>78]")
_ERASE = re.compile(r"\x08+ *\x08+|\x08+")
_MORE = re.compile(r" ?-+ ?\(?[Mm]ore\b[^\r\n]*\Z")
_PROMPTS: dict[DeviceKind, re.Pattern[str]] = {
    DeviceKind.VPCS: re.compile(r"(?:\A|[\r\n])(?P<prompt>[^\r\n]{0,64}> ?)\Z"),
    DeviceKind.CISCO_IOS: re.compile(
        r"(?:\A|[\r\n])(?P<prompt>[A-Za-z0-9][\w.\-/:]*(?:\([\w.\-/: ]+\))?[>#] ?)\Z"
    ),
    DeviceKind.LINUX: re.compile(r"(?:\A|[\r\n])(?P<prompt>[^\r\n]{0,128}[$#>%] ?)\Z"),
    DeviceKind.GENERIC: re.compile(r"(?:\A|[\r\n])(?P<prompt>[^\r\n]{0,128}[$#>%:] ?)\Z"),
}
_DEVICE_ERRORS = re.compile(
    r"^% ?(?:Invalid input|Incomplete command|Ambiguous command|Unknown command|"
    r"Unrecognized command)|^Bad command|command not found$",
    re.MULTILINE,
)


def clean_text(text: str) -> str:
    """ANSI escapes and backspace erasures removed; line endings made ``\\n``."""
    text = _ANSI.sub("", text)
    text = _ERASE.sub("", text)
    text = text.replace("\x00", "").replace("\r\n", "\n")
    return "\n".join(line.split("\r")[-1] for line in text.split("\n"))


@dataclass(frozen=True, slots=True)
class ConsoleTarget:
    """Where a device's console is and how it behaves."""

    name: str
    host: str
    port: int
    kind: DeviceKind


@dataclass(slots=True)
class CommandOutcome:
    command: str
    output: str = ""
    truncated: bool = False
    timed_out: bool = False
    error: str | None = None

    @property
    def ok(self) -> bool:
        return not self.timed_out and self.error is None

    def to_dict(self) -> dict[str, Any]:
        result: dict[str, Any] = {"command": self.command, "output": self.output}
        if self.truncated:
            result["truncated"] = True
        if self.timed_out:
            result["timed_out"] = True
        if self.error is not None:
            result["error"] = self.error
        return result


@dataclass(slots=True)
class ConsoleTranscript:
    """What happened on one console: the outcome of each command that was attempted."""

    target: ConsoleTarget
    outcomes: list[CommandOutcome] = field(default_factory=list)
    error: str | None = None


class _ConsoleClosedError(Exception):
    pass


class _TelnetConnection:
    """A telnet byte stream turned into text, with negotiation handled."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._state = 0  # 0 data, 1 after IAC, 2 after IAC+verb, 3 in SB, 4 IAC in SB
        self._verb = 0
        self._answered: set[tuple[int, int]] = set()

    def abort(self) -> None:
        self._writer.transport.abort()

    async def close(self) -> None:
        self._writer.close()
        try:
            async with asyncio.timeout(1.0):
                await self._writer.wait_closed()
        except (TimeoutError, OSError):
            self._writer.transport.abort()

    async def send(self, text: str) -> None:
        data = text.encode("utf-8").replace(b"\xff", b"\xff\xff")
        try:
            self._writer.write(data)
            await self._writer.drain()
        except (ConnectionError, OSError) as exc:
            raise _ConsoleClosedError from exc

    def _answer(self, verb: int, option: int) -> None:
        if (verb, option) in self._answered:
            return
        self._answered.add((verb, option))
        if verb == WILL:
            reply = DO if option in _ACCEPTED_WILL else DONT
        elif verb == DO:
            reply = WILL if option in _ACCEPTED_DO else WONT
        else:
            return  # WONT/DONT need no answer from us
        self._writer.write(bytes([IAC, reply, option]))

    def _strip_telnet(self, data: bytes) -> bytes:
        out = bytearray()
        for byte in data:
            if self._state == 0:
                if byte == IAC:
                    self._state = 1
                else:
                    out.append(byte)
            elif self._state == 1:
                if byte == IAC:
                    out.append(IAC)
                    self._state = 0
                elif byte in (WILL, WONT, DO, DONT):
                    self._verb = byte
                    self._state = 2
                elif byte == SB:
                    self._state = 3
                else:
                    self._state = 0
            elif self._state == 2:
                self._answer(self._verb, byte)
                self._state = 0
            elif self._state == 3:
                if byte == IAC:
                    self._state = 4
            elif self._state == 4:
                self._state = 0 if byte == SE else 3
        return bytes(out)

    async def read(self) -> str:
        """The next piece of text (may be empty after pure negotiation); EOF raises."""
        try:
            data = await self._reader.read(65536)
        except (ConnectionError, OSError) as exc:
            raise _ConsoleClosedError from exc
        if not data:
            raise _ConsoleClosedError
        return self._decoder.decode(self._strip_telnet(data))


class ConsoleRunner:
    """Runs command lists on device consoles; one run per console at a time."""

    def __init__(
        self,
        *,
        command_timeout: float = 30.0,
        connect_timeout: float = 10.0,
        max_output_chars: int = 20_000,
        drain_quiet: float = 0.15,
        recovery_timeout: float = 5.0,
    ) -> None:
        self.command_timeout = command_timeout
        self.connect_timeout = connect_timeout
        self.max_output_chars = max_output_chars
        self.drain_quiet = drain_quiet
        self.recovery_timeout = recovery_timeout
        self._locks: dict[tuple[str, int], asyncio.Lock] = {}

    def _lock(self, target: ConsoleTarget) -> asyncio.Lock:
        return self._locks.setdefault((target.host, target.port), asyncio.Lock())

    async def probe(self, host: str, port: int, within: float = 2.0) -> bool:
        """Whether the console accepts a TCP connection now."""
        try:
            async with asyncio.timeout(within):
                _, writer = await asyncio.open_connection(host, port)
        except (TimeoutError, OSError):
            return False
        writer.transport.abort()
        return True

    async def run(
        self,
        target: ConsoleTarget,
        commands: Sequence[str],
        *,
        config_mode: bool = False,
    ) -> ConsoleTranscript:
        """Run ``commands`` in order on ``target``; in Cisco configuration mode if asked."""
        transcript = ConsoleTranscript(target)
        async with self._lock(target):
            try:
                async with asyncio.timeout(self.connect_timeout):
                    reader, writer = await asyncio.open_connection(target.host, target.port)
            except (TimeoutError, OSError) as exc:
                transcript.error = (
                    f"cannot connect to the console of {target.name} at "
                    f"{target.host}:{target.port} ({type(exc).__name__}: {exc})"
                )
                return transcript
            connection = _TelnetConnection(reader, writer)
            try:
                await self._session(connection, target, commands, config_mode, transcript)
            except BaseException:
                connection.abort()  # cancelled (turn aborted) or broken: close at once
                raise
            else:
                await connection.close()
        return transcript

    # ------------------------------------------------------------------ internals
    async def _session(
        self,
        connection: _TelnetConnection,
        target: ConsoleTarget,
        commands: Sequence[str],
        config_mode: bool,
        transcript: ConsoleTranscript,
    ) -> None:
        prompt_re = _PROMPTS[target.kind]
        try:
            await connection.send("\r\n")
            _, prompt, _ = await self._read_to_prompt(
                connection, prompt_re, min(self.command_timeout, 15.0)
            )
            prompt = await self._drain(connection, prompt_re) or prompt
        except TimeoutError:
            transcript.error = (
                f"the console of {target.name} shows no {target.kind.value} prompt; "
                "the device may still be booting or waiting for input"
            )
            return
        except _ConsoleClosedError:
            transcript.error = f"the console of {target.name} closed the connection"
            return

        cisco = target.kind is DeviceKind.CISCO_IOS
        if config_mode and cisco:
            setup = []
            if prompt.rstrip().endswith(">"):
                setup.append("enable")
            if "(config" not in prompt:
                setup.append("configure terminal")
            for command in setup:
                outcome = await self._one(connection, prompt_re, command, target)
                if not outcome.ok or "assword" in outcome.output:
                    transcript.error = (
                        f"could not enter configuration mode on {target.name} "
                        f"({command!r}: {outcome.error or outcome.output.strip() or 'timeout'})"
                    )
                    return
        stopped: str | None = None
        for command in commands:
            if stopped is not None:
                transcript.outcomes.append(CommandOutcome(command, error=stopped))
                continue
            outcome = await self._one(connection, prompt_re, command, target)
            transcript.outcomes.append(outcome)
            if outcome.error == "closed":
                outcome.error = "the device closed the console connection"
                stopped = "not run: the console connection was closed"
            elif outcome.timed_out and not await self._recover(connection, prompt_re, cisco):
                stopped = "not run: the console did not recover from the previous command"
        if config_mode and cisco and stopped is None:
            await self._one(connection, prompt_re, "end", target)

    async def _one(
        self,
        connection: _TelnetConnection,
        prompt_re: re.Pattern[str],
        command: str,
        target: ConsoleTarget,
    ) -> CommandOutcome:
        outcome = CommandOutcome(command)
        try:
            await connection.send(command + "\r\n")
            text, _, truncated = await self._read_to_prompt(
                connection, prompt_re, self.command_timeout
            )
        except TimeoutError:
            outcome.timed_out = True
            outcome.error = (
                f"no prompt within {self.command_timeout:g} s; the command was interrupted"
            )
            return outcome
        except _ConsoleClosedError:
            outcome.error = "closed"
            return outcome
        outcome.output = self._strip_echo(text, command)
        outcome.truncated = truncated
        if len(outcome.output) > self.max_output_chars:
            outcome.output = outcome.output[: self.max_output_chars]
            outcome.truncated = True
        if _DEVICE_ERRORS.search(outcome.output):
            outcome.error = "the device rejected the command"
        return outcome

    @staticmethod
    def _strip_echo(text: str, command: str) -> str:
        lines = clean_text(text).split("\n")
        if lines and lines[-1].strip() == "":
            lines.pop()
        # The echo is the first non-empty line ending with the command.
        for index, line in enumerate(lines[:3]):
            if line.strip() and line.rstrip().endswith(command.strip()):
                lines = lines[index + 1 :]
                break
        return "\n".join(lines).strip("\n")

    async def _read_to_prompt(
        self, connection: _TelnetConnection, prompt_re: re.Pattern[str], limit: float
    ) -> tuple[str, str, bool]:
        """Text up to (without) the prompt, the prompt, and whether text was dropped."""
        raw = ""
        head = ""
        truncated = False
        cap = self.max_output_chars
        async with asyncio.timeout(limit):
            while True:
                if _MORE.search(raw[-200:]):
                    raw = raw[:-200] + _MORE.sub("", raw[-200:])
                    await connection.send(" ")
                else:
                    match = prompt_re.search(raw[-400:])
                    if match is not None:
                        prompt = match.group("prompt")
                        text = head if truncated else raw[: len(raw) - len(prompt)]
                        return text, clean_text(prompt).strip("\n"), truncated
                chunk = await connection.read()
                raw += chunk
                if len(raw) > cap + 4096:
                    if not truncated:
                        head = raw[:cap]
                        truncated = True
                    raw = raw[-4096:]

    async def _drain(self, connection: _TelnetConnection, prompt_re: re.Pattern[str]) -> str:
        """Discard output until the console is quiet; returns the last prompt seen."""
        prompt = ""
        raw = ""
        for _ in range(50):
            try:
                async with asyncio.timeout(self.drain_quiet):
                    raw += await connection.read()
            except TimeoutError:
                break
        match = prompt_re.search(raw[-400:])
        if match is not None:
            prompt = clean_text(match.group("prompt")).strip("\n")
        return prompt

    async def _recover(
        self, connection: _TelnetConnection, prompt_re: re.Pattern[str], cisco: bool
    ) -> bool:
        """Interrupt a command that never returned; True once a prompt is back."""
        try:
            await connection.send("\x1e\x03" if cisco else "\x03")
            await connection.send("\r\n")
            await self._read_to_prompt(connection, prompt_re, self.recovery_timeout)
            await self._drain(connection, prompt_re)
        except (TimeoutError, _ConsoleClosedError):
            return False
        return True
