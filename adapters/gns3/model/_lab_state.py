"""What a lab looked like at one moment, in the network's terms, and where such moments are
kept for a conversation.

A :class:`LabState` holds, per node (:class:`NodeState`), its interfaces with their
administrative and link state and addresses, its routing neighbours (OSPF, BGP), its
installed routes (prefix, protocol, next hops) and a router's configuration lines; and the
reachability between the PCs that have addresses (:class:`Reachability`). A part that could
not be read is ``None`` with the reason in ``unread``; a node that is stopped or whose
console did not answer has ``reached`` false and its reason. Everything is plain values,
JSON both ways (:meth:`LabState.to_dict`, :meth:`LabState.from_dict`).

:class:`LabStateStore` keeps the states a conversation captured: per (project, user,
session), at most ``per_session`` of them (the oldest dropped) and none older than
``max_age``; a state id is found only in the conversation that captured it.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from copilot_core.errors import NotFoundError

__all__ = [
    "InterfaceState",
    "LabState",
    "LabStateStore",
    "Neighbor",
    "NodeState",
    "Reachability",
    "Route",
    "UnknownStateError",
]

JSON = dict[str, Any]


@dataclass(frozen=True, slots=True)
class InterfaceState:
    """One interface: ``admin`` and ``link`` are ``up``/``down``, ``None`` when the platform
    does not say (VPCS); ``addresses`` as the device shows them (``10.0.12.1/30``)."""

    name: str
    admin: str | None
    link: str | None
    addresses: tuple[str, ...] = ()

    @property
    def state(self) -> str | None:
        """``up`` when administratively and link up, ``down`` otherwise, ``None``: unknown."""
        if self.admin is None and self.link is None:
            return None
        return "up" if self.admin != "down" and self.link != "down" else "down"

    def to_dict(self) -> JSON:
        return {
            "name": self.name,
            "admin": self.admin,
            "link": self.link,
            "addresses": list(self.addresses),
        }

    @classmethod
    def from_dict(cls, data: JSON) -> InterfaceState:
        return cls(str(data["name"]), data.get("admin"), data.get("link"), tuple(data["addresses"]))


@dataclass(frozen=True, slots=True)
class Neighbor:
    """A routing neighbour: ``protocol`` ``ospf`` (``neighbor`` its router id) or ``bgp``
    (its peer address); ``state`` in lower case (``full``, ``established``, ``active``…);
    ``peer_node`` the node of the lab it is, when its address is one of a node's."""

    protocol: str
    neighbor: str
    state: str
    address: str = ""
    interface: str = ""
    peer_node: str | None = None

    @property
    def up(self) -> bool:
        """An adjacency that carries routes: OSPF ``full``, BGP ``established``."""
        return self.state in ("full", "established")

    def to_dict(self) -> JSON:
        return {
            "protocol": self.protocol,
            "neighbor": self.neighbor,
            "state": self.state,
            "address": self.address,
            "interface": self.interface,
            "peer_node": self.peer_node,
        }

    @classmethod
    def from_dict(cls, data: JSON) -> Neighbor:
        return cls(
            str(data["protocol"]),
            str(data["neighbor"]),
            str(data["state"]),
            str(data.get("address", "")),
            str(data.get("interface", "")),
            data.get("peer_node"),
        )


@dataclass(frozen=True, slots=True)
class Route:
    """An installed route: ``protocol`` (``ospf``, ``connected``, ``static``…) and its
    next hops (addresses; the interface for a directly connected one), sorted."""

    prefix: str
    protocol: str
    via: tuple[str, ...] = ()

    def to_dict(self) -> JSON:
        return {"prefix": self.prefix, "protocol": self.protocol, "via": list(self.via)}

    @classmethod
    def from_dict(cls, data: JSON) -> Route:
        return cls(str(data["prefix"]), str(data["protocol"]), tuple(data["via"]))


@dataclass(frozen=True, slots=True)
class NodeState:
    """One node as it was read. ``reached`` false: nothing was read (``reason`` says why:
    stopped, no console, the console did not answer). A part is ``None`` when it was not
    read, and ``unread`` names why (``{"routes": "no parser reads …"}``)."""

    name: str
    kind: str
    status: str
    reached: bool
    reason: str | None = None
    interfaces: tuple[InterfaceState, ...] | None = None
    neighbors: tuple[Neighbor, ...] | None = None
    routes: tuple[Route, ...] | None = None
    config: tuple[str, ...] | None = None
    unread: tuple[tuple[str, str], ...] = ()

    @property
    def addresses(self) -> list[str]:
        """The node's IPv4 addresses without their masks, in interface order."""
        found: list[str] = []
        for interface in self.interfaces or ():
            found += [a.split("/", 1)[0] for a in interface.addresses]
        return [a for a in dict.fromkeys(found) if not a.startswith(("127.", "0.0.0.0"))]

    def to_dict(self) -> JSON:
        def listed(items: tuple[Any, ...] | None) -> list[Any] | None:
            if items is None:
                return None
            return [item.to_dict() if hasattr(item, "to_dict") else item for item in items]

        return {
            "name": self.name,
            "kind": self.kind,
            "status": self.status,
            "reached": self.reached,
            "reason": self.reason,
            "interfaces": listed(self.interfaces),
            "neighbors": listed(self.neighbors),
            "routes": listed(self.routes),
            "config": listed(self.config),
            "unread": dict(self.unread),
        }

    @classmethod
    def from_dict(cls, data: JSON) -> NodeState:
        def parts(key: str, make: Any) -> tuple[Any, ...] | None:
            items = data.get(key)
            return None if items is None else tuple(make(item) for item in items)

        return cls(
            str(data["name"]),
            str(data["kind"]),
            str(data["status"]),
            bool(data["reached"]),
            data.get("reason"),
            parts("interfaces", InterfaceState.from_dict),
            parts("neighbors", Neighbor.from_dict),
            parts("routes", Route.from_dict),
            parts("config", str),
            tuple(sorted((str(k), str(v)) for k, v in (data.get("unread") or {}).items())),
        )


@dataclass(frozen=True, slots=True)
class Reachability:
    """Whether ``source`` reached ``target``'s ``address`` by ping (``None``: the ping
    could not be run, ``reason`` says why); ``replies`` of ``sent``."""

    source: str
    target: str
    address: str
    reachable: bool | None
    replies: int = 0
    sent: int = 0
    reason: str | None = None

    def to_dict(self) -> JSON:
        return {
            "from": self.source,
            "to": self.target,
            "address": self.address,
            "reachable": self.reachable,
            "replies": self.replies,
            "sent": self.sent,
            "reason": self.reason,
        }

    @classmethod
    def from_dict(cls, data: JSON) -> Reachability:
        return cls(
            str(data["from"]),
            str(data["to"]),
            str(data["address"]),
            data.get("reachable"),
            int(data.get("replies", 0)),
            int(data.get("sent", 0)),
            data.get("reason"),
        )


@dataclass(frozen=True, slots=True)
class LabState:
    """The lab of one project at ``captured_at``: its nodes by name, and the PCs'
    reachability, each sorted (so equal labs give equal states)."""

    state_id: str
    project_id: str
    captured_at: datetime
    took_s: float
    nodes: tuple[NodeState, ...]
    reachability: tuple[Reachability, ...] = ()

    def node(self, name: str) -> NodeState | None:
        return next((node for node in self.nodes if node.name == name), None)

    def to_dict(self) -> JSON:
        return {
            "state_id": self.state_id,
            "project_id": self.project_id,
            "captured_at": self.captured_at.isoformat(),
            "took_s": self.took_s,
            "nodes": [node.to_dict() for node in self.nodes],
            "reachability": [pair.to_dict() for pair in self.reachability],
        }

    @classmethod
    def from_dict(cls, data: JSON) -> LabState:
        return cls(
            str(data["state_id"]),
            str(data["project_id"]),
            datetime.fromisoformat(str(data["captured_at"])),
            float(data["took_s"]),
            tuple(NodeState.from_dict(node) for node in data["nodes"]),
            tuple(Reachability.from_dict(pair) for pair in data.get("reachability") or []),
        )

    def summary(self) -> JSON:
        """Counts per node and of the reachability, for the model (not every fact)."""
        nodes: list[JSON] = []
        for node in self.nodes:
            if not node.reached:
                nodes.append({"node": node.name, "status": node.status, "reason": node.reason})
                continue
            row: JSON = {"node": node.name, "kind": node.kind}
            if node.interfaces is not None:
                up = sum(1 for i in node.interfaces if i.state == "up")
                row["interfaces"] = len(node.interfaces)
                row["interfaces_up"] = up
                row["addresses"] = node.addresses
            if node.neighbors is not None:
                row["neighbors"] = len(node.neighbors)
                row["adjacencies_up"] = sum(1 for n in node.neighbors if n.up)
            if node.routes is not None:
                row["routes"] = len(node.routes)
            if node.config is not None:
                row["config_lines"] = len(node.config)
            if node.unread:
                row["unread"] = dict(node.unread)
            nodes.append(row)
        measured = [pair for pair in self.reachability if pair.reachable is not None]
        return {
            "state_id": self.state_id,
            "captured_at": self.captured_at.isoformat(),
            "took_s": round(self.took_s, 2),
            "nodes": nodes,
            "reachability": {
                "pairs": len(self.reachability),
                "reachable": sum(1 for pair in measured if pair.reachable),
                "unreachable": [
                    f"{pair.source} -> {pair.target}" for pair in measured if not pair.reachable
                ],
                "not_measured": len(self.reachability) - len(measured),
            },
        }


# ============================================================================ the store
class UnknownStateError(NotFoundError):
    """A state id this conversation has not captured (or no longer keeps)."""


Key = tuple[str, str, str]


@dataclass(slots=True)
class _Kept:
    states: OrderedDict[str, tuple[LabState, datetime]] = field(default_factory=OrderedDict)


class LabStateStore:
    """The lab states each conversation captured, in this process: per (project, user,
    session) at most ``per_session`` (the oldest dropped), each for at most ``max_age``,
    and at most ``sessions`` conversations (the one used longest ago dropped)."""

    def __init__(
        self,
        *,
        per_session: int = 16,
        max_age: timedelta = timedelta(hours=2),
        sessions: int = 512,
    ) -> None:
        self.per_session = per_session
        self.max_age = max_age
        self.sessions = sessions
        self._kept: OrderedDict[Key, _Kept] = OrderedDict()
        self._lock = threading.Lock()

    def put(self, key: Key, state: LabState, now: datetime) -> None:
        with self._lock:
            self._expire(now)
            kept = self._kept.setdefault(key, _Kept())
            self._kept.move_to_end(key)
            kept.states[state.state_id] = (state, now)
            kept.states.move_to_end(state.state_id)
            while len(kept.states) > self.per_session:
                kept.states.popitem(last=False)
            while len(self._kept) > self.sessions:
                self._kept.popitem(last=False)

    def get(self, key: Key, state_id: str, now: datetime) -> LabState:
        """The state, or :class:`UnknownStateError` (another conversation's id, one
        dropped, or one never made)."""
        with self._lock:
            self._expire(now)
            kept = self._kept.get(key)
            found = kept.states.get(state_id.strip()) if kept is not None else None
        if found is None:
            raise UnknownStateError(
                f"unknown state id {state_id!r} (this conversation keeps its last "
                f"{self.per_session} states for {self.max_age.total_seconds() / 60:g} "
                "minutes): capture_lab_state again"
            )
        return found[0]

    def ids(self, key: Key) -> list[str]:
        """The kept state ids of a conversation, oldest first."""
        with self._lock:
            kept = self._kept.get(key)
            return list(kept.states) if kept is not None else []

    def _expire(self, now: datetime) -> None:
        for key in list(self._kept):
            kept = self._kept[key]
            for state_id, (_, stored) in list(kept.states.items()):
                if now - stored > self.max_age:
                    del kept.states[state_id]
            if not kept.states:
                del self._kept[key]
