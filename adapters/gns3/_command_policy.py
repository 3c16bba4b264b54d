"""What may be sent to a device: device kinds, the forbidden-command filter, teaching's rule.

The forbidden filter blocks commands that hang a console or harm a lab (``traceroute``
to a black hole, ``debug all``, ``reload``, ``erase``…) in every mode. Teaching mode
additionally refuses anything that changes a device (:func:`configuration_reason`).
Both match case-insensitively on whole leading words, after collapsing whitespace.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from adapters.gns3._platforms import DeviceKind, device_kind_of

__all__ = [
    "DEFAULT_FORBIDDEN_COMMANDS",
    "DeviceKind",
    "ForbiddenCommandFilter",
    "configuration_reason",
    "device_kind_of",
]

DEFAULT_FORBIDDEN_COMMANDS: tuple[str, ...] = (
    "traceroute",
    "tracepath",
    "tracert",
    "ping -f",
    "debug",
    "test",
    "reload",
    "erase",
    "format",
    "delete",
    "write erase",
)


def _words(command: str) -> list[str]:
    return command.strip().lower().split()


def _starts_with(words: list[str], prefix: list[str]) -> bool:
    return len(words) >= len(prefix) and words[: len(prefix)] == prefix


@dataclass(frozen=True, slots=True)
class ForbiddenCommandFilter:
    """Commands never sent to a device: case-insensitive leading-word prefixes."""

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

    def reason(self, command: str) -> str | None:
        """Why ``command`` is forbidden, or ``None`` when it may be sent."""
        words = _words(command)
        for prefix in self.prefixes:
            if _starts_with(words, prefix.split()):
                return (
                    f"'{prefix}' commands are forbidden on lab consoles (they can hang the "
                    "console or damage the lab); the command was not sent."
                )
        return None


# Teaching mode's read-only rule: leading words that change a device, per kind.
# A Cisco word matches any abbreviation of at least its minimum length ("conf t", "wr").
_CISCO_CHANGES: tuple[tuple[str, int], ...] = (
    ("configure", 4),
    ("write", 2),
    ("copy", 4),
    ("erase", 3),
    ("delete", 3),
    ("reload", 3),
    ("clear", 3),
    ("no", 2),
    ("interface", 3),
    ("hostname", 4),
    ("shutdown", 4),
    ("username", 5),
    ("enable", 6),
)
_VPCS_CHANGES = ("ip", "set", "save", "clear", "load", "dhcp", "arp")
_LINUX_CHANGES: tuple[tuple[str, ...], ...] = (
    ("ip", "addr", "add"),
    ("ip", "addr", "del"),
    ("ip", "address", "add"),
    ("ip", "address", "del"),
    ("ip", "link", "set"),
    ("ip", "route", "add"),
    ("ip", "route", "del"),
    ("ifconfig",),
    ("route", "add"),
    ("route", "del"),
    ("sysctl", "-w"),
    ("iptables",),
    ("rm",),
    ("mv",),
    ("dhclient",),
    ("udhcpc",),
    ("reboot",),
    ("shutdown",),
)


_JUNOS_CHANGES: tuple[tuple[str, int], ...] = (
    ("configure", 4),
    ("edit", 4),
    ("set", 3),
    ("delete", 3),
    ("commit", 3),
    ("rollback", 4),
    ("load", 4),
    ("request", 3),
    ("restart", 4),
    ("clear", 3),
    ("file", 4),
)
_HUAWEI_CHANGES: tuple[tuple[str, int], ...] = (
    ("system-view", 3),
    ("save", 3),
    ("reset", 3),
    ("reboot", 3),
    ("startup", 4),
    ("undo", 2),
    ("delete", 3),
    ("copy", 4),
    ("move", 4),
    ("rename", 4),
    ("format", 4),
    ("interface", 3),
    ("sysname", 3),
)


def _abbreviates(first: str, rules: tuple[tuple[str, int], ...]) -> bool:
    return any(
        len(first) >= min(minimum, len(word)) and word.startswith(first) for word, minimum in rules
    )


def configuration_reason(command: str, kind: DeviceKind) -> str | None:
    """Why teaching mode refuses ``command`` on a ``kind`` device, or ``None``.

    ``enable`` alone is allowed on Cisco (privileged show commands need it);
    ``enable secret``/``enable password`` are configuration and are refused.
    """
    words = _words(command)
    if not words:
        return None
    refusal = (
        f"'{command.strip()}' changes the device's configuration; teaching mode only "
        "runs read-only commands. Explain the change to the student instead, or switch "
        "to the lab automation assistant."
    )
    first = words[0]
    if kind is DeviceKind.VPCS:
        return refusal if first in _VPCS_CHANGES else None
    if kind is DeviceKind.JUNIPER_JUNOS:
        return refusal if _abbreviates(first, _JUNOS_CHANGES) else None
    if kind is DeviceKind.HUAWEI_VRP:
        return refusal if _abbreviates(first, _HUAWEI_CHANGES) else None
    cisco_like = (DeviceKind.CISCO_IOS, DeviceKind.ARISTA_EOS, DeviceKind.FRR, DeviceKind.GENERIC)
    if kind in cisco_like:
        for word, minimum in _CISCO_CHANGES:
            if word == "enable" and len(words) == 1:
                continue
            if len(first) >= min(minimum, len(word)) and word.startswith(first):
                return refusal
        if kind in (DeviceKind.CISCO_IOS, DeviceKind.ARISTA_EOS):
            return None
    if kind is DeviceKind.GENERIC and (
        _abbreviates(first, _HUAWEI_CHANGES) or first in ("set", "commit", "delete")
    ):
        return refusal
    for prefix in _LINUX_CHANGES:
        if _starts_with(words, list(prefix)):
            return refusal
    return None
