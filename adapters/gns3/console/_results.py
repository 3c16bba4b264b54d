"""What a console run is given and gives back: where the console is
(:class:`ConsoleTarget`), the bounds its session keeps (:class:`ConsoleBounds`), each
command's outcome (:class:`CommandOutcome`) and a console's transcript
(:class:`ConsoleTranscript`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from adapters.gns3.model import DeviceKind

__all__ = ["REJECTED", "CommandOutcome", "ConsoleBounds", "ConsoleTarget", "ConsoleTranscript"]

#: A command's error when the device answered it with its CLI's error message.
REJECTED = "the device rejected the command"


@dataclass(frozen=True, slots=True)
class ConsoleTarget:
    """Where a device's console is and how it behaves."""

    name: str
    host: str
    port: int
    kind: DeviceKind
    #: What the console takes as Enter: ``\r\n`` for most (telnet's end of line), ``\r``
    #: for a Docker node's console, which is in binary mode and takes ``\r\n`` as two.
    enter: str = "\r\n"


@dataclass(frozen=True, slots=True)
class ConsoleBounds:
    """How long and how much one session with a console may wait and read: the
    :class:`~adapters.gns3.console._runner.ConsoleRunner`'s settings, handed to each session it
    drives (seconds, characters)."""

    command_timeout: float = 30.0
    #: how long a fresh console may take to show its prompt (bounded by the above too)
    wake_timeout: float = 10.0
    #: quiet time that ends a drain of what a console printed unasked
    drain_quiet: float = 0.15
    #: how long an interrupted command may take to give the prompt back
    recovery_timeout: float = 5.0
    max_output_chars: int = 20_000
    #: characters one command may print before it is interrupted (a flood: ``yes``)
    flood_chars: int = 1_000_000


@dataclass(slots=True)
class CommandOutcome:
    """One command's result: its cleaned output and what went wrong, if anything.

    ``late_output`` is what the device printed after its prompt had come back (a log
    message); ``parsed`` holds TextFSM rows when a template knows the command.
    ``interrupted``: the runner stopped the command because its output flooded or was not
    text (``truncated`` too; ``error`` says which); a command stopped at its time limit
    says ``timed_out`` instead.
    """

    command: str
    output: str = ""
    truncated: bool = False
    timed_out: bool = False
    interrupted: bool = False
    error: str | None = None
    late_output: str = ""
    parsed: list[dict[str, Any]] | None = None

    @property
    def ok(self) -> bool:
        return not self.timed_out and not self.interrupted and self.error is None

    def to_dict(self) -> dict[str, Any]:
        result: dict[str, Any] = {"command": self.command, "output": self.output}
        if self.parsed is not None:
            result["parsed"] = self.parsed
        if self.truncated:
            result["truncated"] = True
        if self.timed_out:
            result["timed_out"] = True
        if self.interrupted:
            result["interrupted"] = True
        if self.error is not None:
            result["error"] = self.error
        if self.late_output:
            result["late_output"] = self.late_output
        return result


@dataclass(slots=True)
class ConsoleTranscript:
    """What happened on one console: the outcome of each command that was attempted."""

    target: ConsoleTarget
    outcomes: list[CommandOutcome] = field(default_factory=list)
    error: str | None = None
    #: The prompt the console showed when the run reached it (empty: it never did).
    prompt: str = ""
