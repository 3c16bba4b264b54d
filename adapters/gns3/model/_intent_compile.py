"""Checks compiled per platform: the command a device answers a check with, and the rule
that decides the check from that command's parsed output.

==============  ==========================  ============================  =======================
kind            frr (vtysh)                 cisco_ios / arista_eos        juniper_junos
==============  ==========================  ============================  =======================
reachability    (error: vtysh's ping has    ``ping A repeat N``           ``ping A count N``
                no count)
ospf_neighbor   ``show ip ospf neighbor``   ``show ip ospf neighbor``     ``show ospf neighbor``
bgp_session     ``show bgp summary``        ``show ip bgp summary``       ``show bgp summary``
route           ``show ip route``           ``show ip route``             (error: no parser)
interface       ``show interface brief``    ``show ip interface brief``   ``show interfaces I``
config_line     ``show running-config``     ``show running-config``       ``show configuration
                                                                          | display set``
==============  ==========================  ============================  =======================

VPCS answers ``reachability`` (``ping A -c N``) and Linux hosts too (``ping -c N -W 2 A``);
every other kind on them is an ``error`` that says so. FRR's output is parsed by
:mod:`adapters.gns3.model._frr_parsing`, the others' by ntc-templates (TextFSM).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from adapters.gns3.model._intent_plans import Plan, targets, unparsed, unsupported
from adapters.gns3.model._intent_reading import Output, head, is_address, lines_with, same_interface
from adapters.gns3.model._intent_routing import bgp_plan, ospf_plan, route_plan
from adapters.gns3.model._platforms import DeviceKind
from copilot_core.intent import (
    BgpSessionCheck,
    Check,
    ConfigLineCheck,
    Evidence,
    InterfaceCheck,
    Observation,
    OspfNeighborCheck,
    ReachabilityCheck,
    RouteCheck,
)

__all__ = ["Plan", "compile_check", "interface_row_state", "names_to_resolve"]


def names_to_resolve(check: Check) -> list[tuple[str, bool]]:
    """Names in the check that may stand for a node's addresses, each with whether it must
    be a node (a route's ``via`` may also be an interface name)."""
    if isinstance(check, ReachabilityCheck):
        value, required = check.to, True
    elif isinstance(check, OspfNeighborCheck):
        value, required = check.neighbor, True
    elif isinstance(check, BgpSessionCheck):
        value, required = check.peer, True
    elif isinstance(check, RouteCheck) and check.via:
        value, required = check.via, False
    else:
        return []
    return [] if is_address(value) else [(value, required)]


def compile_check(
    check: Check, node: str, kind: DeviceKind, resolved: Mapping[str, Sequence[str]]
) -> Plan | Observation:
    """The plan that answers ``check`` on ``node`` (a ``kind`` device), or the ``error``
    observation that says why it cannot be answered there. ``resolved`` gives the
    addresses of the node names :func:`names_to_resolve` listed."""
    if isinstance(check, ReachabilityCheck):
        return _reachability(check, node, kind, resolved)
    if isinstance(check, OspfNeighborCheck):
        return ospf_plan(check, node, kind, resolved)
    if isinstance(check, BgpSessionCheck):
        return bgp_plan(check, node, kind, resolved)
    if isinstance(check, RouteCheck):
        return route_plan(check, node, kind, resolved)
    if isinstance(check, InterfaceCheck):
        return _interface(check, node, kind)
    return _config_line(check, node, kind)


# ------------------------------------------------------------------ reachability
_PING = {
    DeviceKind.VPCS: "ping {to} -c {count}",
    DeviceKind.CISCO_IOS: "ping {to} repeat {count}",
    DeviceKind.ARISTA_EOS: "ping {to} repeat {count}",
    DeviceKind.JUNIPER_JUNOS: "ping {to} count {count}",
    DeviceKind.LINUX: "ping -c {count} -W 2 {to}",
}
_REPLY = re.compile(r"bytes from [\d.]+[: ].*(?:icmp_seq|seq)=\d+", re.IGNORECASE)
_CISCO_RATE = re.compile(r"Success rate is (\d+) percent \((\d+)/(\d+)\)")


def _reachability(
    check: ReachabilityCheck, node: str, kind: DeviceKind, resolved: Mapping[str, Sequence[str]]
) -> Plan | Observation:
    template = _PING.get(kind)
    if check.size is not None and kind is not DeviceKind.LINUX:
        return unsupported(check, kind, " with a size: only a Linux host's ping sets one")
    if template is None:
        why = (
            ": vtysh's ping runs without a count and never ends; check from a PC"
            if kind is DeviceKind.FRR
            else ""
        )
        return unsupported(check, kind, why)
    addresses = targets(check.to, resolved)
    if not addresses:
        return Observation.error(f"{check.to} has no IPv4 address to ping", transient=True)
    to = addresses[0]
    wanted = check.expect == "reachable"

    def decide(output: Output) -> Observation:
        if kind is DeviceKind.CISCO_IOS:
            rate = _CISCO_RATE.search(output.text)
            replies = int(rate[2]) if rate else output.text.count("!")
            deciding = (rate[0],) if rate else head(output, 3)
        else:
            matched = [
                line for line in output.lines if _REPLY.search(line) and "nreachable" not in line
            ]
            replies = len(matched)
            others = [line for line in output.lines if line not in matched]
            deciding = tuple(matched[:3]) if matched else tuple(others[:3])
        observed: dict[str, Any] = {
            "to": to,
            "sent": check.count,
            "replies": replies,
            "reachable": replies > 0,
        }
        evidence = Evidence(node, output.command, deciding)
        if (replies > 0) == wanted:
            return Observation.passed(observed, evidence)
        said = (
            f"{node} got no reply from {to}"
            if wanted
            else (f"{node} still reaches {to} ({replies} of {check.count} replies)")
        )
        return Observation.failed(observed, said, evidence)

    command = template.format(to=to, count=check.count)
    if check.size is not None:  # don't fragment: a frame bigger than an MTU on the way fails
        command = command.replace(" -W 2 ", f" -W 2 -s {check.size} -M do ")
    return Plan(node, command, decide)


# ------------------------------------------------------------------ interfaces
def interface_row_state(kind: DeviceKind, row: Mapping[str, Any]) -> tuple[str, str]:
    """(administrative, link) state, in lower case, of a row of the platform's interface
    command (FRR's brief shows one state: it stands for both)."""
    if kind is DeviceKind.FRR:
        admin = link = str(row.get("status", "")).lower()
    elif kind is DeviceKind.CISCO_IOS:
        admin, link = str(row.get("status", "")).lower(), str(row.get("proto", "")).lower()
    elif kind is DeviceKind.ARISTA_EOS:
        admin, link = str(row.get("status", "")).lower(), str(row.get("protocol", "")).lower()
    else:
        admin = "up" if str(row.get("admin_state", "")).lower() == "enabled" else "down"
        link = str(row.get("link_status", "")).lower()
    return admin, link


def _interface(check: InterfaceCheck, node: str, kind: DeviceKind) -> Plan | Observation:
    if kind is DeviceKind.FRR:
        command = "show interface brief"
    elif kind in (DeviceKind.CISCO_IOS, DeviceKind.ARISTA_EOS):
        command = "show ip interface brief"
    elif kind is DeviceKind.JUNIPER_JUNOS:
        command = f"show interfaces {check.interface}"
    else:
        return unsupported(check, kind)

    def decide(output: Output) -> Observation:
        if output.rows is None:
            return unparsed(node, output)
        rows = [r for r in output.rows if same_interface(check.interface, str(r.get("interface")))]
        if not rows:
            return Observation.error(
                f"{node} has no interface {check.interface}",
                Evidence(node, command, head(output, 10)),
            )
        row = rows[0]
        admin, link = interface_row_state(kind, row)
        state = "up" if admin == "up" and link == "up" else "down"
        observed: dict[str, Any] = {
            "interface": row.get("interface"),
            "state": state,
            "admin": admin,
            "link": link,
        }
        evidence = Evidence(
            node, command, lines_with(output, [str(row.get("interface"))]) or head(output, 4)
        )
        if state == check.state:
            return Observation.passed(observed, evidence)
        return Observation.failed(
            observed,
            f"{node} {row.get('interface')} is {state} ({admin}/{link}), not {check.state}",
            evidence,
        )

    return Plan(node, command, decide)


# ------------------------------------------------------------------ configuration
def _config_line(check: ConfigLineCheck, node: str, kind: DeviceKind) -> Plan | Observation:
    if kind is DeviceKind.JUNIPER_JUNOS:
        command, privileged = "show configuration | display set", False
    elif kind in (DeviceKind.FRR, DeviceKind.CISCO_IOS, DeviceKind.ARISTA_EOS):
        command, privileged = "show running-config", kind is not DeviceKind.FRR
    else:
        return unsupported(check, kind)
    wanted = " ".join(check.line.split())

    def decide(output: Output) -> Observation:
        if not output.text.strip():
            return Observation.error(f"{node}'s configuration came back empty", transient=True)
        found = [line.strip() for line in output.lines if " ".join(line.split()) == wanted]
        observed: dict[str, Any] = {"line": wanted, "present": bool(found)}
        stem = wanted.split()[:2]
        near = [line.strip() for line in output.lines if line.split()[:2] == stem]
        evidence = Evidence(node, command, tuple((found or near)[:3]))
        if bool(found) == check.present:
            return Observation.passed(observed, evidence)
        said = "lacks" if check.present else "still has"
        return Observation.failed(observed, f"{node}'s configuration {said} '{wanted}'", evidence)

    return Plan(node, command, decide, privileged=privileged)
