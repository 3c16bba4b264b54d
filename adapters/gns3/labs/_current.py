"""A GNS3 project's lab exported as a lab plan: what a relative plan is diffed against,
and what a user saves as a file to build elsewhere.

- **nodes**: each node a plan can hold (an FRR router, a Linux host, a VPCS: its kind
  detected as the tools detect it), with its template's name and its position; a node of
  another kind (a switch, a cloud) or whose name a plan cannot hold is left out, with its
  links;
- **links**: by port name as GNS3 names them (``R1:eth0-R2:eth0``);
- **config**: each started node's configuration, read over its console as a restore point
  reads it (:func:`~adapters.gns3.restore.read_configuration`): FRR's running
  configuration as configuration lines (each block from its header to ``exit``; the
  version, ``end``, ``!`` and what is the box's rather than the lab's — its hostname,
  logging, ``service integrated-vtysh-config``, the forwarding switches, ``line vty`` —
  left out, so that a plan made relative to the lab does not take them away), a Linux
  host's addresses and routes as ``ip addr add`` and ``ip route add``, a VPCS' ``ip``; a
  line its platform's grammar would refuse is left out (the export resolves); a stopped
  node, or one whose console cannot be read, has none;
- **addressing**: the interface addresses those show (an FRR interface's ``ip address``,
  a host's addresses), except any the plan's rules refuse (two ends of a link in
  different subnets, an address given twice: a broken lab exports, its lines say how);
- no checks: a lab does not say what it is meant to do.
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from adapters.gns3._faults import line_problem
from adapters.gns3.lab import CallScope, LabAccess, LabSnapshot
from adapters.gns3.labs._templates import KINDS, PLATFORMS
from adapters.gns3.model import ConfigLine, config_tree, keeper_for
from adapters.gns3.restore import RestorePointError, read_configuration
from copilot_core.errors import CopilotError, NotFoundError
from copilot_core.labs import (
    DeviceConfig,
    LabPlan,
    PlanAddress,
    PlanLink,
    PlanNode,
    PlanProblem,
    Platform,
)

__all__ = ["export_lab", "plan_lines"]

JSON = dict[str, Any]
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_PORT = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:/-]*")
_LINK = re.compile(r"links\[\d+\]")
#: What an FRR router's running configuration holds of the box rather than of the lab:
#: its hostname (GNS3 names it after the node), logging, vtysh's integrated file, the
#: kernel's forwarding switches (the image sets them), the vty lines.
_FRR_OWN = re.compile(
    r"hostname \S+|log .*|service integrated-vtysh-config|(?:no )?ipv6? forwarding|line vty"
)
_DEV = re.compile(r" dev \S+")
_PROTO = re.compile(r" proto (?:static|boot)\b")
_FRR_ADDRESS = re.compile(r"ip address (\d+\.\d+\.\d+\.\d+/\d+)")
#: At most this many lines of one device (the plan's own bound).
_MAX_LINES = 400


async def export_lab(lab: LabAccess, scope: CallScope) -> LabPlan:
    """The project's lab as a plan (see the module docstring)."""
    snapshot = await lab.snapshot(scope)
    kept: dict[str, tuple[JSON, Platform]] = {}
    nodes: list[PlanNode] = []
    for node in snapshot.nodes:
        name = str(node.get("name") or "")
        platform = PLATFORMS.get(snapshot.kind(node))
        if platform is None or not _NAME.fullmatch(name):
            continue
        kept[name] = (node, platform)
        nodes.append(
            PlanNode(
                name=name,
                platform=platform,
                template=snapshot.template_names.get(str(node.get("template_id"))),
                x=max(-100000, min(100000, int(node.get("x") or 0))),
                y=max(-100000, min(100000, int(node.get("y") or 0))),
            )
        )
    if not nodes:
        raise NotFoundError("The project has no FRR router, Linux host or VPCS: no lab to export.")
    links = [
        PlanLink(ends=(f"{a}:{pa}", f"{b}:{pb}"))
        for link in snapshot.links
        if len(ends := snapshot.link_ends(link)) == 2
        for (a, pa), (b, pb) in [ends]
        if a in kept and b in kept and _PORT.fullmatch(pa) and _PORT.fullmatch(pb)
    ]
    read = await asyncio.gather(
        *(_read(lab, snapshot, node, platform) for node, platform in kept.values())
    )
    config: list[DeviceConfig] = []
    addressing: list[PlanAddress] = []
    for name, (lines, addresses) in zip(kept, read, strict=True):
        if lines:
            config.append(DeviceConfig(node=name, lines=tuple(lines[:_MAX_LINES])))
        for port, address in addresses:
            if _PORT.fullmatch(port):
                addressing.append(PlanAddress(interface=f"{name}:{port}", address=address))
    return _plan(nodes, links, addressing, config)


def _plan(
    nodes: list[PlanNode],
    links: list[PlanLink],
    addressing: list[PlanAddress],
    config: list[DeviceConfig],
) -> LabPlan:
    """The plan; an address the plan's rules refuse is left out (its lines still say it)."""
    while True:
        try:
            return LabPlan(nodes=nodes, links=links, addressing=addressing, config=config)
        except ValidationError as exc:
            refused: set[str] = set()
            for problem in _problems(exc):
                if problem.field.startswith("addressing."):
                    refused.add(problem.field.removeprefix("addressing."))
                elif _LINK.fullmatch(problem.field):  # its subnet overlaps another's
                    refused.update(links[int(problem.field[6:-1])].ends)
            kept = [a for a in addressing if a.interface not in refused]
            if len(kept) == len(addressing):
                raise CopilotError(f"The lab cannot be exported as a plan: {exc}") from None
            addressing = kept


def _problems(exc: ValidationError) -> Iterator[PlanProblem]:
    for error in exc.errors():
        if error["type"] == "lab_plan":
            yield from (error.get("ctx") or {}).get("problems", [])


async def _read(
    lab: LabAccess, snapshot: LabSnapshot, node: JSON, platform: Platform
) -> tuple[list[str], list[tuple[str, str]]]:
    """A started node's lines and addresses as its console shows them (none otherwise)."""
    keeper = keeper_for(KINDS[platform])
    if keeper is None or node.get("status") != "started":
        return [], []
    try:
        kept = await read_configuration(lab, snapshot, node, keeper)
    except RestorePointError:
        return [], []
    ports = snapshot.port_names(node)
    return plan_lines(platform, kept, ports[0] if ports else "eth0")


def plan_lines(
    platform: Platform, kept: Mapping[str, Any], first_port: str
) -> tuple[list[str], list[tuple[str, str]]]:
    """A device's configuration as a restore point keeps it, as plan lines and the
    addresses (port, address/length) it shows; lines its grammar refuses are left out."""
    if platform is Platform.FRR:
        lines: list[str] = []
        addresses: list[tuple[str, str]] = []
        for top in config_tree([str(line) for line in kept.get("lines") or []]):
            if _FRR_OWN.fullmatch(top.text):
                continue  # the router's own, not the lab's
            lines += _judged_block(top, platform)
            interface = top.text.removeprefix("interface ").strip()
            if top.text.startswith("interface ") and " " not in interface:
                for child in top.children:
                    matched = _FRR_ADDRESS.fullmatch(child.text)
                    if matched:
                        addresses.append((interface, _normal(matched.group(1))))
                        break
        return lines, addresses
    if platform is Platform.LINUX:
        found = [(str(dev), _normal(str(cidr))) for dev, cidr in kept.get("addresses") or []]
        lines = [f"ip addr add {cidr} dev {dev}" for dev, cidr in found]
        lines += [f"ip route add {_route(str(route))}" for route in kept.get("routes") or []]
        return _judged(lines, platform), found
    address = str(kept.get("ip") or "")
    if not address or address.startswith("0.0.0.0"):
        return [], []
    gateway = str(kept.get("gateway") or "0.0.0.0")
    line = f"ip {address}" + ("" if gateway == "0.0.0.0" else f" {gateway}")
    return _judged([line], platform), [(first_port, _normal(address))]


def _route(route: str) -> str:
    """A route as ``ip route add`` is given it: a next hop without the device the kernel
    found for it, without ``proto static`` or ``proto boot`` (what ``ip route add`` says
    anyway)."""
    route = _PROTO.sub("", route)
    return _DEV.sub("", route) if " via " in f" {route}" else route


def _normal(address: str) -> str:
    try:
        return str(ipaddress.IPv4Interface(address))
    except ValueError:
        return address


def _judged_block(line: ConfigLine, platform: Platform) -> list[str]:
    """An FRR block as plan lines (header, lines, ``exit``) without what the grammar
    refuses: a refused header goes with its block."""
    if len(line.text) > 300 or line_problem(line.text, platform) is not None:
        return []
    if not line.children:
        return [line.text]
    inner = [text for child in line.children for text in _judged_block(child, platform)]
    return [line.text, *inner, "exit"]


def _judged(lines: Sequence[str], platform: Platform) -> list[str]:
    """``lines`` without those the platform's grammar refuses."""
    return [line for line in lines if len(line) <= 300 and line_problem(line, platform) is None]
