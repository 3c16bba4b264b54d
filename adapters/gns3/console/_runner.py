"""The console runner: commands over GNS3's telnet consoles, one command stream per console.

The telnet protocol (option negotiation, ``IAC`` escaping) is telnetlib3's; what a device
says is read in :mod:`adapters.gns3.console._session`, per
:class:`~adapters.gns3.model._platforms.Platform`. A run on one console:

1. wait for the console's turn (:class:`~adapters.gns3.console._lock.ConsoleLock`: one
   run at a time, interactive callers before background ones), connect
   (``connect_timeout``), send a newline and read to the device's prompt, answering what
   stands in the way (``Press RETURN``, Cisco's initial configuration dialog, a pager
   someone left open) and refusing a login prompt; then drain until the console is quiet
   (a GNS3 console is shared: a buffered banner or another client's output may still be
   arriving);
2. bring the device where the commands run (vtysh, Junos' CLI, configuration mode); on
   FRR, prove vtysh answers (``show version`` naming FRRouting) before the first command
   and again after anything that may have left it: a prompt is never taken as proof, and
   when the proof fails nothing more is sent (the run's error says the console is not in
   vtysh);
3. each command: send it, wait for its echo, then read to the next prompt, answering
   pagers with a space; report each complete line as progress; stop at the command's
   limit with the output read so far (``timed_out``), or at once when its output floods
   (over ``flood_chars``) or is not text (``interrupted``), then interrupt the command the
   way the device understands (``q`` for a pager, Ctrl-^ then Ctrl-C on Cisco, Ctrl-C
   elsewhere) and wait, bounded, for the prompt before going on; when no prompt comes,
   connect again and interrupt once more before giving up on the rest of the run;
4. take the device back where it was (``end``, ``commit and-quit``, ``exit``…) and close.

If the run is cancelled (the turn was aborted) while a command runs, the command is
interrupted in the background, the runner waits (bounded by ``recovery_timeout``) for the
prompt and only then lets go of the console: the next run on that console finds the device
ready. Output beyond ``max_output_chars`` per command is dropped and flagged ``truncated``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass

from adapters.gns3.console._lock import ConsoleLock, ConsolePriority, current_priority
from adapters.gns3.console._results import (
    REJECTED,
    CommandOutcome,
    ConsoleBounds,
    ConsoleTarget,
    ConsoleTranscript,
)
from adapters.gns3.console._session import (
    DEAD,
    CommandLostError,
    NotReadyError,
    Progress,
    Session,
    may_leave_vtysh,
)
from adapters.gns3.console._telnet import ConsoleClosedError, Telnet, clean_text
from adapters.gns3.model import DeviceKind, ModeStep

__all__ = [
    "REJECTED",
    "CommandOutcome",
    "ConsolePriority",
    "ConsoleRunner",
    "ConsoleTarget",
    "ConsoleTranscript",
    "clean_text",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class _Mode:
    """Where a run's commands go: configuration mode, or the privileged level."""

    config: bool
    privileged: bool


class ConsoleRunner:
    """Runs command lists on device consoles; one run per console at a time, interactive
    callers served before background ones."""

    def __init__(
        self,
        *,
        command_timeout: float = 30.0,
        connect_timeout: float = 10.0,
        max_output_chars: int = 20_000,
        drain_quiet: float = 0.15,
        recovery_timeout: float = 5.0,
        wake_timeout: float = 10.0,
        flood_chars: int = 1_000_000,
    ) -> None:
        self.command_timeout = command_timeout
        self.connect_timeout = connect_timeout
        self.max_output_chars = max_output_chars
        self.drain_quiet = drain_quiet
        self.recovery_timeout = recovery_timeout
        self.wake_timeout = wake_timeout
        #: characters one command may print before it is interrupted (a flood: ``yes``)
        self.flood_chars = max(flood_chars, max_output_chars)
        #: what each session with a console keeps to (the same settings, as one value)
        self.bounds = ConsoleBounds(
            command_timeout=command_timeout,
            wake_timeout=wake_timeout,
            drain_quiet=drain_quiet,
            recovery_timeout=recovery_timeout,
            max_output_chars=max_output_chars,
            flood_chars=self.flood_chars,
        )
        self._locks: dict[tuple[str, int], ConsoleLock] = {}
        self._settling: set[asyncio.Task[None]] = set()

    def lock_of(self, target: ConsoleTarget) -> ConsoleLock:
        """The turn-taking of ``target``'s console (shared by every run on it)."""
        return self._locks.setdefault((target.host, target.port), ConsoleLock())

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
        priority: ConsolePriority | None = None,
    ) -> ConsoleTranscript:
        """Run ``commands`` in order on ``target``; in configuration mode if asked, or at
        the privileged level (``privileged``: Cisco's and Arista's ``enable``).

        ``limits`` gives each command's time limit (default ``command_timeout``);
        ``deadline`` (event-loop time) bounds the whole run: a command that would start
        after it is not run, one running at it is interrupted. ``progress`` receives the
        output as complete lines while commands run. ``priority``: how the run waits for
        the console (default: :func:`~adapters.gns3.console._lock.current_priority`,
        interactive unless inside ``background_console_use``).
        """
        transcript = ConsoleTranscript(target)
        lock = self.lock_of(target)
        await lock.acquire(priority or current_priority())
        session: Session | None = None
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
            session = Session(telnet, target, self.bounds)
            await self._session(
                session,
                transcript,
                commands,
                _Mode(config_mode, privileged),
                limits,
                deadline,
                progress,
            )
            await session.telnet.close()
            session = None
            return transcript
        except asyncio.CancelledError:
            if session is not None and session.busy:
                settle = asyncio.create_task(self._settle(session, lock))
                self._settling.add(settle)
                settle.add_done_callback(self._settling.discard)
                handed_over = True
            raise
        finally:
            if not handed_over:
                if session is not None:
                    session.telnet.abort()
                lock.release()

    async def _settle(self, session: Session, lock: ConsoleLock) -> None:
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

    async def _reconnect(self, session: Session) -> bool:
        """The interrupt brought no prompt back: drop the connection (a flood may fill
        it), connect again and interrupt once more. True once the prompt is back."""
        session.telnet.abort()
        session.proven = False
        try:
            session.telnet = await Telnet.open(
                session.target.host, session.target.port, self.connect_timeout
            )
        except (TimeoutError, OSError):
            return False
        return await session.interrupt()

    # ------------------------------------------------------------------ internals
    async def _session(
        self,
        session: Session,
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
        except NotReadyError as exc:
            transcript.error = str(exc)
            return
        except ConsoleClosedError:
            transcript.error = (
                f"the console of {name} closed the connection before it showed a prompt (if "
                f"a command printed output that is not text on it: {DEAD})"
            )
            return
        start_prompt = transcript.prompt = session.prompt
        try:
            if commands and session.looks_like_frr() and await session.prove_vtysh():
                session.become_frr()  # a Linux-looking node whose console is vtysh
                transcript.target = session.target
            platform = session.platform
            # FRR: nothing is sent to what only looks like vtysh (commands or mode steps)
            frr = platform.kind is DeviceKind.FRR and bool(commands)
            for step in platform.enter(
                start_prompt, config=config_mode, privileged=mode.privileged
            ):
                if frr and step.command != "vtysh" and not await self._vtysh(session, transcript):
                    return
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
                if frr and not await self._vtysh(session, transcript):
                    stopped = "not run: the console is not in vtysh"
                    transcript.outcomes.append(CommandOutcome(command, error=stopped))
                    continue
                try:
                    outcome = await session.command(command, limit, progress)
                except CommandLostError as exc:
                    transcript.outcomes.append(exc.outcome)
                    stopped = "not run: the console connection was closed"
                    continue
                transcript.outcomes.append(outcome)
                stopping = outcome.timed_out or outcome.interrupted
                if frr and (
                    stopping or may_leave_vtysh(command) or platform.at_shell(session.prompt)
                ):
                    session.proven = False  # proven again before anything more is sent
                if stopping and not await session.interrupt():
                    if not await self._reconnect(session):
                        stopped = (
                            "not run: the console did not come back to a prompt after the "
                            "interrupt, nor on a new connection"
                        )
                        if session.saw_binary and outcome.error is not None:
                            outcome.error += f"; then the console closed: {DEAD}"
                elif config_mode and platform.enter(session.prompt, config=True):
                    stopped = f"not run: {name} left configuration mode"
            if stopped is None and not (frr and not await self._vtysh(session, transcript)):
                for step in platform.leave(
                    start_prompt, config=config_mode, privileged=mode.privileged
                ):
                    problem = await self._step(session, step)
                    if problem is not None:
                        transcript.error = f"{step.command!r} failed on {name}: {problem}"
                        for undo in platform.abandon_config():
                            await self._step(session, undo)
                        break
        except (ConsoleClosedError, CommandLostError):
            transcript.error = f"the console of {name} closed the connection"

    async def _vtysh(self, session: Session, transcript: ConsoleTranscript) -> bool:
        """The console is in vtysh (proven on this connection, else proven now); when it
        is not, the transcript's error says so and nothing more may be sent."""
        if session.proven or await session.prove_vtysh():
            return True
        name = session.target.name
        transcript.error = (
            f"the console of {name} is not in vtysh: it shows {session.prompt!r}, but "
            "'show version' was not answered as FRR's vtysh answers it (a shell whose "
            "prompt looks like vtysh's, or a program left running?). Nothing else was sent "
            f"to it. Open {name}'s console in GNS3, bring it back to vtysh (type vtysh, or "
            "leave what runs there), and try again"
        )
        return False

    async def _step(self, session: Session, step: ModeStep) -> str | None:
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
