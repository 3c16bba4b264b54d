"""The program as an operating-system process: start, read with bounded memory, stop.

The program runs in its own session (so its own process group): stopping it signals
the whole group, which takes its children along. Nothing here buffers more than a
fixed number of bytes, whatever the program prints.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["MORE", "AgentProcess", "LineReader", "More", "Oversized", "StderrTail"]

CHUNK_BYTES = 64 * 1024


class More:
    """The buffer holds no complete line: read more."""

    __slots__ = ()


MORE = More()


@dataclass(frozen=True, slots=True)
class Oversized:
    """A stdout line longer than the limit started; the rest of it is being skipped."""

    limit: int


class LineReader:
    """Reads lines from a stream, holding at most ``limit`` + one chunk in memory.

    A line longer than ``limit`` is reported once (:class:`Oversized`) as soon as it
    passes the limit, then skipped up to its newline, however long it is. Once more
    than ``budget`` bytes came in total, reading ends as at EOF with ``exceeded`` set.
    """

    def __init__(self, stream: asyncio.StreamReader, limit: int, budget: int) -> None:
        self._stream = stream
        self._limit = limit
        self._budget = budget
        self.exceeded = False
        self._buffer = bytearray()
        self._scanned = 0
        self._discarding = False
        self._eof = False
        self.total_bytes = 0

    @property
    def buffered_bytes(self) -> int:
        return len(self._buffer)

    def take(self) -> bytes | Oversized | More | None:
        """The next line (without its newline) or :class:`Oversized` marker from what is
        buffered; :data:`MORE` when :meth:`fill` must read first; None at EOF (or past
        the budget)."""
        while True:
            if self.exceeded:
                self._buffer.clear()
                return None
            newline = self._buffer.find(b"\n", self._scanned)
            if newline >= 0:
                line = bytes(self._buffer[:newline])
                del self._buffer[: newline + 1]
                self._scanned = 0
                if self._discarding:
                    self._discarding = False
                    continue
                if len(line) > self._limit:
                    return Oversized(self._limit)
                return line
            if self._discarding:
                self._buffer.clear()
                self._scanned = 0
            elif len(self._buffer) > self._limit:
                self._buffer.clear()
                self._scanned = 0
                self._discarding = True
                return Oversized(self._limit)
            else:
                self._scanned = len(self._buffer)
            if not self._eof:
                return MORE
            if self._buffer and not self._discarding:
                last = bytes(self._buffer)
                self._buffer.clear()
                return last
            return None

    async def fill(self) -> None:
        """Read one chunk (safe to cancel: nothing is lost)."""
        chunk = await self._stream.read(CHUNK_BYTES)
        if not chunk:
            self._eof = True
            return
        self.total_bytes += len(chunk)
        self._buffer += chunk
        self.exceeded = self.total_bytes > self._budget

    async def next(self) -> bytes | Oversized | None:
        """Like :meth:`take`, reading as needed."""
        while isinstance(item := self.take(), More):
            await self.fill()
        return item


class StderrTail:
    """Drains a stream continuously (so the program never blocks on it), keeping its end."""

    def __init__(self, stream: asyncio.StreamReader, chars: int) -> None:
        self._chars = chars
        self._keep = chars * 4  # bytes: enough for ``chars`` characters of UTF-8
        self._tail = bytearray()
        self._task = asyncio.create_task(self._drain(stream), name="agent-stderr")

    async def _drain(self, stream: asyncio.StreamReader) -> None:
        while chunk := await stream.read(CHUNK_BYTES):
            self._tail += chunk
            if len(self._tail) > self._keep:
                del self._tail[: len(self._tail) - self._keep]

    async def finish(self, within: float) -> str:
        """Wait (at most ``within`` seconds) for the stream's end, then return its tail."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(self._task), within)
        self.cancel()
        return self.text()

    def text(self) -> str:
        text = self._tail.decode("utf-8", errors="replace")
        return text[-self._chars :] if self._chars else ""

    def cancel(self) -> None:
        if not self._task.done():
            self._task.cancel()


class AgentProcess:
    """A started program, leader of its own process group."""

    def __init__(self, process: asyncio.subprocess.Process, grace: float) -> None:
        self.process = process
        self.pid = process.pid
        self._grace = grace
        self._kill_timer: asyncio.TimerHandle | None = None

    @classmethod
    async def start(
        cls,
        argv: Sequence[str],
        *,
        env: dict[str, str],
        cwd: str | None,
        grace: float,
    ) -> AgentProcess:
        """Start ``argv`` with stdin closed and stdout/stderr piped; raises OSError."""
        process = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
            cwd=cwd,
            start_new_session=True,
            limit=CHUNK_BYTES,
        )
        return cls(process, grace)

    @property
    def stdout(self) -> asyncio.StreamReader:
        assert self.process.stdout is not None
        return self.process.stdout

    @property
    def stderr(self) -> asyncio.StreamReader:
        assert self.process.stderr is not None
        return self.process.stderr

    @property
    def returncode(self) -> int | None:
        return self.process.returncode

    def terminate(self) -> None:
        """SIGTERM to the group now, SIGKILL after the grace period. Never blocks."""
        if self._kill_timer is not None:
            return
        self._signal(signal.SIGTERM)
        loop = asyncio.get_running_loop()
        self._kill_timer = loop.call_later(self._grace, self._signal, signal.SIGKILL)

    def kill(self) -> None:
        self._signal(signal.SIGKILL)

    def _signal(self, signum: signal.Signals) -> None:
        # The group outlives its leader while a child still runs, so signal it even
        # after the leader has exited: that is what leaves no orphan behind.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signum)

    async def stop(self) -> int:
        """Terminate the group and reap the leader (SIGKILL after the grace period)."""
        self.terminate()
        return await self.reap()

    async def close(self, within: float) -> None:
        """Kill what is left of the group, reap the leader and read the pipes to their end.

        Everything of the group is dead after SIGKILL, so the pipes end at once; a
        program that escaped its group (its own ``setsid``) could hold them open, and
        after ``within`` seconds they are closed from this side.
        """
        self.kill()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(within):
                await self.reap()
                await _discard(self.stdout)
                await _discard(self.stderr)
        transport = getattr(self.process, "_transport", None)
        if self.process.returncode is None or transport is None:
            return
        if not self.stdout.at_eof() or not self.stderr.at_eof():
            transport.close()  # last resort: asyncio has no public way to drop the pipes
        await asyncio.sleep(0)  # let the transport run its closing callbacks

    async def reap(self) -> int:
        """Wait for the leader's exit, then kill whatever is left of its group.

        Output still coming is read and dropped meanwhile: asyncio reports the exit
        only once the pipes are closed, and a full pipe would keep them open.
        """
        drain = asyncio.ensure_future(_discard(self.stdout))
        try:
            code = await self.process.wait()
        finally:
            drain.cancel()
            self.kill()
            if self._kill_timer is not None:
                self._kill_timer.cancel()
        return code


async def _discard(stream: asyncio.StreamReader) -> None:
    while await stream.read(CHUNK_BYTES):
        pass
