"""Link tools: join two nodes' ports, or delete the link between them, named as in the
topology."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, Field

from adapters.gns3.lab import (
    AUTOMATION_ONLY,
    BOTH_MODES,
    AtMost,
    CallScope,
    Gns3Tool,
    LabAccess,
    LabSnapshot,
    ToolArguments,
    batch,
    item,
)
from copilot_core import CopilotMode, ToolResult
from copilot_core.errors import CopilotError
from copilot_core.ports import ChangePreview, ToolEffect

__all__ = ["LinkEnds", "LinkRef", "find_link", "in_use_note", "link_tools", "resolve_ends"]

JSON = dict[str, Any]


def _present(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be blank")
    return value.strip()


Text = Annotated[str, AfterValidator(_present)]


class LinkEnds(ToolArguments):
    node1: Text = Field(description="first node's name")
    port1: Text = Field(description="its port, e.g. Ethernet0, e0, Gi0/0")
    node2: Text = Field(description="second node's name")
    port2: Text = Field(description="its port")

    @property
    def label(self) -> str:
        return f"{self.node1} {self.port1} <-> {self.node2} {self.port2}"


class LinkRef(ToolArguments):
    """A link named by the nodes it joins; ports only when several links join them."""

    node1: Text = Field(description="one end's node name")
    node2: Text = Field(description="the other end's node name")
    port1: Text | None = Field(None, description="node1's port, when several links join them")
    port2: Text | None = Field(None, description="node2's port, likewise")

    @property
    def label(self) -> str:
        one = f"{self.node1} {self.port1}" if self.port1 else self.node1
        two = f"{self.node2} {self.port2}" if self.port2 else self.node2
        return f"{one} <-> {two}"


def find_link(snapshot: LabSnapshot, ref: LinkRef) -> JSON | str:
    """The one link ``ref`` names, or what is wrong (saying which links exist)."""
    ends = []
    for name, port_name in ((ref.node1, ref.port1), (ref.node2, ref.port2)):
        node = snapshot.by_name(name)
        if node is None:
            return snapshot.unknown_node(name)
        port = snapshot.find_port(node, port_name) if port_name else None
        if port_name and port is None:
            return snapshot.unknown_port(node, port_name)
        ends.append((node, port))
    found = []
    for link in snapshot.links:
        sides = link.get("nodes") or []
        if len(sides) != 2:
            continue
        for a, b in ((sides[0], sides[1]), (sides[1], sides[0])):
            if all(
                end.get("node_id") == node.get("node_id")
                and (
                    port is None
                    or (
                        end.get("adapter_number") == port.get("adapter_number")
                        and end.get("port_number") == port.get("port_number")
                    )
                )
                for end, (node, port) in zip((a, b), ends, strict=True)
            ):
                found.append(link)
                break
    if len(found) == 1:
        return found[0]
    if not found:
        existing = "; ".join(snapshot.describe_link(link) for link in snapshot.links) or "none"
        return f"No link joins {ref.label}; existing links: {existing}."
    listed = "; ".join(snapshot.describe_link(link) for link in found)
    return f"Several links join {ref.label} ({listed}); name the ports (port1, port2)."


class DeleteLinks(ToolArguments):
    links: Annotated[list[LinkRef], AtMost("max_batch")] = Field(min_length=1)


async def delete_links(lab: LabAccess, args: DeleteLinks, scope: CallScope) -> ToolResult:
    snapshot = await lab.snapshot(scope)
    results = []
    for ref in args.links:
        link = find_link(snapshot, ref)
        if isinstance(link, str):
            results.append(item(ref.label, "failed", error=link))
            continue
        described = snapshot.describe_link(link)
        try:
            await lab.client.delete_link(scope.token, scope.project_id, str(link["link_id"]))
        except CopilotError as exc:
            results.append(item(ref.label, "failed", error=exc.message))
            continue
        snapshot.links.remove(link)
        results.append(item(ref.label, "success", {"deleted": described}))
    return batch(results)


class CreateLinks(ToolArguments):
    links: Annotated[list[LinkEnds], AtMost("max_batch")] = Field(min_length=1)


def resolve_ends(
    snapshot: LabSnapshot, ends: LinkEnds
) -> tuple[tuple[JSON, JSON], tuple[JSON, JSON]] | str:
    """Both ends' node and port, or what is wrong with them (saying what exists)."""
    resolved = []
    for node_name, port_name in ((ends.node1, ends.port1), (ends.node2, ends.port2)):
        node = snapshot.by_name(node_name)
        if node is None:
            return snapshot.unknown_node(node_name)
        port = snapshot.find_port(node, port_name)
        if port is None:
            return snapshot.unknown_port(node, port_name)
        resolved.append((node, port))
    return resolved[0], resolved[1]


def in_use_note(snapshot: LabSnapshot, *ends: tuple[JSON, JSON]) -> str:
    """`` (R1 Gi0/0 is linked: ...)`` for each end that already carries a link."""
    notes = []
    for node, port in ends:
        for link in snapshot.links:
            for end in link.get("nodes") or []:
                if (
                    end.get("node_id") == node.get("node_id")
                    and end.get("adapter_number") == port.get("adapter_number")
                    and end.get("port_number") == port.get("port_number")
                ):
                    where = f"{node.get('name')} {port.get('name')}"
                    notes.append(f"{where} is linked: {snapshot.describe_link(link)}")
    return f" ({'; '.join(notes)})" if notes else ""


async def create_links(lab: LabAccess, args: CreateLinks, scope: CallScope) -> ToolResult:
    snapshot = await lab.snapshot(scope)
    results = []
    for request in args.links:
        resolved = resolve_ends(snapshot, request)
        if isinstance(resolved, str):
            results.append(item(request.label, "failed", error=resolved))
            continue
        (node1, port1), (node2, port2) = resolved
        try:
            link = await lab.client.create_link(
                scope.token,
                scope.project_id,
                [
                    (
                        str(node1["node_id"]),
                        int(port1["adapter_number"]),
                        int(port1["port_number"]),
                    ),
                    (
                        str(node2["node_id"]),
                        int(port2["adapter_number"]),
                        int(port2["port_number"]),
                    ),
                ],
            )
        except CopilotError as exc:
            note = in_use_note(snapshot, (node1, port1), (node2, port2))
            results.append(item(request.label, "failed", error=exc.message + note))
            continue
        snapshot.links.append(link)
        results.append(item(request.label, "success", {"link": snapshot.describe_link(link)}))
    return batch(results)


def _linked(args: CreateLinks, mode: CopilotMode) -> ChangePreview:
    return ChangePreview(
        f"create {len(args.links)} link(s)",
        topology=[f"link {link.label}" for link in args.links],
    )


def _unlinked(args: DeleteLinks, mode: CopilotMode) -> ChangePreview:
    return ChangePreview(
        f"delete {len(args.links)} link(s)",
        topology=[f"delete link {link.label}" for link in args.links],
    )


def link_tools() -> list[Gns3Tool[Any]]:
    return [
        Gns3Tool(
            "create_gns3_link",
            "Link two nodes' ports, named as in the topology (Ethernet0, e0, Gi0/0...). "
            "Each port can carry one link.",
            CreateLinks,
            create_links,
            BOTH_MODES,
            effect=ToolEffect.TOPOLOGY_CHANGE,
            example={"links": [{"node1": "R1", "port1": "Gi0/0", "node2": "PC1", "port2": "e0"}]},
            mutates_topology=True,
            change=_linked,
        ),
        Gns3Tool(
            "delete_gns3_link",
            "Delete links, each named by the two nodes it joins (and their ports when "
            "several links join the same two nodes).",
            DeleteLinks,
            delete_links,
            AUTOMATION_ONLY,
            effect=ToolEffect.TOPOLOGY_CHANGE,
            example={"links": [{"node1": "R1", "node2": "R2"}]},
            mutates_topology=True,
            change=_unlinked,
        ),
    ]
