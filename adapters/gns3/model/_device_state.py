"""A device's configuration as a restore point keeps it, per platform.

For each kind of device, a :class:`ConfigurationKeeper` says which commands read the
configuration over the console, what of their output is kept (JSON, without what changes
by itself: timestamps, byte counts, NTP's clock period), which commands put a kept
configuration back on a device whose configuration is now different, and what still
differs afterwards.

=================  ====================================  ==========================================
platform           read                                  put back
=================  ====================================  ==========================================
vpcs               ``show ip``                           ``clear ip``, ``ip A/M G``, ``ip dns D``,
                                                         ``ip dhcp``
cisco_ios, arista  ``show running-config`` (enable)      in configuration mode: ``no <line>`` for
frr                ``show running-config`` (vtysh)       each line added since, each line removed
                                                         since, inside its block
huawei_vrp         ``display current-configuration``     the same with ``undo``, in system-view
juniper_junos      ``show configuration | display set``  ``delete``/``set`` lines, then commit
linux              ``ip -4 -o addr show``,               ``ip route del``, ``ip addr del``,
                   ``ip -4 route show``                  ``ip addr add``, ``ip route add``
generic            nothing can be read: no restore point
=================  ====================================  ==========================================
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from adapters.gns3.model._platforms import DeviceKind

__all__ = [
    "BlockKeeper",
    "ConfigLine",
    "ConfigurationKeeper",
    "LinuxKeeper",
    "RestoreCommands",
    "config_tree",
    "keeper_for",
]

JSON = dict[str, Any]


@dataclass(frozen=True, slots=True)
class RestoreCommands:
    """Commands that put a kept configuration back; in configuration mode or not."""

    commands: list[str]
    config_mode: bool


class ConfigurationKeeper(ABC):
    """One platform's way of reading, keeping and putting back a configuration."""

    kind: DeviceKind
    #: Commands whose outputs :meth:`parse` reads, in order.
    read_commands: tuple[str, ...]
    #: Whether the read needs the privileged level (Cisco's and Arista's ``enable``).
    privileged: bool = False
    #: What is kept, in words (for previews and the docs).
    kept: str = ""

    @abstractmethod
    def parse(self, outputs: Sequence[str]) -> JSON:
        """The configuration the outputs of :attr:`read_commands` show (``ValueError``
        when they do not look like this platform's)."""

    @abstractmethod
    def restore(self, saved: JSON, current: JSON) -> RestoreCommands:
        """Commands that turn the ``current`` configuration into the ``saved`` one
        (none when they are the same)."""

    @abstractmethod
    def differences(self, saved: JSON, current: JSON) -> list[str]:
        """How ``current`` differs from ``saved``, one line each (empty: the same)."""


# ============================================================================ VPCS
_VPCS_FIELD = re.compile(r"^(?P<key>[A-Z][A-Z /:]*?)\s*:\s?(?P<value>.*)$")


class VpcsKeeper(ConfigurationKeeper):
    kind = DeviceKind.VPCS
    read_commands = ("show ip",)
    kept = "address and mask, gateway, DNS server, DHCP"

    def parse(self, outputs: Sequence[str]) -> JSON:
        fields: dict[str, str] = {}
        for line in outputs[0].splitlines():
            match = _VPCS_FIELD.match(line.strip())
            if match is not None:
                fields[match.group("key").strip()] = match.group("value").strip()
        if "IP/MASK" not in fields:
            raise ValueError("`show ip` did not show an IP/MASK line")
        return {
            "ip": fields["IP/MASK"],
            "gateway": fields.get("GATEWAY", "0.0.0.0") or "0.0.0.0",
            "dns": fields.get("DNS", "").split(),
            "dhcp": "DHCP SERVER" in fields,
        }

    def restore(self, saved: JSON, current: JSON) -> RestoreCommands:
        if not self.differences(saved, current):
            return RestoreCommands([], False)
        commands = ["clear ip"]
        if saved.get("dhcp"):
            commands.append("ip dhcp")
        elif saved.get("ip") and not str(saved["ip"]).startswith("0.0.0.0"):
            gateway = saved.get("gateway") or "0.0.0.0"
            commands.append(f"ip {saved['ip']}" + ("" if gateway == "0.0.0.0" else f" {gateway}"))
        if saved.get("dns") and not saved.get("dhcp"):
            commands.append(f"ip dns {saved['dns'][0]}")
        return RestoreCommands(commands, False)

    def differences(self, saved: JSON, current: JSON) -> list[str]:
        if bool(saved.get("dhcp")) != bool(current.get("dhcp")):
            return [f"DHCP: {'on' if current.get('dhcp') else 'off'} now"]
        if saved.get("dhcp"):
            return []  # the address and its gateway are the DHCP server's to give
        found = []
        for key, label in (("ip", "address"), ("gateway", "gateway"), ("dns", "DNS")):
            before, now = saved.get(key), current.get(key)
            if before != now:
                found.append(f"{label}: {_shown(now)} (was {_shown(before)})")
        return found


def _shown(value: Any) -> str:
    if isinstance(value, list):
        return " ".join(str(v) for v in value) or "none"
    return str(value) if value not in (None, "") else "none"


# =============================================================== block configurations
@dataclass(slots=True)
class ConfigLine:
    """One line of a block configuration and the lines indented beneath it."""

    text: str
    children: list[ConfigLine] = field(default_factory=list)


def config_tree(lines: Sequence[str]) -> list[ConfigLine]:
    """Lines nested by their indentation (an undo of one's own lines reads them so too)."""
    root: list[ConfigLine] = []
    stack: list[tuple[int, ConfigLine]] = []
    for raw in lines:
        indent = len(raw) - len(raw.lstrip(" "))
        node = ConfigLine(raw.strip())
        while stack and stack[-1][0] >= indent:
            stack.pop()
        (stack[-1][1].children if stack else root).append(node)
        stack.append((indent, node))
    return root


class BlockKeeper(ConfigurationKeeper):
    """A configuration of lines and indented blocks that ``no``/``undo`` takes back:
    Cisco IOS, Arista EOS, FRR and (with sections) Huawei VRP.

    Putting one back: inside each block (entered by its header, left with ``exit``),
    every line present now and not then is negated (``no ip address 10.0.0.9 …``; a
    line that was itself ``no X`` comes back as ``X``), then every line present then and
    not now is entered again; a block added since is negated as a whole. Lines are
    compared as text (after the volatile ones are dropped), in any order within a block.
    """

    negation = "no"
    leave_block = "exit"
    #: Lines whose negation takes no words: ``no description``, not ``no description
    #: text`` (FRR 8.4 refuses the second with "% Unknown command").
    bare_negations: tuple[str, ...] = ("description", "banner motd")
    #: Lines that are not configuration, or that change by themselves.
    volatile: re.Pattern[str] = re.compile(
        r"^(?:!.*|Building configuration.*|Current configuration.*|end|exit|"
        r"exit-address-family|ntp clock-period .*)$"
    )

    def __init__(
        self,
        kind: DeviceKind,
        read: str,
        *,
        privileged: bool = False,
        also_volatile: str | None = None,
    ) -> None:
        self.kind = kind
        self.read_commands = (read,)
        self.privileged = privileged
        self.kept = f"the running configuration (`{read}`)"
        if also_volatile is not None:
            self.volatile = re.compile(f"{self.volatile.pattern}|^(?:{also_volatile})$")

    def significant(self, output: str) -> list[str]:
        return [
            line.rstrip()
            for line in output.splitlines()
            if line.strip() and not self.volatile.match(line.strip())
        ]

    def parse(self, outputs: Sequence[str]) -> JSON:
        lines = self.significant(outputs[0])
        if not lines:
            raise ValueError(f"`{self.read_commands[0]}` showed no configuration")
        return {"lines": lines}

    def negate(self, text: str) -> str:
        prefix = f"{self.negation} "
        if text.startswith(prefix):
            return text[len(prefix) :]
        for words in self.bare_negations:
            if text.startswith(f"{words} "):
                return prefix + words
        return prefix + text

    def restore(self, saved: JSON, current: JSON) -> RestoreCommands:
        commands = self._plan(self._lines(saved), self._lines(current))
        return RestoreCommands(commands, True)

    def differences(self, saved: JSON, current: JSON) -> list[str]:
        return self._compare(self._lines(saved), self._lines(current), "")

    def _lines(self, config: JSON) -> list[ConfigLine]:
        return config_tree([str(line) for line in config.get("lines") or []])

    def _plan(self, saved: list[ConfigLine], current: list[ConfigLine]) -> list[str]:
        then = {line.text: line for line in saved}
        now = {line.text: line for line in current}
        prefix = f"{self.negation} "
        commands: list[str] = []
        for line in current:
            if line.text in then:
                continue
            positive = line.text[len(prefix) :] if line.text.startswith(prefix) else None
            if positive is not None and any(s.text.startswith(positive) for s in saved):
                continue  # the saved line that replaces it is entered below
            commands.append(self.negate(line.text))
        for line in saved:
            present = now.get(line.text)
            if present is None:
                commands += self._whole(line)
            else:
                inner = self._plan(line.children, present.children)
                if inner:
                    commands += [line.text, *inner, self.leave_block]
        return commands

    def _whole(self, line: ConfigLine) -> list[str]:
        if not line.children:
            return [line.text]
        inner = [command for child in line.children for command in self._whole(child)]
        return [line.text, *inner, self.leave_block]

    def _compare(self, saved: list[ConfigLine], current: list[ConfigLine], where: str) -> list[str]:
        found: list[str] = []
        then = Counter(line.text for line in saved)
        now = Counter(line.text for line in current)
        for text in sorted((now - then).elements()):
            found.append(f"{where}{text}: present now, absent then")
        for text in sorted((then - now).elements()):
            found.append(f"{where}{text}: absent now, present then")
        by_text = {line.text: line for line in current}
        for line in saved:
            other = by_text.get(line.text)
            if other is not None and (line.children or other.children):
                found += self._compare(line.children, other.children, f"{where}{line.text} / ")
        return found


class HuaweiKeeper(BlockKeeper):
    """Huawei VRP: sections between ``#`` lines; ``undo`` negates; ``quit`` leaves a
    view. A section of indented lines (`` sysname R1``) holds system-view lines."""

    negation = "undo"
    leave_block = "quit"
    volatile = re.compile(r"^(?:#.*|!.*|return)$")

    def significant(self, output: str) -> list[str]:
        lines: list[str] = []
        section: list[str] = []

        def close() -> None:
            if section and section[0].startswith(" "):  # system-view lines
                lines.extend(line.strip() for line in section)
            else:
                lines.extend(section)
            section.clear()

        for raw in output.splitlines():
            text = raw.rstrip()
            if text.strip().startswith("#"):
                close()
            elif text.strip() and not self.volatile.match(text.strip()):
                section.append(text)
        close()
        # A view's own lines (user-interface con 0…) that are not configuration we
        # could take back are kept: the comparison shows them if they change.
        return lines


# ============================================================================ Junos
class JunosKeeper(ConfigurationKeeper):
    kind = DeviceKind.JUNIPER_JUNOS
    read_commands = ("show configuration | display set",)
    kept = "the committed configuration as set commands"

    def parse(self, outputs: Sequence[str]) -> JSON:
        lines = [
            " ".join(line.split())
            for line in outputs[0].splitlines()
            if line.strip().startswith("set ") and not line.strip().startswith("set version ")
        ]
        if not lines and "set version" not in outputs[0]:
            raise ValueError("`show configuration | display set` showed no set commands")
        return {"set": lines}

    def restore(self, saved: JSON, current: JSON) -> RestoreCommands:
        then, now = list(saved.get("set") or []), list(current.get("set") or [])
        commands = [f"delete {line[4:]}" for line in now if line not in then]
        commands += [line for line in then if line not in now]
        return RestoreCommands(commands, True)

    def differences(self, saved: JSON, current: JSON) -> list[str]:
        then, now = set(saved.get("set") or []), set(current.get("set") or [])
        return [f"{line}: present now, absent then" for line in sorted(now - then)] + [
            f"{line}: absent now, present then" for line in sorted(then - now)
        ]


# ============================================================================ Linux
_ADDRESS = re.compile(r"^\d+:\s+(?P<dev>[^\s:]+)\s+inet\s+(?P<cidr>\S+)")


class LinuxKeeper(ConfigurationKeeper):
    kind = DeviceKind.LINUX
    read_commands = ("ip -4 -o addr show", "ip -4 route show")
    kept = "IPv4 addresses and routes (iproute2)"

    def parse(self, outputs: Sequence[str]) -> JSON:
        addresses = []
        for line in outputs[0].splitlines():
            match = _ADDRESS.match(line.strip())
            if match is not None and match.group("dev") != "lo":
                addresses.append([match.group("dev"), match.group("cidr")])
        routes = []
        for line in outputs[1].splitlines():
            words = [w for w in line.split() if w != "linkdown"]
            if words and "kernel" not in words:
                routes.append(" ".join(words))
        return {"addresses": sorted(addresses), "routes": sorted(routes)}

    def restore(self, saved: JSON, current: JSON) -> RestoreCommands:
        then_addresses = {tuple(a) for a in saved.get("addresses") or []}
        now_addresses = {tuple(a) for a in current.get("addresses") or []}
        then_routes, now_routes = set(saved.get("routes") or []), set(current.get("routes") or [])
        commands = [f"ip route del {route}" for route in sorted(now_routes - then_routes)]
        commands += [f"ip addr del {c} dev {d}" for d, c in sorted(now_addresses - then_addresses)]
        commands += [f"ip addr add {c} dev {d}" for d, c in sorted(then_addresses - now_addresses)]
        commands += [f"ip route add {route}" for route in sorted(then_routes - now_routes)]
        return RestoreCommands(commands, False)

    def differences(self, saved: JSON, current: JSON) -> list[str]:
        found = []
        for key, label in (("addresses", "address"), ("routes", "route")):
            then = {" ".join(x) if isinstance(x, list) else x for x in saved.get(key) or []}
            now = {" ".join(x) if isinstance(x, list) else x for x in current.get(key) or []}
            found += [f"{label} {x}: present now, absent then" for x in sorted(now - then)]
            found += [f"{label} {x}: absent now, present then" for x in sorted(then - now)]
        return found


_KEEPERS: dict[DeviceKind, ConfigurationKeeper] = {
    DeviceKind.VPCS: VpcsKeeper(),
    DeviceKind.CISCO_IOS: BlockKeeper(DeviceKind.CISCO_IOS, "show running-config", privileged=True),
    DeviceKind.ARISTA_EOS: BlockKeeper(
        DeviceKind.ARISTA_EOS, "show running-config", privileged=True
    ),
    # FRR's running configuration opens with its version and defaults: not configuration.
    DeviceKind.FRR: BlockKeeper(
        DeviceKind.FRR, "show running-config", also_volatile=r"frr version .*|frr defaults .*"
    ),
    DeviceKind.HUAWEI_VRP: HuaweiKeeper(DeviceKind.HUAWEI_VRP, "display current-configuration"),
    DeviceKind.JUNIPER_JUNOS: JunosKeeper(),
    DeviceKind.LINUX: LinuxKeeper(),
}


def keeper_for(kind: DeviceKind) -> ConfigurationKeeper | None:
    """The platform's keeper; ``None`` for a device of no known platform (its
    configuration cannot be read, so no restore point can hold it)."""
    return _KEEPERS.get(kind)
