"""The fault catalog: the YAML files of ``adapters/gns3/faults``, read and judged at start-up.

:func:`load_fault_catalog` reads every ``*.yaml`` file of the catalog directories, validates
each against the core's models (:func:`copilot_core.faults.parse_fault_file`: fields, and
every node, interface and link a fault names is in its lab shape), then judges what the
core cannot: each device line of each inject and fix step (and of the healthy lab the shape
describes, :func:`baseline_lines`) must be a well-formed line of its platform's grammar
(:func:`adapters.gns3.model._grammar.judge`: a command the platform knows, a change, not on the
forbidden list), and each symptom and fixed-check must be answerable on its node's platform
(:func:`adapters.gns3.model._intent_compile.compile_check`: a Linux host answers reachability
only). A bad file is a :class:`FaultCatalogError` naming the file, the fault and the field;
the service does not start with one (``entrypoints/container.py``'s ``faults`` resource).

FRR lines are configuration lines (sent in configuration mode, as the config tool sends
them), Linux lines shell commands, VPCS lines VPCS commands.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import yaml

from adapters.gns3.model import (
    DEFAULT_FORBIDDEN_COMMANDS,
    LABELS,
    DeviceKind,
    compile_check,
    control_character_error,
    forbidden_match,
    judge,
)
from copilot_core.errors import CopilotError
from copilot_core.faults import (
    BgpRouter,
    DeviceLines,
    Fault,
    FaultFileError,
    LabShape,
    OspfRouter,
    Platform,
    StaticRoute,
    Topic,
    parse_fault_file,
)
from copilot_core.intent import Observation, check_node

__all__ = [
    "FAULTS_DIR",
    "FaultCatalog",
    "FaultCatalogError",
    "baseline_lines",
    "line_problem",
    "load_fault_catalog",
]

#: The catalog shipped with the copilot.
FAULTS_DIR = Path(__file__).resolve().parent / "faults"

#: libyaml's safe loader when PyYAML was built with it (five times faster), else Python's.
_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

KINDS: dict[Platform, DeviceKind] = {
    Platform.FRR: DeviceKind.FRR,
    Platform.LINUX: DeviceKind.LINUX,
    Platform.VPCS: DeviceKind.VPCS,
}


class FaultCatalogError(CopilotError):
    """A catalog file that cannot be used: the service does not start with it."""

    def __init__(self, source: str, fault: str | None, field: str, message: str) -> None:
        where = f"fault catalog {source}" + (f": fault {fault!r}" if fault else "")
        super().__init__(f"{where}: {field}: {message}")
        self.source, self.fault, self.field, self.reason = source, fault, field, message


@dataclass(frozen=True, slots=True)
class FaultCatalog:
    """The loaded faults, in file order, and the file each came from."""

    faults: tuple[Fault, ...]
    sources: dict[str, str] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.faults)

    def __iter__(self) -> Iterator[Fault]:
        return iter(self.faults)

    def get(self, fault_id: str) -> Fault | None:
        return next((f for f in self.faults if f.id == fault_id), None)

    def select(self, topic: Topic | None = None, difficulty: int | None = None) -> list[Fault]:
        """The faults of ``topic`` and ``difficulty`` (each: any when ``None``)."""
        return [
            f
            for f in self.faults
            if (topic is None or f.topic is topic)
            and (difficulty is None or f.difficulty == difficulty)
        ]


@lru_cache(maxsize=4096)  # the catalog's labs share most of their lines
def line_problem(line: str, platform: Platform) -> str | None:
    """Why ``line`` is not a well-formed change of ``platform`` (``None``: it is)."""
    kind = KINDS[platform]
    config = platform is Platform.FRR
    why = control_character_error(line)
    if why is not None:
        return why
    verdict = judge(line, kind, config=config)
    if not verdict.known:
        return f"{line!r} is not a command {LABELS[kind]} knows ({verdict.reason})"
    if config and judge(line, kind).read_only:  # ``show ...`` is no configuration line
        return f"{line!r} is a read-only command of {LABELS[kind]}, not a configuration line"
    if not verdict.changes:
        return f"{line!r} only reads {LABELS[kind]}: a step's line changes the device"
    forbidden = forbidden_match(line, kind, DEFAULT_FORBIDDEN_COMMANDS, config=config)
    if forbidden is not None:
        return f"{line!r} runs the forbidden command {forbidden!r}"
    return None


def baseline_lines(lab: LabShape) -> dict[str, list[str]]:
    """The device lines that build the shape's healthy lab, per node (FRR: configuration
    lines; Linux: shell commands on a host with no address yet; VPCS: its ``ip``)."""
    lines: dict[str, list[str]] = {}
    for node in lab.nodes:
        mine: list[str] = []
        if node.platform is Platform.FRR:
            for interface in node.interfaces:
                if interface.address:
                    mine += [f"interface {interface.name}", f"ip address {interface.address}"]
                    mine.append("exit")
        elif node.platform is Platform.LINUX:
            for interface in node.interfaces:
                if interface.address:
                    mine.append(f"ip addr add {interface.address} dev {interface.name}")
            if node.gateway:
                mine.append(f"ip route add default via {node.gateway}")
        else:
            address = next((i.address for i in node.interfaces if i.address), None)
            if address:
                mine.append(f"ip {address}" + (f" {node.gateway}" if node.gateway else ""))
        lines[node.name] = mine
    for protocol in lab.protocols:
        lines[protocol.node] += _protocol_lines(protocol)
    return lines


def _protocol_lines(protocol: OspfRouter | BgpRouter | StaticRoute) -> list[str]:
    if isinstance(protocol, StaticRoute):
        return [f"ip route {protocol.prefix} {protocol.via}"]
    if isinstance(protocol, OspfRouter):
        lines: list[str] = []
        for interface in protocol.point_to_point:
            lines += [f"interface {interface}", "ip ospf network point-to-point", "exit"]
        lines += ["router ospf", f"ospf router-id {protocol.router_id}"]
        lines += [f"network {n.prefix} area {n.area}" for n in protocol.networks]
        return [*lines, "exit"]
    lines = [f"router bgp {protocol.asn}"]
    if protocol.router_id:
        lines.append(f"bgp router-id {protocol.router_id}")
    # RFC 8212 (FRR's default): an eBGP session exchanges nothing without a policy.
    lines.append("no bgp ebgp-requires-policy")
    lines += [f"neighbor {n.address} remote-as {n.remote_as}" for n in protocol.neighbors]
    lines += [f"network {prefix}" for prefix in protocol.networks]
    return [*lines, "exit"]


def _judge(fault: Fault, source: str) -> None:
    """Raise :class:`FaultCatalogError` for the first line or check the lab cannot take."""
    lab = fault.lab

    def platform(name: str) -> Platform:
        node = lab.node(name)
        assert node is not None  # the core checked every name against the shape
        return node.platform

    for steps in ("inject", "fix"):
        for index, step in enumerate(getattr(fault, steps)):
            if not isinstance(step, DeviceLines):
                continue
            for number, line in enumerate(step.lines):
                why = line_problem(line, platform(step.node))
                if why is not None:
                    raise FaultCatalogError(
                        source, fault.id, f"{steps}[{index}].lines[{number}]", why
                    )
    for node, lines in baseline_lines(lab).items():
        for line in lines:
            why = line_problem(line, platform(node))
            if why is not None:
                raise FaultCatalogError(source, fault.id, "lab", f"{node}'s healthy lab: {why}")
    resolved = {n.name: n.addresses() for n in lab.nodes}
    for checks in ("symptoms", "fixed_checks"):
        for index, check in enumerate(getattr(fault, checks)):
            node = check_node(check)
            kind = KINDS[platform(node)]
            plan = compile_check(check, node, kind, resolved)
            if isinstance(plan, Observation):
                why = f"{node} ({kind.value}) cannot answer it: {plan.reason}"
                raise FaultCatalogError(source, fault.id, f"{checks}[{index}]", why)


def _read(path: Path, source: str) -> tuple[Fault, ...]:
    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=_LOADER)
    except OSError as exc:
        raise FaultCatalogError(source, None, "(file)", f"cannot be read: {exc}") from exc
    except yaml.YAMLError as exc:
        raise FaultCatalogError(source, None, "(yaml)", " ".join(str(exc).split())) from exc
    try:
        faults = parse_fault_file(data, source)
    except FaultFileError as exc:
        raise FaultCatalogError(source, exc.fault, exc.field, exc.message) from exc
    for fault in faults:
        _judge(fault, source)
    return faults


def load_fault_catalog(directories: Sequence[Path] = (FAULTS_DIR,)) -> FaultCatalog:
    """Every fault of ``directories``' YAML files, validated and judged (see the module);
    :class:`FaultCatalogError` on the first bad file."""
    faults: list[Fault] = []
    sources: dict[str, str] = {}
    for directory in directories:
        if not directory.is_dir():
            raise FaultCatalogError(str(directory), None, "(directory)", "not a directory")
        for path in sorted(directory.iterdir()):
            if path.suffix not in (".yaml", ".yml") or path.name.startswith("."):
                continue
            source = f"{directory.name}/{path.name}"
            for fault in _read(path, source):
                if fault.id in sources:
                    why = f"{fault.id!r} is also the id of a fault in {sources[fault.id]}"
                    raise FaultCatalogError(source, fault.id, "id", why)
                sources[fault.id] = source
                faults.append(fault)
    return FaultCatalog(tuple(faults), sources)
