"""A restore point: what the lab looked like before an approved change, in typed parts.

What more than one package reads of a restore point is a typed field: the devices and
topology it keeps and the whole-lab snapshot it holds (the page lists them), the record of
what its change did (:class:`ChangeRecord`: the tool source plans its undo from it, the
page shows its :class:`ChangeDescription`), the mark of its rollback (:class:`RolledBack`:
the core's rollback and the tool source's verified change write it, the page and the
model read it) and the ids an undo gave anew (``id_map``). One blob remains, ``kept``:
the tool source's own copy of each device's configuration and of the topology, which only
it reads.

A point is made JSON once, by :meth:`RestorePoint.to_dict`, and read back by
:meth:`RestorePoint.from_dict`, which also reads the rows stored before the fields were
typed (one flat ``state`` mapping the GNS3 tools wrote; see :func:`_from_flat_state`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

__all__ = [
    "ChangeDescription",
    "ChangeRecord",
    "ItemChanges",
    "RestorePoint",
    "RollbackStatus",
    "RolledBack",
]

JSON = dict[str, Any]

#: The shape :meth:`RestorePoint.to_dict` writes; a mapping without it is the flat
#: ``state`` of the rows stored before.
FORMAT = 2


class RollbackStatus(StrEnum):
    """How a rollback (and each device's or the topology's part of it) ended."""

    #: Everything is as it was, read back.
    SUCCESS = "success"
    #: Some of it is as it was, some differs (the items say what).
    PARTIAL_SUCCESS = "partial_success"
    #: Nothing could be put back.
    FAILED = "failed"
    #: Refused before anything was changed: undoing the change would touch what was done
    #: since (``conflicts``); ``force`` goes on anyway.
    CONFLICT = "conflict"
    #: The rollback failed as a whole (``error`` says why): a restore point that holds
    #: nothing, a lab that cannot be read, a time limit.
    ERROR = "error"
    #: Stopped from outside (the session's claim was lost) before it ended.
    ABORTED = "aborted"


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _names(value: Any) -> tuple[str, ...]:
    return tuple(str(name) for name in value) if isinstance(value, list | tuple) else ()


@dataclass(frozen=True, slots=True)
class ItemChanges:
    """One kind of item's part of a change (nodes, links or drawings), by id: what it
    created (as made), what it deleted (as it was, whole: what an undo makes again) and,
    per item it changed, each field's ``[before, after]`` (``fields``) and what names it.
    The items are the tool source's own JSON."""

    created: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    deleted: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    changed: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.created or self.deleted or self.changed)

    def to_dict(self) -> JSON:
        return {
            "created": {key: dict(item) for key, item in self.created.items()},
            "deleted": {key: dict(item) for key, item in self.deleted.items()},
            "changed": {key: dict(item) for key, item in self.changed.items()},
        }

    @classmethod
    def from_dict(cls, data: Any) -> ItemChanges:
        data = _mapping(data)

        def group(name: str) -> dict[str, Mapping[str, Any]]:
            return {
                str(key): dict(_mapping(item)) for key, item in _mapping(data.get(name)).items()
            }

        return cls(group("created"), group("deleted"), group("changed"))


@dataclass(frozen=True, slots=True)
class ChangeDescription:
    """What a change did, in names, for people (the page's ``change``)."""

    nodes_created: tuple[str, ...] = ()
    nodes_deleted: tuple[str, ...] = ()
    #: Per node, the names of the fields it changed.
    nodes_changed: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    links_created: tuple[str, ...] = ()
    links_deleted: tuple[str, ...] = ()
    links_changed: tuple[str, ...] = ()
    devices_configured: tuple[str, ...] = ()
    #: How many drawings it ``created``, ``deleted`` and ``changed`` (empty: it touched
    #: none).
    drawings: Mapping[str, int] = field(default_factory=dict)

    def to_json(self) -> JSON:
        """Only what the change did: an empty part is left out."""
        body: JSON = {
            "nodes_created": list(self.nodes_created),
            "nodes_deleted": list(self.nodes_deleted),
            "nodes_changed": {name: list(fields) for name, fields in self.nodes_changed.items()},
            "links_created": list(self.links_created),
            "links_deleted": list(self.links_deleted),
            "links_changed": list(self.links_changed),
            "devices_configured": list(self.devices_configured),
            "drawings": dict(self.drawings),
        }
        return {key: value for key, value in body.items() if value}

    @classmethod
    def from_json(cls, data: Any) -> ChangeDescription:
        data = _mapping(data)
        return cls(
            nodes_created=_names(data.get("nodes_created")),
            nodes_deleted=_names(data.get("nodes_deleted")),
            nodes_changed={
                str(name): _names(fields)
                for name, fields in _mapping(data.get("nodes_changed")).items()
            },
            links_created=_names(data.get("links_created")),
            links_deleted=_names(data.get("links_deleted")),
            links_changed=_names(data.get("links_changed")),
            devices_configured=_names(data.get("devices_configured")),
            drawings={str(k): int(v) for k, v in _mapping(data.get("drawings")).items()},
        )


@dataclass(frozen=True, slots=True)
class ChangeRecord:
    """What a restore point's change did, read once it ran: what an undo of that change,
    and only it, undoes. ``configured``: the devices whose configuration it set (node id
    -> name; the point keeps their configuration as it was). ``topology_kept`` is false
    for a point that kept no topology: its record holds the devices configured only."""

    nodes: ItemChanges = field(default_factory=ItemChanges)
    links: ItemChanges = field(default_factory=ItemChanges)
    drawings: ItemChanges = field(default_factory=ItemChanges)
    configured: Mapping[str, str] = field(default_factory=dict)
    described: ChangeDescription = field(default_factory=ChangeDescription)
    topology_kept: bool = True

    def to_dict(self) -> JSON:
        return {
            "nodes": self.nodes.to_dict(),
            "links": self.links.to_dict(),
            "drawings": self.drawings.to_dict(),
            "configured": dict(self.configured),
            "described": self.described.to_json(),
            "topology_kept": self.topology_kept,
        }

    @classmethod
    def from_dict(cls, data: Any) -> ChangeRecord:
        data = _mapping(data)
        return cls(
            nodes=ItemChanges.from_dict(data.get("nodes")),
            links=ItemChanges.from_dict(data.get("links")),
            drawings=ItemChanges.from_dict(data.get("drawings")),
            configured={str(k): str(v) for k, v in _mapping(data.get("configured")).items()},
            described=ChangeDescription.from_json(data.get("described")),
            topology_kept=data.get("topology_kept") is not False,
        )


@dataclass(frozen=True, slots=True)
class RolledBack:
    """The mark of a restore point rolled back: when, by whom (a user id, or
    ``verification`` for a verified change's own rollback), how it ended, the call that
    recorded it, and the restore point taken just before it (``None``: none was)."""

    at: datetime | None
    by: str
    status: RollbackStatus
    tool_call_id: str
    restore_point_id: str | None = None

    def to_json(self) -> JSON:
        return {
            "at": None if self.at is None else self.at.isoformat(),
            "by": self.by,
            "status": self.status.value,
            "tool_call_id": self.tool_call_id,
            "restore_point_id": self.restore_point_id,
        }

    @classmethod
    def from_json(cls, data: Any) -> RolledBack:
        data = _mapping(data)
        at = data.get("at")
        try:
            moment = datetime.fromisoformat(at) if isinstance(at, str) else None
        except ValueError:
            moment = None
        try:
            status = RollbackStatus(str(data.get("status")))
        except ValueError:
            status = RollbackStatus.ERROR  # an unknown end is not taken for a success
        point = data.get("restore_point_id")
        return cls(
            at=moment,
            by=str(data.get("by") or ""),
            status=status,
            tool_call_id=str(data.get("tool_call_id") or ""),
            restore_point_id=None if point is None else str(point),
        )


@dataclass(frozen=True, slots=True)
class RestorePoint:
    """What the lab looked like before an approved change, to roll the change back (see
    the module docstring).

    ``devices``: the devices whose configuration it keeps; ``topology``: whether it keeps
    the topology; ``snapshot``: the name of the whole-lab snapshot it holds (GNS3's), if
    one could be taken; ``change``: what the change did (``None`` until it ran, and for
    points taken before changes were recorded); ``rolled_back``: set once it was rolled
    back; ``id_map``: old id -> new id of what its rollback made again. ``kept`` is the
    tool source's own copy of each device's configuration and of the topology: the core
    stores it with the session and hands it back, never reading it.
    """

    id: str
    project_id: str
    session_id: str
    created_at: datetime
    tool_call_id: str
    tool_name: str
    summary: str
    devices: tuple[str, ...] = ()
    topology: bool = False
    snapshot: str | None = None
    change: ChangeRecord | None = None
    rolled_back: RolledBack | None = None
    id_map: Mapping[str, str] = field(default_factory=dict)
    kept: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> JSON:
        """The point as JSON, the one shape every store writes."""
        return {
            "format": FORMAT,
            "id": self.id,
            "project_id": self.project_id,
            "session_id": self.session_id,
            "created_at": self.created_at.isoformat(),
            "tool_call_id": self.tool_call_id,
            "tool_name": self.tool_name,
            "summary": self.summary,
            "devices": list(self.devices),
            "topology": self.topology,
            "snapshot": self.snapshot,
            "change": None if self.change is None else self.change.to_dict(),
            "rolled_back": None if self.rolled_back is None else self.rolled_back.to_json(),
            "id_map": dict(self.id_map),
            "kept": dict(self.kept),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RestorePoint:
        """A point from :meth:`to_dict`'s JSON, or from a row stored before the fields
        were typed (its identity and a flat ``state``, see :func:`_from_flat_state`).
        Raises ``ValueError`` (``KeyError``, ``TypeError`` included) when ``data`` is
        neither."""
        created = data["created_at"]
        identity: JSON = {
            "id": str(data["id"]),
            "project_id": str(data["project_id"]),
            "session_id": str(data["session_id"]),
            "created_at": created
            if isinstance(created, datetime)
            else datetime.fromisoformat(str(created)),
            "tool_call_id": str(data["tool_call_id"]),
            "tool_name": str(data["tool_name"]),
            "summary": str(data["summary"]),
        }
        if data.get("format") != FORMAT:
            state = data.get("state")
            return cls(
                **identity, **_from_flat_state(state if isinstance(state, Mapping) else data)
            )
        change, rolled_back = data.get("change"), data.get("rolled_back")
        snapshot = data.get("snapshot")
        return cls(
            **identity,
            devices=_names(data.get("devices")),
            topology=bool(data.get("topology")),
            snapshot=None if snapshot is None else str(snapshot),
            change=None if change is None else ChangeRecord.from_dict(change),
            rolled_back=None if rolled_back is None else RolledBack.from_json(rolled_back),
            id_map={str(k): str(v) for k, v in _mapping(data.get("id_map")).items()},
            kept=dict(_mapping(data.get("kept"))),
        )


#: The keys of a flat state that are typed fields now (what is left is ``kept``), and the
#: identity keys of a point's dict.
_TYPED_KEYS = frozenset({"format", "change", "rolled_back", "id_map", "gns3_snapshot"})
_IDENTITY_KEYS = frozenset(
    {"id", "project_id", "session_id", "created_at", "tool_call_id", "tool_name", "summary"}
)


def _from_flat_state(state: Mapping[str, Any]) -> JSON:
    """The typed fields of a row stored before they were: one ``state`` mapping that the
    GNS3 tools wrote (``devices`` by name with ``captured``, ``topology``,
    ``gns3_snapshot.name``, ``change``, ``rolled_back``, ``id_map``, the rest theirs).
    Everything but the typed parts stays in ``kept``, as it was."""
    devices = _mapping(state.get("devices"))
    snapshot = _mapping(state.get("gns3_snapshot")).get("name")
    change, rolled_back = state.get("change"), state.get("rolled_back")
    return {
        "devices": tuple(
            str(name)
            for name, entry in devices.items()
            if isinstance(entry, Mapping) and entry.get("captured")
        ),
        "topology": "topology" in state,
        "snapshot": None if snapshot is None else str(snapshot),
        "change": ChangeRecord.from_dict(change) if isinstance(change, Mapping) else None,
        "rolled_back": RolledBack.from_json(rolled_back) if rolled_back else None,
        "id_map": {str(k): str(v) for k, v in _mapping(state.get("id_map")).items()},
        "kept": {
            key: value
            for key, value in state.items()
            if key not in _TYPED_KEYS and key not in _IDENTITY_KEYS
        },
    }
