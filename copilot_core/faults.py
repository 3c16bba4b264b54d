"""Faults as values: a lab shape, how to break it, how to tell, how to judge the fix.

A troubleshooting drill (and the ``eval --suite faults`` scorer) hands a lab over with one
known fault in it. This module holds what a fault *is*, with no I/O: the service reads the
catalog's files and judges the device lines by each platform's grammar (the GNS3 adapter,
``adapters/gns3/_faults.py``); this module only validates the values and their references
to each other, so a fault built in code and a fault read from a file obey the same rules.

A :class:`Fault` has an ``id``, a ``title``, a :class:`Topic`, a ``difficulty`` (1–3), the
:class:`LabShape` it needs (nodes with a role and a platform, their interfaces and
addresses, links, routing protocols), the steps that **inject** it (device lines for a node,
or a GNS3 operation on a link: :data:`Step`), its **symptoms** (intent checks that must
*fail* while it is active: a fault is handed over only when they do), its
:class:`GroundTruth` (the faulty node, interface or link, and a :class:`FaultType`), the
**fixed_checks** that prove it fixed, the :data:`Constraint` s a fix must respect (judged
on the lab-state diff), a reference **fix** (steps that repair it) and at least two
progressive **hints**. A healthy case (topic ``healthy``, fault type ``none``) injects
nothing and has no symptoms: the scorer's "nothing is broken" answer.

:func:`parse_fault_file` turns one catalog file's data (already parsed from YAML) into
faults, or raises :class:`FaultFileError` naming the file, the fault and the field. The
file's JSON Schema is ``FaultFile.model_json_schema()``; ``docs/faults.md`` documents it.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import Field, StringConstraints, ValidationError, model_validator
from pydantic_core import PydanticCustomError

from copilot_core._checks import (
    BgpSessionCheck,
    Check,
    InterfaceName,
    OspfNeighborCheck,
    ReachabilityCheck,
    RouteCheck,
    check_node,
    is_plain_address,
)
from copilot_core._lab_shape import (
    BgpNeighbor,
    BgpRouter,
    DeviceLine,
    LabShape,
    Link,
    OspfNetwork,
    OspfRouter,
    Platform,
    Protocol,
    ShapeInterface,
    ShapeNode,
    ShapeNodeName,
    StaticRoute,
    Text,
    Value,
)

__all__ = [
    "AddressesUnchanged",
    "BgpNeighbor",
    "BgpRouter",
    "ConfigUnchanged",
    "Constraint",
    "DeviceLines",
    "Fault",
    "FaultFile",
    "FaultFileError",
    "FaultType",
    "GroundTruth",
    "LabShape",
    "LinkFilter",
    "LinkSuspend",
    "NoNewStaticRoute",
    "OspfNetwork",
    "OspfRouter",
    "Platform",
    "Protocol",
    "ShapeInterface",
    "ShapeNode",
    "StaticRoute",
    "Step",
    "Topic",
    "TopologyUnchanged",
    "check_targets",
    "parse_fault_file",
]


class Topic(StrEnum):
    """What a fault teaches (a drill is picked by topic)."""

    ADDRESSING = "addressing"
    OSPF = "ospf"
    BGP = "bgp"
    STATIC_ROUTING = "static_routing"
    INTERFACES_AND_LINKS = "interfaces_and_links"
    FILTERING = "filtering"
    HOSTS = "hosts"
    HEALTHY = "healthy"


class FaultType(StrEnum):
    """The fixed list a diagnosis names its fault type from (scored with the resource)."""

    INTERFACE_DOWN = "interface_down"
    WRONG_ADDRESS = "wrong_address"
    WRONG_MASK = "wrong_mask"
    OSPF_AREA_MISMATCH = "ospf_area_mismatch"
    OSPF_HELLO_MISMATCH = "ospf_hello_mismatch"
    OSPF_NETWORK_TYPE_MISMATCH = "ospf_network_type_mismatch"
    OSPF_PASSIVE = "ospf_passive"
    MISSING_STATIC_ROUTE = "missing_static_route"
    WRONG_STATIC_ROUTE = "wrong_static_route"
    BGP_WRONG_REMOTE_AS = "bgp_wrong_remote_as"
    BGP_WRONG_NEIGHBOR = "bgp_wrong_neighbor"
    MISSING_DEFAULT_GATEWAY = "missing_default_gateway"
    WRONG_DEFAULT_GATEWAY = "wrong_default_gateway"
    HOST_FILTER_DROP = "host_filter_drop"
    MTU_MISMATCH = "mtu_mismatch"
    LINK_LOSS = "link_loss"
    LINK_DOWN = "link_down"
    NONE = "none"


#: A fault's id: lower-case letters, digits and ``-`` (it names the fault in URLs and files).
FaultId = Annotated[
    str, StringConstraints(min_length=3, max_length=64, pattern=r"^[a-z0-9][a-z0-9-]*[a-z0-9]$")
]


# ------------------------------------------------------------------ steps
class DeviceLines(Value):
    """Lines sent to a node's console, as its platform reads them: FRR configuration lines
    (sent in configuration mode), Linux shell commands, VPCS commands."""

    kind: Literal["lines"]
    node: ShapeNodeName
    lines: tuple[DeviceLine, ...] = Field(min_length=1, max_length=50)


class LinkFilter(Value):
    """A GNS3 packet-loss filter on a link (``packet_loss: 0`` takes it off)."""

    kind: Literal["link_filter"]
    link: Link
    packet_loss: int = Field(ge=0, le=100, description="percent of packets dropped")


class LinkSuspend(Value):
    """A GNS3 link suspended (``suspend: false`` resumes it)."""

    kind: Literal["link_suspend"]
    link: Link
    suspend: bool = True


Step = Annotated[DeviceLines | LinkFilter | LinkSuspend, Field(discriminator="kind")]


# ------------------------------------------------------------------ ground truth, constraints
class GroundTruth(Value):
    """What is broken: the node (and interface) or the link, and the fault type."""

    fault_type: FaultType
    node: ShapeNodeName | None = None
    interface: InterfaceName | None = None
    link: Link | None = None
    resource: Text | None = Field(None, description="e.g. router ospf, default route, INPUT")

    @model_validator(mode="after")
    def _shape(self) -> GroundTruth:
        if self.interface is not None and self.node is None:
            raise ValueError("an interface needs its node")
        located = self.node is not None or self.link is not None
        if (self.fault_type is FaultType.NONE) == located:
            raise ValueError("a fault names its node or link; a healthy case (none) names none")
        return self


class NoNewStaticRoute(Value):
    """The fix adds no static route on ``node``."""

    kind: Literal["no_new_static_route"]
    node: ShapeNodeName


class AddressesUnchanged(Value):
    """The fix leaves ``node``'s interface addresses as they were."""

    kind: Literal["addresses_unchanged"]
    node: ShapeNodeName


class ConfigUnchanged(Value):
    """The fix changes nothing in ``node``'s configuration (repair it elsewhere)."""

    kind: Literal["config_unchanged"]
    node: ShapeNodeName


class TopologyUnchanged(Value):
    """The fix adds or removes no node and no link."""

    kind: Literal["topology_unchanged"]


Constraint = Annotated[
    NoNewStaticRoute | AddressesUnchanged | ConfigUnchanged | TopologyUnchanged,
    Field(discriminator="kind"),
]


# ------------------------------------------------------------------ the fault
class _FaultBody(Value):
    id: FaultId
    title: Text
    topic: Topic
    difficulty: int = Field(ge=1, le=3, description="1 (first steps) to 3 (subtle)")
    inject: tuple[Step, ...] = Field((), max_length=20)
    symptoms: tuple[Check, ...] = Field((), max_length=20)
    ground_truth: GroundTruth
    fixed_checks: tuple[Check, ...] = Field(min_length=1, max_length=20)
    constraints: tuple[Constraint, ...] = ()
    fix: tuple[Step, ...] = Field((), max_length=20, description="the reference fix")
    hints: tuple[Text, ...] = Field(min_length=2, max_length=10)
    settle_s: float = Field(
        10.0, ge=0, le=300, description="seconds the symptoms may take to show, and the fix"
    )


class Fault(_FaultBody):
    """One fault of the catalog (see the module docstring), its references checked."""

    lab: LabShape

    @model_validator(mode="after")
    def _coherent(self) -> Fault:
        problem = _first_problem(self)
        if problem is not None:
            field, message = problem
            raise PydanticCustomError(
                "fault_reference", "{field}: {message}", {"field": field, "message": message}
            )
        return self

    @property
    def healthy(self) -> bool:
        return self.ground_truth.fault_type is FaultType.NONE

    def platforms(self) -> set[Platform]:
        return self.lab.platforms()


class FaultEntry(_FaultBody):
    """A fault as a file lists it: its lab shape may be the file's."""

    lab: LabShape | None = None


class FaultFile(Value):
    """A catalog file: a lab shape its faults share (unless one gives its own), and faults."""

    lab: LabShape | None = None
    faults: tuple[FaultEntry, ...] = Field(min_length=1)


def _first_problem(fault: Fault) -> tuple[str, str] | None:
    healthy = fault.ground_truth.fault_type is FaultType.NONE
    if healthy != (fault.topic is Topic.HEALTHY):
        return "topic", "a healthy case (fault type none) has the topic healthy, and only it"
    for name in ("inject", "symptoms", "fix"):
        if healthy and getattr(fault, name):
            return name, "a healthy case has none"
        if not healthy and not getattr(fault, name):
            return name, "a fault needs at least one"
    return next(iter(_reference_problems(fault)), None)


def check_targets(check: Check) -> list[tuple[str, str]]:
    """The check's fields that may name a node instead of an address, with their values."""
    if isinstance(check, ReachabilityCheck):
        return [("to", check.to)]
    if isinstance(check, RouteCheck):
        return [("via", check.via)] if check.via else []
    if isinstance(check, OspfNeighborCheck):
        return [("neighbor", check.neighbor)]
    if isinstance(check, BgpSessionCheck):
        return [("peer", check.peer)]
    return []


def _reference_problems(fault: Fault) -> list[tuple[str, str]]:
    """Every name a fault uses that its lab shape does not have, as (field, why)."""
    lab = fault.lab
    known = ", ".join(n.name for n in lab.nodes)
    found: list[tuple[str, str]] = []

    def node(field: str, name: str) -> None:
        if lab.node(name) is None:
            found.append((field, f"{name!r} is not a node of the lab shape ({known})"))

    def link(field: str, value: Link) -> None:
        if not lab.has_link(value):
            found.append((field, f"{value[0]} - {value[1]} is not a link of the lab shape"))

    for steps in ("inject", "fix"):
        for index, step in enumerate(getattr(fault, steps)):
            if isinstance(step, DeviceLines):
                node(f"{steps}[{index}].node", step.node)
            else:
                link(f"{steps}[{index}].link", step.link)
    for checks in ("symptoms", "fixed_checks"):
        for index, check in enumerate(getattr(fault, checks)):
            where = f"{checks}[{index}]"
            source = check_node(check)
            node(f"{where}.{'from' if isinstance(check, ReachabilityCheck) else 'node'}", source)
            for name, value in check_targets(check):
                shaped = lab.node(source)
                if is_plain_address(value) or lab.node(value) is not None:
                    continue
                if name == "via" and shaped is not None and shaped.interface(value) is not None:
                    continue
                found.append((f"{where}.{name}", f"{value!r} is neither an address nor a node "
                              f"of the lab shape ({known})"))  # fmt: skip
    truth = fault.ground_truth
    if truth.node is not None:
        node("ground_truth.node", truth.node)
        shaped = lab.node(truth.node)
        if truth.interface and shaped is not None and shaped.interface(truth.interface) is None:
            found.append(("ground_truth.interface", f"{truth.node} has no {truth.interface}"))
    if truth.link is not None:
        link("ground_truth.link", truth.link)
    for index, constraint in enumerate(fault.constraints):
        if not isinstance(constraint, TopologyUnchanged):
            node(f"constraints[{index}].node", constraint.node)
    return found


class FaultFileError(ValueError):
    """A catalog file that cannot be used; says which file, fault and field, and why."""

    def __init__(self, source: str, fault: str | None, field: str, message: str) -> None:
        where = f"{source}: fault {fault!r}" if fault else source
        super().__init__(f"{where}: {field}: {message}")
        self.source, self.fault, self.field, self.message = source, fault, field, message


def _field(loc: tuple[int | str, ...]) -> str:
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "(fault)"


def _raise(source: str, fault: str | None, error: ValidationError, skip: int = 0) -> None:
    first = error.errors()[0]
    ctx = first.get("ctx") or {}
    if first["type"] == "fault_reference":
        raise FaultFileError(source, fault, str(ctx["field"]), str(ctx["message"]))
    loc = tuple(first["loc"])[skip:]
    # A discriminated union puts the kind's tag after the item's index (``inject[0].lines``
    # then ``.lines[0]``): the tag is not a field, and is left out.
    kept = [p for i, p in enumerate(loc) if not (p in _TAGS and i and isinstance(loc[i - 1], int))]
    raise FaultFileError(source, fault, _field(tuple(kept)), first["msg"])


_TAGS = {"lines", "link_filter", "link_suspend", "ospf", "bgp", "static"} | {
    "reachability", "ospf_neighbor", "bgp_session", "route", "interface", "config_line",
    "no_new_static_route", "addresses_unchanged", "config_unchanged", "topology_unchanged",
}  # fmt: skip


def parse_fault_file(data: Any, source: str) -> tuple[Fault, ...]:
    """The faults of one catalog file's data; :class:`FaultFileError` names what is wrong."""
    if not isinstance(data, Mapping) or not isinstance(data.get("faults"), list):
        raise FaultFileError(source, None, "faults", "a catalog file is a mapping with faults")
    raw: list[Any] = data["faults"]

    def raw_id(index: int) -> str:
        entry = raw[index] if index < len(raw) else None
        found = entry.get("id") if isinstance(entry, Mapping) else None
        return str(found) if isinstance(found, str) and found else f"#{index + 1}"

    try:
        parsed = FaultFile.model_validate(data)
    except ValidationError as exc:
        loc = tuple(exc.errors()[0]["loc"])
        if len(loc) >= 2 and loc[0] == "faults" and isinstance(loc[1], int):
            _raise(source, raw_id(loc[1]), exc, skip=2)
        _raise(source, None, exc)
        raise  # pragma: no cover - _raise always raises
    faults: list[Fault] = []
    for entry in parsed.faults:
        lab = entry.lab or parsed.lab
        if lab is None:
            raise FaultFileError(source, entry.id, "lab", "no lab shape, and the file has none")
        body = {name: getattr(entry, name) for name in _FaultBody.model_fields}
        try:
            faults.append(Fault.model_validate({**body, "lab": lab}))
        except ValidationError as exc:
            _raise(source, entry.id, exc)
    return tuple(faults)
