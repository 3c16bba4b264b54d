"""Every line an undo sends, judged just before it goes: the platform's grammar must read
it as exactly the one command the undo built, and words read from a device must be plain.

An undo builds its lines from text a device showed (a router's running configuration, a
host's addresses and routes), and a device's text is not to be trusted: an interface named
``a;touch${IFS}Z`` typed unquoted into bash runs ``touch`` as root. So:

* a shell line's every word must be in a small alphabet (letters, digits and
  ``. _ - @ : /``): no quote, ``$``, ``;``, ``|``, ``&``, ``#``, backtick, redirection,
  glob or brace can reach the shell, so nothing needs quoting (:func:`plain_word`);
* the line, judged by the platform's grammar (:func:`adapters.gns3.model._grammar.judge`), must
  make the device run one command whose words are the line's words (no ``do``, no ``|``
  filter, no shell separator or expansion read into it);
* a line with a control character is never sent.

A line refused here is not sent: the undo names it (:func:`refusal`).
"""

from __future__ import annotations

import ipaddress
import re

from adapters.gns3.model import LABELS, DeviceKind, control_character_error, judge

__all__ = ["interface_name", "ip_value", "plain_word", "refusal"]

#: What a word typed into a shell may hold (and an interface name: no ``/`` there).
_SHELL_WORD = re.compile(r"[A-Za-z0-9._@:/-]+")
_INTERFACE = re.compile(r"[A-Za-z0-9._@:-]{1,15}")
#: Words that leave configuration mode or run an exec command from it.
_NOT_CONFIGURATION = frozenset({"do", "end", "run"})


def plain_word(word: str) -> bool:
    """Whether ``word`` may be typed into a shell as it is (nothing in it is special)."""
    return bool(_SHELL_WORD.fullmatch(word))


def interface_name(word: str) -> bool:
    """Whether ``word`` is an interface name an undo may type (Linux: at most 15
    characters; here letters, digits and ``. _ - @ :`` only)."""
    return bool(_INTERFACE.fullmatch(word)) and word not in (".", "..")


def ip_value(word: str, *, network: bool = False) -> bool:
    """Whether ``word`` is a plain IPv4/IPv6 address (``network``: or a prefix, an
    address with its length), without a scope id."""
    if "%" in word or not plain_word(word):
        return False
    try:
        if network or "/" in word:
            ipaddress.ip_interface(word)
        else:
            ipaddress.ip_address(word)
    except ValueError:
        return False
    return True


def refusal(line: str, kind: DeviceKind, *, config: bool) -> str | None:
    """Why ``line`` must not be sent to a ``kind`` device by an undo, else ``None``."""
    control = control_character_error(line)
    if control is not None:
        return control
    words = line.split()
    if not words:
        return "an empty line"
    if kind is DeviceKind.LINUX:
        odd = [word for word in words if not plain_word(word)]
        if odd:
            return f"`{line}`: {', '.join(map(repr, odd))} holds a character a shell reads"
    if config and words[0].lower() in _NOT_CONFIGURATION:
        return f"`{line}` is not a configuration line"
    verdict = judge(line, kind, config=config)
    read = [list(run.words) for run in verdict.runs]
    if len(read) != 1 or [w.lower() for w in read[0]] != [w.lower() for w in words]:
        shown = "; ".join(" ".join(run) for run in read) or "nothing"
        return f"{LABELS[kind]} reads `{line}` as `{shown}`, not as that one command"
    return None
