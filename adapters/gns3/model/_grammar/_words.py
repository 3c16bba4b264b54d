"""Command words as a CLI reads them: a tree of levels, each expanding what was typed.

A :class:`Level` is the set of words a CLI accepts at one place of a command, each with
the level after it (``None``: what follows are arguments, not expanded). How a typed
word becomes a full one depends on the CLI (:class:`Match`): IOS-like CLIs take an exact
word, then an alias, then a unique prefix; VPCS counts every word the typed one starts
(an exact word that also starts another is ambiguous); iproute2 takes the first word, in
its table's order, that the typed one starts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum

__all__ = ["Expansion", "Level", "Match", "ReadRule", "expand", "level"]


class Match(Enum):
    UNIQUE = "unique"  # exact word, then alias, then a unique prefix (IOS, EOS, FRR, Junos, VRP)
    EVERY = "every"  # every word the typed one starts counts (VPCS)
    FIRST = "first"  # the first word, in order, that the typed one starts (iproute2)


@dataclass(frozen=True, slots=True)
class Level:
    """The words accepted at one place of a command, in the CLI's own order."""

    words: Mapping[str, Level | None]
    aliases: Mapping[str, str] = field(default_factory=dict)
    match: Match = Match.UNIQUE

    def resolve(self, typed: str) -> tuple[str | None, tuple[str, ...]]:
        """The full word ``typed`` stands for (else ``None``) and the words it could be."""
        if self.match is Match.EVERY:
            found = tuple(word for word in self.words if word.startswith(typed))
            return (found[0] if len(found) == 1 else None), found
        if self.match is Match.FIRST:
            first = next((word for word in self.words if word.startswith(typed)), None)
            return first, (first,) if first else ()
        if typed in self.words:
            return typed, (typed,)
        if typed in self.aliases:
            return self.aliases[typed], (self.aliases[typed],)
        found = tuple(word for word in self.words if word.startswith(typed))
        return (found[0] if len(found) == 1 else None), found


def level(
    *words: str | tuple[str, Level | None],
    aliases: Mapping[str, str] | None = None,
    match: Match = Match.UNIQUE,
) -> Level:
    """A level from words (open after them) and ``(word, next level)`` pairs."""
    entries: dict[str, Level | None] = {}
    for entry in words:
        if isinstance(entry, tuple):
            entries[entry[0]] = entry[1]
        else:
            entries[entry] = None
    return Level(entries, dict(aliases or {}), match)


@dataclass(frozen=True, slots=True)
class Expansion:
    """Typed words read through a tree: the full words, and where reading stopped.

    ``resolved`` is how many leading words were expanded through a known level; the rest
    are arguments (or, when ``problem`` is set, the word the CLI would not take and what
    follows it). ``problem`` is ``"ambiguous"`` or ``"unknown"``; ``candidates`` are the
    words an ambiguous one could be.
    """

    words: tuple[str, ...]
    resolved: int
    problem: str | None = None
    candidates: tuple[str, ...] = ()

    @property
    def text(self) -> str:
        return " ".join(self.words)


def expand(words: Sequence[str], top: Level) -> Expansion:
    out: list[str] = []
    current: Level | None = top
    for index, word in enumerate(words):
        if current is None:
            return Expansion((*out, *words[index:]), index)
        full, candidates = current.resolve(word)
        if full is None:
            problem = "ambiguous" if len(candidates) > 1 else "unknown"
            return Expansion((*out, *words[index:]), index, problem, candidates)
        out.append(full)
        current = current.words[full]
    return Expansion(tuple(out), len(out))


@dataclass(frozen=True, slots=True)
class ReadRule:
    """Expanded leading words that make a command read-only (``alone``: and nothing
    after them; ``plain``: no word after them starts with ``-``, so that the same line
    typed into a shell by mistake gives ``ping`` no option)."""

    words: tuple[str, ...]
    alone: bool = False
    plain: bool = False

    def matches(self, expansion: Expansion) -> bool:
        size = len(self.words)
        if expansion.problem is not None and expansion.resolved < size:
            return False
        if tuple(expansion.words[:size]) != self.words:
            return False
        if self.plain and any(word.startswith("-") for word in expansion.words[size:]):
            return False
        return not self.alone or len(expansion.words) == size


def rules(
    *specs: str, alone: Sequence[str] = (), plain: Sequence[str] = ()
) -> tuple[ReadRule, ...]:
    """Read rules from space-separated words; those in ``alone`` take nothing after,
    those in ``plain`` take no option."""
    made = [ReadRule(tuple(spec.split())) for spec in specs]
    made += [ReadRule(tuple(spec.split()), alone=True) for spec in alone]
    made += [ReadRule(tuple(spec.split()), plain=True) for spec in plain]
    return tuple(made)


__all__ += ["rules"]


def names(text: str) -> list[str]:
    """Words written as one space-separated string (long vocabularies read better so)."""
    return text.split()


__all__ += ["names"]
