"""Errors that teach: a command a device refused, or that was not sent, comes back with the
platform it met and that platform's right form, so the model's next call can be right.

The right forms are the skills' (front matter ``hint`` of a platform's skill); a command
written for another platform that has a known equivalent is translated as well, with its
own values (IOS's ``ip address 10.0.0.1 255.255.255.0`` on VPCS is ``ip 10.0.0.1/24``).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable

from adapters.gns3.model._grammar import LABELS
from adapters.gns3.model._platforms import DeviceKind

__all__ = ["platform_hint"]

_IOS_ADDRESS = re.compile(
    r"^\s*ip\s+address\s+(\d{1,3}(?:\.\d{1,3}){3})\s+(\d{1,3}(?:\.\d{1,3}){3})\s*$", re.I
)


def platform_hint(kind: DeviceKind, commands: Iterable[str], right_forms: str) -> str:
    """What to tell the model about ``commands`` that failed or were refused on a ``kind``
    device: which platform it is, the form a translated command takes there, and the
    platform's right forms (``right_forms``, from the skills)."""
    parts = [f"This is {LABELS[kind]}."]
    for command in commands:
        translated = _translation(kind, command)
        if translated:
            parts.append(f"For {command.strip()!r} use `{translated}` here.")
    if right_forms:
        parts.append(f"On {LABELS[kind]}: {right_forms}.")
    return " ".join(parts)


def _translation(kind: DeviceKind, command: str) -> str | None:
    if kind is DeviceKind.VPCS:
        match = _IOS_ADDRESS.match(command)
        if match:
            try:
                network = ipaddress.IPv4Network(f"0.0.0.0/{match.group(2)}")
            except ValueError:
                return None
            return f"ip {match.group(1)}/{network.prefixlen} <gateway>"
    return None
