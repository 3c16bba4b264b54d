"""A command's words read as GNU ``getopt_long`` reads them, against a closed list of forms.

A :class:`Form` lists what one command may be given and stay read-only: its short options
(flags, or options taking a value), its long options, every long option the real command
has (``getopt_long`` resolves a long option by unique prefix among *all* of them: ``sysctl
--sys`` is ``--system``), the shape of its operands and how many. :func:`read_form` reads
the words as the command would: ``--`` ends the options, ``--name=value`` or ``--name
value``, an exact long name wins and otherwise a unique prefix does (ambiguous is refused,
as the command refuses it), combined short flags are split (``-qp`` is ``-q -p``), an
option that takes a value takes the rest of its cluster or the next word, and options may
follow operands (GNU permutes). Anything not listed makes the command not read-only and the
reason says which word and why.
"""

from __future__ import annotations

import ipaddress
import posixpath
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

__all__ = [
    "FILE",
    "HOST",
    "IFACE",
    "KEY",
    "NUMBER",
    "PATH",
    "WORD",
    "Check",
    "Form",
    "Opt",
    "Reading",
    "count_at_most",
    "read_form",
]

#: A value's or an operand's check: why it is not acceptable, else ``None``.
Check = Callable[[str], str | None]

_NUMBER = re.compile(r"\d{1,6}(\.\d{1,3})?")
_IFACE = re.compile(r"[A-Za-z0-9_.-]{1,15}")
_HOSTNAME = re.compile(r"[A-Za-z0-9]([A-Za-z0-9.-]{0,252})")
_SCOPE = re.compile(r"[A-Za-z0-9_.-]{1,15}")
_KEY = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_./-]*")

#: Where a file may be read from (absolute, normalised): what a lab host shows a student.
_READABLE = ("/etc/", "/var/log/", "/sys/class/net/", "/proc/net/", "/proc/sys/")
_PROC_FILES = "meminfo cpuinfo version uptime loadavg interrupts mounts modules stat partitions"
_READABLE_PROC = frozenset(f"/proc/{name}" for name in _PROC_FILES.split(" "))


def NUMBER(value: str) -> str | None:
    return None if _NUMBER.fullmatch(value) else f"'{value}' is not a number"


def IFACE(value: str) -> str | None:
    return None if _IFACE.fullmatch(value) else f"'{value}' is not an interface name"


def WORD(value: str) -> str | None:
    return None


def KEY(value: str) -> str | None:
    if "=" in value:
        return f"'{value}' sets a value ('=')"
    return None if _KEY.fullmatch(value) else f"'{value}' is not a key name"


def HOST(value: str) -> str | None:
    """An IPv4/IPv6 address (a scope id of ``[A-Za-z0-9_.-]``) or a host name."""
    address, _, scope = value.partition("%")
    try:
        ipaddress.ip_address(address)
    except ValueError:
        if not scope and _HOSTNAME.fullmatch(value):
            return None
        return f"'{value}' is not an address or a host name"
    if scope and not _SCOPE.fullmatch(scope):
        return f"'{value}' has a scope id that is not an interface name"
    return None


def PATH(value: str) -> str | None:
    return None


def FILE(value: str) -> str | None:
    """A regular file where lab hosts keep what a student reads: never a device, a socket,
    a FIFO or ``/proc/kcore`` (nothing under ``/dev``, nothing of ``/proc`` but its
    listed files), named by its absolute path without ``..``."""
    if not value.startswith("/"):
        return f"'{value}': a file read by a read-only command is named by its absolute path"
    if ".." in value.split("/"):
        return f"'{value}' goes up a directory ('..')"
    path = posixpath.normpath(value)
    if path in _READABLE_PROC or any(path.startswith(top) for top in _READABLE):
        return None
    where = ", ".join([*_READABLE, "and a few files of /proc"])
    return f"'{value}' is not a file a read-only command may read (only under {where})"


@dataclass(frozen=True, slots=True)
class Opt:
    """One listed option: a flag (``value`` ``None``) or an option taking a value checked
    by ``value`` (``optional``: only when attached, ``-Iseconds`` / ``--iso-8601=x``)."""

    value: Check | None = None
    optional: bool = False


def count_at_most(limit: int) -> Check:
    def check(value: str) -> str | None:
        if NUMBER(value) is not None or "." in value:
            return f"'{value}' is not a count"
        return None if 1 <= int(value) <= limit else f"a count of {value} is over {limit}"

    return check


@dataclass(frozen=True, slots=True)
class Reading:
    """The options and operands read from a command's words."""

    options: tuple[tuple[str, str | None], ...]
    operands: tuple[str, ...]

    def has(self, name: str) -> bool:
        return any(option == name for option, _ in self.options)


@dataclass(frozen=True, slots=True)
class Form:
    """What one command may be given and stay read-only (see the module's docstring)."""

    name: str
    short: Mapping[str, Opt] = field(default_factory=dict)
    long: Mapping[str, Opt] = field(default_factory=dict)
    known_long: frozenset[str] = frozenset()  # every long option the command has
    operand: Check | None = None  # ``None``: it takes no operand
    least: int = 0
    most: int | None = None
    required: tuple[str, ...] = ()  # options that must be given (`ping -c`)
    check: Callable[[Reading], str | None] | None = None
    custom: Callable[[Sequence[str]], str | None] | None = None  # its own reading (`ip`)
    summary: str = ""

    def describe(self) -> str:
        if self.summary:
            return self.summary
        shorts = "".join(sorted(self.short))
        longs = " ".join(f"--{name}" for name in sorted(self.long))
        parts = [self.name]
        if shorts:
            parts.append(f"[-{shorts}]")
        if longs:
            parts.append(f"[{longs}]")
        if self.operand is not None:
            what = getattr(self.operand, "__name__", "ARG")
            parts.append(f"{what}…" if self.most != 1 else what)
        return " ".join(parts)


def _resolve_long(name: str, form: Form) -> tuple[str | None, str | None]:
    """``getopt_long``'s reading of ``--name``: an exact name, else a unique prefix."""
    every = form.known_long | frozenset(form.long)
    if name in every:
        return name, None
    found = sorted(option for option in every if option.startswith(name))
    if len(found) == 1:
        return found[0], None
    if found:
        shown = ", ".join(f"--{option}" for option in found[:6])
        return None, f"'--{name}' is ambiguous for {form.name} (it could be {shown})"
    return None, f"'--{name}' is not an option {form.name} is known to read without changing"


def _value(check: Check | None, typed: str, value: str) -> str | None:
    why = check(value) if check is not None else None
    return f"the value of {typed}: {why}" if why else None


def read_form(words: Sequence[str], form: Form) -> tuple[Reading | None, str | None]:
    """``words`` (after the command's name) read against ``form``: the reading, or why
    the command is not read-only in that form."""
    if form.custom is not None:
        why = form.custom(words)
        return (Reading((), tuple(words)), None) if why is None else (None, why)
    options: list[tuple[str, str | None]] = []
    operands: list[str] = []
    index = 0
    while index < len(words):
        word = words[index]
        index += 1
        if word == "--":
            operands += words[index:]
            break
        if word.startswith("--"):
            name, eq, attached = word[2:].partition("=")
            full, why = _resolve_long(name, form)
            if full is None:
                return None, why
            opt = form.long.get(full)
            shown = f"'{word}'" + (f" (--{full})" if full != name else "")
            if opt is None:
                return None, f"{shown} is not an option {form.name} reads without changing"
            value: str | None = None
            if opt.value is None:
                if eq:
                    return None, f"{shown} takes no value"
            elif eq:
                value = attached
            elif not opt.optional:
                if index >= len(words):
                    return None, f"{shown} needs a value"
                value, index = words[index], index + 1
            if value is not None and (why := _value(opt.value, shown, value)):
                return None, why
            options.append(("--" + full, value))
            continue
        if word.startswith("-") and word != "-":
            letters, at = word[1:], 0
            while at < len(letters):
                letter = letters[at]
                short = form.short.get(letter)
                if short is None:
                    inside = f" (in '{word}')" if len(letters) > 1 else ""
                    return None, (
                        f"'-{letter}'{inside} is not an option {form.name} reads without changing"
                    )
                at += 1
                if short.value is None:
                    options.append(("-" + letter, None))
                    continue
                rest = letters[at:]
                if rest:
                    value = rest
                elif short.optional:
                    value = None
                elif index < len(words):
                    value, index = words[index], index + 1
                else:
                    return None, f"'-{letter}' needs a value"
                if value is not None and (why := _value(short.value, f"'-{letter}'", value)):
                    return None, why
                options.append(("-" + letter, value))
                break
            continue
        operands.append(word)
    return _operands(Reading(tuple(options), tuple(operands)), form)


def _operands(reading: Reading, form: Form) -> tuple[Reading | None, str | None]:
    operands = reading.operands
    if operands and form.operand is None:
        return None, f"{form.name} takes no argument here ('{operands[0]}')"
    if len(operands) < form.least:
        return None, f"{form.name} needs {form.least} argument(s) here"
    if form.most is not None and len(operands) > form.most:
        return None, f"{form.name} takes at most {form.most} argument(s) here"
    for operand in operands:
        if operand == "-":
            return None, f"{form.name} would read its input ('-')"
        why = form.operand(operand) if form.operand is not None else None
        if why:
            return None, why
    for name in form.required:
        if not reading.has(name):
            return None, f"{form.name} is read-only here only with {name}"
    if form.check is not None and (why := form.check(reading)):
        return None, why
    return reading, None
