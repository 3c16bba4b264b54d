"""What undoing one recorded change takes, worked out before anything is touched.

:func:`plan_undo` reads a change record (:mod:`adapters.gns3.restore._undo.record`) against the
topology as it is now and lists the steps that undo that change and nothing else:

1. links the change made are deleted, then nodes it made;
2. nodes it deleted are made again from their saved JSON, then the links it deleted;
3. node and link fields it changed (a name, a position, properties, filters…) are set back;
   drawings likewise; last, nodes it stopped or started get their status back.

What others did since is left as it is. Where it is in the way of the undo, it is a
*conflict*, said in words: a node the change made has been linked or changed since, a
port a deleted link used is taken, a node a deleted link ended on is gone, a field the
change set was changed again, a device the change configured is gone. A plan with
conflicts is not carried out unless the user confirms (``force``); it then also touches
what is in the way (each such step is ``extra`` and says so) and skips what cannot be done.

Ids: GNS3 may give what is made again a new id; ``id_map`` (old id -> current id, from
earlier undos) is followed everywhere an id of the record is used.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from adapters.gns3.restore._undo.record import COMPARED_NODE_FIELDS, link_label, same_field
from copilot_core.ports import ChangeRecord, ItemChanges

__all__ = ["Step", "UndoPlan", "plan_undo", "resolve", "without_extras"]

JSON = dict[str, Any]
Action = Literal[
    "delete_link",
    "delete_node",
    "create_node",
    "create_link",
    "update_node",
    "update_link",
    "node_action",
    "delete_drawing",
    "create_drawing",
    "update_drawing",
]
_VERBS = {"started": "start", "stopped": "stop", "suspended": "suspend"}
#: Built-in nodes GNS3 starts as it makes them (they cannot be stopped).
_BORN_RUNNING = frozenset({"ethernet_switch", "ethernet_hub", "frame_relay_switch", "atm_switch"})


@dataclass(frozen=True, slots=True)
class Step:
    """One thing the undo does: ``target`` is a current id (a saved one for what is made
    again), ``body`` what is sent, ``line`` the step in words, ``extra`` when it touches
    what someone else did (only with ``force``)."""

    action: Action
    target: str
    line: str
    body: JSON = field(default_factory=dict)
    extra: bool = False


@dataclass(slots=True)
class UndoPlan:
    steps: list[Step] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    #: The conflicts that even a confirmed undo cannot get past (it skips them).
    skipped: list[str] = field(default_factory=list)
    #: What needs nothing (already as before the change), in words.
    notes: list[str] = field(default_factory=list)
    #: Node ids of the record whose configuration is put back (mapped to current ids).
    devices: dict[str, str] = field(default_factory=dict)

    def lines(self) -> list[str]:
        return [step.line for step in self.steps]


def resolve(id_map: Mapping[str, str], some_id: str) -> str:
    """The current id of what had ``some_id`` (following earlier undos' id maps)."""
    seen = {some_id}
    while some_id in id_map and id_map[some_id] not in seen:
        some_id = id_map[some_id]
        seen.add(some_id)
    return some_id


def _ends(link: Mapping[str, Any]) -> list[tuple[str, int, int]]:
    return [
        (
            str(end.get("node_id")),
            int(end.get("adapter_number", -1)),
            int(end.get("port_number", -1)),
        )
        for end in link.get("nodes") or []
    ]


class _Planner:
    def __init__(
        self, change: ChangeRecord, current: Mapping[str, Any], id_map: Mapping[str, str]
    ) -> None:
        self.change = change
        self.nodes: dict[str, JSON] = dict(current.get("nodes") or {})
        self.links: dict[str, JSON] = dict(current.get("links") or {})
        self.drawings: dict[str, JSON] = dict(current.get("drawings") or {})
        self.id_map = id_map
        self.plan = UndoPlan()
        self.gone_links: set[str] = set()
        self.gone_nodes: set[str] = set()
        self.remade: set[str] = set()  # record ids of nodes made again
        #: Record ids of nodes made again only when others' work may be touched.
        self.remade_extra: set[str] = set()
        names: dict[str, str] = {}
        for group in (change.nodes.created, change.nodes.deleted):
            for node_id, node in group.items():
                names[node_id] = str(node.get("name"))
        for node_id, entry in change.nodes.changed.items():
            names[node_id] = str(entry.get("name"))
        names.update({node_id: str(node.get("name")) for node_id, node in self.nodes.items()})
        self.names = names

    def r(self, some_id: str) -> str:
        return resolve(self.id_map, some_id)

    def name(self, node_id: str) -> str:
        return self.names.get(self.r(node_id)) or self.names.get(node_id) or node_id[:8]

    def label(self, link: Mapping[str, Any]) -> str:
        ends = {str(end.get("node_id")) for end in link.get("nodes") or []}
        return link_label(link, {node_id: self.name(node_id) for node_id in ends})

    def step(self, *args: Any, **kwargs: Any) -> None:
        self.plan.steps.append(Step(*args, **kwargs))

    def cannot(self, why: str) -> None:
        self.plan.conflicts.append(why)
        self.plan.skipped.append(why)

    def delete_in_the_way(self, link_id: str, why: str) -> None:
        if link_id in self.gone_links:
            return
        self.plan.conflicts.append(why)
        self.step(
            "delete_link",
            link_id,
            f"delete link {self.label(self.links[link_id])} (made since by someone else)",
            extra=True,
        )
        self.gone_links.add(link_id)

    # ------------------------------------------------------------------ steps
    def created_links(self, group: Mapping[str, Mapping[str, Any]]) -> None:
        for link_id, saved in sorted(group.items(), key=lambda pair: self.label(pair[1])):
            current = self.r(link_id)
            if current in self.links:
                self.step(
                    "delete_link", current, f"delete link {self.label(saved)} (made by the change)"
                )
                self.gone_links.add(current)
            else:
                self.plan.notes.append(f"link {self.label(saved)}: deleted since already")

    def created_nodes(self, group: Mapping[str, Mapping[str, Any]]) -> None:
        for node_id, saved in group.items():
            current = self.r(node_id)
            node = self.nodes.get(current)
            name = str(saved.get("name"))
            if node is None:
                self.plan.notes.append(f"node {name}: deleted since already")
                continue
            changed = [
                f
                for f in COMPARED_NODE_FIELDS
                if f != "status" and f in saved and not same_field(f, saved.get(f), node.get(f))
            ]
            if changed:
                self.plan.conflicts.append(
                    f"{name} (made by the change) was changed since: {', '.join(changed)}"
                )
            linked = False
            for link_id, link in sorted(self.links.items()):
                if link_id not in self.gone_links and any(e[0] == current for e in _ends(link)):
                    linked = True
                    self.delete_in_the_way(
                        link_id, f"{name} (made by the change) was linked since: {self.label(link)}"
                    )
            # Deleting it deletes the links made to it since: others' work.
            self.step(
                "delete_node",
                current,
                f"delete node {name} (made by the change)"
                + (" (linked since by someone else)" if linked else ""),
                extra=linked,
            )
            self.gone_nodes.add(current)

    def deleted_nodes(self, group: Mapping[str, Mapping[str, Any]]) -> None:
        taken = {
            str(node.get("name")) for i, node in self.nodes.items() if i not in self.gone_nodes
        }
        for node_id, saved in group.items():
            name = str(saved.get("name"))
            if self.r(node_id) in self.nodes:
                self.plan.notes.append(f"node {name}: there again already")
                continue
            if name in taken:
                self.plan.conflicts.append(f"a node named {name} was made since")
            self.step(
                "create_node",
                node_id,
                f"create node {name} again ({saved.get('node_type')}) as it was: its "
                "properties, ports, label, symbol and position"
                + (" (a node of that name made since by someone else)" if name in taken else ""),
                body=dict(saved),
                extra=name in taken,
            )
            self.remade.add(node_id)
            if name in taken:
                self.remade_extra.add(node_id)

    def _available(self, node_id: str) -> bool:
        current = self.r(node_id)
        return (current in self.nodes and current not in self.gone_nodes) or node_id in self.remade

    def deleted_links(self, group: Mapping[str, Mapping[str, Any]]) -> None:
        used: dict[tuple[str, int, int], str] = {}
        for link_id, link in self.links.items():
            for end in _ends(link):
                used[end] = link_id
        for link_id, saved in sorted(group.items(), key=lambda pair: self.label(pair[1])):
            label = self.label(saved)
            if self.r(link_id) in self.links:
                self.plan.notes.append(f"link {label}: there again already")
                continue
            missing = [self.name(e[0]) for e in _ends(saved) if not self._available(e[0])]
            if missing:
                self.cannot(
                    f"link {label} cannot be made again: {', '.join(missing)} deleted since"
                )
                continue
            in_the_way = False
            for node_id, adapter, port in _ends(saved):
                other = used.get((self.r(node_id), adapter, port))
                if other is not None and other not in self.gone_links:
                    in_the_way = True
                    self.delete_in_the_way(
                        other,
                        f"{self.name(node_id)} port {adapter}/{port} was linked since: "
                        f"{self.label(self.links[other])}",
                    )
            in_the_way = in_the_way or any(
                self.r(e[0]) in self.remade_extra or e[0] in self.remade_extra for e in _ends(saved)
            )
            self.step(
                "create_link",
                link_id,
                f"link {label} again"
                + (" (its ports used since by someone else)" if in_the_way else ""),
                body=dict(saved),
                extra=in_the_way,
            )

    def changed_nodes(self, group: Mapping[str, Mapping[str, Any]], last: list[Step]) -> None:
        for node_id, entry in group.items():
            current = self.r(node_id)
            node = self.nodes.get(current)
            fields: Mapping[str, list[Any]] = entry.get("fields") or {}
            name = str(entry.get("name"))
            if node is None or current in self.gone_nodes:
                self.cannot(
                    f"{name} was deleted since: its {', '.join(sorted(fields))} cannot be set back"
                )
                continue
            bodies: dict[bool, JSON] = {False: {}, True: {}}
            status: str | None = None
            status_extra = False
            for key, (before, after) in sorted(fields.items()):
                if same_field(key, node.get(key), before):
                    continue  # as before the change already
                again = not same_field(key, node.get(key), after)
                if again:
                    self.plan.conflicts.append(
                        f"{name}'s {key} was changed since (it is {node.get(key)!r}; the change "
                        f"made it {after!r}, it was {before!r})"
                    )
                if key == "status":
                    status, status_extra = str(before), again
                else:
                    bodies[again][key] = before
            for extra, body in bodies.items():
                if body:
                    words = ", ".join(
                        f"name back to {body['name']}" if k == "name" else f"{k} back"
                        for k in sorted(body)
                    )
                    line = f"set {node.get('name')}'s {words}" + (
                        " (changed again since by someone else)" if extra else ""
                    )
                    self.step("update_node", current, line, body=body, extra=extra)
            if status in _VERBS:
                last.append(
                    Step(
                        "node_action",
                        current,
                        f"{_VERBS[status]} {name}"
                        + (
                            " (its status changed again since by someone else)"
                            if status_extra
                            else ""
                        ),
                        {"action": _VERBS[status]},
                        extra=status_extra,
                    )
                )

    def changed_links(self, group: Mapping[str, Mapping[str, Any]]) -> None:
        for link_id, entry in group.items():
            current = self.r(link_id)
            link = self.links.get(current)
            label = self.label(entry)
            if link is None or current in self.gone_links:
                self.cannot(f"link {label} was deleted since: its settings cannot be set back")
                continue
            bodies: dict[bool, JSON] = {False: {}, True: {}}
            for key, (before, after) in sorted((entry.get("fields") or {}).items()):
                if same_field(key, link.get(key), before):
                    continue
                again = not same_field(key, link.get(key), after)
                if again:
                    self.plan.conflicts.append(f"link {label}'s {key} was changed since")
                bodies[again][key] = before
            for extra, body in bodies.items():
                if body:
                    self.step(
                        "update_link",
                        current,
                        f"set link {label}'s {', '.join(sorted(body))} back"
                        + (" (changed again since by someone else)" if extra else ""),
                        body=body,
                        extra=extra,
                    )

    def drawings_back(self, group: ItemChanges) -> None:
        for drawing_id in group.created:
            if self.r(drawing_id) in self.drawings:
                self.step("delete_drawing", self.r(drawing_id), "delete a drawing the change made")
        for drawing_id, saved in group.deleted.items():
            if self.r(drawing_id) not in self.drawings:
                self.step(
                    "create_drawing",
                    drawing_id,
                    "draw a drawing the change deleted again",
                    body=dict(saved),
                )
        for drawing_id, entry in group.changed.items():
            present = self.drawings.get(self.r(drawing_id))
            if present is None:
                self.cannot("a drawing the change moved was deleted since")
                continue
            body = {k: before for k, (before, _after) in (entry.get("fields") or {}).items()}
            again = any(
                present.get(k) != after for k, (_b, after) in (entry.get("fields") or {}).items()
            )
            if again:
                self.plan.conflicts.append("a drawing the change moved was changed since")
            self.step(
                "update_drawing",
                self.r(drawing_id),
                "put a drawing back as it was"
                + (" (moved again since by someone else)" if again else ""),
                body=body,
                extra=again,
            )

    def devices(self, configured: Mapping[str, str], kept: Mapping[str, str]) -> None:
        for node_id, name in {**kept, **configured}.items():
            if self._available(node_id):
                self.plan.devices[node_id] = self.r(node_id)
            elif node_id in configured:
                self.cannot(f"{name} was deleted since: its configuration cannot be put back")

    def run(self, kept_devices: Mapping[str, str]) -> UndoPlan:
        nodes, links = self.change.nodes, self.change.links
        last: list[Step] = []
        self.created_links(links.created)
        self.created_nodes(nodes.created)
        self.deleted_nodes(nodes.deleted)
        self.deleted_links(links.deleted)
        self.changed_nodes(nodes.changed, last)
        self.changed_links(links.changed)
        self.drawings_back(self.change.drawings)
        for node_id, saved in nodes.deleted.items():
            verb = _VERBS.get(str(saved.get("status")))
            if (
                node_id in self.remade
                and verb == "start"
                and saved.get("node_type") not in _BORN_RUNNING
            ):
                last.append(
                    Step(
                        "node_action",
                        node_id,
                        f"start {saved.get('name')} (it ran)",
                        {"action": "start", "remade": True},
                    )
                )
        self.plan.steps += last
        self.devices(self.change.configured, kept_devices)
        return self.plan


def plan_undo(
    change: ChangeRecord,
    current: Mapping[str, Any],
    id_map: Mapping[str, str] | None = None,
    *,
    kept_devices: Mapping[str, str] | None = None,
) -> UndoPlan:
    """The steps that undo ``change`` on the ``current`` topology (``{"nodes", "links",
    "drawings"}``, each by id), its conflicts and notes (see the module docstring).
    ``kept_devices`` (node id -> name): devices whose configuration the restore point
    holds, put back when their node is there after the undo."""
    return _Planner(change, current, id_map or {}).run(kept_devices or {})


def without_extras(plan: UndoPlan) -> UndoPlan:
    """The plan less every step that touches what others did since (``extra``): what an
    undo that goes past its conflicts without touching them carries out (a verified
    change's rollback). Each conflict is then skipped, so said (``skipped``)."""
    return replace(
        plan,
        steps=[step for step in plan.steps if not step.extra],
        skipped=list(dict.fromkeys([*plan.skipped, *plan.conflicts])),
    )
