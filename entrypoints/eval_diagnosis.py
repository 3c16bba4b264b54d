"""What ``gns3-copilot eval --suite faults`` asks the model, and how its diagnosis is read.

The model is asked the same question on every lab, faulty or healthy (so the question
does not give the verdict away): the lab's summary, "it may have one fault, or none",
and the diagnosis to end the answer with, as one fenced JSON block of a fixed form
(:data:`DIAGNOSIS_FORM`)::

    {"verdict": "faulty", "causes": [{"device": "R1", "interface": "eth0",
                                     "fault_type": "interface_down"}]}
    {"verdict": "healthy", "causes": []}

:func:`parse_diagnosis` reads the answer's last fenced block (```` ```json ```` or a bare
```` ``` ````) strictly: an object with exactly ``verdict`` and ``causes``; ``verdict``
``faulty`` (1 to :data:`MAX_CAUSES` causes) or ``healthy`` (none); each cause with a
``fault_type`` of the catalog's fixed list and either a ``device`` (a node of the lab,
with an optional ``interface``) or a ``link`` (its two ``node:interface`` ends), no other
key. Anything else — no block, a block that is not JSON, a key missing or unknown, a
fault type not on the list — is :class:`Malformed`, with the reason: the evaluation
counts and shows it and scores it as a wrong verdict. Nothing is guessed from the prose.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from copilot_core.drills import Cause, Diagnosis
from copilot_core.faults import FaultType

__all__ = [
    "DIAGNOSIS_FORM",
    "FAULT_TYPES",
    "MAX_CAUSES",
    "Malformed",
    "diagnosis_data",
    "diagnosis_question",
    "fix_question",
    "parse_diagnosis",
]

#: The fault types a diagnosis may name (the catalog's fixed list, ``none`` aside).
FAULT_TYPES: tuple[str, ...] = tuple(t.value for t in FaultType if t is not FaultType.NONE)
#: At most this many causes in one diagnosis.
MAX_CAUSES = 5
#: A fenced block: its info string (``json`` or none) and its body.
_FENCE = re.compile(r"```[ \t]*([A-Za-z]*)[ \t]*\n(.*?)```", re.DOTALL)
_CAUSE_KEYS = frozenset({"device", "interface", "link", "fault_type"})

DIAGNOSIS_FORM = (
    '```json\n{"verdict": "faulty", "causes": [{"device": "<node name>", '
    '"interface": "<its interface, or null>", "fault_type": "<one of the types below>"}]}\n'
    "```"
)


def diagnosis_question(summary: str) -> str:
    """The diagnosis turn's message (teaching mode): the same on every lab."""
    return (
        f"Troubleshooting exercise. The lab is {summary}. It may have one fault in it, or "
        "none. Investigate with your tools (read the devices; change nothing), then end "
        "your answer with your diagnosis as one fenced JSON block of exactly this form:\n\n"
        f"{DIAGNOSIS_FORM}\n\n"
        '"verdict" is "faulty" or "healthy" (then "causes" is []). A cause names the '
        '"device" (a node of the lab) and, when the fault is on one of its interfaces, that '
        '"interface"; a fault of a link itself names "link": ["NODE:INTERFACE", '
        '"NODE:INTERFACE"] instead of "device". The most likely cause first. '
        f'"fault_type" is one of: {", ".join(FAULT_TYPES)}.'
    )


def fix_question() -> str:
    """The repair turn's message (lab-automation mode, the same session)."""
    return (
        "Now repair the fault you found, with your tools, changing nothing else: do not "
        "route around it. If the lab is healthy, change nothing."
    )


@dataclass(frozen=True, slots=True)
class Malformed:
    """An answer whose diagnosis could not be read, and why (scored as a wrong verdict)."""

    reason: str


def parse_diagnosis(answer: str) -> Diagnosis | Malformed:
    """The diagnosis of ``answer``'s last fenced block (see the module), or why not."""
    blocks = list(_FENCE.finditer(answer))
    if not blocks:
        return Malformed("no fenced JSON block")
    info, body = blocks[-1].group(1), blocks[-1].group(2)
    if info.lower() not in ("", "json"):
        return Malformed(f"the last fenced block is {info!r}, not JSON")
    try:
        data = json.loads(body)
    except json.JSONDecodeError as exc:
        return Malformed(f"the last fenced block is not JSON ({exc.msg})")
    try:
        return _diagnosis(data)
    except _Bad as exc:
        return Malformed(str(exc))


class _Bad(Exception):
    pass


def _diagnosis(data: Any) -> Diagnosis:
    if not isinstance(data, dict):
        raise _Bad("the diagnosis is not a JSON object")
    if set(data) != {"verdict", "causes"}:
        raise _Bad(f"the diagnosis has keys {sorted(data)}, not verdict and causes")
    verdict, causes = data["verdict"], data["causes"]
    if not isinstance(causes, list):
        raise _Bad("causes is not a list")
    if verdict == "healthy":
        if causes:
            raise _Bad("a healthy verdict with causes")
        return Diagnosis()
    if verdict != "faulty":
        raise _Bad(f"verdict {verdict!r} is neither faulty nor healthy")
    if not 1 <= len(causes) <= MAX_CAUSES:
        raise _Bad(f"a faulty verdict needs 1 to {MAX_CAUSES} causes, not {len(causes)}")
    return Diagnosis(tuple(_cause(c, i) for i, c in enumerate(causes)))


def _cause(data: Any, index: int) -> Cause:
    where = f"causes[{index}]"
    if not isinstance(data, dict):
        raise _Bad(f"{where} is not an object")
    unknown = set(data) - _CAUSE_KEYS
    if unknown:
        raise _Bad(f"{where} has unknown keys {sorted(unknown)}")
    kind = data.get("fault_type")
    if kind not in FAULT_TYPES:
        raise _Bad(f"{where}.fault_type {kind!r} is not one of the fault types")
    device, interface, link = data.get("device"), data.get("interface"), data.get("link")
    if (device is None) == (link is None):
        raise _Bad(f"{where} names a device or a link (one of them)")
    if link is not None:
        if interface is not None:
            raise _Bad(f"{where} names an interface with a link")
        if not (
            isinstance(link, list)
            and len(link) == 2
            and all(isinstance(e, str) and _end(e) for e in link)
        ):
            raise _Bad(f"{where}.link is not two NODE:INTERFACE ends")
        return Cause(FaultType(kind), link=(link[0].strip(), link[1].strip()))
    if not _name(device):
        raise _Bad(f"{where}.device is not a name")
    if interface is not None and not _name(interface):
        raise _Bad(f"{where}.interface is not a name")
    return Cause(FaultType(kind), node=str(device).strip(), interface=_strip(interface))


def _name(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip()) and ":" not in value


def _end(value: str) -> bool:
    node, colon, interface = value.strip().partition(":")
    return bool(colon) and _name(node) and _name(interface)


def _strip(value: str | None) -> str | None:
    return None if value is None else value.strip()


def diagnosis_data(diagnosis: Diagnosis) -> dict[str, Any]:
    """``diagnosis`` in the form the question asks for (what :func:`parse_diagnosis`
    reads back to the same diagnosis)."""
    causes: list[dict[str, Any]] = []
    for cause in diagnosis.causes:
        item: dict[str, Any] = {"fault_type": cause.fault_type.value}
        if cause.link is not None:
            item["link"] = list(cause.link)
        else:
            item["device"] = cause.node
            if cause.interface is not None:
                item["interface"] = cause.interface
        causes.append(item)
    return {"verdict": "healthy" if diagnosis.healthy else "faulty", "causes": causes}
