"""A change's own addresses and routes on a Linux host, and undoing them alone.

A host's configuration is kept as its IPv4 addresses (``[device, address/length]``) and
routes (iproute2's words) by :class:`~adapters.gns3.model._device_state.LinuxKeeper`. The
configuration read just before the change and the one read just after give what the
change did (:func:`host_changes`): the addresses and routes it added and removed.

Undoing it (:func:`plan_host_undo`) touches those alone, on the host as it is now: an
address or route the change added is deleted if it is still there; one it removed is
added again if it is still absent, except a route the change *replaced* (the same
destination, metric and table, another next hop) that was replaced again since: that is a
conflict, named, never overwritten. An address or route someone added since is not
looked at, let alone deleted: the undo is not a difference of the whole state.

Every word of a line comes from the device, so each is checked before it is formatted
into a line: an interface name must be letters, digits and ``. _ - @ :``
(:func:`~adapters.gns3.restore._undo.judged.interface_name`), an address a plain IPv4/IPv6 one
(:mod:`ipaddress`), and a route's words must be a known iproute2 keyword followed by a
value of its kind. What fails is a conflict (``not undone``), never typed into a shell;
what passes is judged by the shell grammar too
(:func:`~adapters.gns3.restore._undo.judged.refusal`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from adapters.gns3.model import DeviceKind
from adapters.gns3.restore._undo.judged import interface_name, ip_value, refusal

__all__ = ["LineUndo", "host_changes", "plan_host_undo", "route_problem"]

JSON = dict[str, Any]


@dataclass(slots=True)
class LineUndo:
    """Commands that undo a change's lines, and what stops them."""

    commands: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    #: Lines already as before the change (nothing to send for them), in words.
    notes: list[str] = field(default_factory=list)
    #: The change's lines the commands undo, in words (what is left if they did not).
    undoes: list[str] = field(default_factory=list)


_NAME = re.compile(r"[a-z0-9_-]{1,32}")
_NUMBER = re.compile(r"[0-9]{1,10}")
#: iproute2 route keywords an undo may type, and the kind of value each takes.
_ROUTE_VALUES = {
    "via": "address",
    "dev": "interface",
    "src": "address",
    "metric": "number",
    "table": "name",
    "proto": "name",
    "scope": "name",
    "mtu": "number",
    "weight": "number",
}
_ROUTE_FLAGS = frozenset({"onlink", "pervasive"})


def _valid(kind: str, value: str) -> bool:
    if kind == "address":
        return ip_value(value)
    if kind == "interface":
        return interface_name(value)
    return bool((_NUMBER if kind == "number" else _NAME).fullmatch(value))


def route_problem(route: str) -> str | None:
    """Why ``route`` (iproute2's words, as ``ip route show`` prints one) may not be typed
    into a shell, else ``None``."""
    words = route.split()
    if not words:
        return "an empty route"
    destination, rest = words[0], words[1:]
    if destination != "default" and not ip_value(destination, network=True):
        return f"{destination!r} is not a plain destination"
    index = 0
    while index < len(rest):
        word = rest[index]
        if word in _ROUTE_FLAGS:
            index += 1
            continue
        kind = _ROUTE_VALUES.get(word)
        if kind is None or index + 1 >= len(rest):
            return f"{word!r} is not a route word the undo types"
        value = rest[index + 1]
        if not _valid(kind, value):
            return f"{value!r} is not a plain {kind} after {word!r}"
        index += 2
    return None


def _address_problem(device: str, cidr: str) -> str | None:
    if not interface_name(device):
        return f"the interface name {device!r} holds characters an undo does not type"
    if not ip_value(cidr, network=True):
        return f"{cidr!r} is not a plain address"
    return None


def _pairs(value: Any) -> list[tuple[str, str]]:
    return [(str(a[0]), str(a[1])) for a in value or [] if isinstance(a, list | tuple)]


def host_changes(before: JSON, after: JSON) -> JSON:
    """What the change did to a host's addresses and routes (see the module docstring)."""
    then_a, now_a = set(_pairs(before.get("addresses"))), set(_pairs(after.get("addresses")))
    then_r = {str(r) for r in before.get("routes") or []}
    now_r = {str(r) for r in after.get("routes") or []}
    return {
        "host": 1,
        "addresses": {
            "added": [list(a) for a in sorted(now_a - then_a)],
            "removed": [list(a) for a in sorted(then_a - now_a)],
        },
        "routes": {"added": sorted(now_r - then_r), "removed": sorted(then_r - now_r)},
    }


def _route_key(route: str) -> tuple[str, str, str]:
    """What makes two routes the same slot: destination, metric, table."""
    words = route.split()
    after = {words[i]: words[i + 1] for i in range(1, len(words) - 1)}
    return words[0] if words else "", after.get("metric", ""), after.get("table", "")


class _Planner:
    def __init__(self, current: JSON, device: str) -> None:
        self.device = device
        self.addresses = set(_pairs(current.get("addresses")))
        self.routes = {str(r) for r in current.get("routes") or []}
        self.undo = LineUndo()

    def line(self, command: str, what: str, problem: str | None) -> None:
        why = problem or refusal(command, DeviceKind.LINUX, config=False)
        if why is not None:
            self.undo.conflicts.append(f"{self.device}: {what} not undone: {why}")
            return
        self.undo.commands.append(command)
        self.undo.undoes.append(what)

    def note(self, text: str) -> None:
        self.undo.notes.append(f"{self.device}: {text}")

    def plan(self, changes: Mapping[str, Any]) -> LineUndo:
        addresses = changes.get("addresses") or {}
        routes = changes.get("routes") or {}
        added_routes = [str(r) for r in routes.get("added") or []]
        for route in added_routes:
            if route in self.routes:
                self.line(f"ip route del {route}", f"route {route}", route_problem(route))
            else:
                self.note(f"route {route} is gone already")
        for device, cidr in _pairs(addresses.get("added")):
            what = f"address {cidr} on {device}"
            if (device, cidr) in self.addresses:
                command = f"ip addr del {cidr} dev {device}"
                self.line(command, what, _address_problem(device, cidr))
            else:
                self.note(f"{what} is gone already")
        for device, cidr in _pairs(addresses.get("removed")):
            what = f"address {cidr} on {device}"
            if (device, cidr) in self.addresses:
                self.note(f"{what} is back already")
            else:
                command = f"ip addr add {cidr} dev {device}"
                self.line(command, what, _address_problem(device, cidr))
        for route in [str(r) for r in routes.get("removed") or []]:
            self.removed_route(route, added_routes)
        return self.undo

    def removed_route(self, route: str, added: Sequence[str]) -> None:
        if route in self.routes:
            self.note(f"route {route} is back already")
            return
        key = _route_key(route)
        replaced_by = [r for r in added if _route_key(r) == key]
        now = sorted(r for r in self.routes if _route_key(r) == key)
        if replaced_by and replaced_by[0] not in self.routes:
            shown = f"is `{'`, `'.join(now)}` now" if now else "was removed since"
            self.undo.conflicts.append(
                f"{self.device}: route {route}, which the change replaced with "
                f"`{replaced_by[0]}`, {shown}: changed again since, so it is not put back "
                "(that would overwrite it)"
            )
            return
        if now and not replaced_by:
            self.undo.conflicts.append(
                f"{self.device}: route {route} the change removed: `{now[0]}` holds its "
                "destination now (made since), so it is not put back"
            )
            return
        self.line(f"ip route add {route}", f"route {route}", route_problem(route))


def plan_host_undo(changes: Mapping[str, Any], current: JSON, device: str) -> LineUndo:
    """The shell commands that undo ``changes`` (:func:`host_changes`) on the ``current``
    addresses and routes, in order: routes deleted, addresses deleted, addresses added,
    routes added; the conflicts and notes name ``device``."""
    return _Planner(current, device).plan(changes)
