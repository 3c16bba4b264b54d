"""Checks of intent as values: what should hold in a lab, and what was seen.

A check is a JSON object whose ``kind`` names it, with the fields of its kind and an
optional ``name``:

==================  ==============================================================
kind                fields
==================  ==============================================================
``reachability``    ``from`` (node), ``to`` (address or node), ``expect``
                    (``reachable``/``unreachable``), ``count`` (probes)
``ospf_neighbor``   ``node``, ``neighbor`` (router id, address or node), ``state``
``bgp_session``     ``node``, ``peer`` (address or node), ``state``
``route``           ``node``, ``prefix``, ``present``, ``via``, ``protocol``
``interface``       ``node``, ``interface``, ``state`` (``up``/``down``)
``config_line``     ``node``, ``line``, ``present``
==================  ==============================================================

Values that are formatted into a device line are typed here, so every entry refuses them
alike (naming the field): node and interface names are a closed alphabet
(:data:`SAFE_WORD_PATTERN`), a target (``to``, ``neighbor``, ``peer``, ``via``) is such a name
or a plain address (:func:`is_plain_address`: no scope id beyond ``[A-Za-z0-9_.-]``).

The service (not the model) turns a check into commands for the node's platform and
decides it from their parsed output (:class:`Observation`); a platform that cannot answer
a check gives ``error`` with the reason, never ``pass``. :class:`CheckResult` and
:class:`IntentResult` are what a verification answers.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StringConstraints,
    TypeAdapter,
    field_validator,
)

__all__ = [
    "BgpSessionCheck",
    "Check",
    "CheckResult",
    "CheckStatus",
    "ConfigLineCheck",
    "Evidence",
    "IntentResult",
    "InterfaceCheck",
    "Observation",
    "OspfNeighborCheck",
    "ReachabilityCheck",
    "RouteCheck",
    "check_label",
    "check_node",
    "checks_adapter",
    "dump_check",
    "is_plain_address",
    "is_safe_word",
]

Name = Annotated[
    str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200, pattern=r"\S")
]
Text = Annotated[
    str, StringConstraints(strip_whitespace=True, min_length=1, max_length=500, pattern=r"\S")
]

# ------------------------------------------------------------------ values of a device line
# A check's node, interface and target are formatted into the line a device runs (``ping
# -c 3 -W 2 {to}`` in a shell, ``show interfaces {name}`` on Junos): each is refused here,
# at the value's model, unless it is written in a closed alphabet, so no quoting or parsing
# of a CLI is needed to make the line safe. Node and interface names: ASCII letters,
# digits and ``_ . : / -``, starting with a letter or digit (``R1``, ``PC-2``,
# ``GigabitEthernet0/0``, ``ge-0/0/0.0``, ``Serial0/0/0:1``); an address: a plain IPv4 or
# IPv6 address, IPv6 with at most a scope id of letters, digits and ``_ . -``
# (``fe80::1%eth0``), never ``ipaddress``'s "any text after ``%``".
_WORD = r"[A-Za-z0-9][A-Za-z0-9_.:/-]*"
#: A word safe to put in a device line: node and interface names, IPv4, plain IPv6.
SAFE_WORD_PATTERN = rf"^{_WORD}$"
_SCOPE = r"[A-Za-z0-9_.-]+"
#: A check's target, in the closed alphabet: a name (an IPv4 address, or an IPv6 one that
#: starts with a digit or letter, is such a word too), an IPv6 address starting with ``:``,
#: and at most a scope id of ``[A-Za-z0-9_.-]`` after ``%``. Exactly what validation
#: accepts; a target is formatted into a line as an address only when it is a plain one
#: (:func:`is_plain_address`), else it is resolved as a node's name.
TARGET_PATTERN = rf"^[A-Za-z0-9:][A-Za-z0-9_.:/-]*(?:%{_SCOPE})?$"
_NAME_RULE = "only letters, digits and _ . : / -, starting with a letter or digit"


def is_safe_word(text: str) -> bool:
    """``text`` is one word of the closed alphabet of names (safe in any device line)."""
    return re.fullmatch(SAFE_WORD_PATTERN, text) is not None


def is_plain_address(text: str) -> bool:
    """``text`` is an IPv4 address, or an IPv6 address whose scope id (if any) is made of
    letters, digits and ``_ . -`` (no prefix length, nothing else)."""
    address, percent, scope = text.partition("%")
    if percent and (":" not in address or not re.fullmatch(_SCOPE, scope)):
        return False
    if not re.fullmatch(r"[0-9A-Fa-f.:]+", address):
        return False
    try:
        ipaddress.ip_address(address)
    except ValueError:
        return False
    return True


def _stripped(value: Any) -> Any:
    return value.strip() if isinstance(value, str) else value


def _node_name(value: Any) -> Any:
    value = _stripped(value)
    if isinstance(value, str) and value and not is_safe_word(value):
        raise ValueError(f"{value[:80]!r} is not a node name: {_NAME_RULE}")
    return value


def _interface_name(value: Any) -> Any:
    value = _stripped(value)
    if isinstance(value, str) and value and not is_safe_word(value):
        raise ValueError(f"{value[:80]!r} is not an interface name: {_NAME_RULE}")
    return value


def _target(value: Any) -> Any:
    value = _stripped(value)
    if isinstance(value, str) and value and not re.fullmatch(TARGET_PATTERN, value):
        raise ValueError(
            f"{value[:80]!r} is neither an address (IPv4, or IPv6 with at most a scope id of "
            f"letters, digits and _ . -) nor a name ({_NAME_RULE})"
        )
    return value


_WORD_SHAPE = StringConstraints(min_length=1, max_length=200, pattern=SAFE_WORD_PATTERN)
#: A GNS3 node's name, as checks name it.
# (the validator after the constraints wraps them: it runs first, and says in words what
# the pattern refuses; before them, pydantic would leave the pattern out of JSON Schema)
NodeName = Annotated[str, _WORD_SHAPE, BeforeValidator(_node_name)]
#: A device's interface name (``eth1``, ``Gi0/0``, ``ge-0/0/0``).
InterfaceName = Annotated[str, _WORD_SHAPE, BeforeValidator(_interface_name)]
#: An address, or a node (or interface) name that stands for one.
Target = Annotated[
    str,
    StringConstraints(min_length=1, max_length=200, pattern=TARGET_PATTERN),
    BeforeValidator(_target),
]

_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
#: An IPv4 prefix as JSON Schema can say it (``10.0.2.0/24``; host bits may be set).
PREFIX_PATTERN = rf"^{_OCTET}(?:\.{_OCTET}){{3}}/(?:3[0-2]|[12]?[0-9])$"


class _Check(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    name: Name | None = Field(None, description="what the check means, e.g. 'PC1 reaches PC2'")


class ReachabilityCheck(_Check):
    """``from`` reaches (or does not reach) ``to`` by ping."""

    kind: Literal["reachability"]
    source: NodeName = Field(alias="from", description="node the ping is sent from")
    to: Target = Field(description="address, or node name (its address is looked up)")
    expect: Literal["reachable", "unreachable"] = Field(
        "reachable", description="reachable (default) or unreachable"
    )
    count: int = Field(3, ge=1, le=20, description="probes sent (default 3)")
    size: int | None = Field(
        None,
        ge=1,
        le=65507,
        description="payload bytes per probe, sent with don't-fragment: a path or host "
        "whose MTU is smaller does not reach (default: the platform's own size, fragments "
        "allowed; Linux hosts only)",
    )

    @field_validator("count", "size", mode="before")
    @classmethod
    def _integral(cls, value: Any) -> Any:
        """``5.0`` is the integer 5, as JSON Schema's ``integer`` reads it."""
        return int(value) if isinstance(value, float) and value.is_integer() else value


class OspfNeighborCheck(_Check):
    """``node`` has ``neighbor`` as an OSPF neighbour in ``state``."""

    kind: Literal["ospf_neighbor"]
    node: NodeName
    neighbor: Target = Field(description="router id, interface address or node name")
    state: Literal["full", "2way", "init", "exstart", "exchange", "loading", "attempt", "down"] = (
        Field("full", description="full (default), 2way, init, exstart, exchange, loading or down")
    )


class BgpSessionCheck(_Check):
    """``node``'s BGP session with ``peer`` is in ``state``."""

    kind: Literal["bgp_session"]
    node: NodeName
    peer: Target = Field(description="peer address or node name")
    state: Literal["established", "idle", "active", "connect", "opensent", "openconfirm"] = Field(
        "established", description="established (default), idle, active, connect..."
    )


Protocol = Literal["connected", "static", "ospf", "bgp", "rip", "isis", "eigrp", "kernel", "local"]


class RouteCheck(_Check):
    """``node``'s routing table has (or lacks) ``prefix``, optionally via a next hop and
    learnt by a protocol."""

    kind: Literal["route"]
    node: NodeName
    prefix: str = Field(pattern=PREFIX_PATTERN, description="an IPv4 prefix, e.g. 10.0.2.0/24")
    present: bool = Field(True, description="true (default): the route is there")
    via: Target | None = Field(None, description="next-hop address, interface or node name")
    protocol: Protocol | None = Field(None, description="ospf, bgp, static, connected...")

    @field_validator("prefix", mode="before")
    @classmethod
    def _prefix_shape(cls, value: Any) -> Any:
        """A string not of the pattern's shape is refused in words, not with the regex."""
        if isinstance(value, str) and not re.fullmatch(PREFIX_PATTERN, value):
            raise ValueError(f"{value!r} is not a prefix such as 10.0.2.0/24")
        return value

    @field_validator("prefix")
    @classmethod
    def _network(cls, value: str) -> str:
        try:
            return str(ipaddress.IPv4Network(value, strict=False))
        except ValueError:
            raise ValueError(f"{value!r} is not a prefix such as 10.0.2.0/24") from None


class InterfaceCheck(_Check):
    """``node``'s ``interface`` is up (administratively and in its link) or down."""

    kind: Literal["interface"]
    node: NodeName
    interface: InterfaceName = Field(description="interface name, e.g. eth1 or Gi0/0")
    state: Literal["up", "down"] = Field("up", description="up (default) or down")


class ConfigLineCheck(_Check):
    """``node``'s running configuration has (or lacks) ``line``."""

    kind: Literal["config_line"]
    node: NodeName
    line: Text = Field(description="a configuration line, e.g. ip ospf network point-to-point")
    present: bool = Field(True, description="true (default): the line is there")


Check = Annotated[
    ReachabilityCheck
    | OspfNeighborCheck
    | BgpSessionCheck
    | RouteCheck
    | InterfaceCheck
    | ConfigLineCheck,
    Field(discriminator="kind"),
]

#: Validates a JSON list of checks (``checks_adapter.validate_python([...])``).
checks_adapter: TypeAdapter[list[Check]] = TypeAdapter(list[Check])


def check_node(check: Check) -> str:
    """The node a check is asked on (the ping's source for reachability)."""
    return check.source if isinstance(check, ReachabilityCheck) else check.node


def check_label(check: Check) -> str:
    """The check's ``name``, else a short sentence that says what it checks."""
    if check.name:
        return check.name
    if isinstance(check, ReachabilityCheck):
        verb = "reaches" if check.expect == "reachable" else "does not reach"
        return f"{check.source} {verb} {check.to}"
    if isinstance(check, OspfNeighborCheck):
        return f"{check.node} OSPF neighbour {check.neighbor} {check.state}"
    if isinstance(check, BgpSessionCheck):
        return f"{check.node} BGP session with {check.peer} {check.state}"
    if isinstance(check, RouteCheck):
        has = "has" if check.present else "lacks"
        via = f" via {check.via}" if check.via else ""
        return f"{check.node} {has} a route to {check.prefix}{via}"
    if isinstance(check, InterfaceCheck):
        return f"{check.node} {check.interface} {check.state}"
    has = "has" if check.present else "lacks"
    return f"{check.node} {has} '{check.line}'"


def dump_check(check: Check) -> dict[str, Any]:
    """The check as JSON, as it is written (``from``, not ``source``; no nulls)."""
    return check.model_dump(mode="json", by_alias=True, exclude_none=True)


class CheckStatus(StrEnum):
    PASS = "pass"
    FAIL = "fail"
    ERROR = "error"


@dataclass(frozen=True, slots=True)
class Evidence:
    """What decided a check: the node, the command sent and the output lines that told."""

    node: str
    command: str
    lines: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"node": self.node, "command": self.command, "lines": list(self.lines)}


@dataclass(frozen=True, slots=True)
class Observation:
    """One attempt at a check: ``pass``, ``fail`` (may still come to hold: retried) or
    ``error`` (the check cannot be answered; retried only when ``transient``, e.g. a
    console that did not answer)."""

    status: CheckStatus
    observed: Any = None
    evidence: tuple[Evidence, ...] = ()
    reason: str | None = None
    transient: bool = False

    @classmethod
    def passed(cls, observed: Any, *evidence: Evidence) -> Observation:
        return cls(CheckStatus.PASS, observed, evidence)

    @classmethod
    def failed(cls, observed: Any, reason: str, *evidence: Evidence) -> Observation:
        return cls(CheckStatus.FAIL, observed, evidence, reason)

    @classmethod
    def error(
        cls, reason: str, *evidence: Evidence, transient: bool = False, observed: Any = None
    ) -> Observation:
        return cls(CheckStatus.ERROR, observed, evidence, reason, transient)

    @property
    def final(self) -> bool:
        """Whether retrying cannot change it."""
        return self.status is CheckStatus.PASS or (
            self.status is CheckStatus.ERROR and not self.transient
        )


@dataclass(frozen=True, slots=True)
class CheckResult:
    """A check's verdict: its last observation, after ``attempts`` tries in ``waited_s``."""

    check: Check
    status: CheckStatus
    observed: Any
    evidence: tuple[Evidence, ...]
    attempts: int
    waited_s: float
    reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        result: dict[str, Any] = {
            "name": check_label(self.check),
            "kind": self.check.kind,
            "check": dump_check(self.check),
            "status": self.status.value,
            "observed": self.observed,
            "evidence": [e.to_dict() for e in self.evidence],
            "attempts": self.attempts,
            "waited_s": round(self.waited_s, 2),
        }
        if self.reason:
            result["reason"] = self.reason
        return result


@dataclass(frozen=True, slots=True)
class IntentResult:
    """The verdict of a list of checks: ``fail`` when one failed, else ``error`` when one
    could not be answered, else ``pass``."""

    checks: Sequence[CheckResult] = field(default_factory=tuple)
    waited_s: float = 0.0

    @property
    def status(self) -> CheckStatus:
        statuses = {result.status for result in self.checks}
        if CheckStatus.FAIL in statuses:
            return CheckStatus.FAIL
        if CheckStatus.ERROR in statuses:
            return CheckStatus.ERROR
        return CheckStatus.PASS

    def to_dict(self) -> dict[str, Any]:
        counts = {status.value: 0 for status in CheckStatus}
        for result in self.checks:
            counts[result.status.value] += 1
        return {
            "status": self.status.value,
            "summary": counts,
            "waited_s": round(self.waited_s, 2),
            "checks": [result.to_dict() for result in self.checks],
        }
