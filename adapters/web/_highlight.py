"""Syntax highlighting on the server (Pygments), for code blocks and device output.

Highlighted text is a run of ``<span class="tok-…">`` elements (Pygments' short token
classes with a ``tok-`` prefix); the page's stylesheet colours them, light and dark.
Network devices' configurations and CLI output have no lexer in Pygments:
:class:`NetworkDeviceLexer` reads them (comments, prompts, keywords, interface names,
addresses, link states) for Cisco-like, Junos, EOS, VRP and FRR text alike.
"""

from __future__ import annotations

from typing import Any, ClassVar, Final

from pygments import highlight as pygments_highlight
from pygments.formatters import HtmlFormatter
from pygments.lexer import Lexer, RegexLexer, bygroups
from pygments.lexers import get_lexer_by_name
from pygments.token import (
    STANDARD_TYPES,
    Comment,
    Generic,
    Keyword,
    Name,
    Number,
    Punctuation,
    String,
    Text,
    Whitespace,
)
from pygments.util import ClassNotFound

__all__ = ["TOKEN_CLASSES", "NetworkDeviceLexer", "highlight_code"]

_PREFIX = "tok-"

#: Every class a highlighted span may carry (the sanitiser keeps only these).
TOKEN_CLASSES: Final = frozenset(f"{_PREFIX}{short}" for short in STANDARD_TYPES.values() if short)

#: Names a code block may give for device text.
_DEVICE_ALIASES: Final = frozenset(
    {"cisco", "ios", "iosxe", "nxos", "eos", "junos", "vrp", "frr", "network", "device", "cli"}
)
#: Code blocks longer than this are shown without colours (highlighting is linear, but
#: a page does not need colours on a megabyte of text).
MAX_HIGHLIGHT_CHARS: Final = 100_000

_IFACE = (
    r"(?:GigabitEthernet|TenGigabitEthernet|FastEthernet|Ethernet|Loopback|Vlan|Serial|Tunnel|"
    r"Port-channel|Management|mgmt|Gi|Te|Fa|Eth|Et|Lo|Se|Tu|Po|ge-|xe-|et-|fxp|em|eth|ens)"
    r"[0-9][0-9/.:]*"
)
_KEYWORDS = (
    "interface", "router", "hostname", "ip", "ipv6", "no", "shutdown", "description",
    "network", "neighbor", "vlan", "switchport", "line", "access-list", "service", "enable",
    "end", "exit", "set", "delete", "commit", "configure", "area", "redistribute",
    "passive-interface", "default-information", "route-map", "prefix-list", "bgp", "ospf",
    "eigrp", "rip", "spanning-tree", "channel-group", "encapsulation", "username", "logging",
    "ntp", "snmp-server", "banner", "version", "system-view", "undo", "sysname", "protocols",
    "interfaces", "unit", "family", "address",
)  # fmt: skip


class NetworkDeviceLexer(RegexLexer):
    """Configurations and CLI output of network devices (see the module docstring)."""

    name = "Network device"
    aliases: ClassVar[list[str]] = sorted(_DEVICE_ALIASES)
    filenames: ClassVar[list[str]] = []

    tokens: ClassVar[dict[str, list[Any]]] = {
        "root": [
            (r"^\s*!.*$", Comment.Single),
            (r"^\s*#(?![\w-]*#).*$", Comment.Single),
            (
                r"^([\w.@~:/-]+(?:\([\w./-]+\))?)([#>$%]|\]\s?)( ?)",
                bygroups(Generic.Prompt, Generic.Prompt, Whitespace),  # type: ignore[no-untyped-call]
            ),
            (r"^(\s*)(" + "|".join(_KEYWORDS) + r")\b", bygroups(Whitespace, Keyword)),  # type: ignore[no-untyped-call]
            (_IFACE, Name.Builtin),
            (r"\b(?:administratively down|down|notconnect|err-disabled|DOWN)\b", Generic.Error),
            (r"\b(?:up|connected|established|Established|FULL|Full|UP)\b", Generic.Inserted),
            (r"\b\d{1,3}(?:\.\d{1,3}){3}(?:/\d{1,2})?\b", Number),
            (r"\b[0-9a-fA-F]{4}\.[0-9a-fA-F]{4}\.[0-9a-fA-F]{4}\b", Number.Hex),
            (r"\b(?:[0-9a-fA-F]{2}[:-]){5}[0-9a-fA-F]{2}\b", Number.Hex),
            (r'"[^"\n]*"', String.Double),
            (r"\b\d+\b", Number.Integer),
            (r"[{}\[\];]", Punctuation),
            (r"[^\S\n]+", Whitespace),
            (r"\n", Whitespace),
            (r"[\w.-]+", Text),
            (r".", Text),
        ]
    }


_FORMATTER: Final = HtmlFormatter(nowrap=True, classprefix=_PREFIX)


def _lexer(language: str) -> Lexer | None:
    name = language.strip().lower()
    if not name:
        return None
    if name in _DEVICE_ALIASES:
        return NetworkDeviceLexer()
    try:
        return get_lexer_by_name(name)
    except ClassNotFound:
        return None


def highlight_code(code: str, language: str) -> str | None:
    """``code`` as escaped HTML spans for ``language``, or ``None`` when the language is
    unknown (or the text too long): the caller then escapes it plainly."""
    lexer = _lexer(language)
    if lexer is None or len(code) > MAX_HIGHLIGHT_CHARS:
        return None
    return str(pygments_highlight(code, lexer, _FORMATTER))
