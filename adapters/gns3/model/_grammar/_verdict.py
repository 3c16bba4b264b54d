"""A command's verdict on one platform: what the device reads, and whether it changes it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from adapters.gns3.model._grammar._words import Expansion
from adapters.gns3.model._platforms import DeviceKind

__all__ = ["LABELS", "Verdict"]

LABELS: dict[DeviceKind, str] = {
    DeviceKind.VPCS: "VPCS",
    DeviceKind.CISCO_IOS: "Cisco IOS",
    DeviceKind.ARISTA_EOS: "Arista EOS",
    DeviceKind.JUNIPER_JUNOS: "Junos",
    DeviceKind.FRR: "FRR (vtysh)",
    DeviceKind.LINUX: "the Linux shell",
    DeviceKind.HUAWEI_VRP: "Huawei VRP",
    DeviceKind.GENERIC: "a device of unknown platform",
}


@dataclass(frozen=True, slots=True)
class Verdict:
    """One command judged on one platform.

    ``expanded`` is the command as the device reads it (abbreviations and aliases
    expanded); ``changes`` is true unless the command is known to be read-only there
    (default deny), and ``reason`` then says why. ``runs`` are the commands the line
    makes the device run (a shell line runs several), as read: the forbidden list is
    matched on them. ``known``: the platform recognises the command's first word (an
    unknown or ambiguous one is refused by the device itself).
    """

    command: str
    platform: DeviceKind
    expanded: str
    changes: bool
    reason: str | None = None
    runs: tuple[Expansion, ...] = ()
    known: bool = True

    @property
    def read_only(self) -> bool:
        return not self.changes

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "command": self.command,
            "expanded": self.expanded,
            "changes": self.changes,
        }
        if self.reason:
            data["reason"] = self.reason
        return data
