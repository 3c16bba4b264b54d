"""What a subprocess says, read as it says it, so a test waits for an event, not a deadline.

Usage::

    process = subprocess.Popen(argv, stdout=PIPE, stderr=PIPE, text=True)
    output = ProcessOutput(process)
    output.wait_for("service_started", within=120)  # a line on stdout or stderr, or exit
    ...
    process.send_signal(signal.SIGTERM)
    output.finish(within=30)
    output.stderr  # every line, after the process ended

Two threads read the pipes to their ends (a pipe that nobody reads fills and blocks the
process). :meth:`wait_for` returns as soon as a line contains the text, and fails at once
when the process exits first, or when the (generous) bound passes; either failure says
what the process printed and whether, and how, it exited.
"""

from __future__ import annotations

import subprocess
import threading
import time
from typing import IO

__all__ = ["ProcessOutput"]


class ProcessOutput:
    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.process = process
        self._lines: dict[str, list[str]] = {"stdout": [], "stderr": []}
        self._changed = threading.Condition()
        self._readers = [
            threading.Thread(target=self._read, args=(name, pipe), daemon=True)
            for name, pipe in (("stdout", process.stdout), ("stderr", process.stderr))
            if pipe is not None
        ]
        for reader in self._readers:
            reader.start()

    def _read(self, name: str, pipe: IO[str]) -> None:
        with pipe:  # closed once the process closed its end
            for line in pipe:
                with self._changed:
                    self._lines[name].append(line.rstrip("\n"))
                    self._changed.notify_all()
        with self._changed:
            self._changed.notify_all()

    @property
    def stdout(self) -> str:
        with self._changed:
            return "\n".join(self._lines["stdout"])

    @property
    def stderr(self) -> str:
        with self._changed:
            return "\n".join(self._lines["stderr"])

    def _seen(self, text: str) -> bool:
        return any(text in line for lines in self._lines.values() for line in lines)

    def wait_for(self, text: str, *, within: float) -> None:
        """Return once a line of stdout or stderr contains ``text``; fail (saying what the
        process printed) when it exits first or ``within`` seconds pass."""
        deadline = time.monotonic() + within
        with self._changed:
            while not self._seen(text):
                if self.process.poll() is not None and not any(
                    reader.is_alive() for reader in self._readers
                ):
                    raise AssertionError(
                        f"the process exited ({self._exit()}) before printing {text!r}:\n"
                        + self.describe()
                    )
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AssertionError(
                        f"no line with {text!r} within {within:g} s (the process "
                        f"{self._exit()}):\n" + self.describe()
                    )
                self._changed.wait(min(remaining, 0.5))

    def finish(self, *, within: float) -> int:
        """Wait for the process to exit and its pipes to close; its exit code."""
        try:
            code = self.process.wait(timeout=within)
        except subprocess.TimeoutExpired as exc:
            raise AssertionError(
                f"the process did not exit within {within:g} s:\n" + self.describe()
            ) from exc
        for reader in self._readers:
            reader.join(timeout=within)
        return code

    def _exit(self) -> str:
        code = self.process.poll()
        return "is still running" if code is None else f"exit status {code}"

    def describe(self) -> str:
        """What the process printed so far, for a failure message."""
        return f"--- stdout ---\n{self.stdout}\n--- stderr ---\n{self.stderr}"
