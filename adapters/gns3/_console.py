"""The console runner: commands over GNS3's telnet consoles, one command stream per console.

The telnet protocol (option negotiation, ``IAC`` escaping) is telnetlib3's; what a device
says is read here, per :class:`~adapters.gns3._platforms.Platform`. A run on one console:

1. connect (``connect_timeout``), send a newline and read to the device's prompt,
   answering what stands in the way (``Press RETURN``, Cisco's initial configuration
   dialog, a pager someone left open) and refusing a login prompt; then drain until the
   console is quiet (a GNS3 console is shared: a buffered banner or another client's
   output may still be arriving);
2. bring the device where the commands run (vtysh, Junos' CLI, configuration mode);
3. each command: send it, wait for its echo, then read to the next prompt, answering
   pagers with a space; report each complete line as progress; stop at the command's
   limit with the output read so far (``timed_out``), then interrupt the command the way
   the device understands (``q`` for a pager, Ctrl-^ then Ctrl-C on Cisco, Ctrl-C
   elsewhere) and wait, bounded, for the prompt before going on;
4. take the device back where it was (``end``, ``commit and-quit``, ``exit``…) and close.

If the run is cancelled (the turn was aborted) while a command runs, the command is
interrupted in the background, the runner waits (bounded by ``recovery_timeout``) for the
prompt and only then lets go of the console: the next run on that console finds the device
ready. Output beyond ``max_output_chars`` per command is dropped and flagged ``truncated``.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from adapters.gns3._console_results import (
    REJECTED,
    CommandOutcome,
    ConsoleTarget,
    ConsoleTranscript,
)
from adapters.gns3._platforms import DeviceKind, ModeStep, Platform, pager_prompt, platform_for
from adapters.gns3._telnet import ConsoleClosedError, Telnet, clean_text

__all__ = [
    "REJECTED",
    "CommandOutcome",
    "ConsoleRunner",
    "ConsoleTarget",
    "ConsoleTranscript",
    "clean_text",
]

log = logging.getLogger(__name__)

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


class _NotReadyError(Exception):
    """The console shows no usable prompt (the message says why)."""


class _Session:
    """One run's conversation with one console."""

    def __init__(self, telnet: Telnet, target: ConsoleTarget, runner: ConsoleRunner) -> None:
        self.telnet = telnet
        self.target = target
        self.platform: Platform = platform_for(target.kind)
        self.runner = runner
        self.prompt = ""
        self.busy = False  # a command was sent and its prompt has not come back
        self.tail = ""  # the last text read (to see a pager when interrupting)
        self.previous: CommandOutcome | None = None  # the last command that completed
        self.loop = asyncio.get_running_loop()

    # ------------------------------------------------------------------ attach
    async def attach(self) -> None:
        """Reach the prompt (answering what stands in the way), then drain."""
        await self.telnet.send(self.target.enter)
        raw = ""
        within = min(self.runner.wake_timeout, self.runner.command_timeout)
        deadline = self.loop.time() + within
        while True:
            tail = raw[-400:]
            if _LOGIN.search(tail) or _PASSWORD.search(tail):
                raise _NotReadyError(
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
                raise _NotReadyError(
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

    def recognise_frr(self) -> bool:
        """A Docker node taken for a Linux host whose console shows vtysh's prompt with its
        own name (``R1#``, ``R1(config)#``: FRR's hostname is the node's) is an FRR router;
        the session then speaks FRR. True when it changed."""
        if self.platform.kind not in (DeviceKind.LINUX, DeviceKind.GENERIC):
            return False
        match = _VTYSH_PROMPT.fullmatch(self.prompt)
        if match is None or match.group(1) != self.target.name:
            return False
        self.target = replace(self.target, kind=DeviceKind.FRR)
        self.platform = platform_for(DeviceKind.FRR)
        return True

    async def drain(self) -> str:
        """Read until the console has been quiet for ``drain_quiet``; returns what came."""
        text = ""
        for _ in range(50):
            try:
                text += await self.telnet.read(self.runner.drain_quiet)
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
        cap = self.runner.max_output_chars
        settle = self.runner.drain_quiet
        await self.telnet.send(command + self.target.enter)
        self.busy = True
        deadline = self.loop.time() + limit
        raw = ""
        body: int | None = None  # where the output starts (after the echo)
        head = ""  # the first ``cap`` characters once the output is over the cap
        reported = 0
        left_pager = False  # ``q`` was sent to the pager at the output's end
        quiet = False  # the last read waited ``settle`` and nothing came
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
                outcome.output = clean_text(head or raw[body or 0 :]).strip("\n")[:cap]
                self.busy = False
                raise _CommandLostError(outcome) from None
            raw += chunk
            if body is not None and len(raw) - body > cap + 4096:
                if not head:
                    head = raw[body : body + cap]
                    if progress is not None:
                        progress("\n[output truncated]\n")
                raw, body, reported = raw[-4096:], 0, 0

    def _known(self, prompt: str) -> bool:
        """``prompt`` names this device as its last prompt did (``R1(config)#`` after
        ``R1#``). Anything else ending like a prompt ends the command only once the console
        is quiet: a read may stop inside a line of output (``S>`` of ``S>* 10.0.0.0/24``)."""
        return bool(self.prompt) and _stem(clean_text(prompt).strip()) == _stem(self.prompt)

    def _finish(self, outcome: CommandOutcome, text: str, head: str, prompt: str) -> CommandOutcome:
        self.busy = False
        self.previous = outcome
        self.prompt = clean_text(prompt).strip()
        cap = self.runner.max_output_chars
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
        console is drained, unless the connection is about to close anyway)."""
        keys = list(self.platform.interrupts)
        if _pager_waits(self.tail):
            keys.insert(0, "q")
        keys.append(self.target.enter)
        deadline = self.loop.time() + self.runner.recovery_timeout
        step = self.runner.recovery_timeout / len(keys)
        raw = ""
        try:
            for key in keys:
                await self.telnet.send(key)
                until = min(deadline, self.loop.time() + step)
                while True:
                    prompt = self.platform.prompt_at_end(raw)
                    if prompt is not None and not _pager_waits(raw):
                        self.prompt = clean_text(prompt).strip()
                        self.busy = False
                        if drain:
                            await self.drain()
                        return True
                    try:
                        raw = (raw + await self.telnet.read(until - self.loop.time()))[-8192:]
                    except TimeoutError:
                        break
        except ConsoleClosedError:
            return False
        return False


def _pager_waits(text: str) -> bool:
    """A pager's prompt ends ``text``: the console waits for its key."""
    pager = pager_prompt(text)
    return pager is not None and pager[1] == len(text)


_LINE = re.compile(r"(?P<line>[^\r\n]*)\r*\n")
_VTYSH_PROMPT = re.compile(r"([\w.\-]+)(?:\([\w.\-]+\))?#")


@dataclass(frozen=True, slots=True)
class _Mode:
    """Where a run's commands go: configuration mode, or the privileged level."""

    config: bool
    privileged: bool


class _CommandLostError(Exception):
    """The connection dropped during a command (its outcome so far is attached)."""

    def __init__(self, outcome: CommandOutcome) -> None:
        super().__init__(outcome.error)
        self.outcome = outcome


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
        wake_timeout: float = 10.0,
    ) -> None:
        self.command_timeout = command_timeout
        self.connect_timeout = connect_timeout
        self.max_output_chars = max_output_chars
        self.drain_quiet = drain_quiet
        self.recovery_timeout = recovery_timeout
        self.wake_timeout = wake_timeout
        self._locks: dict[tuple[str, int], asyncio.Lock] = {}
        self._settling: set[asyncio.Task[None]] = set()

    def _lock(self, target: ConsoleTarget) -> asyncio.Lock:
        return self._locks.setdefault((target.host, target.port), asyncio.Lock())

    async def aclose(self) -> None:
        """Wait for consoles still being brought back after a cancelled run (bounded)."""
        if self._settling:
            await asyncio.wait(set(self._settling), timeout=self.recovery_timeout + 1)

    async def run(
        self,
        target: ConsoleTarget,
        commands: Sequence[str],
        *,
        config_mode: bool = False,
        privileged: bool = False,
        limits: Sequence[float] | None = None,
        deadline: float | None = None,
        progress: Progress | None = None,
    ) -> ConsoleTranscript:
        """Run ``commands`` in order on ``target``; in configuration mode if asked, or at
        the privileged level (``privileged``: Cisco's and Arista's ``enable``).

        ``limits`` gives each command's time limit (default ``command_timeout``);
        ``deadline`` (event-loop time) bounds the whole run: a command that would start
        after it is not run, one running at it is interrupted. ``progress`` receives the
        output as complete lines while commands run.
        """
        transcript = ConsoleTranscript(target)
        lock = self._lock(target)
        await lock.acquire()
        telnet: Telnet | None = None
        session: _Session | None = None
        handed_over = False
        try:
            try:
                telnet = await Telnet.open(target.host, target.port, self.connect_timeout)
            except (TimeoutError, OSError) as exc:
                transcript.error = (
                    f"cannot connect to the console of {target.name} at "
                    f"{target.host}:{target.port} ({type(exc).__name__}: {exc})"
                )
                return transcript
            session = _Session(telnet, target, self)
            await self._session(
                session,
                transcript,
                commands,
                _Mode(config_mode, privileged),
                limits,
                deadline,
                progress,
            )
            await telnet.close()
            telnet = None
            return transcript
        except asyncio.CancelledError:
            if telnet is not None and session is not None and session.busy:
                settle = asyncio.create_task(self._settle(session, lock))
                self._settling.add(settle)
                settle.add_done_callback(self._settling.discard)
                handed_over = True
            raise
        finally:
            if not handed_over:
                if telnet is not None:
                    telnet.abort()
                lock.release()

    async def _settle(self, session: _Session, lock: asyncio.Lock) -> None:
        """After a cancelled run: interrupt, wait for the prompt, then let go."""
        try:
            if not await session.interrupt(drain=False):
                log.warning(
                    "the console of %s did not come back to a prompt after an interrupt",
                    session.target.name,
                )
        finally:
            session.telnet.abort()
            lock.release()

    # ------------------------------------------------------------------ internals
    async def _session(
        self,
        session: _Session,
        transcript: ConsoleTranscript,
        commands: Sequence[str],
        mode: _Mode,
        limits: Sequence[float] | None,
        deadline: float | None,
        progress: Progress | None,
    ) -> None:
        name = session.target.name
        loop = asyncio.get_running_loop()
        config_mode = mode.config
        try:
            await session.attach()
        except _NotReadyError as exc:
            transcript.error = str(exc)
            return
        except ConsoleClosedError:
            transcript.error = f"the console of {name} closed the connection"
            return
        if session.recognise_frr():
            transcript.target = session.target
        platform = session.platform
        start_prompt = transcript.prompt = session.prompt
        try:
            for step in platform.enter(
                start_prompt, config=config_mode, privileged=mode.privileged
            ):
                problem = await self._step(session, step)
                if problem is not None:
                    what = (
                        "configuration mode"
                        if config_mode
                        else "the privileged level"
                        if mode.privileged
                        else "the device's command line"
                    )
                    transcript.error = f"could not enter {what} on {name} ({problem})"
                    return
            stopped: str | None = None
            for index, command in enumerate(commands):
                if stopped is not None:
                    transcript.outcomes.append(CommandOutcome(command, error=stopped))
                    continue
                limit = limits[index] if limits is not None else self.command_timeout
                if deadline is not None:
                    limit = min(limit, deadline - loop.time())
                    if limit <= 0:
                        stopped = "not run: the call's time budget was spent"
                        transcript.outcomes.append(CommandOutcome(command, error=stopped))
                        continue
                try:
                    outcome = await session.command(command, limit, progress)
                except _CommandLostError as exc:
                    transcript.outcomes.append(exc.outcome)
                    stopped = "not run: the console connection was closed"
                    continue
                transcript.outcomes.append(outcome)
                if outcome.timed_out and not await session.interrupt():
                    stopped = (
                        "not run: the console did not come back to a prompt after the interrupt"
                    )
                elif config_mode and platform.enter(session.prompt, config=True):
                    stopped = f"not run: {name} left configuration mode"
            if stopped is None:
                for step in platform.leave(
                    start_prompt, config=config_mode, privileged=mode.privileged
                ):
                    problem = await self._step(session, step)
                    if problem is not None:
                        transcript.error = f"{step.command!r} failed on {name}: {problem}"
                        for undo in platform.abandon_config():
                            await self._step(session, undo)
                        break
        except (ConsoleClosedError, _CommandLostError):
            transcript.error = f"the console of {name} closed the connection"

    async def _step(self, session: _Session, step: ModeStep) -> str | None:
        """Run a mode change; ``None`` when it worked, else what went wrong."""
        outcome = await session.command(
            step.command, min(self.command_timeout, 15.0), stop_on=step.refuse
        )
        if outcome.timed_out or (outcome.error and step.refuse is not None):
            await session.interrupt()
            return f"{step.command!r}: {outcome.error}"
        if outcome.error is not None:
            return f"{step.command!r}: {outcome.output.strip() or outcome.error}"
        if step.expect is not None and not (
            step.expect.search(session.prompt) or step.expect.search(outcome.output)
        ):
            return f"{step.command!r}: {outcome.output.strip() or 'unexpected prompt'}"
        return None
