"""A lab plan's file: its data read into a :class:`LabPlan`, and a plan written back (pure).

The file is YAML (``docs/labs.md``), close to a netlab topology: ``nodes``, ``links`` as
``R1:eth0-R2:eth0`` strings (or mappings with a ``prefix``), ``addressing`` as
``R1:eth0: 10.0.12.1/30``, ``config`` as each node's lines, ``checks``. The core has no
YAML parser (it imports only the standard library and pydantic): whoever reads the text
(the service, a test) hands the parsed data to :func:`parse_plan` and writes
:func:`plan_data`'s with a YAML dumper; the two meet exactly (``parse_plan(plan_data(p))
== p``). The file's JSON Schema is :func:`plan_schema`'s.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from copilot_core._checks import dump_check
from copilot_core._lab_plan import LabPlan, PlanProblem, link_text

__all__ = ["LabPlanError", "parse_plan", "plan_data", "plan_fingerprint", "plan_schema"]


class LabPlanError(ValueError):
    """A plan that cannot be used: where it came from, and every problem by its field."""

    def __init__(self, source: str, problems: Sequence[PlanProblem]) -> None:
        self.source = source
        self.problems = tuple(problems)
        super().__init__(f"{source}: " + "; ".join(str(p) for p in self.problems))


#: A discriminated union's tag (a check's kind) put in a location after the item's index.
_TAGS = {"reachability", "ospf_neighbor", "bgp_session", "route", "interface", "config_line"}
#: The fields the file writes as mappings (their items are named by key, not index).
_KEYED = {"addressing": "interface", "config": "node"}


def _field(loc: Sequence[int | str], data: Any) -> str:
    """A pydantic location as the file's field (``links[1]``, ``addressing.R1:eth0``)."""
    kept = [p for i, p in enumerate(loc) if not (p in _TAGS and i and isinstance(loc[i - 1], int))]
    if (
        len(kept) >= 2
        and kept[0] in _KEYED
        and isinstance(kept[1], int)
        and isinstance(data, Mapping)
        and isinstance(data.get(kept[0]), Mapping)
    ):
        keys = list(data[kept[0]])
        if kept[1] < len(keys):
            # a mapping's key error is the key's; its value's is the key's too
            rest = [p for p in kept[2:] if p not in (_KEYED[str(kept[0])], "address", "lines")]
            kept = [f"{kept[0]}.{keys[kept[1]]}", *rest]
    text = ""
    for part in kept:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "(plan)"


def parse_plan(data: Any, source: str = "plan") -> LabPlan:
    """The plan a file's data holds; :class:`LabPlanError` names every field that is wrong."""
    if not isinstance(data, Mapping):
        raise LabPlanError(source, [PlanProblem("(plan)", "a plan is a mapping with nodes")])
    try:
        return LabPlan.model_validate(data)
    except ValidationError as exc:
        problems: list[PlanProblem] = []
        errors = exc.errors()
        items = {
            tuple(e["loc"][:i])
            for e in errors
            for i, part in enumerate(e["loc"])
            if isinstance(part, int)
        }
        for error in errors:
            ctx = error.get("ctx") or {}
            if error["type"] == "too_short" and tuple(error["loc"]) in items:
                continue  # an item refused: pydantic also counts the list short; said once
            if error["type"] == "lab_plan":
                problems += ctx["problems"]
            else:
                problems.append(PlanProblem(_field(tuple(error["loc"]), data), error["msg"]))
        raise LabPlanError(source, problems) from None


def plan_data(plan: LabPlan) -> dict[str, Any]:
    """The plan as its file writes it (plain data: mappings, lists, strings, numbers)."""
    data: dict[str, Any] = {}
    if plan.summary is not None:
        data["summary"] = plan.summary
    data["nodes"] = [node.model_dump(mode="json", exclude_none=True) for node in plan.nodes]
    if plan.links:
        data["links"] = [link_text(link) for link in plan.links]
    if plan.addressing:
        data["addressing"] = {a.interface: a.address for a in plan.addressing}
    if plan.config:
        data["config"] = {c.node: list(c.lines) for c in plan.config}
    if plan.checks:
        data["checks"] = [dump_check(check) for check in plan.checks]
    return data


def plan_fingerprint(plan: LabPlan | None) -> str:
    """The plan's digest (``sha256:…`` of its data, keys sorted; ``None``, a lab with
    nothing a plan holds, is that of no nodes): a relative build names the lab it was
    planned against by its export's fingerprint, and is refused when the lab is another
    by then."""
    data = plan_data(plan) if plan is not None else {"nodes": []}
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def plan_schema() -> dict[str, Any]:
    """The JSON Schema of a plan's file (what :func:`parse_plan` accepts)."""
    return LabPlan.model_json_schema(mode="validation")
