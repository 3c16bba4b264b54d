"""A relative build: only the difference between the lab as it is and the wanted plan.

``build_lab`` with ``relative`` (issue 39: "add a fourth router between R2 and R3") reads
the project's lab as a plan (:meth:`~adapters.gns3.labs.Gns3LabPlanner.current`), and
builds the core's :func:`~copilot_core.labs.diff` of it and the wanted plan, nothing
more (:func:`relative_build`):

- the new nodes created and started, the links the plan no longer has deleted, the new
  links made; the nodes that stay are left as they are (not started, not configured,
  their consoles untouched when they have no line to change);
- each device that stays gets its lines to remove undone, then its lines to add, each in
  its context (:func:`undo_lines`): an FRR line by the platform's negation (``no`` before
  it, as a restore point's :class:`~adapters.gns3.model.BlockKeeper` undoes one; a block
  the plan no longer has at all, ``no router ospf``, except an interface, whose lines are
  undone one by one); a Linux host's ``ip addr add``/``ip route add`` by its ``del``;
  anything else (a VPCS ``ip``, another shell command) has no sound inverse, and the
  build is refused naming those lines;
- a node the plan no longer has (or has on another platform or template) is refused:
  its rollback would make a node again from its GNS3 JSON, not the device it was.

The lab is named by the fingerprint of its export (:func:`~copilot_core.labs.
plan_fingerprint`): ``plan_lab`` answers it with the difference (``change.base``); a
build given ``base`` is refused when the lab is another by then, so that the approval
(bound to the call's arguments: the plan and ``base``) binds the difference exactly. The
approval card (:func:`relative_preview`) shows that difference: the nodes and links
added and removed, per device the exact lines sent (those undone first).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from adapters.gns3._faults import line_problem
from adapters.gns3.lab import CallScope, LabAccess
from adapters.gns3.labs._templates import KINDS, PLATFORMS
from adapters.gns3.model import BlockKeeper, keeper_for
from adapters.gns3.restore import RestorePointError, read_configuration
from copilot_core import ToolContext
from copilot_core.intent import check_label
from copilot_core.labs import (
    DeviceConfig,
    LabPlan,
    LabPlanner,
    PlanDelta,
    PlanLink,
    Platform,
    ResolvedPlan,
    diff,
    named_like,
    plan_fingerprint,
)
from copilot_core.ports import ChangePreview

__all__ = [
    "RelativeBuild",
    "named_as_the_lab",
    "relative_build",
    "relative_preview",
    "undo_lines",
    "unread_devices",
]

#: FRR lines that open a block closed by ``exit`` (the core's diff reads them so too).
_FRR_BLOCKS = ("interface ", "router ", "route-map ", "vrf ", "line ", "key chain ")
#: A Linux command and the one that undoes it.
_LINUX_INVERSES = (("ip addr add ", "ip addr del "), ("ip route add ", "ip route del "))


@dataclass(frozen=True, slots=True)
class RelativeBuild:
    """What a relative build does: the difference, and the plan the builder runs (the
    wanted nodes and links, each device's lines those it is sent: undone, then added)."""

    base: str
    delta: PlanDelta
    resolved: ResolvedPlan
    wanted: LabPlan

    @property
    def remove_links(self) -> tuple[PlanLink, ...]:
        return self.delta.remove_links


def _frr_keeper() -> BlockKeeper:
    keeper = keeper_for(KINDS[Platform.FRR])
    assert isinstance(keeper, BlockKeeper)
    return keeper


def undo_lines(
    platform: Platform, removed: Sequence[str], wanted: Sequence[str]
) -> tuple[list[str], list[str]]:
    """The lines that undo ``removed`` (in context, as :func:`~copilot_core.labs.diff`
    gives them) on a device whose wanted lines are ``wanted``, and the lines that cannot
    be undone soundly, each with why (see the module docstring)."""
    commands: list[str] = []
    refused: list[str] = []
    if platform is Platform.FRR:
        negate = _frr_keeper().negate
        kept = {line.strip() for line in wanted}
        header: str | None = None
        body: list[str] = []
        for raw in removed:
            line = raw.strip()
            if header is None and line.startswith(_FRR_BLOCKS):
                header, body = line, []
            elif header is not None and line == "exit":
                if header not in kept and not header.startswith("interface "):
                    commands.append(negate(header))  # the whole block goes
                elif body:
                    commands += [header, *(negate(b) for b in body), "exit"]
                header = None
            elif header is not None:
                body.append(line)
            elif line != "exit":
                commands.append(negate(line))
    else:
        for raw in removed:
            line = raw.strip()
            inverse = next(
                (line.replace(add, delete, 1) for add, delete in _LINUX_INVERSES
                 if platform is Platform.LINUX and line.startswith(add)),
                None,
            )  # fmt: skip
            if inverse is None:
                refused.append(f"{line!r} (no sound inverse on {platform.value})")
            else:
                commands.append(inverse)
    for command in commands:
        why = line_problem(command, platform)
        if why is not None and command not in ("exit",):
            refused.append(f"its undo {command!r} ({why})")
    return commands, refused


async def unread_devices(lab: LabAccess, scope: CallScope, current: LabPlan) -> list[str]:
    """The started devices of ``current`` that have no line in it because their console
    could not be read (the export leaves such a device without lines; a device that is
    blank reads as blank): a relative build must know what a device has."""
    bare = {n.name for n in current.nodes if not current.lines_of(n.name)}
    if not bare:
        return []
    snapshot = await lab.snapshot(scope)
    unread: list[str] = []
    for node in snapshot.nodes:
        name = str(node.get("name"))
        platform = PLATFORMS.get(snapshot.kind(node))
        keeper = keeper_for(KINDS[platform]) if platform is not None else None
        if name not in bare or keeper is None or node.get("status") != "started":
            continue
        try:
            await read_configuration(lab, snapshot, node, keeper)
        except RestorePointError as exc:
            unread.append(f"{name} ({exc})")
    return unread


async def named_as_the_lab(
    planner: LabPlanner, current: LabPlan, wanted: ResolvedPlan, context: ToolContext
) -> ResolvedPlan:
    """``wanted`` with the ports the lab links named as the lab names them (the current
    lab resolved by the same planner; a lab it cannot resolve leaves ``wanted`` as is)."""
    there = await planner.resolve(current, context)
    return named_like(wanted, there) if isinstance(there, ResolvedPlan) else wanted


def relative_build(current: LabPlan | None, resolved: ResolvedPlan) -> RelativeBuild | list[str]:
    """The relative build of ``resolved`` (its ports named as the lab names them:
    :func:`~copilot_core.labs.named_like`) against ``current`` (``None``: the project
    holds nothing a plan holds: everything is new), or why it is refused."""
    wanted = resolved.plan
    if current is None:
        delta = PlanDelta(
            add_nodes=wanted.nodes,
            add_links=wanted.links,
            add_lines=wanted.config,
            checks=wanted.checks,
        )
    else:
        delta = diff(current, wanted)
    base = plan_fingerprint(current)
    problems: list[str] = []
    if delta.remove_nodes:
        problems.append(
            "it removes (or replaces) node(s) "
            + ", ".join(delta.remove_nodes)
            + ": a relative build does not delete nodes (its rollback could not make them "
            "again as they were); delete them with the node tools, or keep them in the plan"
        )
    removed = {c.node: c.lines for c in delta.remove_lines}
    added = {c.node: c.lines for c in delta.add_lines}
    sent: list[DeviceConfig] = []
    for node in wanted.nodes:
        undo: list[str] = []
        if node.name in removed:
            undo, refused = undo_lines(
                node.platform, removed[node.name], wanted.lines_of(node.name)
            )
            if refused:
                problems.append(
                    f"{node.name}: lines the plan no longer has cannot be undone: "
                    + "; ".join(refused)
                )
        lines = (*undo, *added.get(node.name, ()))
        if lines:
            sent.append(DeviceConfig.model_construct(node=node.name, lines=lines))
    if problems:
        return problems
    to_build = wanted.model_copy(update={"config": tuple(sent)})
    built = ResolvedPlan(to_build, resolved.nodes, resolved.ports)
    return RelativeBuild(base, delta, built, wanted)


def relative_preview(build: RelativeBuild) -> ChangePreview:
    """The approval card of a relative build: exactly what it adds, removes and sends."""
    delta, wanted = build.delta, build.wanted
    topology = [
        f"create node {n.name} ({n.platform.value}"
        + (f", template {n.template}" if n.template else "")
        + f") at ({n.x}, {n.y})"
        for n in delta.add_nodes
    ]
    topology += [f"delete link {link.ends[0]} - {link.ends[1]}" for link in delta.remove_links]
    for link in delta.add_links:
        subnet = wanted.link_subnet(link)
        topology.append(
            f"link {link.ends[0]} - {link.ends[1]}" + (f" ({subnet})" if subnet else "")
        )
    if delta.add_nodes:
        topology.append(f"start {len(delta.add_nodes)} new node(s)")
    sent = {c.node: list(c.lines) for c in build.resolved.plan.config}
    new = {n.name for n in delta.add_nodes}
    untouched = [n.name for n in wanted.nodes if n.name not in new and n.name not in sent]
    if untouched:
        topology.append("unchanged: " + ", ".join(untouched))
    removed = {c.node: len(c.lines) for c in delta.remove_lines}
    added = {c.node: len(c.lines) for c in delta.add_lines}
    per_device = [
        f"{name} "
        + ("(new) " if name in new else "")
        + ", ".join(
            part
            for part in (
                f"-{removed[name]}" if name in removed else "",
                f"+{added[name]}" if name in added else "",
            )
            if part
        )
        for name in sent
    ]
    summary = (
        f"Change the lab{': ' + wanted.summary if wanted.summary else ''} (only the "
        f"difference): add {len(delta.add_nodes)} node(s), {len(delta.add_links)} link(s); "
        f"remove {len(delta.remove_links)} link(s); lines removed/added per device: "
        + ("; ".join(per_device) if per_device else "none")
        + f"; then {len(wanted.checks)} check(s) decide"
    )
    labels = [check_label(c) for c in wanted.checks]
    if labels:
        summary += ": " + "; ".join(labels[:6]) + ("; …" if len(labels) > 6 else "")
    return ChangePreview(summary, devices=sent, topology=topology)
