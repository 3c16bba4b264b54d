"""The closed alphabet of read-only commands: what a read-only line may be written with.

A read-only verdict is only given to a line written with ASCII letters, digits, spaces and
the few punctuation marks its platform's read-only forms need (:data:`EXTRA`). Quotes,
``#``, ``;``, ``&``, ``$``, backticks, ``<``, ``>``, parentheses, braces, brackets, ``*``,
``?``, ``~``, ``!`` and backslashes are never in it: each of them is how a shell or a CLI
is told to do something else than run the words as they stand (a comment, a second
command, an expansion, a redirection, a glob, a history event). A line holding one is
refused in teaching mode and a change under approval; its reason names the character.
``|`` is in the alphabet of the network CLIs that have output filters, where the grammar
then accepts it only before a listed filter word; never on a shell.
"""

from __future__ import annotations

from adapters.gns3.model._platforms import DeviceKind

__all__ = ["EXTRA", "outside_alphabet"]

#: The punctuation each platform's read-only forms need, beyond letters, digits and spaces.
EXTRA: dict[DeviceKind, str] = {
    # `-o pid,comm`, `--color=never`, `date +%s`, `ping6 fe80::1%eth0`, `dig @10.0.0.1`
    DeviceKind.LINUX: "._-/:,=+%@",
    DeviceKind.FRR: "._-/:|",
    DeviceKind.CISCO_IOS: "._-/:,|",
    DeviceKind.ARISTA_EOS: "._-/:,|",
    DeviceKind.JUNIPER_JUNOS: "._-/:|",
    DeviceKind.HUAWEI_VRP: "._-/:|",
    DeviceKind.VPCS: "._-/:@",  # VPCS's silent `@show ip`
    DeviceKind.GENERIC: "._-/:",
}


def _plain(char: str) -> bool:
    return char == " " or (char.isascii() and char.isalnum())


def outside_alphabet(text: str, kind: DeviceKind, label: str) -> str | None:
    """Why ``text`` cannot be read-only on ``kind`` for its characters, else ``None``."""
    extra = EXTRA[kind]
    for char in text:
        if _plain(char) or char in extra:
            continue
        shown = repr(char) if char.isprintable() else f"U+{ord(char):04X}"
        return (
            f"{shown} is outside the characters a read-only command may use on {label} "
            f"(letters, digits, spaces and {' '.join(extra)})"
        )
    return None
