"""The topology as a restore point keeps it, and putting it back.

What is kept: every node (name, type, template, compute, position, symbol, status), every
link (its two ends as node and port, its filters, whether it is suspended) and every
drawing (its SVG, position, rotation). Ids are kept too, but GNS3 gives everything new ids
when a project is loaded again (a snapshot restore does), so matching goes by id first and
then by name: a node by its name, a link by its ends' node names and ports, a drawing by
its content and place.

Putting it back makes the difference undone, in this order: links that did not exist are
deleted, then nodes that did not exist; nodes that were deleted are created again (from
their template when it still exists, else from their own description), renamed and moved
back; links are created again and their filters and suspension set back; drawings are
deleted, created or moved back; last, nodes are started or stopped as they were. The
result is then read back and compared (:func:`compare`).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from adapters.gns3.lab import LabSnapshot
from adapters.gns3.rest import Gns3Client
from copilot_core.errors import CopilotError

__all__ = ["TopologyOutcome", "capture_topology", "compare_topology", "restore_topology"]

JSON = dict[str, Any]

_NODE_FIELDS = (
    "node_id",
    "name",
    "node_type",
    "compute_id",
    "template_id",
    "x",
    "y",
    "z",
    "symbol",
    "status",
    "console_type",
)
_DRAWING_FIELDS = ("drawing_id", "svg", "x", "y", "z", "rotation", "locked")


def capture_topology(snapshot: LabSnapshot, drawings: Iterable[JSON]) -> JSON:
    """The project's nodes, links and drawings as a restore point keeps them."""
    nodes = []
    for node in snapshot.nodes:
        kept = {key: node.get(key) for key in _NODE_FIELDS}
        kept["template"] = snapshot.template_names.get(str(node.get("template_id")))
        nodes.append(kept)
    links = []
    for link in snapshot.links:
        ends = []
        for end in link.get("nodes") or []:
            owner = snapshot.by_id(str(end.get("node_id")))
            adapter, port = int(end.get("adapter_number", -1)), int(end.get("port_number", -1))
            ends.append(
                {
                    "node_id": end.get("node_id"),
                    "node": owner.get("name") if owner else None,
                    "adapter_number": adapter,
                    "port_number": port,
                    "port": snapshot.port_name(str(end.get("node_id")), adapter, port),
                }
            )
        links.append(
            {
                "link_id": link.get("link_id"),
                "ends": ends,
                "filters": dict(link.get("filters") or {}),
                "suspend": bool(link.get("suspend")),
            }
        )
    kept_drawings = [{key: d.get(key) for key in _DRAWING_FIELDS} for d in drawings]
    return {"nodes": nodes, "links": links, "drawings": kept_drawings}


async def read_topology(client: Gns3Client, token: str, project_id: str) -> JSON:
    snapshot, drawings = await asyncio.gather(
        LabSnapshot.read(client, token, project_id), client.drawings(token, project_id)
    )
    return capture_topology(snapshot, drawings)


@dataclass(slots=True)
class TopologyOutcome:
    """What putting a topology back did, what failed, and what still differs."""

    actions: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    differences: list[str] = field(default_factory=list)


# ===================================================================== comparison
def _link_key(link: JSON) -> frozenset[tuple[str, str]]:
    return frozenset((str(end.get("node")), str(end.get("port"))) for end in link["ends"])


def _describe_key(key: frozenset[tuple[str, str]]) -> str:
    return " <-> ".join(f"{node} {port}" for node, port in sorted(key))


def _drawing_key(drawing: JSON) -> tuple[Any, ...]:
    return tuple(drawing.get(key) for key in ("svg", "x", "y", "z", "rotation"))


def compare_topology(saved: JSON, current: JSON) -> list[str]:
    """How ``current`` differs from ``saved``, by names (ids may have changed)."""
    found: list[str] = []
    then = {str(n["name"]): n for n in saved.get("nodes") or []}
    now = {str(n["name"]): n for n in current.get("nodes") or []}
    found += [f"node {name} exists now, not then" for name in sorted(set(now) - set(then))]
    found += [f"node {name} existed then, not now" for name in sorted(set(then) - set(now))]
    for name in sorted(set(then) & set(now)):
        before, after = then[name], now[name]
        if before.get("status") != after.get("status"):
            found.append(f"node {name} is {after.get('status')}, was {before.get('status')}")
        if (before.get("x"), before.get("y")) != (after.get("x"), after.get("y")):
            found.append(
                f"node {name} is at ({after.get('x')}, {after.get('y')}), "
                f"was at ({before.get('x')}, {before.get('y')})"
            )
    links_then = {_link_key(link): link for link in saved.get("links") or []}
    links_now = {_link_key(link): link for link in current.get("links") or []}
    for key in sorted(set(links_now) - set(links_then), key=_describe_key):
        found.append(f"link {_describe_key(key)} exists now, not then")
    for key in sorted(set(links_then) - set(links_now), key=_describe_key):
        found.append(f"link {_describe_key(key)} existed then, not now")
    for key in sorted(set(links_then) & set(links_now), key=_describe_key):
        before, after = links_then[key], links_now[key]
        if before.get("filters") != after.get("filters"):
            found.append(
                f"link {_describe_key(key)} has filters {after.get('filters')}, "
                f"had {before.get('filters')}"
            )
        if bool(before.get("suspend")) != bool(after.get("suspend")):
            state = "suspended" if after.get("suspend") else "not suspended"
            found.append(f"link {_describe_key(key)} is {state} now")
    drawings_then = Counter(_drawing_key(d) for d in saved.get("drawings") or [])
    drawings_now = Counter(_drawing_key(d) for d in current.get("drawings") or [])
    if drawings_then != drawings_now:
        extra = sum((drawings_now - drawings_then).values())
        missing = sum((drawings_then - drawings_now).values())
        found.append(f"drawings: {extra} not there then, {missing} missing now")
    return found


# ====================================================================== restoring
class _Restorer:
    def __init__(self, client: Gns3Client, token: str, project_id: str) -> None:
        self.client = client
        self.token = token
        self.project_id = project_id
        self.outcome = TopologyOutcome()

    async def attempt(self, done: str, call: Any) -> Any:
        try:
            result = await call
        except CopilotError as exc:
            self.outcome.problems.append(f"could not {done}: {exc.message}")
            return None
        self.outcome.actions.append(done)
        return result if result is not None else True

    async def run(self, saved: JSON) -> TopologyOutcome:
        client, token, project = self.client, self.token, self.project_id
        snapshot = await LabSnapshot.read(client, token, project)
        drawings = await client.drawings(token, project)
        templates = await client.templates(token)
        saved_nodes: list[JSON] = list(saved.get("nodes") or [])

        # Nodes: by id, then by name.
        current_by_id = {str(n.get("node_id")): n for n in snapshot.nodes}
        mapping: dict[str, JSON] = {}  # saved node id -> current node
        for node in saved_nodes:
            found = current_by_id.pop(str(node.get("node_id")), None)
            if found is not None:
                mapping[str(node.get("node_id"))] = found
        for node in saved_nodes:
            if str(node.get("node_id")) in mapping:
                continue
            found = next(
                (n for n in current_by_id.values() if n.get("name") == node.get("name")), None
            )
            if found is not None:
                mapping[str(node.get("node_id"))] = found
                del current_by_id[str(found.get("node_id"))]
        extra_nodes = list(current_by_id.values())

        # Links that did not exist then go first (their nodes may stay).
        wanted = {self._saved_link_key(link, mapping) for link in saved.get("links") or []}
        current_links: dict[frozenset[tuple[str, int, int]], JSON] = {}
        for link in snapshot.links:
            key = frozenset(
                (
                    str(e.get("node_id")),
                    int(e.get("adapter_number", -1)),
                    int(e.get("port_number", -1)),
                )
                for e in link.get("nodes") or []
            )
            if key in wanted:
                current_links[key] = link
            else:
                await self.attempt(
                    f"delete link {snapshot.describe_link(link)}",
                    client.delete_link(token, project, str(link["link_id"])),
                )
        for node in extra_nodes:
            await self.attempt(
                f"delete node {node.get('name')}",
                client.delete_node(token, project, str(node["node_id"])),
            )

        # Nodes that existed then: created again, renamed and moved back.
        for node in saved_nodes:
            saved_id = str(node.get("node_id"))
            present = mapping.get(saved_id)
            if present is None:
                made = await self._recreate(node, templates)
                if made is not None:
                    mapping[saved_id] = made
                continue
            changes = {
                field_: node.get(field_)
                for field_ in ("name", "x", "y")
                if node.get(field_) is not None and present.get(field_) != node.get(field_)
            }
            if changes:
                what = (
                    f"rename {present.get('name')} back to {node.get('name')}"
                    if "name" in changes
                    else f"move {node.get('name')} back"
                )
                updated = await self.attempt(
                    what,
                    client.update_node(token, project, str(present["node_id"]), **changes),
                )
                if isinstance(updated, dict):
                    present.update(updated)

        # Links that existed then, their filters and suspension.
        for link in saved.get("links") or []:
            ends = self._saved_link_key(link, mapping)
            label = " <-> ".join(f"{e.get('node')} {e.get('port')}" for e in link["ends"])
            present = current_links.get(ends)
            if present is None:
                if any(part[0] == "" for part in ends):
                    self.outcome.problems.append(f"could not link {label}: an end is missing")
                    continue
                made = await self.attempt(
                    f"link {label} again",
                    client.create_link(
                        token, project, [(n, a, p) for n, a, p in self._ordered(link, mapping)]
                    ),
                )
                if not isinstance(made, dict):
                    continue
                present = made
            fields: JSON = {}
            if dict(present.get("filters") or {}) != dict(link.get("filters") or {}):
                fields["filters"] = dict(link.get("filters") or {})
            if bool(present.get("suspend")) != bool(link.get("suspend")):
                fields["suspend"] = bool(link.get("suspend"))
            if fields:
                await self.attempt(
                    f"set the filters and suspension of {label} back",
                    client.update_link(token, project, str(present["link_id"]), **fields),
                )

        await self._drawings(list(saved.get("drawings") or []), drawings)

        # Last, each node's status.
        for node in saved_nodes:
            present = mapping.get(str(node.get("node_id")))
            if present is None:
                continue
            want, have = node.get("status"), present.get("status")
            if want == have or want not in ("started", "stopped", "suspended"):
                continue
            action = {"started": "start", "stopped": "stop", "suspended": "suspend"}[str(want)]
            await self.attempt(
                f"{action} {node.get('name')}",
                client.node_action(token, project, str(present["node_id"]), action),
            )
        return self.outcome

    @staticmethod
    def _saved_link_key(link: JSON, mapping: dict[str, JSON]) -> frozenset[tuple[str, int, int]]:
        return frozenset(_Restorer._ordered(link, mapping))

    @staticmethod
    def _ordered(link: JSON, mapping: dict[str, JSON]) -> list[tuple[str, int, int]]:
        ends = []
        for end in link["ends"]:
            node = mapping.get(str(end.get("node_id")))
            node_id = str(node.get("node_id")) if node is not None else ""
            ends.append((node_id, int(end["adapter_number"]), int(end["port_number"])))
        return ends

    async def _recreate(self, node: JSON, templates: list[JSON]) -> JSON | None:
        client, token, project = self.client, self.token, self.project_id
        name = str(node.get("name"))
        x, y = int(node.get("x") or 0), int(node.get("y") or 0)
        template = next(
            (t for t in templates if t.get("template_id") == node.get("template_id")), None
        ) or next((t for t in templates if t.get("name") == node.get("template")), None)
        try:
            if template is not None:
                made = await client.create_node_from_template(
                    token, project, str(template["template_id"]), x=x, y=y
                )
                if made.get("name") != name:
                    made.update(
                        await client.update_node(token, project, str(made["node_id"]), name=name)
                    )
            else:
                body = {
                    key: node[key]
                    for key in ("name", "node_type", "compute_id", "x", "y", "z", "symbol")
                    if node.get(key) is not None
                }
                made = await client.create_node(token, project, body)
        except CopilotError as exc:
            self.outcome.problems.append(f"could not create node {name} again: {exc.message}")
            return None
        self.outcome.actions.append(f"create node {name} again")
        return made

    async def _drawings(self, saved: list[JSON], current: list[JSON]) -> None:
        client, token, project = self.client, self.token, self.project_id
        left = list(current)
        matched: list[tuple[JSON, JSON]] = []
        pending: list[JSON] = []
        for drawing in saved:
            same = next((d for d in left if d.get("drawing_id") == drawing.get("drawing_id")), None)
            if same is None:
                same = next((d for d in left if _drawing_key(d) == _drawing_key(drawing)), None)
            if same is None:
                pending.append(drawing)
            else:
                left.remove(same)
                matched.append((drawing, same))
        for extra in left:
            await self.attempt(
                "delete a drawing added since",
                client.delete_drawing(token, project, str(extra["drawing_id"])),
            )
        for drawing in pending:
            body = {
                key: drawing[key] for key in _DRAWING_FIELDS[1:] if drawing.get(key) is not None
            }
            await self.attempt(
                "draw a deleted drawing again", client.create_drawing(token, project, body)
            )
        for drawing, present in matched:
            changes = {
                key: drawing.get(key)
                for key in _DRAWING_FIELDS[1:]
                if drawing.get(key) is not None and drawing.get(key) != present.get(key)
            }
            if changes:
                await self.attempt(
                    "put a drawing back as it was",
                    client.update_drawing(token, project, str(present["drawing_id"]), **changes),
                )


async def restore_topology(
    client: Gns3Client, token: str, project_id: str, saved: JSON
) -> TopologyOutcome:
    """Make the project's topology what ``saved`` (from :func:`capture_topology`) says,
    then read it back: the outcome lists what was done, what failed and what differs."""
    outcome = await _Restorer(client, token, project_id).run(saved)
    outcome.differences = compare_topology(saved, await read_topology(client, token, project_id))
    return outcome
