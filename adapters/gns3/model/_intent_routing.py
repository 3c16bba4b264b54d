"""Routing checks compiled per platform: OSPF neighbours, BGP sessions, routes (see
:mod:`adapters.gns3.model._intent_compile` for the table of commands)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from adapters.gns3.model._intent_plans import Plan, targets, unparsed, unsupported
from adapters.gns3.model._intent_reading import Output, head, lines_with, same_interface
from adapters.gns3.model._platforms import DeviceKind
from copilot_core.intent import (
    BgpSessionCheck,
    Evidence,
    Observation,
    OspfNeighborCheck,
    RouteCheck,
)

__all__ = [
    "ROUTE_CODES",
    "bgp_peer_state",
    "bgp_plan",
    "installed_routes",
    "ospf_plan",
    "ospf_state",
    "route_plan",
]


# ------------------------------------------------------------------ OSPF
_OSPF_COMMAND = {
    DeviceKind.FRR: "show ip ospf neighbor",
    DeviceKind.CISCO_IOS: "show ip ospf neighbor",
    DeviceKind.ARISTA_EOS: "show ip ospf neighbor",
    DeviceKind.JUNIPER_JUNOS: "show ospf neighbor",
}


def ospf_state(text: str) -> str:
    """An OSPF neighbour's state in lower case without its role: ``FULL/DR`` is ``full``."""
    return text.split("/", 1)[0].strip().lower().replace("-", "")


def ospf_plan(
    check: OspfNeighborCheck,
    node: str,
    kind: DeviceKind,
    resolved: Mapping[str, Sequence[str]],
) -> Plan | Observation:
    command = _OSPF_COMMAND.get(kind)
    if command is None:
        return unsupported(check, kind)
    ids = targets(check.neighbor, resolved)
    if not ids:
        return Observation.error(f"{check.neighbor} has no IPv4 address", transient=True)

    def decide(output: Output) -> Observation:
        if output.rows is None:
            return unparsed(node, output)
        rows = [
            row
            for row in output.rows
            if row.get("neighbor_id") in ids or (row.get("address") or row.get("ip_address")) in ids
        ]
        if not rows:
            observed: dict[str, Any] = {"neighbor": check.neighbor, "state": "absent"}
            evidence = Evidence(node, command, head(output, 6))
            if check.state == "down":
                return Observation.passed(observed, evidence)
            return Observation.failed(
                observed, f"{node} has no OSPF neighbour {check.neighbor}", evidence
            )
        row = rows[0]
        state = ospf_state(str(row.get("state", "")))
        address = row.get("address") or row.get("ip_address")
        observed = {
            "neighbor": check.neighbor,
            "neighbor_id": row.get("neighbor_id"),
            "address": address,
            "state": state,
            "interface": row.get("interface"),
        }
        evidence = Evidence(node, command, lines_with(output, [str(row.get("neighbor_id"))]))
        if state == check.state:
            return Observation.passed(observed, evidence)
        return Observation.failed(
            observed,
            f"{node}'s OSPF neighbour {check.neighbor} is {state}, not {check.state}",
            evidence,
        )

    return Plan(node, command, decide)


# ------------------------------------------------------------------ BGP
_BGP_COMMAND = {
    DeviceKind.FRR: "show bgp summary",
    DeviceKind.CISCO_IOS: "show ip bgp summary",
    DeviceKind.ARISTA_EOS: "show ip bgp summary",
    DeviceKind.JUNIPER_JUNOS: "show bgp summary",
}


def bgp_peer_state(kind: DeviceKind, row: dict[str, object]) -> tuple[str, str]:
    """(peer address, state in lower case) of a summary row, per platform's template."""
    if kind is DeviceKind.FRR:
        state = str(row.get("state", ""))
        # FRR prints (Policy) for an established eBGP session without a policy (RFC 8212)
        established = state in ("Established", "(Policy)")
        return str(row.get("neighbor")), "established" if established else state.lower()
    if kind is DeviceKind.CISCO_IOS:
        state = str(row.get("state_or_prefixes_received", ""))
        peer = str(row.get("bgp_neighbor"))
        return peer, "established" if state.isdigit() else state.split()[0].lower()
    if kind is DeviceKind.ARISTA_EOS:
        state = str(row.get("state", ""))
        return str(row.get("bgp_neigh")), "established" if state.startswith(
            "Estab"
        ) else state.lower()
    state = str(row.get("state", ""))
    established = state.startswith("Establ") or bool(str(row.get("active", "")).isdigit())
    return str(row.get("peer_ip")), "established" if established else state.lower()


def bgp_plan(
    check: BgpSessionCheck, node: str, kind: DeviceKind, resolved: Mapping[str, Sequence[str]]
) -> Plan | Observation:
    command = _BGP_COMMAND.get(kind)
    if command is None:
        return unsupported(check, kind)
    peers = targets(check.peer, resolved)
    if not peers:
        return Observation.error(f"{check.peer} has no IPv4 address", transient=True)

    def decide(output: Output) -> Observation:
        if output.rows is None:
            return unparsed(node, output)
        found = [(bgp_peer_state(kind, row), row) for row in output.rows]
        matched = [(peer, state) for (peer, state), _ in found if peer in peers]
        if not matched:
            observed: dict[str, Any] = {"peer": check.peer, "state": "absent"}
            evidence = Evidence(node, command, head(output, 6))
            return Observation.failed(observed, f"{node} has no BGP peer {check.peer}", evidence)
        peer, state = matched[0]
        observed = {"peer": check.peer, "address": peer, "state": state}
        evidence = Evidence(node, command, lines_with(output, [peer]))
        if state == check.state:
            return Observation.passed(observed, evidence)
        return Observation.failed(
            observed,
            f"{node}'s BGP session with {check.peer} is {state}, not {check.state}",
            evidence,
        )

    return Plan(node, command, decide)


# ------------------------------------------------------------------ routes
ROUTE_CODES = {
    "connected": "C",
    "static": "S",
    "ospf": "O",
    "bgp": "B",
    "rip": "R",
    "isis": "I",
    "eigrp": "D",
    "kernel": "K",
    "local": "L",
}


def installed_routes(kind: DeviceKind, rows: list[dict[str, object]]) -> list[dict[str, object]]:
    """Installed routes as ``{prefix, code, nexthops, interfaces}``, one per prefix."""
    merged: dict[str, dict[str, object]] = {}
    for row in rows:
        if kind is DeviceKind.FRR:
            if not row.get("selected"):
                continue
            prefix, code = str(row["prefix"]), str(row.get("code", ""))
            hops, ifs = [str(row.get("nexthop", ""))], [str(row.get("interface", ""))]
        else:
            prefix = f"{row.get('network')}/{row.get('prefix_length')}"
            code = str(row.get("protocol", "")).split()[0] if row.get("protocol") else ""
            if kind is DeviceKind.ARISTA_EOS:
                hops = [str(h) for h in row.get("next_hop") or []]  # type: ignore[attr-defined]
                ifs = [str(i) for i in row.get("interface") or []]  # type: ignore[attr-defined]
            else:
                hops, ifs = [str(row.get("nexthop_ip", ""))], [str(row.get("nexthop_if", ""))]
        entry = merged.setdefault(
            prefix, {"prefix": prefix, "code": code, "nexthops": [], "interfaces": []}
        )
        entry["nexthops"] = [*entry["nexthops"], *(h for h in hops if h)]  # type: ignore[misc]
        entry["interfaces"] = [*entry["interfaces"], *(i for i in ifs if i)]  # type: ignore[misc]
    return list(merged.values())


def route_plan(
    check: RouteCheck, node: str, kind: DeviceKind, resolved: Mapping[str, Sequence[str]]
) -> Plan | Observation:
    if kind not in (DeviceKind.FRR, DeviceKind.CISCO_IOS, DeviceKind.ARISTA_EOS):
        why = ": no parser reads its routing table" if kind is DeviceKind.JUNIPER_JUNOS else ""
        return unsupported(check, kind, why)
    command = "show ip route"
    via_addresses = targets(check.via, resolved) if check.via else []

    def decide(output: Output) -> Observation:
        if output.rows is None:
            return unparsed(node, output)
        routes = [r for r in installed_routes(kind, output.rows) if r["prefix"] == check.prefix]
        code = ROUTE_CODES.get(check.protocol or "")
        network = check.prefix.split("/", 1)[0]
        deciding = lines_with(output, [check.prefix, network])
        if not routes:
            observed: dict[str, Any] = {"prefix": check.prefix, "present": False}
            evidence = Evidence(node, command, deciding or head(output, 4))
            if not check.present:
                return Observation.passed(observed, evidence)
            return Observation.failed(observed, f"{node} has no route to {check.prefix}", evidence)
        route = routes[0]
        observed = {
            "prefix": check.prefix,
            "present": True,
            "code": route["code"],
            "via": route["nexthops"],
            "interfaces": route["interfaces"],
        }
        evidence = Evidence(node, command, deciding)
        if not check.present:
            return Observation.failed(
                observed, f"{node} still has a route to {check.prefix}", evidence
            )
        if code is not None and str(route["code"]).upper() != code.upper():
            return Observation.failed(
                observed,
                f"{node}'s route to {check.prefix} is {route['code']}, not {check.protocol}",
                evidence,
            )
        if check.via:
            hops = [str(h) for h in route["nexthops"]]  # type: ignore[attr-defined]
            ifs = [str(i) for i in route["interfaces"]]  # type: ignore[attr-defined]
            by_hop = any(h in via_addresses or h == check.via for h in hops)
            by_if = any(same_interface(check.via, i) for i in ifs)
            if not (by_hop or by_if):
                return Observation.failed(
                    observed, f"{node}'s route to {check.prefix} is not via {check.via}", evidence
                )
        return Observation.passed(observed, evidence)

    return Plan(node, command, decide)
