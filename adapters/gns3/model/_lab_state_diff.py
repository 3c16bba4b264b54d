"""What changed between two lab states, in the network's terms (pure, deterministic).

:func:`diff_lab_state` compares two :class:`~adapters.gns3.model._lab_state.LabState`\\ s:

- ``nodes``: a node that appeared, went away, stopped, started, or whose console stopped
  (or started) answering;
- ``adjacencies``: per node, a neighbour whose state changed: ``lost`` (it was Full or
  Established and is not any more, or is gone), ``gained`` (the other way), ``changed``
  (another state change, e.g. init to 2way);
- ``routes``: per node, a prefix ``added``, ``removed``, ``moved`` (to other next hops) or
  ``changed`` (learnt by another protocol);
- ``interfaces``: ``down``, ``up``, ``added``, ``removed``, ``changed`` (a state the
  platform gives in part), ``addresses``;
- ``reachability``: PC pairs that ``lost`` or ``gained`` reachability;
- ``config``: per node, the configuration lines ``added`` and ``removed`` (a line in a
  block named with its block: ``interface eth1 / shutdown``).

Only what both states read is compared: a node reached on one side only is in ``nodes``;
a part one side could not read, or a pair measured on one side only, is listed in
``not_compared``. Empty categories are left out; nothing changed is ``no_difference``.
Entries are sorted, so the same states give the same answer, and swapping the states
swaps each change (``added`` and ``removed``, ``lost`` and ``gained``, before and after).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from adapters.gns3.model._lab_state import (
    InterfaceState,
    LabState,
    Neighbor,
    NodeState,
    Reachability,
    Route,
)

__all__ = ["CATEGORIES", "config_paths", "diff_lab_state"]

JSON = dict[str, Any]

#: The categories of a diff, in the order they are given.
CATEGORIES = ("nodes", "adjacencies", "routes", "interfaces", "reachability", "config")


def diff_lab_state(before: LabState, after: LabState) -> JSON:
    """How ``after`` differs from ``before`` (see the module's docstring)."""
    found: dict[str, list[JSON]] = {name: [] for name in CATEGORIES}
    not_compared: list[JSON] = []
    names = sorted({n.name for n in before.nodes} | {n.name for n in after.nodes})
    for name in names:
        old, new = before.node(name), after.node(name)
        condition = _condition(old), _condition(new)
        if condition[0] != condition[1]:
            found["nodes"].append({"node": name, "before": condition[0], "after": condition[1]})
        if old is None or new is None or not (old.reached and new.reached):
            continue
        for part, compare in _PARTS:
            mine, theirs = getattr(old, part), getattr(new, part)
            if mine is None and theirs is None:
                continue  # read on neither side (a PC's neighbours, a Junos' routes)
            if mine is None or theirs is None:
                side, node = ("before", old) if mine is None else ("after", new)
                why = dict(node.unread).get(part, "not read")
                not_compared.append({"node": name, "what": part, "why": f"{side}: {why}"})
                continue
            if part == "neighbors":
                mine, theirs, unread = _comparable_protocols(old, new)
                not_compared += [{"node": name, **entry} for entry in unread]
            category = "adjacencies" if part == "neighbors" else part
            found[category] += compare(name, mine, theirs)
    pairs, unmeasured = _reachability(before.reachability, after.reachability)
    found["reachability"] = pairs
    not_compared += unmeasured
    result: JSON = {"from": before.state_id, "to": after.state_id}
    changes = {name: entries for name, entries in found.items() if entries}
    if changes:
        result["summary"] = _summary(changes)
        result.update(changes)
    else:
        result["no_difference"] = True
        result["summary"] = "no difference"
    if not_compared:
        result["not_compared"] = not_compared
    return result


def _condition(node: NodeState | None) -> str:
    if node is None:
        return "absent"
    if node.reached or node.status != "started":
        return node.status
    return "started, console not answering"


# ------------------------------------------------------------------ adjacencies
def _comparable_protocols(
    old: NodeState, new: NodeState
) -> tuple[list[Neighbor], list[Neighbor], list[JSON]]:
    """The neighbours of the protocols both sides read (a protocol one side could not
    read, ``ospf`` or ``bgp`` in its ``unread``, is not compared: it is listed)."""
    skipped: list[JSON] = []
    for protocol in ("bgp", "ospf"):
        for side, node in (("before", old), ("after", new)):
            why = dict(node.unread).get(protocol)
            if why is not None:
                skipped.append({"what": f"{protocol} neighbours", "why": f"{side}: {why}"})
    left_out = {str(entry["what"]).split()[0] for entry in skipped}
    mine = [n for n in old.neighbors or () if n.protocol not in left_out]
    theirs = [n for n in new.neighbors or () if n.protocol not in left_out]
    return mine, theirs, skipped


def _adjacencies(node: str, old: Iterable[Neighbor], new: Iterable[Neighbor]) -> list[JSON]:
    before = {(n.protocol, n.neighbor): n for n in old}
    after = {(n.protocol, n.neighbor): n for n in new}
    entries: list[JSON] = []
    for key in sorted(before.keys() | after.keys()):
        was, now = before.get(key), after.get(key)
        states = (was.state if was else "absent", now.state if now else "absent")
        if states[0] == states[1]:
            continue
        was_up, now_up = bool(was and was.up), bool(now and now.up)
        # up to up (Full to Established, say) or down to down is a change, not a gain
        change = "changed" if was_up == now_up else "gained" if now_up else "lost"
        entry: JSON = {
            "node": node,
            "protocol": key[0],
            "neighbor": key[1],
            "change": change,
            "before": states[0],
            "after": states[1],
        }
        peers = sorted({n.peer_node for n in (was, now) if n is not None and n.peer_node})
        if peers:
            entry["peer_node"] = peers[0]
        entries.append(entry)
    return entries


# ------------------------------------------------------------------ routes
def _routes(node: str, old: Iterable[Route], new: Iterable[Route]) -> list[JSON]:
    before = {r.prefix: r for r in old}
    after = {r.prefix: r for r in new}
    entries: list[JSON] = []
    for prefix in sorted(before.keys() | after.keys()):
        was, now = before.get(prefix), after.get(prefix)
        if was == now:
            continue
        if was is None or now is None:
            route = now or was
            assert route is not None
            change = "added" if was is None else "removed"
            entries.append(
                {
                    "node": node,
                    "prefix": prefix,
                    "change": change,
                    "protocol": route.protocol,
                    "via": list(route.via),
                }
            )
            continue
        entries.append(
            {
                "node": node,
                "prefix": prefix,
                "change": "moved" if was.protocol == now.protocol else "changed",
                "before": {"protocol": was.protocol, "via": list(was.via)},
                "after": {"protocol": now.protocol, "via": list(now.via)},
            }
        )
    return entries


# ------------------------------------------------------------------ interfaces
def _shown(interface: InterfaceState) -> str:
    return f"{interface.admin or '?'}/{interface.link or '?'}"


def _interfaces(
    node: str, old: Iterable[InterfaceState], new: Iterable[InterfaceState]
) -> list[JSON]:
    before = {i.name: i for i in old}
    after = {i.name: i for i in new}
    entries: list[JSON] = []
    for name in sorted(before.keys() | after.keys()):
        was, now = before.get(name), after.get(name)
        if was is None or now is None:
            interface = now or was
            assert interface is not None
            entries.append(
                {
                    "node": node,
                    "interface": name,
                    "change": "added" if was is None else "removed",
                    "state": _shown(interface),
                    "addresses": list(interface.addresses),
                }
            )
            continue
        if (was.admin, was.link) != (now.admin, now.link):
            states = {was.state, now.state}
            if states == {"up", "down"}:
                change = "up" if now.state == "up" else "down"
            else:
                change = "changed"
            entries.append(
                {
                    "node": node,
                    "interface": name,
                    "change": change,
                    "before": _shown(was),
                    "after": _shown(now),
                }
            )
        if sorted(was.addresses) != sorted(now.addresses):
            entries.append(
                {
                    "node": node,
                    "interface": name,
                    "change": "addresses",
                    "before": list(was.addresses),
                    "after": list(now.addresses),
                }
            )
    return entries


# ------------------------------------------------------------------ configuration
def config_paths(lines: Iterable[str]) -> list[str]:
    """Configuration lines, each named with the blocks it is in (by indentation):
    ``interface eth1`` then `` shutdown`` is ``interface eth1`` and
    ``interface eth1 / shutdown``."""
    paths: list[str] = []
    stack: list[tuple[int, str]] = []
    for raw in lines:
        text = raw.strip()
        if not text:
            continue
        indent = len(raw) - len(raw.lstrip(" "))
        while stack and stack[-1][0] >= indent:
            stack.pop()
        path = " / ".join([*(t for _, t in stack), text])
        paths.append(path)
        stack.append((indent, text))
    return paths


def _config(node: str, old: Iterable[str], new: Iterable[str]) -> list[JSON]:
    before, after = Counter(config_paths(old)), Counter(config_paths(new))
    added = sorted((after - before).elements())
    removed = sorted((before - after).elements())
    if not added and not removed:
        return []
    entry: JSON = {"node": node}
    if added:
        entry["added"] = added
    if removed:
        entry["removed"] = removed
    return [entry]


_PARTS: tuple[tuple[str, Any], ...] = (
    ("neighbors", _adjacencies),
    ("routes", _routes),
    ("interfaces", _interfaces),
    ("config", _config),
)


# ------------------------------------------------------------------ reachability
def _reachability(
    old: Iterable[Reachability], new: Iterable[Reachability]
) -> tuple[list[JSON], list[JSON]]:
    before = {(p.source, p.target): p for p in old}
    after = {(p.source, p.target): p for p in new}
    entries: list[JSON] = []
    unmeasured: list[JSON] = []
    for key in sorted(before.keys() | after.keys()):
        was, now = before.get(key), after.get(key)
        label = f"{key[0]} -> {key[1]}"
        if was is None or now is None or was.reachable is None or now.reachable is None:
            missing = [
                (side, pair)
                for side, pair in (("before", was), ("after", now))
                if pair is None or pair.reachable is None
            ]
            why = "; ".join(
                f"{side}: {pair.reason if pair is not None and pair.reason else 'not measured'}"
                for side, pair in missing
            )
            unmeasured.append({"pair": label, "why": why})
            continue
        if was.reachable == now.reachable:
            continue
        entry: JSON = {
            "from": key[0],
            "to": key[1],
            "change": "gained" if now.reachable else "lost",
        }
        if was.address == now.address:
            entry["address"] = now.address
        else:
            entry["before_address"], entry["after_address"] = was.address, now.address
        entries.append(entry)
    return entries, unmeasured


# ------------------------------------------------------------------ summary
_WORDS = {
    "nodes": ("node changed", "nodes changed"),
    "adjacencies": ("adjacency", "adjacencies"),
    "routes": ("route", "routes"),
    "interfaces": ("interface", "interfaces"),
    "reachability": ("PC pair", "PC pairs"),
}


def _summary(changes: dict[str, list[JSON]]) -> str:
    """One line: how many of each change (``2 adjacencies lost, 1 route removed``)."""
    parts: list[str] = []
    for category, entries in changes.items():
        if category == "config":
            nodes = ", ".join(str(e["node"]) for e in entries)
            parts.append(f"configuration changed on {nodes}")
            continue
        if category == "nodes":
            one, many = _WORDS[category]
            parts.append(f"{len(entries)} {one if len(entries) == 1 else many}")
            continue
        counted = Counter(str(e["change"]) for e in entries)
        one, many = _WORDS[category]
        for change, count in sorted(counted.items()):
            verb = change
            if category == "reachability":
                verb = f"{change} reachability"
            parts.append(f"{count} {one if count == 1 else many} {verb}")
    return ", ".join(parts)
