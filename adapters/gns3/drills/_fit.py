"""Whether a project's lab has what a fault's lab shape needs, and where the shape's links
are in it (pure: a :class:`~adapters.gns3.lab._snapshot.LabSnapshot` in, sentences and links out).

A drill breaks the student's own lab, so before anything is touched
:func:`fit_problems` compares the shape with the project as GNS3 shows it: every node of
the shape by name (case as GNS3 keeps it), of the shape's platform (the node's detected
kind: an FRR router must not be judged by a Cisco grammar), started, with a port for each
of the shape's interfaces, and each of the shape's links present between those ports. What
is missing is said in sentences a student can act on ("no FRR node named R1", "R1 eth0 is
not linked to R2 eth0", "R2 is stopped"); nothing missing, the lab fits.

:func:`find_shape_link` finds the GNS3 link of a shape link (``R1:eth1``, ``R2:eth1``): a
link filter or suspension step and the checkpoint of the links use it.
"""

from __future__ import annotations

from typing import Any

from adapters.gns3.lab import LabSnapshot
from adapters.gns3.model import DeviceKind
from copilot_core.faults import LabShape, Platform

__all__ = ["KINDS", "PLATFORM_LABELS", "find_shape_link", "fit_problems", "link_label"]

JSON = dict[str, Any]

#: The device kind a shape's platform is detected as in GNS3.
KINDS: dict[Platform, DeviceKind] = {
    Platform.FRR: DeviceKind.FRR,
    Platform.LINUX: DeviceKind.LINUX,
    Platform.VPCS: DeviceKind.VPCS,
}
#: How a sentence names a platform.
PLATFORM_LABELS: dict[Platform, str] = {
    Platform.FRR: "FRR",
    Platform.LINUX: "Linux host",
    Platform.VPCS: "VPCS",
}


def link_label(link: tuple[str, str]) -> str:
    """A shape link as the checkpoint keys it (``R1:eth1 - R2:eth1``)."""
    return f"{link[0]} - {link[1]}"


def _end(snapshot: LabSnapshot, end: str) -> tuple[JSON, JSON] | None:
    name, _, interface = end.partition(":")
    node = snapshot.by_name(name)
    if node is None:
        return None
    port = snapshot.find_port(node, interface)
    return None if port is None else (node, port)


def find_shape_link(snapshot: LabSnapshot, link: tuple[str, str]) -> JSON | None:
    """The project's link between the shape link's two ends (``None``: there is none)."""
    one, other = _end(snapshot, link[0]), _end(snapshot, link[1])
    if one is None or other is None:
        return None
    return snapshot.find_link(one[0], one[1], other[0], other[1])


def fit_problems(shape: LabShape, snapshot: LabSnapshot) -> tuple[str, ...]:
    """What the project lacks of ``shape``, one sentence each (empty: it fits)."""
    missing: list[str] = []
    present: set[str] = set()
    for wanted in shape.nodes:
        label = PLATFORM_LABELS[wanted.platform]
        node = snapshot.by_name(wanted.name)
        if node is None or str(node.get("name")) != wanted.name:
            missing.append(f"no {label} node named {wanted.name}")
            continue
        kind = snapshot.kind(node)
        if kind is not KINDS[wanted.platform]:
            missing.append(f"{wanted.name} is a {kind.value} device, not a {label}")
            continue
        if node.get("status") != "started":
            missing.append(f"{wanted.name} is {node.get('status') or 'not started'}: start it")
        ports = [i.name for i in wanted.interfaces if snapshot.find_port(node, i.name) is None]
        missing += [f"{wanted.name} has no interface {name}" for name in ports]
        if not ports:
            present.add(wanted.name)
    for a, b in shape.links:
        if a.partition(":")[0] not in present or b.partition(":")[0] not in present:
            continue  # said above
        if find_shape_link(snapshot, (a, b)) is None:
            missing.append(f"{a.replace(':', ' ')} is not linked to {b.replace(':', ' ')}")
    return tuple(missing)
