"""The engine of a network CLI's grammar: words expanded through a tree, pipes, ``do``.

A :class:`CliGrammar` reads one line the way its CLI does: marks stripped from the first
word (VPCS's silent ``@``), ``do``/``run`` (a command of the operational level given in
configuration mode) taken off, words expanded through the platform's :class:`Level` tree,
aliases rewritten (VPCS ``write`` = ``save``), then each ``|`` filter expanded through the
platform's filter words. The line is read-only only when the expanded words start with
one of the platform's :class:`ReadRule` s, every filter is a read-only one, and every
character is in the platform's closed alphabet (:mod:`._alphabet`: ``|`` only where the
CLI has filters, one ``|`` on IOS; no quote, ``#``, ``;``, ``!``, ``>`` …).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from adapters.gns3.model._grammar._alphabet import outside_alphabet
from adapters.gns3.model._grammar._verdict import LABELS, Verdict
from adapters.gns3.model._grammar._words import Expansion, Level, ReadRule, expand
from adapters.gns3.model._platforms import DeviceKind

__all__ = ["CliGrammar", "split_outside_quotes"]


def split_outside_quotes(text: str, separator: str, *, once: bool = False) -> list[str]:
    """``text`` split on ``separator`` where it is not inside double quotes."""
    parts: list[str] = []
    current: list[str] = []
    quoted = False
    for char in text:
        if char == '"':
            quoted = not quoted
        if char == separator and not quoted and not (once and parts):
            parts.append("".join(current))
            current = []
            continue
        current.append(char)
    parts.append("".join(current))
    return parts


@dataclass(frozen=True, slots=True)
class CliGrammar:
    """One network CLI's grammar (see the module's docstring)."""

    kind: DeviceKind
    top: Level
    reads: tuple[ReadRule, ...]
    pipes: Level | None = None
    read_pipes: frozenset[str] = frozenset()
    pipe_once: bool = False  # IOS: one filter; what follows it is its pattern
    marks: str = ""  # characters a first word may start with and that the CLI strips
    enter_words: frozenset[str] = frozenset()  # ``do`` / ``run``
    rewrite: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    early: Callable[[str], str | None] | None = None  # a platform's own refusal
    abbreviates: bool = True

    @property
    def label(self) -> str:
        return LABELS[self.kind]

    def judge(self, command: str, *, config: bool = False) -> Verdict:
        verdict = self._read(command, config=config)
        if verdict.changes or not verdict.expanded:
            return verdict
        text = " ".join(command.split())
        why = outside_alphabet(command, self.kind, self.label)  # as typed: no tab, no newline
        if why is None and self.pipe_once and text.count("|") > 1:
            why = f"'{text}' has more than one '|' ({self.label} takes one filter)"
        if why is None:
            return verdict
        return Verdict(command, self.kind, verdict.expanded, True, why, verdict.runs)

    def _read(self, command: str, *, config: bool) -> Verdict:
        text = " ".join(command.split())
        if not text:
            return Verdict(command, self.kind, "", False, known=False)
        refusal = self.early(text) if self.early is not None else None
        if refusal is not None:
            return Verdict(
                command, self.kind, text, True, refusal, (Expansion((text,), 0),), known=True
            )
        main, *filters = split_outside_quotes(text, "|", once=self.pipe_once)
        words = main.lower().split()
        if not words:
            return self._change(command, text, f"'{text}' has no command before its '|'")
        if self.marks and words[0][:1] in self.marks:
            words[0] = words[0][1:]
        entered = ""
        if words[0] in self.enter_words and len(words) > 1:
            entered, words = words[0] + " ", words[1:]
        if config and not entered:
            expansion = Expansion(tuple(words), 0)
            return Verdict(
                command,
                self.kind,
                text,
                True,
                f"'{text}' is a configuration line: it changes the device's configuration",
                (expansion,),
            )
        expansion = self._rewritten(expand(words, self.top))
        expanded = entered + expansion.text
        known = expansion.problem is None or expansion.resolved > 0
        if expansion.problem is not None:
            typed = " ".join(words[: expansion.resolved + 1])
            if expansion.problem == "ambiguous":
                could = ", ".join(expansion.candidates[:8])
                why = f"'{typed}' is ambiguous on {self.label} (it could be {could})"
            else:
                why = f"'{typed}' is not a {self.label} command"
            return self._change(
                command, expanded, why + "; it is not known to be read-only", expansion, known
            )
        if config or not any(rule.matches(expansion) for rule in self.reads):
            read_as = f" as '{expanded}'" if expanded != text.lower() else ""
            why = (
                f"{self.label} reads '{text}'{read_as}, which is not on its read-only list: "
                "it can change the device"
            )
            return self._change(command, expanded, why, expansion)
        pieces = [expanded]
        for raw in filters:
            piece, problem = self._filter(raw)
            pieces.append(piece)
            if problem is not None:
                joined = " | ".join(pieces)
                return self._change(command, joined, f"in '{text}', {problem}", expansion)
        if ">" in "".join(main.split('"')[::2]):
            why = f"'{text}' writes its output to a file ('>'): it changes the device"
            return self._change(command, " | ".join(pieces), why, expansion)
        return Verdict(command, self.kind, " | ".join(pieces), False, None, (expansion,))

    def _rewritten(self, expansion: Expansion) -> Expansion:
        if expansion.problem is not None or not expansion.words:
            return expansion
        alias = self.rewrite.get(expansion.words[0])
        if alias is None:
            return expansion
        words = (*alias, *expansion.words[1:])
        return Expansion(words, expansion.resolved + len(alias) - 1)

    def _filter(self, raw: str) -> tuple[str, str | None]:
        """A ``| filter`` as read, and why it makes the line a change (``None``: it does not)."""
        words = raw.split()
        if not words:
            return raw.strip(), "an empty '|' filter is not known to be read-only"
        if self.pipes is None:
            return raw.strip(), f"{self.label} has no read-only '|' filters"
        full, candidates = self.pipes.resolve(words[0].lower())
        if full is None:
            what = "ambiguous" if len(candidates) > 1 else "not a filter"
            return (
                raw.strip(),
                f"'| {words[0]}' is {what} on {self.label}; not known to be read-only",
            )
        piece = " ".join([full, *words[1:]])
        if full not in self.read_pipes:
            return piece, f"'| {full}' sends the output somewhere (a file, a command): a change"
        return piece, None

    def _change(
        self,
        command: str,
        expanded: str,
        reason: str,
        expansion: Expansion | None = None,
        known: bool = True,
    ) -> Verdict:
        runs = (expansion,) if expansion is not None else (Expansion(tuple(expanded.split()), 0),)
        return Verdict(command, self.kind, expanded, True, reason, runs, known)
