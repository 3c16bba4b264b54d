"""One run's conversation with one console: reach the prompt, prove what answers, send a
command and read its output to the next prompt, interrupt what runs.

:class:`_Session` is driven by :class:`~adapters.gns3.console._runner.ConsoleRunner` (which holds
the console's turn and the connection); everything here reads or writes the one telnet
connection it is given. Two guards live here:

* **vtysh is proven, not read from a prompt.** A shell's prompt can be made to look like
  vtysh's (``PS1='R1# '``); a command meant for vtysh sent to that shell runs as a shell
  command (vtysh's ``find`` takes a path, bash's deletes). Before FRR commands, the session
  sends ``show version`` (``do show version`` in configuration mode) and goes on only when
  the answer names FRRouting, which no shell prints for that line; the proof holds for the
  connection until something may have left vtysh (a command that timed out or was
  interrupted, an ``exit``/``quit``/``logout``/``start-shell``, a prompt that is not
  vtysh's) and is then made again before the next command.
* **A flood never holds the console.** A command whose output passes ``flood_chars``, or
  whose output is not text (bytes that are not UTF-8 or control characters), is
  interrupted at once instead of being read to its time limit; its outcome says so
  (``truncated``, ``interrupted``, an error naming why) with the first
  ``max_output_chars`` of what it printed, made printable.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from dataclasses import replace

from adapters.gns3.console._results import REJECTED, CommandOutcome, ConsoleBounds, ConsoleTarget
from adapters.gns3.console._telnet import ConsoleClosedError, Telnet, clean_text
from adapters.gns3.model import DeviceKind, Platform, pager_prompt, platform_for

__all__ = ["DEAD", "CommandLostError", "NotReadyError", "Progress", "Session", "may_leave_vtysh"]

Progress = Callable[[str], None]

_LOGIN = re.compile(r"(?i)(?:\A|[\r\n])[^\r\n]{0,40}(?:login|username|user name)\s*:\s*\Z")
_PASSWORD = re.compile(r"(?i)password\s*:\s*\Z")
#: What stands between a fresh console and its prompt, and the answer that gets past it
#: (followed by the console's Enter).
_WAKE_ANSWERS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"(?i)initial configuration dialog\?\s*\[yes/no\]:\s*\Z"), "no"),
    (re.compile(r"(?i)terminate autoinstall\?\s*\[yes\]:\s*\Z"), "yes"),
    (re.compile(r"(?i)press return to get started"), ""),
)


def _stem(prompt: str) -> str:
    """The device's name in a prompt: ``R1(config-if)#`` → ``R1``, ``<HUAWEI>`` → ``HUAWEI``."""
    text = prompt.strip().lstrip("<[~*").rstrip(">#$%:] ")
    return re.sub(r"\([^()]*\)$", "", text)


class NotReadyError(Exception):
    """The console shows no usable prompt (the message says why)."""


class Session:
    """One run's conversation with one console."""

    def __init__(self, telnet: Telnet, target: ConsoleTarget, bounds: ConsoleBounds) -> None:
        self.telnet = telnet
        self.target = target
        self.platform: Platform = platform_for(target.kind)
        self.bounds = bounds
        self.prompt = ""
        self.busy = False  # a command was sent and its prompt has not come back
        self.tail = ""  # the last text read (to see a pager when interrupting)
        self.previous: CommandOutcome | None = None  # the last command that completed
        #: vtysh answered :meth:`prove_vtysh` on this connection, and nothing since may
        #: have left it (cleared by the runner after an interrupt, ``exit``…)
        self.proven = False
        self.saw_binary = False  # a command printed output that is not text
        self.loop = asyncio.get_running_loop()

    # ------------------------------------------------------------------ attach
    async def attach(self) -> None:
        """Reach the prompt (answering what stands in the way), then drain."""
        await self.telnet.send(self.target.enter)
        raw = ""
        within = min(self.bounds.wake_timeout, self.bounds.command_timeout)
        deadline = self.loop.time() + within
        while True:
            tail = raw[-400:]
            if _LOGIN.search(tail) or _PASSWORD.search(tail):
                raise NotReadyError(
                    f"the console of {self.target.name} asks for a login; the copilot has no "
                    "credentials for it: log in once from a GNS3 console and try again"
                )
            answered = False
            for question, answer in _WAKE_ANSWERS:
                if question.search(tail):
                    await self.telnet.send(answer + self.target.enter)
                    raw, answered = "", True
                    break
            if not answered and _pager_waits(tail):
                await self.telnet.send("q")  # a pager someone left open
                raw, answered = "", True
            if not answered:
                prompt = self.platform.prompt_at_end(raw)
                if prompt is not None:
                    self.prompt = clean_text(prompt).strip()
                    break
            try:
                raw = (raw + await self.telnet.read(deadline - self.loop.time()))[-8192:]
            except TimeoutError:
                silent = "stays silent" if not raw.strip() else "shows no prompt"
                raise NotReadyError(
                    f"the console of {self.target.name} {silent} (no "
                    f"{self.target.kind.value} prompt within {within:g} s); the device may "
                    "still be booting, busy with a command, or waiting for input. If it "
                    "stays silent, restarting the node (stop it, then start it) brings its "
                    "console back: ask the user before doing so"
                ) from None
        drained = await self.drain()
        prompt = self.platform.prompt_at_end(drained)
        if prompt is not None:
            self.prompt = clean_text(prompt).strip()

    def looks_like_frr(self) -> bool:
        """A Docker node taken for a Linux host (or a node of no known platform) whose
        console shows vtysh's prompt with its own name (``R1#``, ``R1(config)#``: FRR's
        hostname is the node's) may be an FRR router; only :meth:`prove_vtysh` says it is."""
        if self.platform.kind not in (DeviceKind.LINUX, DeviceKind.GENERIC):
            return False
        match = _VTYSH_PROMPT.fullmatch(self.prompt)
        return match is not None and match.group(1) == self.target.name

    def become_frr(self) -> None:
        """The session speaks FRR from now on (vtysh answered as vtysh)."""
        self.target = replace(self.target, kind=DeviceKind.FRR)
        self.platform = platform_for(DeviceKind.FRR)

    async def prove_vtysh(self) -> bool:
        """Ask what only vtysh answers: ``show version`` (``do show version`` in
        configuration mode) naming FRRouting. True when it did; the proof then holds until
        :attr:`proven` is cleared. A probe that times out is interrupted."""
        in_config = "(config" in self.prompt
        probe = "do show version" if in_config else "show version"
        outcome = await self.command(probe, min(self.bounds.command_timeout, 15.0))
        if outcome.timed_out or outcome.interrupted:
            await self.interrupt()
        self.proven = outcome.ok and _FRR_VERSION.search(outcome.output) is not None
        self.previous = None  # a late line after the probe is nobody's output
        return self.proven

    async def drain(self) -> str:
        """Read until the console has been quiet for ``drain_quiet``; returns what came."""
        text = ""
        for _ in range(50):
            try:
                text += await self.telnet.read(self.bounds.drain_quiet)
            except TimeoutError:
                break
        return text[-8192:]

    # ------------------------------------------------------------------ one command
    async def command(
        self,
        command: str,
        limit: float,
        progress: Progress | None = None,
        stop_on: re.Pattern[str] | None = None,
    ) -> CommandOutcome:
        """Send ``command`` and read its output to the next prompt, within ``limit`` s."""
        outcome = CommandOutcome(command)
        cap = self.bounds.max_output_chars
        settle = self.bounds.drain_quiet
        await self.telnet.send(command + self.target.enter)
        self.busy = True
        deadline = self.loop.time() + limit
        raw = ""
        body: int | None = None  # where the output starts (after the echo)
        head = ""  # the first ``cap`` characters once the output is over the cap
        reported = 0
        left_pager = False  # ``q`` was sent to the pager at the output's end
        quiet = False  # the last read waited ``settle`` and nothing came
        total = odd = 0  # characters read since the command, and those that are not text
        while True:
            unsure: str | None = None  # a prompt not known as this device's, at the end
            while (pager := pager_prompt(raw)) is not None:
                # Nothing more once ``q`` is sent: after a space met an end whose ``(END)``
                # had not arrived yet, the pager shows another screen while it reads the
                # ``q``; a key for that would be typed at the device's prompt.
                start, stop, key = pager
                raw = raw[:start] + raw[stop:]
                if not left_pager:
                    await self.telnet.send(key)
                left_pager = left_pager or key == "q"
            if body is None:
                echo = self._echo(raw, command)
                if echo is not None:
                    self._attribute_late(raw[: echo[0]])
                    body = echo[1]
            if body is not None:
                if progress is not None and not head:
                    reported = self._report(raw, max(reported, body), progress)
                prompt = self.platform.prompt_at_end(raw[body:])
                if prompt is not None and (quiet or self._known(prompt)):
                    return self._finish(outcome, raw[body : len(raw) - len(prompt)], head, prompt)
                unsure = prompt
                if stop_on is not None and stop_on.search(raw[body:][-200:]):
                    outcome.output = clean_text(raw[body:]).strip("\n")
                    outcome.error = f"the device asks {outcome.output.splitlines()[-1:]}"
                    return outcome
            late = self._late_prompt(raw, body)
            remaining = deadline - self.loop.time()
            if remaining <= 0:
                outcome.timed_out = True
                text = head if head else raw[body or 0 :]
                outcome.output = clean_text(text).strip("\n")[:cap]
                outcome.truncated = bool(head)
                outcome.error = (
                    f"no prompt within {limit:g} s: the command was interrupted; the output is "
                    "what the device printed until then"
                )
                self.tail = raw[-400:]
                return outcome
            try:
                waits = late is not None or unsure is not None
                chunk = await self.telnet.read(min(remaining, settle) if waits else remaining)
                quiet = False
            except TimeoutError:
                quiet = unsure is not None
                if late is not None and body is not None:
                    start, end, prompt = late
                    found = self._finish(outcome, raw[body:start], head, prompt)
                    found.late_output = clean_text(raw[end:]).strip("\n")
                    return found
                if body is None and "\n" in raw and self.platform.prompt_at_end(raw):
                    body = 0  # no echo came: take everything since the command
                continue
            except ConsoleClosedError:
                outcome.error = "the device closed the console connection"
                if odd:
                    self.saw_binary = True
                    outcome.interrupted = outcome.truncated = True
                    outcome.error += f" while the command printed output that is not text; {DEAD}"
                else:  # GNS3 may close before a byte of it gets through
                    outcome.error += f" (if the command prints output that is not text: {DEAD})"
                text = _UNPRINTABLE.sub("?", clean_text(head or raw[body or 0 :]))
                outcome.output = text.strip("\n")[:cap]
                self.busy = False
                raise CommandLostError(outcome) from None
            raw += chunk
            total += len(chunk)
            odd += len(_NOT_TEXT.findall(chunk))
            why = self._flooding(total, odd)
            if why is not None:
                if body is None:
                    echo = self._echo(raw, command)
                    body = echo[1] if echo is not None else 0
                return self._flooded(outcome, head or raw[body:], why, raw)
            if body is not None and len(raw) - body > cap + 4096:
                if not head:
                    head = raw[body : body + cap]
                    if progress is not None:
                        progress("\n[output truncated]\n")
                raw, body, reported = raw[-4096:], 0, 0

    def _flooding(self, total: int, odd: int) -> str | None:
        """Why a command's output must be stopped now (it is not text, or it floods), or
        ``None``. Not text: over 1 in 20 characters are invalid UTF-8 or control
        characters a terminal does not use, once 256 have come."""
        if total >= 256 and odd * 20 > total:
            self.saw_binary = True
            return "is not text"
        if total > self.bounds.flood_chars:
            return f"passed {self.bounds.flood_chars} characters"
        return None

    def _flooded(self, outcome: CommandOutcome, text: str, why: str, raw: str) -> CommandOutcome:
        """The outcome of a command stopped because its output ``why``; the runner
        interrupts it next (the session stays busy until the prompt is back)."""
        cap = self.bounds.max_output_chars
        outcome.interrupted = outcome.truncated = True
        outcome.output = _UNPRINTABLE.sub("?", clean_text(text)).strip("\n")[:cap]
        outcome.error = (
            f"the output {why}: the command was interrupted; the output is at most its first "
            f"{cap} characters (non-text characters shown as ?)"
        )
        self.tail = raw[-400:]
        return outcome

    def _known(self, prompt: str) -> bool:
        """``prompt`` names this device as its last prompt did (``R1(config)#`` after
        ``R1#``). Anything else ending like a prompt ends the command only once the console
        is quiet: a read may stop inside a line of output (``S>`` of ``S>* 10.0.0.0/24``)."""
        return bool(self.prompt) and _stem(clean_text(prompt).strip()) == _stem(self.prompt)

    def _finish(self, outcome: CommandOutcome, text: str, head: str, prompt: str) -> CommandOutcome:
        self.busy = False
        self.previous = outcome
        self.prompt = clean_text(prompt).strip()
        cap = self.bounds.max_output_chars
        output = clean_text(head or text).strip("\n")
        outcome.truncated = bool(head) or len(output) > cap
        outcome.output = output[:cap]
        if self.platform.errors.search(outcome.output):
            outcome.error = REJECTED
        return outcome

    @staticmethod
    def _echo(raw: str, command: str) -> tuple[int, int] | None:
        """Where the line echoing ``command`` starts, and where the output starts.

        The echo may be cut to its end (Cisco scrolls a long line) or preceded by stale
        text; it is searched in the first five lines. ``None`` while it may still come.
        """
        wanted = command.strip()[-12:]
        start = 0
        for _ in range(5):
            newline = raw.find("\n", start)
            if newline < 0:
                return None
            line = clean_text(raw[start:newline]).rstrip()
            if not wanted or line.endswith(wanted):
                return start, newline + 1
            start = newline + 1
        return 0, 0  # five lines and no echo: the device does not echo

    def _attribute_late(self, text: str) -> None:
        """Text that came before a command's echo was printed after the previous
        command's prompt (a log message): it belongs to that command."""
        lines = [
            line
            for line in clean_text(text).split("\n")
            if line.strip() and line.strip() != self.prompt
        ]
        if lines and self.previous is not None:
            late = "\n".join(lines)
            self.previous.late_output = f"{self.previous.late_output}\n{late}".strip("\n")

    def _late_prompt(self, raw: str, body: int | None) -> tuple[int, int, str] | None:
        """A line holding this device's prompt, followed by more text (a log message
        printed after the prompt): ``(start, end, prompt)`` of the last one."""
        if body is None or not self.prompt:
            return None
        stem = _stem(self.prompt)
        found = None
        start = body if len(raw) - body <= 2000 else raw.rfind("\n", body, len(raw) - 2000) + 1
        for match in _LINE.finditer(raw, max(start, body)):
            line = match.group("line")
            prompt = self.platform.prompt_at_end(line)
            if prompt is not None and prompt == line and _stem(prompt) == stem:
                found = (match.start("line"), match.end(), prompt)
        return found

    @staticmethod
    def _report(raw: str, start: int, progress: Progress) -> int:
        """Hand complete new lines to ``progress``; returns where the next report starts."""
        newline = raw.rfind("\n", start)
        if newline < 0:
            return start
        text = clean_text(raw[start : newline + 1])
        if text.strip():
            progress(text)
        return newline + 1

    # ------------------------------------------------------------------ recovery
    async def interrupt(self, *, drain: bool = True) -> bool:
        """Stop what runs: ``q`` for a pager, then the platform's interrupt keys, each
        followed by a bounded wait for the prompt. True once the prompt is back (then the
        console is drained, unless the connection is about to close anyway).

        A prompt this device showed before ends the wait at once; any other text that ends
        like a prompt (a flood's bytes may end in ``#``) only once the console has been
        quiet for ``drain_quiet`` after it."""
        keys = list(self.platform.interrupts)
        if _pager_waits(self.tail):
            keys.insert(0, "q")
        keys.append(self.target.enter)
        deadline = self.loop.time() + self.bounds.recovery_timeout
        step = self.bounds.recovery_timeout / len(keys)
        raw = ""
        try:
            for key in keys:
                await self.telnet.send(key)
                until = min(deadline, self.loop.time() + step)
                while True:
                    prompt = self.platform.prompt_at_end(raw)
                    candidate = prompt is not None and not _pager_waits(raw)
                    if candidate and prompt is not None and self._known(prompt):
                        return await self._back(prompt, drain=drain)
                    wait = until - self.loop.time()
                    if candidate:
                        wait = min(wait, self.bounds.drain_quiet)
                    try:
                        raw = (raw + await self.telnet.read(wait))[-8192:]
                    except TimeoutError:
                        if candidate and prompt is not None:
                            return await self._back(prompt, drain=drain)
                        if self.loop.time() >= until:
                            break
        except ConsoleClosedError:
            return False
        return False

    async def _back(self, prompt: str, *, drain: bool) -> bool:
        self.prompt = clean_text(prompt).strip()
        self.busy = False
        if drain:
            await self.drain()
        return True


def _pager_waits(text: str) -> bool:
    """A pager's prompt ends ``text``: the console waits for its key."""
    pager = pager_prompt(text)
    return pager is not None and pager[1] == len(text)


def may_leave_vtysh(command: str) -> bool:
    """``command``'s first word may leave vtysh or start something else in it (``exit``,
    ``q``, ``logout``, ``start-shell``, ``vtysh``…, abbreviations too): the proof that the
    console is in vtysh must be made again after it."""
    word = command.strip().split(maxsplit=1)[0].lower() if command.strip() else ""
    return bool(word) and any(name.startswith(word) for name in _LEAVING)


#: What a console that closed on output that is not text needs (GNS3's console of a Docker
#: node reads the container through a websocket that ends on bytes that are not UTF-8, and
#: stays closed while the command goes on writing them).
DEAD = (
    "a GNS3 console of a Docker node stops on such output and stays closed until the node is "
    "restarted (stop it, then start it): ask the user before doing so"
)
_LEAVING = ("exit", "quit", "logout", "start-shell", "vtysh")
#: vtysh's ``show version``: ``FRRouting 8.4.1 (R1) on Linux(5.15.0).``
_FRR_VERSION = re.compile(r"(?m)^FRRouting \d[\w.+~-]* \(")
#: A character no text output holds: invalid UTF-8 (decoded as U+FFFD) or a control
#: character a terminal does not use (tab, newline, carriage return, backspace, bell and
#: escape are used; NUL is telnet's padding after a carriage return).
_NOT_TEXT = re.compile("[\ufffd\x01-\x06\x0e-\x1a\x1c-\x1f\x7f]")
#: What a flood's output shows as ``?``: any control character but newline and tab.
_UNPRINTABLE = re.compile("[\ufffd\x00-\x08\x0b-\x1f\x7f]")
_LINE = re.compile(r"(?P<line>[^\r\n]*)\r*\n")
_VTYSH_PROMPT = re.compile(r"([\w.\-]+)(?:\([\w.\-]+\))?#")


class CommandLostError(Exception):
    """The connection dropped during a command (its outcome so far is attached)."""

    def __init__(self, outcome: CommandOutcome) -> None:
        super().__init__(outcome.error)
        self.outcome = outcome
