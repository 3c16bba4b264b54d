"""What the intent compiler reads in show output: addresses, interface names, evidence.

* :class:`Output` — one command's cleaned output and its parsed rows (``None``: no parser);
* :func:`address_reads` / :func:`addresses` — the command that lists a node's IPv4
  addresses on its platform, and the addresses in its output (to resolve a check's node
  name to the addresses it answers on);
* :func:`same_interface` — ``Gi0/0`` is ``GigabitEthernet0/0``; ``eth1`` is ``eth1``;
* :func:`lines_with` — the output lines that mention something (the evidence).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from adapters.gns3.model._platforms import DeviceKind
from copilot_core.intent import is_plain_address

__all__ = [
    "Output",
    "address_reads",
    "addresses",
    "head",
    "is_address",
    "lines_with",
    "same_interface",
]

Rows = list[dict[str, Any]]


@dataclass(frozen=True, slots=True)
class Output:
    command: str
    text: str
    rows: Rows | None = None

    @property
    def lines(self) -> list[str]:
        return [line.rstrip() for line in self.text.splitlines() if line.strip()]


def is_address(text: str) -> bool:
    """A plain IPv4 or IPv6 address (no prefix length; an IPv6 scope id only of letters,
    digits and ``_ . -``): what may be formatted into a ping as the address it is."""
    return is_plain_address(text)


#: The command that lists a node's addresses, per platform.
_ADDRESS_READS: dict[DeviceKind, str] = {
    DeviceKind.VPCS: "show ip",
    DeviceKind.FRR: "show interface brief",
    DeviceKind.CISCO_IOS: "show ip interface brief",
    DeviceKind.ARISTA_EOS: "show ip interface brief",
    DeviceKind.JUNIPER_JUNOS: "show interfaces terse",
    DeviceKind.LINUX: "ip -4 -o addr show",
}
_IPV4 = re.compile(r"(?<![\d.])(\d{1,3}(?:\.\d{1,3}){3})(?:/\d{1,2})?(?![\d.])")


def address_reads(kind: DeviceKind) -> str | None:
    return _ADDRESS_READS.get(kind)


def addresses(kind: DeviceKind, output: Output) -> list[str]:
    """The node's own IPv4 addresses (not loopback 127/8, not 0.0.0.0), in order."""
    found: list[str] = []
    if kind is DeviceKind.VPCS:
        for line in output.lines:
            if line.startswith("IP/MASK"):
                found += _IPV4.findall(line)
    elif kind is DeviceKind.FRR and output.rows is not None:
        for row in output.rows:
            for text in row.get("addresses") or []:
                found += _IPV4.findall(str(text))
    elif kind in (DeviceKind.CISCO_IOS, DeviceKind.ARISTA_EOS) and output.rows is not None:
        for row in output.rows:
            found += _IPV4.findall(str(row.get("ip_address", "")))
    elif kind is DeviceKind.JUNIPER_JUNOS:
        for line in output.lines:
            if " inet " in f" {line} ":
                found += _IPV4.findall(line.split("inet", 1)[1])[:1]
    elif kind is DeviceKind.LINUX:
        for line in output.lines:
            if " inet " in line:
                found += _IPV4.findall(line.split(" inet ", 1)[1])[:1]
    return [a for a in dict.fromkeys(found) if not a.startswith(("127.", "0.0.0.0"))]


_IF_NAME = re.compile(r"^([A-Za-z\-]*)(.*)$")


def same_interface(wanted: str, name: str) -> bool:
    """``wanted`` names interface ``name``: equal ignoring case, or its letters abbreviate
    ``name``'s and the numbers are the same (``Gi0/0``, ``ge-0/0/0.0`` for ``ge-0/0/0``)."""
    a, b = wanted.strip().lower(), name.strip().lower()
    if a == b:
        return True
    ma, mb = _IF_NAME.match(a), _IF_NAME.match(b)
    assert ma is not None
    assert mb is not None
    letters_a, rest_a = ma.groups()
    letters_b, rest_b = mb.groups()
    if not rest_a or not letters_a:
        return False
    return letters_b.startswith(letters_a) and rest_a == rest_b


def lines_with(output: Output, needles: Iterable[str], limit: int = 8) -> tuple[str, ...]:
    """The output's lines that contain one of ``needles`` (as a word), at most ``limit``."""
    words = [n for n in needles if n]
    patterns = [re.compile(rf"(?<![\w.]){re.escape(n)}(?![\w]|\.\d)", re.IGNORECASE) for n in words]
    found = [line for line in output.lines if any(p.search(line) for p in patterns)]
    return tuple(found[:limit])


def head(output: Output, limit: int = 8) -> tuple[str, ...]:
    """The first lines of the output (the evidence when nothing matched)."""
    return tuple(output.lines[:limit])
