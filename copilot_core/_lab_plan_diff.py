"""A plan relative to the lab as it is: what to add and remove to get there (pure).

"Add a fourth router between R2 and R3" is the wanted plan against the current one;
:func:`diff` says what a build does to go from one to the other, and nothing more: the
nodes and links to add and to remove, and each device's lines to add and to remove.

Lines are compared in their context: an FRR block (``interface eth1``, ``router ospf``, …
up to its ``exit``) is compared line by line under its header, so a new address on an
existing interface comes with ``interface eth1`` before it and ``exit`` after; a line
outside a block (an FRR static route, a Linux or VPCS command) stands alone. A node that
is new, or replaced (another platform or template), gets all its lines. Lines to remove
are the current lines the wanted plan no longer has, in the same context: undoing them is
the platform's business (``no`` before an FRR line), the adapter's.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from copilot_core._checks import Check
from copilot_core._lab_plan import DeviceConfig, LabPlan, PlanLink, PlanNode, link_text
from copilot_core._lab_plan_ports import ResolvedPlan, ResolvedPort
from copilot_core._lab_shape import Platform, Value

__all__ = ["PlanDelta", "diff", "named_like"]

#: FRR lines that open a block closed by ``exit``.
_FRR_BLOCKS = ("interface ", "router ", "route-map ", "vrf ", "line ", "key chain ")


class PlanDelta(Value):
    """What a build does to the current lab to make it the wanted plan."""

    add_nodes: tuple[PlanNode, ...] = ()
    remove_nodes: tuple[str, ...] = Field((), description="removed with their links")
    add_links: tuple[PlanLink, ...] = ()
    remove_links: tuple[PlanLink, ...] = ()
    add_lines: tuple[DeviceConfig, ...] = Field((), description="per device, in context")
    remove_lines: tuple[DeviceConfig, ...] = Field((), description="per device, to undo")
    checks: tuple[Check, ...] = Field((), description="the wanted plan's: the lab after")

    @property
    def empty(self) -> bool:
        """Whether there is nothing to build (the checks may still be run)."""
        return not (
            self.add_nodes
            or self.remove_nodes
            or self.add_links
            or self.remove_links
            or self.add_lines
            or self.remove_lines
        )

    def as_data(self) -> dict[str, Any]:
        """What it adds and removes as plain data (nodes by name, links as written)."""
        return {
            "empty": self.empty,
            "add_nodes": [n.name for n in self.add_nodes],
            "remove_nodes": list(self.remove_nodes),
            "add_links": [link_text(link) for link in self.add_links],
            "remove_links": [link_text(link) for link in self.remove_links],
            "add_lines": {c.node: list(c.lines) for c in self.add_lines},
            "remove_lines": {c.node: list(c.lines) for c in self.remove_lines},
        }


def _same_node(current: PlanNode, wanted: PlanNode) -> bool:
    """A node stays when its platform does, and its template (none: any of the platform)."""
    return current.platform is wanted.platform and (
        wanted.template is None or wanted.template == current.template
    )


def diff(current: LabPlan, wanted: LabPlan) -> PlanDelta:
    """What to add to and remove from ``current`` to make it ``wanted`` (module docstring)."""
    kept: dict[str, PlanNode] = {}
    add_nodes: list[PlanNode] = []
    for node in wanted.nodes:
        there = current.node(node.name)
        if there is not None and _same_node(there, node):
            kept[node.name] = node
        else:
            add_nodes.append(node)
    remove_nodes = [n.name for n in current.nodes if n.name not in kept]
    current_links = {link.key() for link in current.links}
    wanted_links = {link.key() for link in wanted.links}
    add_lines: list[DeviceConfig] = []
    remove_lines: list[DeviceConfig] = []
    for node in wanted.nodes:
        if node.name in kept:
            blocks = node.platform is Platform.FRR
            added = _missing(wanted.lines_of(node.name), current.lines_of(node.name), blocks)
            removed = _missing(current.lines_of(node.name), wanted.lines_of(node.name), blocks)
            if removed:
                remove_lines.append(DeviceConfig(node=node.name, lines=removed))
        else:
            added = wanted.lines_of(node.name)
        if added:
            add_lines.append(DeviceConfig(node=node.name, lines=added))
    return PlanDelta(
        add_nodes=tuple(add_nodes),
        remove_nodes=tuple(remove_nodes),
        # a replaced node's links are built again with it
        add_links=tuple(
            link
            for link in wanted.links
            if link.key() not in current_links or any(n not in kept for n in link.nodes())
        ),
        remove_links=tuple(link for link in current.links if link.key() not in wanted_links),
        add_lines=tuple(add_lines),
        remove_lines=tuple(remove_lines),
        checks=wanted.checks,
    )


def named_like(wanted: ResolvedPlan, current: ResolvedPlan) -> ResolvedPlan:
    """``wanted`` with each linked port the lab links too named as the lab names it
    (``PCA:e0`` is ``PCA:Ethernet0`` when both resolve to the same port of PCA), so that
    :func:`diff` sees a link the lab has as the same link however the plan wrote it."""
    there = {
        (p.endpoint.partition(":")[0], p.adapter_number, p.port_number): p.endpoint
        for p in current.ports
    }
    names = {
        p.endpoint: there.get((p.endpoint.partition(":")[0], p.adapter_number, p.port_number))
        or p.endpoint
        for p in wanted.ports
    }
    if all(old == new for old, new in names.items()):
        return wanted
    plan = wanted.plan
    links = tuple(
        link.model_copy(update={"ends": tuple(names.get(e, e) for e in link.ends)})
        for link in plan.links
    )
    addressing = tuple(
        a.model_copy(update={"interface": names.get(a.interface, a.interface)})
        for a in plan.addressing
    )
    ports = tuple(
        ResolvedPort(names[p.endpoint], p.adapter_number, p.port_number) for p in wanted.ports
    )
    plan = plan.model_copy(update={"links": links, "addressing": addressing})
    return ResolvedPlan(plan, wanted.nodes, ports)


def _blocks(lines: tuple[str, ...], frr: bool) -> list[tuple[str | None, list[str]]]:
    """The lines as (block header or none, lines): FRR blocks end at ``exit``."""
    found: list[tuple[str | None, list[str]]] = []
    header: str | None = None
    for line in lines:
        text = line.strip()
        if header is not None:
            if text == "exit":
                header = None
            else:
                found[-1][1].append(text)
        elif frr and text.startswith(_FRR_BLOCKS):
            header = text
            found.append((header, []))
        elif text != "exit":
            found.append((None, [text]))
    return found


def _missing(these: tuple[str, ...], those: tuple[str, ...], frr: bool) -> tuple[str, ...]:
    """The lines of ``these`` that ``those`` lacks, each with its block's header and exit."""
    have: dict[str | None, set[str]] = {}
    for header, body in _blocks(those, frr):
        have.setdefault(header, set()).update(body)
        if header is not None:
            have.setdefault(None, set()).add(header)
    missing: list[str] = []
    for header, body in _blocks(these, frr):
        new = [line for line in body if line not in have.get(header, set())]
        if header is None:
            missing += new
        elif new or header not in have.get(None, set()):
            missing += [header, *new, "exit"]
    return tuple(missing)
