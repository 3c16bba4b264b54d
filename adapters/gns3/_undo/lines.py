"""A change's own configuration lines on a block-configured router, and undoing them alone.

For a router whose running configuration is kept as lines and indented blocks (FRR's
vtysh, Cisco IOS, Arista EOS, Huawei VRP: :class:`~adapters.gns3._device_state.BlockKeeper`),
the configuration read just before the change and the one read just after give what the
change did, per context (the headers of the blocks a line is in, outermost first):

* ``added``: ``{"context": [...], "line": text}`` for each line present after and not
  before (a block added as a whole is its header alone);
* ``removed``: the same, with ``"whole"``: the commands that enter it again (a block with
  its lines).

Undoing it on the configuration as it is now touches those lines only: a line the change
added is negated in its context if it is still there, a line it removed is entered again
if it is still absent, and every other line (someone's since) is left alone. A line whose
context is gone since is a conflict: nothing is sent for it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from adapters.gns3._device_state import BlockKeeper, ConfigurationKeeper, _Line, _tree

__all__ = ["LineUndo", "line_changes", "lines_left", "plan_line_undo"]

JSON = dict[str, Any]


def _walk(
    keeper: BlockKeeper, before: list[_Line], after: list[_Line], context: list[str], into: JSON
) -> None:
    then = {line.text: line for line in before}
    now = {line.text: line for line in after}
    for line in after:
        if line.text not in then:
            into["added"].append({"context": list(context), "line": line.text})
    for line in before:
        other = now.get(line.text)
        if other is None:
            into["removed"].append(
                {"context": list(context), "line": line.text, "whole": keeper._whole(line)}
            )
        elif line.children or other.children:
            _walk(keeper, line.children, other.children, [*context, line.text], into)


def line_changes(keeper: ConfigurationKeeper, before: JSON, after: JSON) -> JSON | None:
    """What the change did to the configuration, line by line in context (see the module
    docstring); ``None`` for a platform not configured in blocks of lines."""
    if not isinstance(keeper, BlockKeeper):
        return None
    found: JSON = {"added": [], "removed": []}
    _walk(keeper, _tree(before.get("lines") or []), _tree(after.get("lines") or []), [], found)
    return found


def _find(tree: list[_Line], context: Sequence[str]) -> list[_Line] | None:
    """The lines inside ``context`` of ``tree`` (``None``: a block of it is gone)."""
    lines = tree
    for header in context:
        block = next((line for line in lines if line.text == header), None)
        if block is None:
            return None
        lines = block.children
    return lines


@dataclass(slots=True)
class LineUndo:
    """Commands (configuration mode) that undo a change's lines, and what stops them."""

    commands: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    #: Lines already as before the change (nothing to send for them), in words.
    notes: list[str] = field(default_factory=list)


def _where(context: Sequence[str]) -> str:
    return " / ".join(context) if context else "the top level"


def plan_line_undo(
    keeper: ConfigurationKeeper, changes: Mapping[str, Any], current: JSON, device: str
) -> LineUndo:
    """The commands that undo ``changes`` (:func:`line_changes`) on the ``current``
    configuration, grouped by context; the conflicts name ``device``."""
    undo = LineUndo()
    if not isinstance(keeper, BlockKeeper):
        return undo
    tree = _tree([str(line) for line in current.get("lines") or []])
    grouped: dict[tuple[str, ...], list[str]] = {}
    entered: dict[tuple[str, ...], list[str]] = {}
    for entry in changes.get("added") or []:
        context, text = tuple(entry.get("context") or []), str(entry.get("line"))
        inside = _find(tree, context)
        if inside is None:
            undo.conflicts.append(
                f"{device}: `{text}` the change added in {_where(context)}, which is gone since"
            )
        elif any(line.text == text for line in inside):
            grouped.setdefault(context, []).append(keeper.negate(text))
        else:
            undo.notes.append(f"{device}: `{text}` ({_where(context)}) is gone already")
    for entry in changes.get("removed") or []:
        context, text = tuple(entry.get("context") or []), str(entry.get("line"))
        inside = _find(tree, context)
        if inside is None:
            undo.conflicts.append(
                f"{device}: `{text}` the change removed from {_where(context)}, which is gone since"
            )
        elif any(line.text == text for line in inside):
            undo.notes.append(f"{device}: `{text}` ({_where(context)}) is back already")
        else:
            entered.setdefault(context, []).extend(str(c) for c in entry.get("whole") or [text])
    for context in [*grouped, *(c for c in entered if c not in grouped)]:
        body = [*grouped.get(context, []), *entered.get(context, [])]
        undo.commands += [*context, *body, *[keeper.leave_block] * len(context)]
    return undo


def lines_left(keeper: ConfigurationKeeper, changes: Mapping[str, Any], current: JSON) -> list[str]:
    """What of the change is still on ``current`` after its undo, one line each (a line it
    added still there, a line it removed still absent) where the context is there."""
    if not isinstance(keeper, BlockKeeper):
        return []
    tree = _tree([str(line) for line in current.get("lines") or []])
    left: list[str] = []
    for key, present in (("added", True), ("removed", False)):
        for entry in changes.get(key) or []:
            context, text = list(entry.get("context") or []), str(entry.get("line"))
            inside = _find(tree, context)
            if inside is None:
                continue
            if any(line.text == text for line in inside) == present:
                state = "still present" if present else "still absent"
                left.append(f"{' / '.join([*context, text])}: {state}")
    return left
