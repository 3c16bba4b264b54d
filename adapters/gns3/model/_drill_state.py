"""A drill's checkpoint compared with the lab now, and what puts a host back (pure).

A drill's checkpoint (:mod:`adapters.gns3.tools._drill_lab`) holds, as JSON: the lab-state
capture of the project (``lab``: what ``capture_lab_state`` reads), each shape node's
configuration as a restore point keeps it (``devices``: FRR's running configuration, a
Linux host's addresses and routes, a VPCS' ``ip``), what a restore point does not keep of a
Linux host (``hosts``: each interface's MTU and administrative state, the policy rules of
``ip rule``, the iptables rules of ``iptables -S`` and the nftables tables of ``nft list
ruleset`` where those are installed), the shape's
links' GNS3 filters and suspension (``links``) and the project's node names and link ends
(``topology``). Taken again later, the same JSON is compared with the checkpoint:

- :func:`differences` lists what differs, by node and line: the lab-state diff
  (:func:`~adapters.gns3.model._lab_state_diff.diff_lab_state`) in sentences, and the parts the
  capture does not read (a host's configuration, its MTUs, rules and filters; links);
  a restore is exact when it is empty;
- :func:`judge_constraints` judges a fix's constraints on the same comparison;
- :func:`host_plan` gives the shell lines that put a host's MTUs, states, rules,
  iptables rules and nftables tables back, :func:`link_fields` what a link's ``PUT`` must carry, and
  :func:`link_updates` the ``PUT`` requests that get it there past GNS3 3.0's filter bug.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from adapters.gns3.model._device_state import keeper_for
from adapters.gns3.model._lab_state import LabState
from adapters.gns3.model._lab_state_diff import diff_lab_state
from adapters.gns3.model._platforms import DeviceKind
from copilot_core.drills import ConstraintResult
from copilot_core.faults import (
    AddressesUnchanged,
    ConfigUnchanged,
    Constraint,
    NoNewStaticRoute,
)

__all__ = [
    "HOST_READS",
    "differences",
    "host_differences",
    "host_plan",
    "judge_constraints",
    "link_fields",
    "link_updates",
    "parse_host",
    "parse_nft",
]

JSON = dict[str, Any]

#: What a Linux host is asked beyond its addresses and routes, in this order.
HOST_READS = ("ip -o link show", "ip rule show", "iptables -S", "nft list ruleset")
_LINK = re.compile(
    r"^\d+:\s+(?P<name>[^:@\s]+)(?:@\S+)?:\s+<(?P<flags>[^>]*)>.*?\bmtu (?P<mtu>\d+)"
)
_RULE = re.compile(r"^(?P<pref>\d+):\s+(?P<rest>.+)$")
_MISSING = re.compile(r"command not found|not found|No such file", re.I)
_TABLE = re.compile(r"^table (?P<family>[a-z0-9]+) (?P<name>\S+) \{$")
#: The tables iptables-nft keeps in nftables: ``iptables -S`` reads and restores them (and
#: ``nft`` cannot always print their rules back as input), so they are left out of nft's part.
_IPTABLES_TABLES = frozenset(
    f"{family} {name}"
    for family in ("ip", "ip6", "arp", "bridge")
    for name in ("filter", "nat", "mangle", "raw", "security")
)
#: What ``nft`` prints when it cannot read the ruleset (no permission, no kernel support).
_NFT_FAILED = re.compile(r"^(?:Error: |netlink: |internal:)|Operation not permitted", re.M)


def parse_nft(text: str) -> dict[str, list[str]] | None:
    """``nft list ruleset``'s tables but iptables-nft's, each as its lines (indentation
    dropped), keyed ``"family name"`` (``None``: nft is not installed or could not read)."""
    if _MISSING.search(text) or _NFT_FAILED.search(text):
        return None
    tables: dict[str, list[str]] = {}
    current: list[str] | None = None
    for raw in text.splitlines():
        line = " ".join(raw.split())
        match = _TABLE.match(line)
        if match is not None and not raw[:1].isspace():
            key = f"{match['family']} {match['name']}"
            current = tables.setdefault(key, []) if key not in _IPTABLES_TABLES else None
        elif line == "}" and not raw[:1].isspace():
            current = None  # the table's closing brace
        elif current is not None and line:
            current.append(line)
    return tables


def parse_host(outputs: Sequence[str]) -> JSON:
    """A host's MTUs and states, rules, iptables rules and nftables tables from
    :data:`HOST_READS`' outputs (iptables, nftables ``None``: not installed, or not
    readable)."""
    links: JSON = {}
    for line in outputs[0].splitlines():
        match = _LINK.match(line.strip())
        if match is not None and match["name"] != "lo":
            up = "UP" in match["flags"].split(",")
            links[match["name"]] = {"mtu": int(match["mtu"]), "up": up}
    rules = []
    for line in outputs[1].splitlines():
        match = _RULE.match(line.strip())
        if match is not None:
            rules.append(f"{match['pref']}: {' '.join(match['rest'].split())}")
    iptables: list[str] | None = None
    text = outputs[2] if len(outputs) > 2 else ""
    if text.strip() and not _MISSING.search(text):
        iptables = [" ".join(line.split()) for line in text.splitlines() if line.startswith("-")]
    nftables = parse_nft(outputs[3]) if len(outputs) > 3 else None
    return {"links": links, "rules": sorted(rules), "iptables": iptables, "nftables": nftables}


def host_plan(saved: Mapping[str, Any], current: Mapping[str, Any]) -> list[str]:
    """Shell lines that put ``current`` back to ``saved``: interface states and MTUs
    first (an interface down drops its routes), then rules and iptables rules (those
    added since deleted, those removed since added again), then the nftables tables
    added since, deleted (``nft delete table``). A table of ``saved`` that changed or went
    is not rebuilt: that takes its text in braces and quotes, which no line an undo sends
    may hold (:func:`~adapters.gns3.restore.refusal`); the restore's comparison names it."""
    commands: list[str] = []
    then_links, now_links = saved.get("links") or {}, current.get("links") or {}
    for name in sorted(set(then_links) & set(now_links)):
        was, now = then_links[name], now_links[name]
        if was["up"] != now["up"]:
            commands.append(f"ip link set dev {name} {'up' if was['up'] else 'down'}")
        if was["mtu"] != now["mtu"]:
            commands.append(f"ip link set dev {name} mtu {was['mtu']}")
    then_rules, now_rules = set(saved.get("rules") or []), set(current.get("rules") or [])
    for rule in sorted(now_rules - then_rules):
        pref, _, rest = rule.partition(": ")
        commands.append(f"ip rule del {rest} pref {pref}")
    for rule in sorted(then_rules - now_rules):
        pref, _, rest = rule.partition(": ")
        commands.append(f"ip rule add {rest} pref {pref}")
    then_ipt, now_ipt = saved.get("iptables"), current.get("iptables")
    if then_ipt is not None and now_ipt is not None:
        for rule in now_ipt:
            if rule.startswith("-A ") and rule not in then_ipt:
                commands.append(f"iptables -D {rule[3:]}")
        for rule in then_ipt:
            if rule.startswith(("-P ", "-A ")) and rule not in now_ipt:
                commands.append(f"iptables {rule}")
    then_nft, now_nft = saved.get("nftables"), current.get("nftables")
    if then_nft is not None and now_nft is not None:
        commands += [f"nft delete table {table}" for table in sorted(set(now_nft) - set(then_nft))]
    return commands


def host_differences(name: str, saved: Mapping[str, Any], current: Mapping[str, Any]) -> list[str]:
    """How a host's MTUs, states, rules, iptables rules and nftables tables differ from
    ``saved``."""
    found: list[str] = []
    then_links, now_links = saved.get("links") or {}, current.get("links") or {}
    for device in sorted(set(then_links) | set(now_links)):
        was, now = then_links.get(device), now_links.get(device)
        if was is None or now is None:
            found.append(f"{name} {device}: {'present now' if was is None else 'gone'}")
            continue
        if was["up"] != now["up"]:
            state = "up" if now["up"] else "down"
            found.append(f"{name} {device}: administratively {state} now")
        if was["mtu"] != now["mtu"]:
            found.append(f"{name} {device}: mtu {now['mtu']} (was {was['mtu']})")
    for key, label in (("rules", "ip rule"), ("iptables", "iptables")):
        then, now = saved.get(key), current.get(key)
        if then is None or now is None:
            if (then is None) != (now is None):
                found.append(f"{name} {label}: read on one side only")
            continue
        found += [f"{name} {label} {r}: present now, absent then" for r in now if r not in then]
        found += [f"{name} {label} {r}: absent now, present then" for r in then if r not in now]
    then_nft, now_nft = saved.get("nftables"), current.get("nftables")
    if (then_nft is None) != (now_nft is None):
        found.append(f"{name} nftables: read on one side only")
    elif then_nft is not None and now_nft is not None:
        for table in sorted(set(then_nft) | set(now_nft)):
            if table not in then_nft:
                found.append(f"{name} nftables table {table}: present now, absent then")
            elif table not in now_nft:
                found.append(f"{name} nftables table {table}: absent now, present then")
            elif then_nft[table] != now_nft[table]:
                found.append(f"{name} nftables table {table}: changed")
    return found


#: A filter that drops one frame in 2**31 - 1: as good as none, but a filter GNS3 sends on.
NEUTRAL_FILTER = {"frequency_drop": [2**31 - 1]}


def link_updates(current: Mapping[str, Any], fields: Mapping[str, Any]) -> list[JSON]:
    """The ``PUT`` bodies that give a link ``fields`` (``filters``, ``suspend``), in order.

    GNS3 3.0 drops a node's filter update whose filters are empty (its compute keeps the
    old ones: ``if nio_data.filters:``), so a link that leaves its last filter, or is
    resumed, would still drop what it dropped (a suspended link is a ``frequency_drop -1``
    filter on the compute). Then a neutral filter is sent first (which the compute does
    apply, replacing the old one) and taken off again (the controller forgets it; the
    compute keeps a filter that drops nothing)."""
    if not fields:
        return []
    updates = [dict(fields)]
    was_active = bool(current.get("filters")) or bool(current.get("suspend"))
    filters = fields.get("filters", current.get("filters") or {})
    suspended = fields.get("suspend", bool(current.get("suspend")))
    if was_active and not filters and not suspended:
        updates += [{"filters": dict(NEUTRAL_FILTER)}, {"filters": {}}]
    return updates


def link_fields(saved: Mapping[str, Any], current: Mapping[str, Any]) -> JSON:
    """What a link's ``PUT`` sets to put ``saved``'s filters and suspension back
    (empty: nothing to do)."""
    fields: JSON = {}
    if dict(saved.get("filters") or {}) != dict(current.get("filters") or {}):
        fields["filters"] = dict(saved.get("filters") or {})
    if bool(saved.get("suspend")) != bool(current.get("suspend")):
        fields["suspend"] = bool(saved.get("suspend"))
    return fields


# ------------------------------------------------------------------ the comparison
def _diff(before: Mapping[str, Any], after: Mapping[str, Any]) -> JSON:
    return diff_lab_state(
        LabState.from_dict(dict(before["lab"])), LabState.from_dict(dict(after["lab"]))
    )


def _sentence(category: str, entry: Mapping[str, Any]) -> list[str]:
    node = entry.get("node") or entry.get("from")
    if category == "config":
        lines = [f"{node} config + {line}" for line in entry.get("added", [])]
        return lines + [f"{node} config - {line}" for line in entry.get("removed", [])]
    if category == "reachability":
        return [f"{entry['from']} -> {entry['to']}: {entry['change']} reachability"]
    if category == "nodes":
        return [f"{node}: {entry['after']} (was {entry['before']})"]
    what = entry.get("neighbor") or entry.get("prefix") or entry.get("interface") or ""
    rest = {
        k: v
        for k, v in entry.items()
        if k not in ("node", "neighbor", "prefix", "interface", "change", "peer_node")
    }
    detail = ", ".join(f"{k} {v}" for k, v in rest.items())
    return [f"{node} {category[:-1] if category != 'adjacencies' else 'adjacency'} {what}: "
            f"{entry['change']}" + (f" ({detail})" if detail else "")]  # fmt: skip


def _device_differences(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    """Hosts' kept configuration (the capture reads no host configuration)."""
    found: list[str] = []
    then, now = before.get("devices") or {}, after.get("devices") or {}
    for name in sorted(set(then) | set(now)):
        was, current = then.get(name), now.get(name)
        if was is None or current is None:
            found.append(f"{name}: configuration read on one side only")
            continue
        keeper = keeper_for(DeviceKind(str(was["kind"])))
        if keeper is None or keeper.kind is DeviceKind.FRR:
            continue  # FRR's running configuration is in the lab-state diff
        found += [f"{name} {line}" for line in keeper.differences(was["config"], current["config"])]
    return found


def differences(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    """What differs between two captures of a drill's lab, by node and line (empty: the
    same); a part one side could not read is a difference too (it is not proven equal)."""
    diff = _diff(before, after)
    found: list[str] = []
    for category in ("nodes", "adjacencies", "routes", "interfaces", "reachability", "config"):
        for entry in diff.get(category, []):
            found += _sentence(category, entry)
    for entry in diff.get("not_compared", []):
        where = entry.get("node") or entry.get("pair")
        found.append(f"{where} {entry.get('what', 'reachability')} not compared: {entry['why']}")
    found += _device_differences(before, after)
    then_hosts, now_hosts = before.get("hosts") or {}, after.get("hosts") or {}
    for name in sorted(set(then_hosts) | set(now_hosts)):
        found += host_differences(name, then_hosts.get(name) or {}, now_hosts.get(name) or {})
    then_links, now_links = before.get("links") or {}, after.get("links") or {}
    for label in sorted(set(then_links) | set(now_links)):
        fields = link_fields(then_links.get(label) or {}, now_links.get(label) or {})
        found += [f"link {label}: {k} {v!r} then" for k, v in fields.items()]
    found += _topology(before, after)
    return found


def _topology(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    then, now = before.get("topology") or {}, after.get("topology") or {}
    found: list[str] = []
    for key, label in (("nodes", "node"), ("links", "link")):
        was, current = set(then.get(key) or []), set(now.get(key) or [])
        found += [f"{label} {x}: added" for x in sorted(current - was)]
        found += [f"{label} {x}: removed" for x in sorted(was - current)]
    return found


# ------------------------------------------------------------------ constraints
def _static_gained(
    node: str, before: Mapping[str, Any], after: Mapping[str, Any], diff: JSON
) -> list[str]:
    gained: list[str] = []
    for entry in diff.get("config", []):
        if entry["node"] == node:
            gained += [line for line in entry.get("added", []) if line.startswith("ip route ")]
    for entry in diff.get("routes", []):
        if entry["node"] != node:
            continue
        shown = entry.get("after") or entry
        if entry["change"] != "removed" and shown.get("protocol") == "static":
            gained.append(f"route {entry['prefix']} via {' '.join(shown.get('via') or [])}")
    was = (before.get("devices") or {}).get(node) or {}
    now = (after.get("devices") or {}).get(node) or {}
    if was.get("kind") == DeviceKind.LINUX.value and now:
        old = set((was.get("config") or {}).get("routes") or [])
        gained += [
            f"ip route {r}" for r in (now.get("config") or {}).get("routes") or [] if r not in old
        ]
    return sorted(set(gained))


def _addresses_changed(node: str, diff: JSON) -> list[str]:
    changed: list[str] = []
    for entry in diff.get("interfaces", []):
        if entry["node"] != node:
            continue
        if entry["change"] == "addresses":
            changed.append(f"{entry['interface']} {entry['after']} (was {entry['before']})")
        elif entry["change"] in ("added", "removed") and entry.get("addresses"):
            changed.append(f"{entry['interface']} {entry['change']} {entry['addresses']}")
    return changed


def _config_changes(
    node: str, before: Mapping[str, Any], after: Mapping[str, Any], diff: JSON
) -> list[str]:
    """The node's configuration lines added or removed (a router's, from the lab-state
    diff), or its kept configuration's differences (a host's), MTUs, rules, filters."""
    found: list[str] = []
    for entry in diff.get("config", []):
        if entry["node"] == node:
            found += _sentence("config", entry)
    found += [line for line in _device_differences(before, after) if line.startswith(f"{node} ")]
    then_host = (before.get("hosts") or {}).get(node)
    now_host = (after.get("hosts") or {}).get(node)
    if then_host is not None or now_host is not None:
        found += host_differences(node, then_host or {}, now_host or {})
    return found


def judge_constraints(
    constraints: Sequence[Constraint], before: Mapping[str, Any], after: Mapping[str, Any]
) -> list[ConstraintResult]:
    """Each constraint held or not, with its evidence, on two captures of the lab."""
    diff = _diff(before, after)
    results: list[ConstraintResult] = []
    for constraint in constraints:
        if isinstance(constraint, NoNewStaticRoute):
            gained = _static_gained(constraint.node, before, after, diff)
            evidence = (
                f"{constraint.node} gained {'; '.join(gained)}"
                if gained
                else f"no static route added on {constraint.node}"
            )
            results.append(ConstraintResult(constraint, not gained, evidence))
        elif isinstance(constraint, AddressesUnchanged):
            changed = _addresses_changed(constraint.node, diff)
            evidence = (
                f"{constraint.node}'s addresses changed: {'; '.join(changed)}"
                if changed
                else f"{constraint.node}'s addresses are as before"
            )
            results.append(ConstraintResult(constraint, not changed, evidence))
        elif isinstance(constraint, ConfigUnchanged):
            mine = _config_changes(constraint.node, before, after, diff)
            evidence = (
                f"{constraint.node}'s configuration changed: {'; '.join(mine)}"
                if mine
                else f"{constraint.node}'s configuration is as before"
            )
            results.append(ConstraintResult(constraint, not mine, evidence))
        else:
            changed = _topology(before, after)
            evidence = "; ".join(changed) if changed else "no node or link added or removed"
            results.append(ConstraintResult(constraint, not changed, evidence))
    return results
