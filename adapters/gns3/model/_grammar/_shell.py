"""A Linux shell line: read-only only as one listed form written in the closed alphabet.

The verdict does not parse shell syntax to find what is safe: a line is read-only only
when every character is in the shell's safe alphabet (:mod:`._alphabet`: no quote, ``#``,
``;``, ``|``, ``&``, ``$``, backtick, redirection, glob, brace, ``!`` or backslash), so
that bash can only read it as one simple command of space-separated words, and when those
words are one of the forms of :mod:`._linux` (a listed command, listed options read as
``getopt_long`` reads them, listed operand shapes). Everything else is a change.

What the line runs (:attr:`Verdict.runs`, matched by the forbidden list) is read as bash
reads it (:func:`split_shell`): quotes and backslashes removed, a ``#`` starting a comment
only at the start of a word, and every ``;``, ``&&``, ``||``, ``|``, ``&``, newline,
parenthesis, redirection, backtick and ``$(`` starting another command.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from adapters.gns3.model._grammar._alphabet import outside_alphabet
from adapters.gns3.model._grammar._linux import FORMS, KNOWN_CHANGES, SHORT_VALUES
from adapters.gns3.model._grammar._options import read_form
from adapters.gns3.model._grammar._verdict import LABELS, Verdict
from adapters.gns3.model._grammar._words import Expansion
from adapters.gns3.model._platforms import DeviceKind

__all__ = ["LINUX", "ShellGrammar", "runs_entry", "split_shell"]

_BREAKS = frozenset(";&|()<>`\n")
_BLANKS = frozenset(" \t")


class _Splitter:
    """bash's reading of a line into the commands it runs (see the module's docstring)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.commands: list[list[str]] = [[]]
        self.word: list[str] = []
        self.in_word = False

    def end_word(self) -> None:
        if self.in_word:
            self.commands[-1].append("".join(self.word))
        self.word, self.in_word = [], False

    def end_command(self) -> None:
        self.end_word()
        if self.commands[-1]:
            self.commands.append([])

    def add(self, chars: str) -> None:
        self.word.append(chars)
        self.in_word = True

    def quoted(self, at: int, quote: str) -> int:
        """The characters up to the closing ``quote`` (backslash escapes in ``"``)."""
        text, out, index = self.text, [], at + 1
        while index < len(text) and text[index] != quote:
            if quote == '"' and text[index] == "\\" and index + 1 < len(text):
                index += 1
            out.append(text[index])
            index += 1
        self.add("".join(out))
        return index + 1

    def dollar(self, at: int) -> int:
        text = self.text
        following = text[at + 1 : at + 2]
        if following == "(":
            self.end_command()
            return at + 2
        if following == "{":
            close = text.find("}", at)
            name = text[at + 2 : close if close >= 0 else len(text)]
            if name == "IFS":
                self.end_word()
            return close + 1 if close >= 0 else len(text)
        if text.startswith("IFS", at + 1):
            self.end_word()
            return at + 4
        self.add("$")
        return at + 1

    def split(self) -> list[list[str]]:
        text, index = self.text, 0
        while index < len(text):
            char = text[index]
            if char == "\\":
                self.add(text[index + 1 : index + 2])
                index += 2
            elif char in "'\"":
                index = self.quoted(index, char)
            elif char == "$":
                index = self.dollar(index)
            elif char in _BLANKS:
                self.end_word()
                index += 1
            elif char == "#" and not self.in_word:
                break  # a comment, to the end of the line
            elif char in _BREAKS:
                self.end_command()
                index += 1
            else:
                self.add(char)
                index += 1
        self.end_command()
        return [words for words in self.commands if words]


def split_shell(text: str) -> list[list[str]]:
    """The commands bash runs for ``text``, each as its words after quote removal."""
    return _Splitter(text).split()


#: Commands of one family: a forbidden ``traceroute`` is ``traceroute6`` too.
_FAMILIES = {"ping6": "ping", "traceroute6": "traceroute", "tracepath6": "tracepath"}


def _family(word: str) -> str:
    name = word.rsplit("/", 1)[-1]  # `/usr/bin/ping` is `ping`
    return _FAMILIES.get(name, name)


def _options(words: Sequence[str]) -> tuple[set[str], set[str]]:
    """The short option letters and long option names a command was given, in any order
    and spelling: clusters split (``-fc 1000`` gives ``f`` and ``c``), a cluster stopping
    at a letter known to take a value (``-c1f`` is a count of ``1f``; a command whose
    options are not known gives every letter of the cluster)."""
    takes = SHORT_VALUES.get(_family(words[0]), "")
    shorts: set[str] = set()
    longs: set[str] = set()
    skip = False
    for word in words[1:]:
        if skip:
            skip = False
        elif word == "--":
            break
        elif word.startswith("--"):
            longs.add(word[2:].split("=", 1)[0])
        elif word.startswith("-") and len(word) > 1:
            letters = word[1:]
            for index, letter in enumerate(letters):
                shorts.add(letter)
                if letter in takes:
                    skip = index == len(letters) - 1
                    break
    return shorts, longs


def runs_entry(words: Sequence[str], entry: Sequence[str]) -> bool:
    """Whether a command bash runs (``words``) is the forbidden ``entry`` (``ping -f``):
    the same command or one of its family, and each of the entry's options given in any
    order and spelling (``ping -fc 1000``, ``ping -c 1000 -f``, a long option by any
    prefix ``getopt_long`` takes), each of its other words among the command's."""
    if not words or not entry or _family(words[0]) != _family(entry[0]):
        return False
    shorts, longs = _options(words)
    for wanted in entry[1:]:
        if wanted.startswith("--"):
            if not any(typed and wanted[2:].startswith(typed) for typed in longs):
                return False
        elif wanted.startswith("-") and len(wanted) > 1:
            if not set(wanted[1:]) <= shorts:
                return False
        elif wanted not in words[1:]:
            return False
    return True


@dataclass(frozen=True, slots=True)
class ShellGrammar:
    kind: DeviceKind = DeviceKind.LINUX
    abbreviates: bool = False

    @property
    def label(self) -> str:
        return LABELS[self.kind]

    def read_only_commands(self) -> list[str]:
        """The read-only forms, one a command (``sysctl [-AXabeNn] [--all …] KEY…``)."""
        return sorted(form.describe() for form in FORMS.values())

    def judge(self, command: str, *, config: bool = False) -> Verdict:
        text = command.strip()
        if not text:
            return Verdict(command, self.kind, "", False, known=False)
        commands = split_shell(text)
        runs = tuple(Expansion(tuple(words), 0) for words in commands)
        known = any(words[0] in FORMS or words[0] in KNOWN_CHANGES for words in commands)

        def change(why: str) -> Verdict:
            return Verdict(command, self.kind, text, True, why, runs, known)

        if config:
            return change(f"'{text}' is run as a change")
        why = outside_alphabet(command, self.kind, self.label)  # as typed: no tab, no newline
        if why is not None:
            return change(why)
        first, *args = text.split()
        form = FORMS.get(first)
        if form is None:
            if "=" in first:
                return change(f"'{first}' sets a shell variable: not a read-only command")
            if first in KNOWN_CHANGES:
                return change(f"'{first}' can change the device (not on {self.label}'s list)")
            return change(f"'{first}' is not on {self.label}'s read-only list")
        _, why = read_form(args, form)
        if why is not None:
            return change(f"'{text}' is not a read-only form of {first} ({why})")
        return Verdict(command, self.kind, text, False, None, runs, known)


LINUX = ShellGrammar()
