"""What a change did to the topology, as its restore point records it.

The restore point keeps the topology as it was just before the change (every node's own
GNS3 JSON, every link, every drawing). Once the change has run, the topology is read again
and :func:`record_change` keeps the difference, by id:

* ``nodes.created``: the nodes that exist now and not then (their JSON as made);
* ``nodes.deleted``: the nodes that existed then and not now, with their whole JSON
  (properties, ports mapping, adapters, MAC address, label, console type, symbol,
  position…) so that an undo can make them again as they were;
* ``nodes.changed``: per node, each field that changed, ``[before, after]``;
* the same for ``links`` (their ends, filters, suspension, style) and ``drawings``;
* ``configured``: the devices whose configuration the change set (their restore point
  entries hold the configuration as it was).

``described`` says the same in names, for people (the API's ``change``). The record is
the core's typed :class:`~copilot_core.ports.ChangeRecord`; the items are GNS3's JSON.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from copilot_core.ports import ChangeDescription, ChangeRecord, ItemChanges

__all__ = [
    "COMPARED_NODE_FIELDS",
    "LINK_FIELDS",
    "kept_drawing",
    "kept_link",
    "kept_node",
    "link_label",
    "node_differences",
    "port_names",
    "record_change",
    "same_field",
]

JSON = dict[str, Any]

#: Keys of GNS3's node JSON that GNS3 derives or allocates (never set back, never compared).
_VOLATILE_NODE_KEYS = frozenset(
    {
        "ports",
        "node_directory",
        "command_line",
        "width",
        "height",
        "project_id",
        "console_host",
        "console",
        "aux",
        "template_id",
    }
)
#: What makes a node that node: compared field by field after it is made again.
COMPARED_NODE_FIELDS = (
    "name",
    "node_type",
    "compute_id",
    "x",
    "y",
    "z",
    "symbol",
    "label",
    "console_type",
    "console_auto_start",
    "aux_type",
    "locked",
    "port_name_format",
    "port_segment_size",
    "first_port_name",
    "custom_adapters",
    "properties",
    "status",
)
#: Keys GNS3 adds to a node's ``properties`` by itself (``compute_id`` on a node made
#: from its JSON): not part of what the node is.
_VOLATILE_PROPERTIES = frozenset({"compute_id"})
LINK_FIELDS = ("filters", "suspend", "link_style")
_DRAWING_FIELDS = ("svg", "x", "y", "z", "rotation", "locked")


def kept_node(node: Mapping[str, Any]) -> JSON:
    """A node's JSON as a restore point keeps it (without what GNS3 derives)."""
    kept = {key: value for key, value in node.items() if key not in _VOLATILE_NODE_KEYS}
    properties = kept.get("properties")
    if isinstance(properties, dict):
        kept["properties"] = {k: v for k, v in properties.items() if k not in _VOLATILE_PROPERTIES}
    return kept


def port_names(nodes: Iterable[Mapping[str, Any]]) -> dict[tuple[str, int, int], str]:
    """Each port's name (``Ethernet0``) by ``(node id, adapter, port)``, from node JSON."""
    return {
        (
            str(node.get("node_id")),
            int(p.get("adapter_number", -1)),
            int(p.get("port_number", -1)),
        ): str(p.get("name"))
        for node in nodes
        for p in node.get("ports") or []
    }


def kept_link(
    link: Mapping[str, Any], ports: Mapping[tuple[str, int, int], str] | None = None
) -> JSON:
    """A link as a restore point keeps it; ``ports`` names its ends' ports (for words)."""
    ends = []
    for end in link.get("nodes") or []:
        key = (
            str(end.get("node_id")),
            int(end.get("adapter_number", -1)),
            int(end.get("port_number", -1)),
        )
        kept = {"node_id": key[0], "adapter_number": key[1], "port_number": key[2]}
        if end.get("label"):
            kept["label"] = end["label"]
        if ports and key in ports:
            kept["port"] = ports[key]
        ends.append(kept)
    return {
        "link_id": link.get("link_id"),
        "nodes": ends,
        "filters": dict(link.get("filters") or {}),
        "suspend": bool(link.get("suspend")),
        **({"link_style": link["link_style"]} if link.get("link_style") else {}),
    }


def kept_drawing(drawing: Mapping[str, Any]) -> JSON:
    return {"drawing_id": drawing.get("drawing_id")} | {
        key: drawing.get(key) for key in _DRAWING_FIELDS
    }


def _normal(field: str, value: Any) -> Any:
    if field == "properties" and isinstance(value, dict):
        return {k: v for k, v in value.items() if k not in _VOLATILE_PROPERTIES}
    if field == "link_style" and isinstance(value, dict):
        return {k: v for k, v in value.items() if v is not None}
    if field == "filters":
        return dict(value or {})
    if field == "suspend":
        return bool(value)
    return value


def same_field(field: str, one: Any, other: Any) -> bool:
    """Whether two values of a node's or link's field are the same for an undo."""
    return bool(_normal(field, one) == _normal(field, other))


def node_differences(saved: Mapping[str, Any], now: Mapping[str, Any]) -> list[str]:
    """Each field of ``saved`` (a kept node) that ``now`` does not have the same, in words."""
    found = []
    for field in COMPARED_NODE_FIELDS:
        if field not in saved:
            continue
        if field == "properties":
            before = _normal(field, saved.get(field)) or {}
            after = _normal(field, now.get(field)) or {}
            for key in sorted(set(before) | set(after)):
                if before.get(key) != after.get(key):
                    found.append(
                        f"{saved.get('name')} {key}: {after.get(key)!r}, was {before.get(key)!r}"
                    )
        elif not same_field(field, saved.get(field), now.get(field)):
            found.append(
                f"{saved.get('name')} {field}: {now.get(field)!r}, was {saved.get(field)!r}"
            )
    return found


def link_label(link: Mapping[str, Any], names: Mapping[str, str]) -> str:
    """``PC1 e0/0 <-> SW1 e0/1``-like words for a link, by its ends' node names."""
    ends = [
        f"{names.get(str(end.get('node_id')), str(end.get('node_id'))[:8])} "
        + str(end.get("port") or f"{end.get('adapter_number')}/{end.get('port_number')}")
        for end in link.get("nodes") or []
    ]
    return " <-> ".join(sorted(ends))


def _by_id(items: Iterable[Mapping[str, Any]], key: str) -> dict[str, JSON]:
    return {str(item.get(key)): dict(item) for item in items}


def _changes(before: JSON, after: JSON, fields: Iterable[str]) -> dict[str, list[Any]]:
    return {
        field: [before.get(field), after.get(field)]
        for field in fields
        if not same_field(field, before.get(field), after.get(field))
    }


def record_change(
    before: Mapping[str, Any], after: Mapping[str, Any], configured: Mapping[str, str]
) -> ChangeRecord:
    """The difference ``after - before`` of two topologies as :func:`capture` keeps them
    (``{"nodes", "links", "drawings"}`` of kept JSON), by id; see the module docstring."""
    nodes_then = _by_id(before.get("nodes") or [], "node_id")
    nodes_now = _by_id(after.get("nodes") or [], "node_id")
    links_then = _by_id(before.get("links") or [], "link_id")
    links_now = _by_id(after.get("links") or [], "link_id")
    drawings_then = _by_id(before.get("drawings") or [], "drawing_id")
    drawings_now = _by_id(after.get("drawings") or [], "drawing_id")
    node_fields = [f for f in COMPARED_NODE_FIELDS if f not in ("node_type", "compute_id")]
    changed_nodes = {}
    for node_id in sorted(set(nodes_then) & set(nodes_now)):
        fields = _changes(nodes_then[node_id], nodes_now[node_id], node_fields)
        if fields:
            changed_nodes[node_id] = {"name": nodes_now[node_id].get("name"), "fields": fields}
    changed_links = {}
    for link_id in sorted(set(links_then) & set(links_now)):
        fields = _changes(links_then[link_id], links_now[link_id], LINK_FIELDS)
        if fields:
            changed_links[link_id] = {"nodes": links_now[link_id]["nodes"], "fields": fields}
    changed_drawings = {}
    for drawing_id in sorted(set(drawings_then) & set(drawings_now)):
        fields = _changes(drawings_then[drawing_id], drawings_now[drawing_id], _DRAWING_FIELDS)
        if fields:
            changed_drawings[drawing_id] = {"fields": fields}
    nodes = ItemChanges(
        created={i: nodes_now[i] for i in sorted(set(nodes_now) - set(nodes_then))},
        deleted={i: nodes_then[i] for i in sorted(set(nodes_then) - set(nodes_now))},
        changed=changed_nodes,
    )
    links = ItemChanges(
        created={i: links_now[i] for i in sorted(set(links_now) - set(links_then))},
        deleted={i: links_then[i] for i in sorted(set(links_then) - set(links_now))},
        changed=changed_links,
    )
    drawings = ItemChanges(
        created={i: drawings_now[i] for i in sorted(set(drawings_now) - set(drawings_then))},
        deleted={i: drawings_then[i] for i in sorted(set(drawings_then) - set(drawings_now))},
        changed=changed_drawings,
    )
    names = {**_names(nodes_then), **_names(nodes_now)}
    return ChangeRecord(
        nodes=nodes,
        links=links,
        drawings=drawings,
        configured=dict(configured),
        described=describe_change(nodes, links, drawings, configured, names),
    )


def _names(nodes: Mapping[str, JSON]) -> dict[str, str]:
    return {node_id: str(node.get("name")) for node_id, node in nodes.items()}


def describe_change(
    nodes: ItemChanges,
    links: ItemChanges,
    drawings: ItemChanges,
    configured: Mapping[str, str],
    names: Mapping[str, str],
) -> ChangeDescription:
    """The change in names: what the API's ``change`` shows."""
    counts = {
        "created": len(drawings.created),
        "deleted": len(drawings.deleted),
        "changed": len(drawings.changed),
    }
    return ChangeDescription(
        nodes_created=tuple(sorted(str(n.get("name")) for n in nodes.created.values())),
        nodes_deleted=tuple(sorted(str(n.get("name")) for n in nodes.deleted.values())),
        nodes_changed={
            str(entry.get("name")): tuple(sorted(entry.get("fields") or {}))
            for entry in nodes.changed.values()
        },
        links_created=tuple(sorted(link_label(k, names) for k in links.created.values())),
        links_deleted=tuple(sorted(link_label(k, names) for k in links.deleted.values())),
        links_changed=tuple(sorted(link_label(k, names) for k in links.changed.values())),
        devices_configured=tuple(sorted(str(n) for n in configured.values())),
        drawings=counts if any(counts.values()) else {},
    )
