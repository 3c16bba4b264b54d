"""What may be sent to a device: the forbidden-command filter and teaching's rule.

Both read a command the way the device's CLI does (:mod:`adapters.gns3.model._grammar`):
abbreviations, aliases and ``@`` expanded, ``do`` taken off, a shell line split into its
commands. The forbidden filter blocks commands that hang a console or harm a lab
(``traceroute`` to a black hole, ``debug all``, ``reload``, ``erase``…) in every mode and
every spelling the device accepts; teaching mode additionally refuses every command not
known to be read-only on the device's platform (:func:`configuration_reason`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from adapters.gns3.model._grammar import LABELS, forbidden_match, judge
from adapters.gns3.model._platforms import DeviceKind, device_kind_of

__all__ = [
    "DEFAULT_FORBIDDEN_COMMANDS",
    "DeviceKind",
    "ForbiddenCommandFilter",
    "configuration_reason",
    "device_kind_of",
    "teaching_refusal",
]

DEFAULT_FORBIDDEN_COMMANDS: tuple[str, ...] = (
    "traceroute",
    "tracepath",
    "tracert",
    "trace",
    "ping -f",
    "debug",
    "test",
    "reload",
    "erase",
    "format",
    "delete",
    "write erase",
)


@dataclass(frozen=True, slots=True)
class ForbiddenCommandFilter:
    """Commands never sent to a device: leading words, matched case-insensitively on the
    command as the device's platform reads it (every platform's reading when it is not
    known: :attr:`DeviceKind.GENERIC`)."""

    prefixes: tuple[str, ...] = DEFAULT_FORBIDDEN_COMMANDS

    @classmethod
    def from_lines(cls, lines: Iterable[str]) -> ForbiddenCommandFilter:
        """One prefix a line; blank lines and ``#`` comments are ignored."""
        prefixes = []
        for line in lines:
            text = line.split("#", 1)[0].strip()
            if text:
                prefixes.append(" ".join(text.lower().split()))
        return cls(tuple(prefixes))

    def reason(
        self, command: str, kind: DeviceKind = DeviceKind.GENERIC, *, config: bool = False
    ) -> str | None:
        """Why ``command`` is forbidden on a ``kind`` device, or ``None`` when it may be sent."""
        prefix = forbidden_match(command, kind, self.prefixes, config=config)
        if prefix is None:
            return None
        return (
            f"'{prefix}' commands are forbidden on lab consoles (they can hang the console or "
            f"damage the lab); {command.strip()!r} is one, as {LABELS[kind]} reads it. The "
            "command was not sent."
        )


def teaching_refusal(command: str, kind: DeviceKind, why: str | None) -> str:
    return (
        f"{command.strip()!r} was not sent: {why or 'it is not known to be read-only'}; "
        f"teaching mode only runs read-only commands (on {LABELS[kind]}'s read-only list). "
        "Explain the change to the student instead, or switch to the lab automation assistant."
    )


def configuration_reason(command: str, kind: DeviceKind) -> str | None:
    """Why teaching mode refuses ``command`` on a ``kind`` device (it is not known to be
    read-only there), or ``None``."""
    verdict = judge(command, kind)
    if not verdict.changes:
        return None
    return teaching_refusal(command, kind, verdict.reason)
