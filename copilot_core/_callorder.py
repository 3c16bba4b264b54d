"""The order in which the calls of one model reply run.

A model may write "create PC1 and PC2" and "link PC1 to PC2" in one reply; run at once,
the link looks for nodes that are not there yet. The calls of a reply run concurrently
only when they are independent: each call waits for every earlier call of the same reply
that creates or changes a resource it touches. What a call touches is declared by its tool
source (:attr:`~copilot_core._tools.ToolSpec.touches`, computed from the call's
arguments): the core knows no resource kinds, it compares the declared keys.

A call whose tool declares nothing is ordered by the tool's declared ``effect``: a
changing one may touch anything, so it waits for every earlier call that changes
something and every later call that touches anything waits for it; a read-only one waits
for nothing and nothing waits for it.

An earlier call that did not create what a later one needs answers the later one "not
run" (saying which call and why); a later call that ran after a failed change and failed
too is told which earlier change failed (its failure may be that one's consequence).
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace

from copilot_core._approvals import ToolEffect
from copilot_core._tools import ParsedToolCall, ToolResult, ToolSpec, ToolStatus, Touch, TouchKind

__all__ = ["Need", "after_failure", "blocked", "declared", "plan"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Need:
    """An earlier call of the reply that a call waits for: its position (``index``, from
    0), the call, and what of it the later call needs (``None``: one of the two declared
    nothing, so they are ordered as changes, not for a named resource)."""

    index: int
    call: ParsedToolCall
    touch: Touch | None


@dataclass(frozen=True, slots=True)
class _Declared:
    touches: tuple[Touch, ...] | None  # None: the tool declared nothing for this call
    changes: bool

    def writes(self) -> dict[str, Touch]:
        if self.touches is None:
            return {}
        found: dict[str, Touch] = {}
        # a create is what a later call needs most: it wins over a change
        for touch in self.touches:
            if touch.kind is not TouchKind.READ and (
                touch.resource not in found or touch.kind is TouchKind.CREATE
            ):
                found[touch.resource] = touch
        return found


def declared(call: ParsedToolCall, spec: ToolSpec) -> tuple[Touch, ...] | None:
    """What ``call`` touches, as its tool declares it; ``None`` when the tool declares
    nothing, cannot read these arguments, or its declaration fails (logged: the call is
    then ordered as undeclared, never stopped)."""
    if spec.touches is None or call.arguments is None:
        return None
    try:
        touches = spec.touches(call.arguments)
    except Exception:
        log.warning("the touches of a %s call failed", spec.name, exc_info=True)
        return None
    return None if touches is None else tuple(touches)


def _declaration(call: ParsedToolCall, spec: ToolSpec) -> _Declared:
    touches = declared(call, spec)
    if touches is None:
        return _Declared(None, spec.effect is not ToolEffect.READ_ONLY)
    return _Declared(touches, any(t.kind is not TouchKind.READ for t in touches))


def plan(
    calls: Sequence[ParsedToolCall], offered: Mapping[str, ToolSpec], runs: Collection[str]
) -> dict[str, list[Need]]:
    """Each running call's needs (by call id): the earlier calls of ``calls`` it must wait
    for. Only calls whose ids are in ``runs`` take part (a refused call runs nothing)."""
    seen: list[tuple[int, ParsedToolCall, _Declared]] = []
    needs: dict[str, list[Need]] = {}
    for index, call in enumerate(calls):
        if call.id not in runs or call.name not in offered:
            continue
        mine = _declaration(call, offered[call.name])
        wanted: list[Need] = []
        for earlier_index, earlier, theirs in seen:
            need = _need(mine, Need(earlier_index, earlier, None), theirs)
            if need is not None:
                wanted.append(need)
        needs[call.id] = wanted
        seen.append((index, call, mine))
    return needs


def _need(mine: _Declared, earlier: Need, theirs: _Declared) -> Need | None:
    """Whether a call (``mine``) waits for an ``earlier`` one (declaring ``theirs``), and
    for what."""
    if theirs.touches is None:  # undeclared: a change may touch anything
        touches_any = mine.changes if mine.touches is None else bool(mine.touches)
        return earlier if theirs.changes and touches_any else None
    writes = theirs.writes()
    if not writes:
        return None
    if mine.touches is None:  # undeclared: only a change waits (changes in sequence)
        return earlier if mine.changes else None
    hits = [writes[t.resource] for t in mine.touches if t.resource in writes]
    if not hits:
        return None
    return replace(earlier, touch=next((t for t in hits if t.kind is TouchKind.CREATE), hits[0]))


_NOT_DONE = {
    ToolStatus.ERROR: "failed to create",
    ToolStatus.REJECTED: "did not create (the change was not approved)",
    ToolStatus.ABORTED: "did not create (it was aborted)",
}


def blocked(needs: Sequence[Need], results: Mapping[str, ToolResult]) -> ToolResult | None:
    """The answer to a call that cannot run because an earlier call of its reply did not
    create what it needs (``results``: the earlier calls' results by id); ``None``: it
    may run."""
    for need in needs:
        result = results.get(need.call.id)
        touch = need.touch
        if result is None or result.status is ToolStatus.SUCCESS:
            continue
        if touch is not None and touch.kind is TouchKind.CREATE:
            return ToolResult.error(
                f"Not run: it needs {touch.name}, which {need.call.name} (call "
                f"{need.index + 1}) {_NOT_DONE[result.status]}. Fix that first, then make "
                "this call again."
            )
    return None


def after_failure(
    result: ToolResult, needs: Sequence[Need], results: Mapping[str, ToolResult]
) -> ToolResult:
    """``result`` of a call that ran after earlier calls it needed; when it failed and one
    of those did not succeed either, its output says which (the likelier cause)."""
    if result.status is not ToolStatus.ERROR or not isinstance(result.output, dict):
        return result
    failed = [
        need
        for need in needs
        if (earlier := results.get(need.call.id)) is not None
        and earlier.status is not ToolStatus.SUCCESS
    ]
    if not failed:
        return result
    said = "; ".join(
        f"{need.call.name} (call {need.index + 1})"
        + (f", which changes {need.touch.name}," if need.touch is not None else "")
        + " did not succeed"
        for need in failed
    )
    note = f"This call ran after an earlier call it depends on: {said}."
    return replace(result, output={**result.output, "depends_on": note})
