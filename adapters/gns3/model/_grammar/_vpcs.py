"""VPCS 0.8.3: every command is any prefix of one word of its table, if only one starts
with it (``i`` = ``ip``, ``se`` = ``set``, ``sav`` = ``save``, ``t`` = ``tracer``); a
leading ``@`` (silent) is stripped; ``write`` runs ``save``, ``arp`` is ``show arp``,
``dhcp`` is ``ip dhcp``, ``zzz`` is ``sleep``; a line starting with ``!`` runs a command
on the host; ``#`` and ``;`` start a comment."""

from __future__ import annotations

from adapters.gns3.model._grammar._cli import CliGrammar
from adapters.gns3.model._grammar._words import Match, level, rules
from adapters.gns3.model._platforms import DeviceKind

__all__ = ["VPCS"]

# The command table of VPCS 0.8.3, in its order.
_TOP = level(
    "?",
    "arp",
    "clear",
    "dhcp",
    "disconnect",
    "echo",
    "help",
    "history",
    "relay",
    "ip",
    "load",
    "neighbor",
    "ping",
    "quit",
    "tracer",
    "rlogin",
    "save",
    "write",
    "set",
    "show",
    "version",
    "sleep",
    "zzz",
    match=Match.EVERY,
)


def _early(text: str) -> str | None:
    if text.startswith("!"):
        return f"'{text}' runs a command on the VPCS host ('!'): it is not known to be read-only"
    if text[:1] in "#;":
        return f"'{text}' is a VPCS comment line, not a read-only command"
    return None


VPCS = CliGrammar(
    DeviceKind.VPCS,
    _TOP,
    rules(
        "show",
        "ping",
        "tracer",
        "echo",
        "help",
        "?",
        "history",
        "version",
        "sleep",
        "neighbor",
    ),
    marks="@",
    rewrite={
        "write": ("save",),
        "arp": ("show", "arp"),
        "dhcp": ("ip", "dhcp"),
        "zzz": ("sleep",),
    },
    early=_early,
)
