"""Device command grammars: whether a command changes a device, read as its CLI reads it.

Every platform of the console layer has a grammar (:data:`GRAMMARS`): VPCS, Cisco
IOS/IOS-XE, Arista EOS, Junos, FRR's vtysh, the Linux shell, Huawei VRP, and the generic
one for a device of unknown platform. :func:`judge` expands a command the way that CLI
does (unique prefixes, aliases, ``@``, ``do``, ``|`` filters) and gives a
:class:`Verdict`: read-only only when the line is written in the platform's closed
alphabet (:mod:`._alphabet`) and is one of its listed read-only forms (on the shell: one
listed command with listed options read as ``getopt_long`` reads them and listed operand
shapes, :mod:`._linux`); anything else changes the device (default deny), and the
reason says why in plain words. :func:`read_only_list` gives each platform's forms.

The generic grammar is the strictest: a command is read-only there when at least one
platform reads it as read-only and no platform that knows its first word reads it as a
change (a line with ``;``, ``>`` or ``$(…)`` is a change everywhere).

:func:`forbidden_match` matches the operators' forbidden list on the expanded command,
in every spelling the device accepts; :func:`control_character_error` refuses a command
holding a control character (one command is one line).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Sequence

from adapters.gns3.model._grammar._cisco import ARISTA_EOS, CISCO_IOS, FRR
from adapters.gns3.model._grammar._cli import CliGrammar
from adapters.gns3.model._grammar._junos import JUNOS
from adapters.gns3.model._grammar._shell import LINUX, ShellGrammar, runs_entry
from adapters.gns3.model._grammar._verdict import LABELS, Verdict
from adapters.gns3.model._grammar._vpcs import VPCS
from adapters.gns3.model._grammar._vrp import HUAWEI_VRP
from adapters.gns3.model._grammar._words import Expansion, ReadRule
from adapters.gns3.model._platforms import DeviceKind

__all__ = [
    "GRAMMARS",
    "LABELS",
    "Verdict",
    "control_character_error",
    "forbidden_match",
    "judge",
    "judge_strictest",
    "read_only_list",
]

Grammar = CliGrammar | ShellGrammar

GRAMMARS: dict[DeviceKind, Grammar] = {
    DeviceKind.VPCS: VPCS,
    DeviceKind.CISCO_IOS: CISCO_IOS,
    DeviceKind.ARISTA_EOS: ARISTA_EOS,
    DeviceKind.JUNIPER_JUNOS: JUNOS,
    DeviceKind.FRR: FRR,
    DeviceKind.LINUX: LINUX,
    DeviceKind.HUAWEI_VRP: HUAWEI_VRP,
}
_WRAPPERS = {"sudo", "env", "nohup", "exec", "nice", "command", "busybox", "time"}


def _rule_text(rule: ReadRule) -> str:
    return " ".join(rule.words) + (" (alone)" if rule.alone else "")


def read_only_list(kind: DeviceKind) -> list[str]:
    """The platform's read-only forms (their number is the figure of issue 35)."""
    if kind is DeviceKind.GENERIC:
        return sorted({c for k in GRAMMARS for c in read_only_list(k) if k is not DeviceKind.LINUX})
    grammar = GRAMMARS[kind]
    if isinstance(grammar, ShellGrammar):
        return grammar.read_only_commands()
    return [_rule_text(rule) for rule in grammar.reads]


def control_character_error(command: str) -> str | None:
    """Why ``command`` cannot be sent as one line (a control character), else ``None``."""
    for index, char in enumerate(command):
        if unicodedata.category(char) == "Cc" or char in "\u2028\u2029":
            return (
                f"the command {command!r} holds a control character ({_name(char)} at "
                f"position {index}); one command is one line of printable text, so it was "
                "not sent"
            )
    return None


def _name(char: str) -> str:
    names = {
        "\r": "carriage return",
        "\n": "line feed",
        "\t": "tab",
        "\x03": "Ctrl-C",
        "\x1b": "escape",
        "\x00": "NUL",
    }
    return names.get(char, f"U+{ord(char):04X}")


def judge(command: str, kind: DeviceKind, *, config: bool = False) -> Verdict:
    """``command`` judged as ``kind``'s CLI reads it (configuration mode: ``config``)."""
    if kind is DeviceKind.GENERIC:
        return _generic(command, config=config)
    return GRAMMARS[kind].judge(command, config=config)


def judge_strictest(command: str, kinds: Iterable[DeviceKind], *, config: bool = False) -> Verdict:
    """The verdict of the first of ``kinds`` that reads ``command`` as a change, else the
    first one's (a command is read-only only when every one of them reads it so)."""
    verdicts = [judge(command, kind, config=config) for kind in kinds]
    return next((v for v in verdicts if v.changes), verdicts[0])


def _generic(command: str, *, config: bool) -> Verdict:
    verdicts = [grammar.judge(command, config=config) for grammar in GRAMMARS.values()]
    runs = tuple(run for verdict in verdicts for run in verdict.runs)
    text = " ".join(command.split())
    if config:
        reason = f"'{text}' is a configuration line: it changes the device's configuration"
        return Verdict(command, DeviceKind.GENERIC, text, True, reason, runs)
    changing = [v for v in verdicts if v.changes and v.known]
    reading = [v for v in verdicts if not v.changes and v.known]
    if reading and not changing:
        return Verdict(command, DeviceKind.GENERIC, reading[0].expanded, False, None, runs)
    if changing:
        first = changing[0]
        reason = (
            f"the platform of this device is unknown, and {LABELS[first.platform]} reads it "
            f"as a change ({first.reason})"
        )
    else:
        reason = f"'{text}' is not a command known to be read-only on any platform"
    return Verdict(command, DeviceKind.GENERIC, text, True, reason, runs, bool(reading))


# ------------------------------------------------------------------ forbidden
def _entry_words(entry: str, grammar: Grammar) -> tuple[Expansion, ...]:
    """A forbidden entry read as the platform reads it (an operator may abbreviate too)."""
    words = tuple(entry.lower().split())
    if isinstance(grammar, CliGrammar):
        verdict = grammar.judge(entry)
        return (*verdict.runs, Expansion(words, 0))
    return (Expansion(words, 0),)


def _matches(run: Expansion, entry: Expansion, *, abbreviates: bool) -> bool:
    typed, wanted = run.words, entry.words
    if len(typed) < len(wanted) or not wanted:
        return False
    for index, word in enumerate(wanted):
        have = typed[index].lower()
        resolved = index < run.resolved
        if have == word:
            continue
        if resolved or not abbreviates or not word.startswith(have):
            return False
    return True


def _unwrapped(run: Expansion) -> Sequence[Expansion]:
    words = list(run.words)
    found = [run]
    while words and words[0] in _WRAPPERS | {"timeout"}:
        words = words[2:] if words[0] == "timeout" else words[1:]
        while words and (words[0].startswith("-") or "=" in words[0]):
            words = words[1:]
        if words:
            found.append(Expansion(tuple(words), 0))
    return found


def forbidden_match(
    command: str, kind: DeviceKind, entries: Sequence[str], *, config: bool = False
) -> str | None:
    """The forbidden entry ``command`` runs on ``kind`` (in any spelling), else ``None``.

    The entry is read as the platform reads it too. A word the platform expanded must
    equal the entry's word; a word it could not expand (an argument, an ambiguous or
    unknown word) matches when the CLI could take it as an abbreviation of the entry's
    word (never on the shell, which takes no abbreviations). On the shell an entry's
    options match in any order and spelling and its command matches its family
    (:func:`~adapters.gns3.model._grammar._shell.runs_entry`: ``ping -fc 1000`` and
    ``ping6 -c 9 -f`` are ``ping -f``, ``traceroute6`` is ``traceroute``). The generic
    platform matches every platform's reading."""
    kinds = list(GRAMMARS) if kind is DeviceKind.GENERIC else [kind]
    for each in kinds:
        grammar = GRAMMARS[each]
        verdict = grammar.judge(command, config=config)
        runs = [run for start in verdict.runs for run in _unwrapped(start)]
        for entry in entries:
            if isinstance(grammar, ShellGrammar):
                words = entry.split()
                if any(runs_entry(run.words, words) for run in runs):
                    return entry
                continue
            wanted = _entry_words(entry, grammar)
            for run in runs:
                if any(_matches(run, w, abbreviates=grammar.abbreviates) for w in wanted):
                    return entry
    return None
