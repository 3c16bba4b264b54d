"""``capture_lab_state`` and ``diff_lab_state``: what changed in the network (read-only,
every mode).

``capture_lab_state`` reads the lab (:func:`~adapters.gns3.tools._lab_capture.
capture_lab_state`), keeps the state for this conversation (``LabAccess.lab_states``) and
answers its ``state_id`` with counts per node, not the facts themselves.
``diff_lab_state`` compares two kept states (or ``now``, captured fresh) in the network's
terms (:func:`~adapters.gns3.model._lab_state_diff.diff_lab_state`); each category gives at most
``MAX_ENTRIES`` entries and says how many more there are.
"""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict, Field

from adapters.gns3.lab import (
    BOTH_MODES,
    CallScope,
    Gns3Tool,
    LabAccess,
    ToolArguments,
)
from adapters.gns3.model import CATEGORIES, LabState, diff_lab_state
from adapters.gns3.tools._lab_capture import capture_lab_state
from copilot_core import ToolResult
from copilot_core.ports import ToolEffect

__all__ = ["MAX_ENTRIES", "CaptureLabState", "DiffLabState", "lab_state_tools"]

JSON = dict[str, Any]
#: Entries per category a diff gives the model (the rest counted).
MAX_ENTRIES = 40


class CaptureLabState(ToolArguments):
    pass


class DiffLabState(ToolArguments):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    source: str = Field(
        alias="from", min_length=1, description="a state_id from capture_lab_state, or now"
    )
    to: str = Field("now", min_length=1, description="a state_id, or now (default)")


def _key(scope: CallScope) -> tuple[str, str, str]:
    context = scope.context
    return scope.project_id, context.user_id, context.session_id


async def _captured(lab: LabAccess, scope: CallScope) -> LabState:
    state = await capture_lab_state(lab, scope)
    lab.lab_states.put(_key(scope), state, lab.clock.now())
    return state


async def capture(lab: LabAccess, args: CaptureLabState, scope: CallScope) -> ToolResult:
    state = await _captured(lab, scope)
    return ToolResult(state.summary())


async def diff(lab: LabAccess, args: DiffLabState, scope: CallScope) -> ToolResult:
    key, now = _key(scope), lab.clock.now()
    wanted = [args.source.strip(), args.to.strip()]
    kept = {i: lab.lab_states.get(key, i, now) for i in wanted if i.lower() != "now"}
    fresh = await _captured(lab, scope) if any(i.lower() == "now" for i in wanted) else None
    before, after = (kept.get(i) or fresh for i in wanted)
    assert before is not None
    assert after is not None
    return ToolResult(bounded(diff_lab_state(before, after)))


def bounded(found: JSON, limit: int = MAX_ENTRIES) -> JSON:
    """The diff with at most ``limit`` entries per category (``<category>_more``: how many
    were left out)."""
    result = dict(found)
    for category in (*CATEGORIES, "not_compared"):
        entries = result.get(category)
        if isinstance(entries, list) and len(entries) > limit:
            result[category] = entries[:limit]
            result[f"{category}_more"] = len(entries) - limit
    return result


def lab_state_tools() -> list[Gns3Tool[Any]]:
    return [
        Gns3Tool(
            "capture_lab_state",
            "Record the network's state now: per node its interfaces (up/down, addresses), "
            "OSPF/BGP neighbours, routes and configuration, and which PCs reach each other. "
            "Answers a state_id and counts; compare two states with diff_lab_state. Take one "
            "before a change to see afterwards what it changed.",
            CaptureLabState,
            capture,
            BOTH_MODES,
            effect=ToolEffect.READ_ONLY,
            example={},
        ),
        Gns3Tool(
            "diff_lab_state",
            "What changed in the network between two states (from, to: a state_id from "
            "capture_lab_state, or now): adjacencies lost or gained, routes added, removed "
            "or moved, interfaces up or down, PC pairs that lost or gained reachability, "
            "configuration lines added or removed. to defaults to now.",
            DiffLabState,
            diff,
            BOTH_MODES,
            effect=ToolEffect.READ_ONLY,
            example={"from": "the state_id capture_lab_state answered", "to": "now"},
        ),
    ]
