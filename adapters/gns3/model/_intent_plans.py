"""What a compiled check is (:class:`Plan`: one command on the check's node and the rule
that decides the check from its output), and the errors every platform's compiler gives."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from adapters.gns3.model._intent_reading import Output, head, is_address
from adapters.gns3.model._platforms import DeviceKind
from copilot_core.intent import Check, Evidence, Observation

__all__ = ["Decide", "Plan", "targets", "unparsed", "unsupported"]

Decide = Callable[[Output], Observation]


@dataclass(frozen=True, slots=True)
class Plan:
    """One command on the check's node, and how its output decides the check."""

    node: str
    command: str
    decide: Decide
    privileged: bool = False
    extra: Mapping[str, object] = field(default_factory=dict)


def unsupported(check: Check, kind: DeviceKind, why: str = "") -> Observation:
    return Observation.error(
        f"a {kind.value} node cannot answer a {check.kind} check{why}; "
        "ask it of a node that can (see docs/intent.md)"
    )


def targets(value: str, resolved: Mapping[str, Sequence[str]]) -> list[str]:
    """The addresses ``value`` stands for: itself when it is one, else the node's
    addresses as its device listed them, each kept only when it is a plain address (a
    word read from a device is never formatted into a line unless it is one)."""
    if is_address(value):
        return [value]
    return [address for address in resolved.get(value, ()) if is_address(address)]


def unparsed(node: str, output: Output) -> Observation:
    return Observation.error(
        f"the output of {output.command!r} on {node} could not be parsed",
        Evidence(node, output.command, head(output, 6)),
    )
