"""Junos operational mode: unique prefixes (``sh int terse``), ``| match`` and the other
display filters; ``| save``, ``| append``, ``| tee`` and ``| request`` are changes;
``run <command>`` (configuration mode) runs an operational command."""

from __future__ import annotations

from adapters.gns3.model._grammar._cli import CliGrammar
from adapters.gns3.model._grammar._words import level, names, rules
from adapters.gns3.model._platforms import DeviceKind

__all__ = ["JUNOS"]

_FILE = level("archive", "checksum", "compare", "copy", "delete", "link", "list", "rename", "show")
JUNOS = CliGrammar(
    DeviceKind.JUNIPER_JUNOS,
    level(
        *names(
            "clear configure exit help load monitor mtrace op ping quit request restart save "
            "set show ssh start telnet test traceroute"
        ),
        ("file", _FILE),
    ),
    rules(
        "show",
        "ping",
        "traceroute",
        "help",
        "file list",
        "file show",
        "file checksum",
        "file compare",
    ),
    pipes=level(
        *names(
            "append compare count display except find hold last match no-more refresh request "
            "resolve save tee trim"
        )
    ),
    read_pipes=frozenset(
        names("compare count display except find hold last match no-more refresh resolve trim")
    ),
    enter_words=frozenset({"run"}),
)
