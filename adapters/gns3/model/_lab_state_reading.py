"""A node's state read from its show output, per platform (pure: outputs in, parts out).

:func:`reads_for` lists the commands a platform is asked (the ones ``verify_intent``
sends, read by the same parsers), :func:`node_state` turns their outputs into a
:class:`~adapters.gns3.model._lab_state.NodeState`:

=============  =========================  ===========================  =======================
part           frr (vtysh)                cisco_ios / arista_eos       juniper_junos
=============  =========================  ===========================  =======================
interfaces     ``show interface brief``   ``show ip interface brief``  ``show interfaces
                                                                       terse``
ospf           ``show ip ospf neighbor``  ``show ip ospf neighbor``    ``show ospf neighbor``
bgp            ``show bgp summary``       ``show ip bgp summary``      ``show bgp summary``
routes         ``show ip route``          ``show ip route``            (not read: no parser)
config         ``show running-config``    ``show running-config``      ``show configuration
                                          (enable)                     | display set``
=============  =========================  ===========================  =======================

VPCS: ``show ip`` (its address, and the routes it implies: the connected network and the
default via the gateway). Linux: ``ip -o link show``, ``ip -4 -o addr show``, ``ip -4 route
show``. A generic device is not read. The configuration is kept as a restore point keeps
it (:mod:`adapters.gns3.model._device_state`: lines that change by themselves left out).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from adapters.gns3.model._device_state import LinuxKeeper, VpcsKeeper, keeper_for
from adapters.gns3.model._intent_compile import interface_row_state
from adapters.gns3.model._intent_reading import Output, is_address
from adapters.gns3.model._intent_routing import (
    ROUTE_CODES,
    bgp_peer_state,
    installed_routes,
    ospf_state,
)
from adapters.gns3.model._lab_state import InterfaceState, Neighbor, NodeState, Route
from adapters.gns3.model._platforms import DeviceKind

__all__ = ["PCS", "Read", "node_state", "reads_for"]

#: The kinds whose reachability to each other is measured (they ping with a count).
PCS = frozenset({DeviceKind.VPCS, DeviceKind.LINUX})
#: A route's protocol by its code (``O`` is ``ospf``).
_PROTOCOLS = {code: name for name, code in ROUTE_CODES.items()}


@dataclass(frozen=True, slots=True)
class Read:
    """One command a node is asked, for one part of its state."""

    part: str
    command: str
    privileged: bool = False


_ROUTER_READS: dict[DeviceKind, tuple[Read, ...]] = {
    DeviceKind.FRR: (
        Read("interfaces", "show interface brief"),
        Read("ospf", "show ip ospf neighbor"),
        Read("bgp", "show bgp summary"),
        Read("routes", "show ip route"),
        Read("config", "show running-config"),
    ),
    DeviceKind.CISCO_IOS: (
        Read("interfaces", "show ip interface brief"),
        Read("ospf", "show ip ospf neighbor"),
        Read("bgp", "show ip bgp summary"),
        Read("routes", "show ip route"),
        Read("config", "show running-config", privileged=True),
    ),
    DeviceKind.JUNIPER_JUNOS: (
        Read("interfaces", "show interfaces terse"),
        Read("ospf", "show ospf neighbor"),
        Read("bgp", "show bgp summary"),
        Read("config", "show configuration | display set"),
    ),
    DeviceKind.VPCS: (Read("interfaces", "show ip"),),
    DeviceKind.LINUX: (
        Read("links", "ip -o link show"),
        Read("interfaces", "ip -4 -o addr show"),
        Read("routes", "ip -4 route show"),
    ),
}
_ROUTER_READS[DeviceKind.ARISTA_EOS] = _ROUTER_READS[DeviceKind.CISCO_IOS]
#: What a platform cannot be asked, and why (said in the state's ``unread``).
_NOT_READ: dict[DeviceKind, dict[str, str]] = {
    DeviceKind.JUNIPER_JUNOS: {"routes": "no parser reads Junos' show route"},
}


def reads_for(kind: DeviceKind) -> tuple[Read, ...]:
    """The commands a ``kind`` node is asked (none for a device of no known platform)."""
    return _ROUTER_READS.get(kind, ())


Got = Mapping[str, "Output | str"]


def node_state(name: str, kind: DeviceKind, got: Got) -> NodeState:
    """The node's state from what each of :func:`reads_for`'s commands gave: its output,
    or (text) why there is none. A part that cannot be read is ``None``, its reason in
    ``unread``."""
    unread: dict[str, str] = dict(_NOT_READ.get(kind, {}))
    outputs: dict[str, Output] = {}
    for read in reads_for(kind):
        answer = got.get(read.command, "the command was not run")
        if isinstance(answer, str):
            unread[read.part] = answer
        else:
            outputs[read.part] = answer
    parts: dict[str, Any] = {}
    readers = _HOST_READERS if kind in PCS else _ROUTER_READERS
    for part, reader in readers:
        if _needs(kind, part) not in outputs:
            continue
        try:
            parts[part] = reader(kind, outputs)
        except _UnreadableError as exc:
            unread[part] = str(exc)
    neighbors: tuple[Neighbor, ...] | None = None
    if kind not in PCS and ("ospf" in parts or "bgp" in parts):
        neighbors = (*parts.get("ospf", ()), *parts.get("bgp", ()))
    return NodeState(
        name,
        kind.value,
        "started",
        True,
        interfaces=parts.get("interfaces"),
        neighbors=neighbors,
        routes=parts.get("routes"),
        config=parts.get("config"),
        unread=tuple(sorted(unread.items())),
    )


class _UnreadableError(Exception):
    """Output that is not what the command prints (its reason, for ``unread``)."""


#: What a router prints for a protocol it does not run (``% OSPF instance not found``,
#: ``% BGP not active``, ``% BGP inactive``, ``BGP is not running``).
_NOT_RUNNING = re.compile(r"not (?:found|active|running|enabled|configured)|inactive", re.I)


def _rows(output: Output) -> list[dict[str, Any]]:
    if output.rows is not None:
        return output.rows
    # nothing printed, or only that the protocol does not run: nothing there
    if all(_NOT_RUNNING.search(line) for line in output.lines):
        return []
    raise _UnreadableError(f"the output of {output.command!r} could not be parsed")


def _updown(text: str) -> str:
    return "up" if text.strip().lower() == "up" else "down"


# ------------------------------------------------------------------ routers
def _router_interfaces(kind: DeviceKind, outputs: dict[str, Output]) -> tuple[InterfaceState, ...]:
    output = outputs["interfaces"]
    if kind is DeviceKind.JUNIPER_JUNOS:
        return _junos_terse(output)
    found: list[InterfaceState] = []
    for row in _rows(output):
        admin, link = interface_row_state(kind, row)
        if kind is DeviceKind.FRR:
            addresses = tuple(str(a) for a in row.get("addresses") or [])
        else:
            address = str(row.get("ip_address", ""))
            addresses = (address,) if is_address(address.split("/", 1)[0]) else ()
        found.append(
            InterfaceState(str(row["interface"]), _updown(admin), _updown(link), addresses)
        )
    return tuple(sorted(found, key=lambda i: i.name))


def _junos_terse(output: Output) -> tuple[InterfaceState, ...]:
    """``show interfaces terse``: ``ge-0/0/1.0  up  up  inet  10.0.12.1/30`` lines (a
    further address on a line of its own under them)."""
    rows: list[list[Any]] = []
    for raw in output.text.splitlines():
        words = raw.split()
        if not words or words[0] == "Interface":
            continue
        if raw[:1].isspace() and rows:
            if "inet" in words and words.index("inet") + 1 < len(words):
                rows[-1][3].append(words[words.index("inet") + 1])
            continue
        if len(words) < 3 or words[1] not in ("up", "down") or words[2] not in ("up", "down"):
            continue
        addresses = [words[4]] if len(words) > 4 and words[3] == "inet" else []
        rows.append([words[0], words[1], words[2], addresses])
    if not rows and output.lines:
        raise _UnreadableError("the output of 'show interfaces terse' could not be parsed")
    found = [InterfaceState(r[0], r[1], r[2], tuple(r[3])) for r in rows]
    return tuple(sorted(found, key=lambda i: i.name))


def _ospf(kind: DeviceKind, outputs: dict[str, Output]) -> tuple[Neighbor, ...]:
    found: dict[str, Neighbor] = {}
    for row in _rows(outputs["ospf"]):
        neighbor = Neighbor(
            "ospf",
            str(row.get("neighbor_id", "")),
            ospf_state(str(row.get("state", ""))),
            str(row.get("address") or row.get("ip_address") or ""),
            str(row.get("interface", "")),
        )
        found[neighbor.neighbor] = neighbor
    return tuple(found[key] for key in sorted(found))


def _bgp(kind: DeviceKind, outputs: dict[str, Output]) -> tuple[Neighbor, ...]:
    found: dict[str, Neighbor] = {}
    for row in _rows(outputs["bgp"]):
        peer, state = bgp_peer_state(kind, row)
        found.setdefault(peer, Neighbor("bgp", peer, state, peer))
    return tuple(found[key] for key in sorted(found))


def _hops(route: Mapping[str, Any]) -> tuple[str, ...]:
    hops = [str(h) for h in route["nexthops"]]
    addresses = [h for h in hops if is_address(h)]
    chosen = addresses or [str(i) for i in route["interfaces"]] or hops
    return tuple(sorted(set(chosen)))


def _router_routes(kind: DeviceKind, outputs: dict[str, Output]) -> tuple[Route, ...]:
    routes = installed_routes(kind, _rows(outputs["routes"]))
    found = {
        str(r["prefix"]): Route(
            str(r["prefix"]), _PROTOCOLS.get(str(r["code"]).upper(), str(r["code"])), _hops(r)
        )
        for r in routes
    }
    return tuple(found[key] for key in sorted(found))


def _config(kind: DeviceKind, outputs: dict[str, Output]) -> tuple[str, ...]:
    keeper = keeper_for(kind)
    assert keeper is not None
    try:
        kept = keeper.parse([outputs["config"].text])
    except ValueError as exc:
        raise _UnreadableError(str(exc)) from None
    return tuple(str(line) for line in kept.get("lines") or kept.get("set") or [])


# ------------------------------------------------------------------ hosts
def _vpcs(outputs: dict[str, Output]) -> tuple[str, str]:
    try:
        kept = VpcsKeeper().parse([outputs["interfaces"].text])
    except ValueError as exc:
        raise _UnreadableError(str(exc)) from None
    return str(kept["ip"]), str(kept["gateway"])


def _host_interfaces(kind: DeviceKind, outputs: dict[str, Output]) -> tuple[InterfaceState, ...]:
    if kind is DeviceKind.VPCS:
        ip, _ = _vpcs(outputs)
        addresses = () if ip.startswith("0.0.0.0") else (ip,)
        return (InterfaceState("e0", None, None, addresses),)
    # without ``ip -o link show`` (see ``unread``) the addresses still are read
    links = _linux_links(outputs["links"]) if "links" in outputs else {}
    kept = LinuxKeeper().parse([outputs["interfaces"].text, ""])
    by_device: dict[str, list[str]] = {}
    for device, cidr in kept["addresses"]:
        by_device.setdefault(str(device), []).append(str(cidr))
    found = []
    for name in sorted(set(links) | set(by_device)):
        admin, link = links.get(name, (None, None))
        found.append(InterfaceState(name, admin, link, tuple(by_device.get(name, []))))
    return tuple(found)


_LINK = re.compile(r"^\d+:\s+(?P<name>[^:@\s]+)(?:@\S+)?:\s+<(?P<flags>[^>]*)>")


def _linux_links(output: Output) -> dict[str, tuple[str, str]]:
    """``ip -o link show``: each device's (admin, link) from its flags (``UP``,
    ``LOWER_UP``), the loopback left out."""
    found: dict[str, tuple[str, str]] = {}
    for line in output.lines:
        match = _LINK.match(line.strip())
        if match is None or match["name"] == "lo":
            continue
        flags = set(match["flags"].split(","))
        found[match["name"]] = (
            "up" if "UP" in flags else "down",
            "up" if "LOWER_UP" in flags else "down",
        )
    if not found and output.lines:
        raise _UnreadableError("the output of 'ip -o link show' could not be parsed")
    return found


def _host_routes(kind: DeviceKind, outputs: dict[str, Output]) -> tuple[Route, ...]:
    if kind is DeviceKind.VPCS:
        ip, gateway = _vpcs(outputs)
        routes = []
        if not ip.startswith("0.0.0.0"):
            network = ipaddress.ip_interface(ip).network
            routes.append(Route(str(network), "connected", ("e0",)))
            if gateway not in ("", "0.0.0.0"):
                routes.append(Route("0.0.0.0/0", "static", (gateway,)))
        return tuple(sorted(routes, key=lambda r: r.prefix))
    found: dict[str, Route] = {}
    for line in outputs["routes"].lines:
        words = line.split()
        if not words or words[0] in ("broadcast", "local", "unreachable", "blackhole"):
            continue
        prefix = "0.0.0.0/0" if words[0] == "default" else words[0]
        if is_address(prefix):
            prefix += "/32"
        via = _after(words, "via") or _after(words, "dev") or ""
        proto = _after(words, "proto") or "static"
        protocol = {"kernel": "connected", "boot": "static"}.get(proto, proto)
        found.setdefault(prefix, Route(prefix, protocol, (via,) if via else ()))
    return tuple(found[key] for key in sorted(found))


def _after(words: list[str], key: str) -> str | None:
    return words[words.index(key) + 1] if key in words[:-1] else None


_ROUTER_READERS: tuple[tuple[str, Any], ...] = (
    ("interfaces", _router_interfaces),
    ("ospf", _ospf),
    ("bgp", _bgp),
    ("routes", _router_routes),
    ("config", _config),
)
_HOST_READERS: tuple[tuple[str, Any], ...] = (
    ("interfaces", _host_interfaces),
    ("routes", _host_routes),
)


def _needs(kind: DeviceKind, part: str) -> str:
    """The output a part is read from: its own; VPCS' every part from ``show ip``."""
    return "interfaces" if kind is DeviceKind.VPCS else part
