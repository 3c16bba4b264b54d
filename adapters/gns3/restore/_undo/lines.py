"""A change's own configuration lines on a router, and undoing them alone.

For a router whose running configuration is kept as lines and indented blocks (FRR's
vtysh, Cisco IOS, Arista EOS, Huawei VRP: :class:`~adapters.gns3.model._device_state.BlockKeeper`),
the configuration read just before the change and the one read just after give what the
change did, per context (the headers of the blocks a line is in, outermost first):

* ``added``: ``{"context": [...], "line": text}`` for each line present after and not
  before; a block added as a whole also carries ``"inside"``: its own lines as the change
  left them (``[{"line": text, "inside": [...]}, ...]``);
* ``removed``: the same, with ``"whole"``: the commands that enter it again (a block with
  its lines).

Undoing it on the configuration as it is now touches the change's lines only:

* a line the change added is negated in its context if it is still there;
* a block the change added is negated whole only when it holds nothing but the change's
  own lines now; when someone added a line inside it since, the block stays and only the
  change's own lines in it are negated (level by level);
* a line the change removed is entered again if it is still absent, except where the
  change *replaced* it (``ip ospf cost 50`` became ``60``: the same setting, another
  value) and its value was changed again since (``70``, or the setting removed): that is a
  conflict, named, and nothing is sent for it: a colleague's value is never overwritten;
* a line whose block is gone since is undone already (a note, not a conflict);
* every other line (someone's since) is left alone.

A host's addresses and routes are undone the same way, by :mod:`adapters.gns3.restore._undo.host`;
:func:`line_changes` and :func:`plan_line_undo` choose by the keeper. Every line planned
is judged (:mod:`adapters.gns3.restore._undo.judged`); one refused is a conflict, never sent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from adapters.gns3.model import (
    BlockKeeper,
    ConfigLine,
    ConfigurationKeeper,
    LinuxKeeper,
    config_tree,
)
from adapters.gns3.restore._undo import host
from adapters.gns3.restore._undo.host import LineUndo
from adapters.gns3.restore._undo.judged import refusal

__all__ = ["LineUndo", "line_changes", "lines_left", "plan_line_undo"]

JSON = dict[str, Any]
#: The record's format: 2 records what a block added whole held (``inside``).
FORMAT = 2


def _inside(line: ConfigLine) -> list[JSON]:
    return [
        {"line": child.text, **({"inside": _inside(child)} if child.children else {})}
        for child in line.children
    ]


def _walk(
    keeper: BlockKeeper,
    before: list[ConfigLine],
    after: list[ConfigLine],
    context: list[str],
    into: JSON,
) -> None:
    then = {line.text: line for line in before}
    now = {line.text: line for line in after}
    for line in after:
        if line.text not in then:
            entry: JSON = {"context": list(context), "line": line.text}
            if line.children:
                entry["inside"] = _inside(line)
            into["added"].append(entry)
    for line in before:
        other = now.get(line.text)
        if other is None:
            into["removed"].append(
                {"context": list(context), "line": line.text, "whole": keeper._whole(line)}
            )
        elif line.children or other.children:
            _walk(keeper, line.children, other.children, [*context, line.text], into)


def line_changes(keeper: ConfigurationKeeper, before: JSON, after: JSON) -> JSON | None:
    """What the change did to the configuration, in context (see the module docstring);
    ``None`` for a platform whose changes are not kept this way."""
    if isinstance(keeper, LinuxKeeper):
        return host.host_changes(before, after)
    if not isinstance(keeper, BlockKeeper):
        return None
    found: JSON = {"format": FORMAT, "added": [], "removed": []}
    _walk(
        keeper,
        config_tree(before.get("lines") or []),
        config_tree(after.get("lines") or []),
        [],
        found,
    )
    return found


def _find(tree: list[ConfigLine], context: Sequence[str]) -> list[ConfigLine] | None:
    """The lines inside ``context`` of ``tree`` (``None``: a block of it is gone)."""
    lines = tree
    for header in context:
        block = next((line for line in lines if line.text == header), None)
        if block is None:
            return None
        lines = block.children
    return lines


def _same_setting(one: str, other: str) -> bool:
    """Whether two lines set the same thing to other values (one replaces the other):
    the same words but the last (``ip ospf cost 50``/``60``), or both a description."""
    a, b = one.split(), other.split()
    if a == b or not a or not b:
        return False
    if a[0] == b[0] == "description":
        return True
    return len(a) >= 2 and len(a) == len(b) and a[:-1] == b[:-1]


def _where(context: Sequence[str]) -> str:
    return " / ".join(context) if context else "the top level"


def _only_own(present: list[ConfigLine], own: Sequence[Mapping[str, Any]]) -> bool:
    """Whether ``present`` (a block's lines now) holds nothing but ``own`` (the lines the
    change put in it), level by level."""
    mine = {str(entry.get("line")): entry for entry in own}
    for line in present:
        entry = mine.get(line.text)
        if entry is None or not _only_own(line.children, entry.get("inside") or []):
            return False
    return True


class _Planner:
    def __init__(self, keeper: BlockKeeper, current: JSON, device: str) -> None:
        self.keeper = keeper
        self.device = device
        self.tree = config_tree([str(line) for line in current.get("lines") or []])
        self.undo = LineUndo()
        #: Per context, in order: (the command, the line of the change it undoes).
        self.groups: dict[tuple[str, ...], list[tuple[str, str]]] = {}

    def send(self, context: tuple[str, ...], command: str, what: str) -> None:
        self.groups.setdefault(context, []).append((command, what))

    def added(self, context: tuple[str, ...], entry: Mapping[str, Any], legacy: bool) -> None:
        text = str(entry.get("line"))
        inside = _find(self.tree, context)
        if inside is None:
            self.undo.notes.append(
                f"{self.device}: `{text}` ({_where(context)}): undone already, its block "
                "is gone since"
            )
            return
        present = next((line for line in inside if line.text == text), None)
        if present is None:
            self.undo.notes.append(f"{self.device}: `{text}` ({_where(context)}) is gone already")
            return
        own = entry.get("inside") or []
        if _only_own(present.children, own):
            self.send(context, self.keeper.negate(text), text)
        elif legacy:
            self.undo.conflicts.append(
                f"{self.device}: the block `{text}` ({_where(context)}) the change added holds "
                "lines now, and its record does not say which were the change's: not removed"
            )
        elif not own:
            self.undo.conflicts.append(
                f"{self.device}: the block `{text}` ({_where(context)}) the change added holds "
                "lines added since: it stays"
            )
        else:  # someone's lines inside: the change's own ones go, level by level
            self.undo.notes.append(
                f"{self.device}: `{text}` ({_where(context)}) holds lines added since: only "
                "the change's own lines in it are undone"
            )
            for child in own:
                self.added((*context, text), child, legacy)

    def removed(
        self, context: tuple[str, ...], entry: Mapping[str, Any], added: Sequence[Any]
    ) -> None:
        text = str(entry.get("line"))
        inside = _find(self.tree, context)
        if inside is None:
            self.undo.notes.append(
                f"{self.device}: `{text}` the change removed from {_where(context)}: not "
                "entered again, that block is gone since"
            )
            return
        if any(line.text == text for line in inside):
            self.undo.notes.append(f"{self.device}: `{text}` ({_where(context)}) is back already")
            return
        replaced_by = [
            str(a.get("line"))
            for a in added
            if tuple(a.get("context") or []) == context and _same_setting(text, str(a.get("line")))
        ]
        if replaced_by and not any(line.text in replaced_by for line in inside):
            now = [line.text for line in inside if _same_setting(text, line.text)]
            shown = f"is `{'`, `'.join(now)}` now" if now else "was removed since"
            self.undo.conflicts.append(
                f"{self.device}: `{text}` ({_where(context)}), which the change replaced with "
                f"`{replaced_by[0]}`, {shown}: changed again since, so it is not put back "
                "(that would overwrite it)"
            )
            return
        for command in entry.get("whole") or [text]:
            self.send(context, str(command), text)

    def commands(self) -> None:
        kind = self.keeper.kind
        for context, body in self.groups.items():
            refused = [why for header in context if (why := refusal(header, kind, config=True))]
            if refused:
                self.undo.conflicts += [
                    f"{self.device}: `{what}` ({_where(context)}) not undone: {refused[0]}"
                    for _, what in body
                ]
                continue
            sent: list[str] = []
            for command, what in body:
                why = refusal(command, kind, config=True)
                if why is not None:
                    self.undo.conflicts.append(
                        f"{self.device}: `{what}` ({_where(context)}) not undone: {why}"
                    )
                    continue
                sent.append(command)
                self.undo.undoes.append(" / ".join([*context, what]))
            if sent:
                self.undo.commands += [*context, *sent, *[self.keeper.leave_block] * len(context)]


def plan_line_undo(
    keeper: ConfigurationKeeper, changes: Mapping[str, Any], current: JSON, device: str
) -> LineUndo:
    """The commands that undo ``changes`` (:func:`line_changes`) on the ``current``
    configuration, grouped by context; the conflicts and notes name ``device``."""
    if isinstance(keeper, LinuxKeeper):
        return host.plan_host_undo(changes, current, device)
    if not isinstance(keeper, BlockKeeper):
        return LineUndo()
    planner = _Planner(keeper, current, device)
    legacy = changes.get("format") != FORMAT
    added = list(changes.get("added") or [])
    for entry in added:
        planner.added(tuple(entry.get("context") or []), entry, legacy)
    for entry in changes.get("removed") or []:
        planner.removed(tuple(entry.get("context") or []), entry, added)
    planner.commands()
    return planner.undo


def lines_left(keeper: ConfigurationKeeper, changes: Mapping[str, Any], current: JSON) -> list[str]:
    """What of the change is still to undo on ``current`` (read after its undo), one line
    each: what a new plan would still send. Conflicts are not repeated here."""
    again = plan_line_undo(keeper, changes, current, "")
    return [f"{what}: still to undo" for what in dict.fromkeys(again.undoes)]
