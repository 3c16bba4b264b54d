"""FRRouting's show output as rows (ntc-templates has no FRR templates): our own parsers.

:func:`parse_frr` takes a vtysh command (abbreviations as vtysh accepts them: ``sh ip ro``)
and its output, and returns rows (``[{column: value}]``, all values text, lists for
continuation lines) for the commands a routing lab reads:

- ``show ip route``: one row per route and next hop (``code``, ``selected``, ``fib``,
  ``prefix``, ``distance``, ``metric``, ``nexthop``, ``interface``, ``uptime``);
- ``show ip ospf neighbor``: ``neighbor_id``, ``priority``, ``state``, ``role``,
  ``up_time``, ``dead_time``, ``address``, ``interface``, ``retransmit``, ``request``,
  ``db_summary``;
- ``show ip ospf interface``: one row per interface (``interface``, ``status``,
  ``address``, ``area``, ``router_id``, ``network_type``, ``cost``, ``state``,
  ``hello``, ``dead``, ``neighbors``, ``adjacent``);
- ``show bgp summary`` (and ``show ip bgp summary``): one row per neighbour per address
  family (``afi``, ``router_id``, ``local_as``, ``neighbor``, ``version``, ``remote_as``,
  ``msg_received``, ``msg_sent``, ``up_down``, ``state``, ``prefixes_received``,
  ``prefixes_sent``, ``description``);
- ``show interface brief``: ``interface``, ``status``, ``vrf``, ``addresses`` (a list);
- ``show running-config``: one row per section (``section``: its first line, ``global`` for
  the lines outside any, ``lines``: its lines without indentation).

``None`` when the command is none of these or the output is not what it prints.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

__all__ = ["FRR_COMMANDS", "parse_frr"]

Rows = list[dict[str, Any]]

_ROUTE = re.compile(
    r"^(?P<code>[A-Za-z])(?P<flags>[>*q=r]*)\s+(?P<prefix>[0-9a-fA-F.:]+/\d+)"
    r"(?:\s+\[(?P<distance>\d+)/(?P<metric>\d+)\])?\s+(?P<rest>.*)$"
)
_ECMP = re.compile(r"^\s+(?P<flags>[>*q=r]*)\s+(?P<rest>via .*)$")
_VIA = re.compile(
    r"^(?:via (?P<nexthop>[0-9a-fA-F.:]+)(?:,\s*(?P<via_if>[\w.\-@]+))?"
    r"|is directly connected,\s*(?P<conn_if>[\w.\-@]+)"
    r"|unreachable \((?P<unreachable>[^)]*)\))"
)
_UPTIME = re.compile(r"(\d\dw\dd\d\dh|\d+d\d\dh\d\dm|\d\d:\d\d:\d\d)\s*$")


def _routes(output: str) -> Rows | None:
    rows: Rows = []
    last: dict[str, Any] | None = None
    for line in output.splitlines():
        match = _ROUTE.match(line)
        if match is not None:
            last = {
                "code": match["code"],
                "selected": ">" in match["flags"],
                "fib": "*" in match["flags"],
                "prefix": match["prefix"],
                "distance": match["distance"] or "",
                "metric": match["metric"] or "",
            }
            rows.append({**last, **_hop(match["rest"])})
            continue
        more = _ECMP.match(line)
        if more is not None and last is not None:
            rows.append({**last, "fib": "*" in more["flags"], **_hop(more["rest"])})
    if not rows and "Codes:" not in output:
        return None
    return rows


def _hop(rest: str) -> dict[str, str]:
    via = _VIA.match(rest.strip())
    uptime = _UPTIME.search(rest)
    nexthop = interface = ""
    if via is not None:
        nexthop = via["nexthop"] or ("unreachable" if via["unreachable"] else "directly connected")
        interface = via["via_if"] or via["conn_if"] or ""
    return {"nexthop": nexthop, "interface": interface, "uptime": uptime[1] if uptime else ""}


def _ospf_neighbors(output: str) -> Rows | None:
    lines = output.splitlines()
    header = next((i for i, line in enumerate(lines) if line.startswith("Neighbor ID")), None)
    if header is None:
        return [] if not output.strip() else None
    with_uptime = "Up Time" in lines[header]
    rows: Rows = []
    for line in lines[header + 1 :]:
        words = line.split()
        if len(words) < (10 if with_uptime else 9):
            continue
        if not with_uptime:
            words.insert(3, "")
        state, _, role = words[2].partition("/")
        rows.append(
            {
                "neighbor_id": words[0],
                "priority": words[1],
                "state": state,
                "role": role,
                "up_time": words[3],
                "dead_time": words[4],
                "address": words[5],
                "interface": words[6].split(":", 1)[0],
                "retransmit": words[7],
                "request": words[8],
                "db_summary": words[9],
            }
        )
    return rows


_OSPF_IF = re.compile(r"^(?P<interface>\S+) is (?P<status>up|down|administratively down)")
_OSPF_FIELDS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("address", re.compile(r"Internet Address (\S+?),")),
    ("area", re.compile(r"Area (\S+?)(?:,|\s|$)")),
    ("router_id", re.compile(r"Router ID (\S+?),")),
    ("network_type", re.compile(r"Network Type (\S+?),")),
    ("cost", re.compile(r"Cost: (\d+)")),
    ("state", re.compile(r"State ([\w\-]+?),")),
    ("hello", re.compile(r"Hello (\d+)s")),
    ("dead", re.compile(r"Dead (\d+)s")),
    ("neighbors", re.compile(r"Neighbor Count is (\d+)")),
    ("adjacent", re.compile(r"Adjacent neighbor count is (\d+)")),
)


def _ospf_interfaces(output: str) -> Rows | None:
    rows: Rows = []
    for line in output.splitlines():
        start = _OSPF_IF.match(line)
        if start is not None:
            rows.append(
                {
                    "interface": start["interface"],
                    "status": start["status"],
                    **{name: "" for name, _ in _OSPF_FIELDS},
                }
            )
            continue
        if not rows:
            continue
        for name, pattern in _OSPF_FIELDS:
            found = pattern.search(line)
            if found is not None and not rows[-1][name]:
                rows[-1][name] = found[1]
    return rows if rows or not output.strip() else None


_BGP_FAMILY = re.compile(r"^(?P<afi>[\w ]+?) Summary(?: \(VRF (?P<vrf>\S+)\))?:")
_BGP_ID = re.compile(r"BGP router identifier (?P<id>\S+), local AS number (?P<as>\d+)")


def _bgp_summary(output: str) -> Rows | None:
    rows: Rows = []
    afi = router_id = local_as = ""
    in_table = False
    seen = False
    for line in output.splitlines():
        family = _BGP_FAMILY.match(line)
        if family is not None:
            afi, in_table, seen = family["afi"], False, True
            continue
        ident = _BGP_ID.search(line)
        if ident is not None:
            router_id, local_as, seen = ident["id"], ident["as"], True
            continue
        if line.startswith("Neighbor "):
            in_table = True
            continue
        if not in_table:
            continue
        words = line.split()
        if len(words) < 10 or words[0].startswith("Total"):
            in_table = not line.startswith("Total") and bool(line.strip())
            continue
        rows.append(
            {
                "afi": afi,
                "router_id": router_id,
                "local_as": local_as,
                "neighbor": words[0],
                "version": words[1],
                "remote_as": words[2],
                "msg_received": words[3],
                "msg_sent": words[4],
                "up_down": words[8],
                "state": "Established" if words[9].isdigit() else words[9],
                "prefixes_received": words[9] if words[9].isdigit() else "",
                "prefixes_sent": words[10] if len(words) > 10 else "",
                "description": " ".join(words[11:]),
            }
        )
    if not seen and "No BGP neighbors" not in output and "not found" not in output:
        return None
    return rows


def _interface_brief(output: str) -> Rows | None:
    lines = output.splitlines()
    header = next((i for i, line in enumerate(lines) if line.startswith("Interface")), None)
    if header is None:
        return None
    rows: Rows = []
    for line in lines[header + 1 :]:
        if not line.strip() or line.startswith("---"):
            continue
        words = line.split()
        if words[0] == "+" and rows:  # a further address of the interface above
            rows[-1]["addresses"].extend(words[1:])
            continue
        if len(words) < 3:
            continue
        rows.append(
            {
                "interface": words[0],
                "status": words[1],
                "vrf": words[2],
                "addresses": words[3:],
            }
        )
    return rows


def _running_config(output: str) -> Rows | None:
    if "hostname" not in output and "frr version" not in output:
        return None
    glob: list[str] = []
    rows: Rows = []
    current: dict[str, Any] | None = None
    for raw in output.splitlines():
        line = raw.rstrip()
        text = line.strip()
        if (
            not text
            or text in ("!", "end")
            or text.startswith(("Building configuration", "Current configuration"))
        ):
            if text == "!":
                current = None
            continue
        if text in ("exit", "exit-address-family", "exit-vrf"):
            if text == "exit":
                current = None
            elif current is not None:
                current["lines"].append(text)
            continue
        if line.startswith(" ") and current is not None:
            current["lines"].append(text)
            continue
        if line.startswith(" "):
            glob.append(text)
            continue
        if re.match(r"^(?:interface|router|vrf|line|route-map|key chain|bfd|segment)\b", text):
            current = {"section": text, "lines": []}
            rows.append(current)
            continue
        current = None
        glob.append(text)
    return [{"section": "global", "lines": glob}, *rows]


#: The commands parsed, as full words, each with its parser.
FRR_COMMANDS: dict[tuple[str, ...], Callable[[str], Rows | None]] = {
    ("show", "ip", "route"): _routes,
    ("show", "ip", "ospf", "neighbor"): _ospf_neighbors,
    ("show", "ip", "ospf", "interface"): _ospf_interfaces,
    ("show", "bgp", "summary"): _bgp_summary,
    ("show", "ip", "bgp", "summary"): _bgp_summary,
    ("show", "interface", "brief"): _interface_brief,
    ("show", "running-config"): _running_config,
}


def _expands(words: list[str], full: tuple[str, ...]) -> bool:
    return len(words) == len(full) and all(
        len(word) >= min(2, len(whole)) and whole.startswith(word)
        for word, whole in zip(words, full, strict=True)
    )


def parse_frr(command: str, output: str) -> Rows | None:
    """Rows for ``command``'s ``output`` (see the module's docstring), else ``None``."""
    words = command.lower().split()
    for full, parser in FRR_COMMANDS.items():
        if _expands(words, full):
            return parser(output)
    return None
