"""Device platforms: how each kind of console behaves, and how a node's kind is found.

A :class:`Platform` says what the device's prompts look like, which of its output lines
mean it rejected a command, which keys interrupt a running command (tried in order), how
to reach configuration mode from a prompt and how to leave it, which ntc-templates
platform parses its show commands, and how long a ``ping``/``traceroute`` with a count
may take. :func:`device_kind_of` finds a node's kind from a ``device_type:<x>`` tag, its
node type, or its template's (or its own) name.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

__all__ = [
    "CTRL_C",
    "CTRL_CARET",
    "PAGER",
    "PAGER_END",
    "DeviceKind",
    "ModeStep",
    "Platform",
    "device_kind_of",
    "kind_from_name",
    "pager_prompt",
    "platform_for",
]

CTRL_C = "\x03"
CTRL_CARET = "\x1e"  # Ctrl-^ (Ctrl-Shift-6): Cisco's escape sequence, ends ping/traceroute

#: A pager waiting for a key at the end of a page: ``--More--``, ``---(more 45%)---``,
#: ``  ---- More ----``.
PAGER = re.compile(r" ?-+ ?\(?[Mm]ore\b[^\r\n]*\Z")
#: The pager at the end of the output, which only ``q`` leaves: ``(END)``, as less shows it
#: and as util-linux's more behind FRR's vtysh (``terminal paginate``) overwrites its last
#: ``--More--`` with (``\r``, erase line, ``(END)``). A space there prints another screen of
#: empty lines and ``(END)`` again at once, so the first ``(END)`` may come with text after
#: it: more's form is found anywhere, a bare ``(END)`` only at the end.
PAGER_END = re.compile(r"\(END\)[^\r\n]*\Z|\x1b\[K\(END\)[^\r\n]*")


def pager_prompt(text: str) -> tuple[int, int, str] | None:
    """A pager's prompt in console ``text``: the span to cut out of the output, and the key
    that answers it (``q`` at the end of the output, a space at the end of a page), or
    ``None``. The end's span is its whole line; a page's runs to the end of ``text``."""
    end = PAGER_END.search(text, max(0, len(text) - 8192))
    if end is not None:
        return text.rfind("\n", 0, end.start()) + 1, end.end(), "q"
    page = PAGER.search(text, max(0, len(text) - 200))
    return (page.start(), len(text), " ") if page is not None else None


class DeviceKind(StrEnum):
    """How a console behaves: its prompts, modes, paging, interrupt keys."""

    VPCS = "vpcs"
    CISCO_IOS = "cisco_ios"
    ARISTA_EOS = "arista_eos"
    JUNIPER_JUNOS = "juniper_junos"
    FRR = "frr"
    LINUX = "linux"
    HUAWEI_VRP = "huawei_vrp"
    GENERIC = "generic"


_ALIASES: dict[str, DeviceKind] = {
    **dict.fromkeys(("vpcs", "vpc"), DeviceKind.VPCS),
    **dict.fromkeys(
        (
            "cisco",
            "cisco_ios",
            "ios",
            "iosv",
            "iosvl2",
            "cisco_iosxe",
            "cisco_xe",
            "iosxe",
            "ios-xe",
            "ios_xe",
            "csr",
            "csr1000v",
            "cat8000v",
            "iou",
            "iol",
        ),
        DeviceKind.CISCO_IOS,
    ),
    **dict.fromkeys(("arista", "arista_eos", "eos", "veos", "ceos"), DeviceKind.ARISTA_EOS),
    **dict.fromkeys(
        ("juniper", "junos", "juniper_junos", "vmx", "vsrx", "vqfx", "vjunos"),
        DeviceKind.JUNIPER_JUNOS,
    ),
    **dict.fromkeys(("frr", "frrouting", "vtysh", "quagga"), DeviceKind.FRR),
    **dict.fromkeys(
        ("linux", "alpine", "ubuntu", "debian", "centos", "bash", "shell"), DeviceKind.LINUX
    ),
    **dict.fromkeys(("huawei", "huawei_vrp", "vrp", "vrpv8"), DeviceKind.HUAWEI_VRP),
    "generic": DeviceKind.GENERIC,
}

# Hints in a template or node name, most specific first (whole words or name parts).
_HINTS: tuple[tuple[DeviceKind, tuple[str, ...]], ...] = (
    (DeviceKind.JUNIPER_JUNOS, ("juniper", "junos", "vmx", "vsrx", "vqfx", "vjunos", "vsrx3")),
    (DeviceKind.ARISTA_EOS, ("arista", "veos", "ceos")),
    (
        DeviceKind.HUAWEI_VRP,
        ("huawei", "vrp", "ne40e", "ne5000e", "ce12800", "ce6800", "usg6000v", "ar1000v"),
    ),
    (DeviceKind.FRR, ("frr", "frrouting", "quagga")),
    (
        DeviceKind.CISCO_IOS,
        (
            "cisco",
            "iosv",
            "iosvl2",
            "ios",
            "iosxe",
            "iou",
            "iol",
            "c7200",
            "c3725",
            "c3745",
            "c2691",
            "c3600",
            "c1700",
            "c2600",
            "csr1000v",
            "csr",
            "cat8000v",
            "c8000v",
            "vios",
            "viosl2",
        ),
    ),
    (
        DeviceKind.LINUX,
        ("linux", "ubuntu", "alpine", "debian", "centos", "toolbox", "multitool", "webterm"),
    ),
)
_WORDS = re.compile(r"[a-z0-9]+")


def kind_from_name(name: str) -> DeviceKind | None:
    """The kind a device type name (``ios-xe``, ``junos``, ``frr``…) stands for, if known."""
    return _ALIASES.get(name.strip().lower().replace(" ", "_"))


def device_kind_of(node: Mapping[str, Any], template_name: str | None = None) -> DeviceKind:
    """A node's device kind: a ``device_type:<x>`` tag, else its node type, else hints in its
    template's name, its Docker image (``frr-lab:8.4``, ``frrouting/frr``) or its own name,
    else :attr:`DeviceKind.LINUX` for a Docker node and :attr:`DeviceKind.GENERIC`."""
    for tag in node.get("tags") or []:
        if isinstance(tag, str) and tag.lower().startswith("device_type:"):
            kind = kind_from_name(tag.split(":", 1)[1])
            if kind is not None:
                return kind
    node_type = str(node.get("node_type") or "").lower()
    if node_type == "vpcs":
        return DeviceKind.VPCS
    if node_type in {"dynamips", "iou"}:
        return DeviceKind.CISCO_IOS
    properties = node.get("properties")
    image = properties.get("image") if isinstance(properties, Mapping) else None  # Docker
    named = f"{template_name or ''} {image or ''} {node.get('name') or ''}"
    words = set(_WORDS.findall(named.lower()))
    for kind, hints in _HINTS:
        if words & set(hints):
            return kind
    if node_type == "docker":
        return DeviceKind.LINUX
    return DeviceKind.GENERIC


@dataclass(frozen=True, slots=True)
class ModeStep:
    """A command sent to change mode, and what its result must show to count as done."""

    command: str
    expect: re.Pattern[str] | None = None
    refuse: re.Pattern[str] | None = None  # e.g. a password prompt


_CISCO_PROMPT = r"[A-Za-z0-9][\w.\-/:]*(?:\([\w.\-/: ]+\))?[>#] ?"
_SHELL_PROMPT = r"[^\r\n]{0,128}[$#%] ?"
_PASSWORD = re.compile(r"(?i)password")
_CONFIG = re.compile(r"\(config")


@dataclass(frozen=True, slots=True)
class Platform:
    """How one kind of device's console behaves."""

    kind: DeviceKind
    prompt: re.Pattern[str]
    errors: re.Pattern[str]
    interrupts: tuple[str, ...] = (CTRL_C,)
    ntc_platform: str | None = None
    probe_seconds: float = 1.0  # one ping probe, when nothing answers

    def prompt_at_end(self, text: str) -> str | None:
        """The prompt that ends ``text`` (the device waits for input), else ``None``."""
        match = self.prompt.search(text[-400:])
        return match.group("prompt") if match is not None else None

    # ------------------------------------------------------------------ modes
    def in_config(self, prompt: str) -> bool:
        prompt = prompt.strip()
        if self.kind in (DeviceKind.CISCO_IOS, DeviceKind.ARISTA_EOS, DeviceKind.FRR):
            return "(config" in prompt
        if self.kind is DeviceKind.HUAWEI_VRP:
            return prompt.startswith("[")
        if self.kind is DeviceKind.JUNIPER_JUNOS:
            return _JUNOS_CLI.fullmatch(prompt) is not None and prompt.endswith("#")
        return False

    def at_shell(self, prompt: str) -> bool:
        """FRR and Junos: the console shows the host's shell, not the device's CLI."""
        prompt = prompt.strip()
        if self.kind is DeviceKind.FRR:
            return _VTYSH.fullmatch(prompt) is None
        if self.kind is DeviceKind.JUNIPER_JUNOS:
            return _JUNOS_CLI.fullmatch(prompt) is None
        return False

    def enter(self, prompt: str, *, config: bool, privileged: bool = False) -> list[ModeStep]:
        """Commands that bring a console showing ``prompt`` to where commands run: the
        device's CLI, then configuration mode (``config``) or, on Cisco and Arista, the
        privileged level (``privileged``: what ``show running-config`` needs)."""
        steps: list[ModeStep] = []
        kind = self.kind
        if kind is DeviceKind.FRR and self.at_shell(prompt):
            steps.append(ModeStep("vtysh", _VTYSH_END))
        if kind is DeviceKind.JUNIPER_JUNOS and self.at_shell(prompt):
            steps.append(ModeStep("cli", _JUNOS_CLI_END))
        if not config and privileged and kind in (DeviceKind.CISCO_IOS, DeviceKind.ARISTA_EOS):
            if prompt.rstrip().endswith(">"):
                steps.append(ModeStep("enable", re.compile(r"#\s*\Z"), _PASSWORD))
            return steps
        if not config or self.in_config(prompt):
            return steps
        if kind in (DeviceKind.CISCO_IOS, DeviceKind.ARISTA_EOS):
            if prompt.rstrip().endswith(">"):
                steps.append(ModeStep("enable", re.compile(r"#\s*\Z"), _PASSWORD))
            steps.append(ModeStep("configure terminal", _CONFIG))
        elif kind is DeviceKind.FRR:
            steps.append(ModeStep("configure terminal", _CONFIG))
        elif kind is DeviceKind.HUAWEI_VRP:
            steps.append(ModeStep("system-view", re.compile(r"\[")))
        elif kind is DeviceKind.JUNIPER_JUNOS:
            steps.append(ModeStep("configure", re.compile(r"#\s*\Z")))
        return steps

    def leave(self, start_prompt: str, *, config: bool, privileged: bool = False) -> list[ModeStep]:
        """Commands that take the console back to where it was (``start_prompt``)."""
        steps: list[ModeStep] = []
        kind = self.kind
        if (
            not config
            and privileged
            and kind in (DeviceKind.CISCO_IOS, DeviceKind.ARISTA_EOS)
            and start_prompt.rstrip().endswith(">")
        ):
            return [ModeStep("disable")]
        if config and not self.in_config(start_prompt):
            if kind in (DeviceKind.CISCO_IOS, DeviceKind.ARISTA_EOS, DeviceKind.FRR):
                steps.append(ModeStep("end"))
                if start_prompt.rstrip().endswith(">") and kind is not DeviceKind.FRR:
                    steps.append(ModeStep("disable"))
            elif kind is DeviceKind.HUAWEI_VRP:
                steps.append(ModeStep("return"))
            elif kind is DeviceKind.JUNIPER_JUNOS:
                steps.append(ModeStep("commit and-quit", re.compile(r"commit complete")))
        if kind in (DeviceKind.FRR, DeviceKind.JUNIPER_JUNOS) and self.at_shell(start_prompt):
            steps.append(ModeStep("exit"))
        return steps

    def abandon_config(self) -> list[ModeStep]:
        """What leaves configuration mode without applying anything (Junos' failed commit)."""
        if self.kind is DeviceKind.JUNIPER_JUNOS:
            return [ModeStep("rollback 0"), ModeStep("exit configuration-mode")]
        return []

    # ------------------------------------------------------------------ limits
    def fitting_limit(self, command: str) -> float | None:
        """Seconds a ``ping``/``traceroute`` with a count needs, or ``None`` (not one)."""
        words = command.strip().lower().split()
        if not words:
            return None
        if words[0] == "ping":
            count = _number_after(words, ("-c", "count", "repeat"))
            if count is None:
                return None
            per_probe = max(self.probe_seconds, _number_after(words, ("timeout",)) or 0.0)
            return count * per_probe + 5.0
        if words[0] in ("traceroute", "tracert", "trace", "tracepath"):
            hops = _number_after(words, ("-m", "maxttl", "ttl", "max-ttl", "-h"))
            if hops is None:
                return None
            return hops * 3 * self.probe_seconds + 5.0
        return None


def _number_after(words: list[str], keys: tuple[str, ...]) -> float | None:
    """The number that follows the last of ``keys`` in ``words`` (``ttl 1 10`` → 10)."""
    for index in range(len(words) - 1, -1, -1):
        if words[index] in keys:
            numbers = []
            for word in words[index + 1 : index + 3]:
                try:
                    numbers.append(float(word))
                except ValueError:
                    break
            if numbers:
                return numbers[-1]
    return None


_VTYSH = re.compile(r"[\w.\-]+(?:\([\w.\-]+\))?[#>] ?")
_VTYSH_END = re.compile(r"(?:\A|[\r\n])[\w.\-]+(?:\([\w.\-]+\))?[#>] ?\Z")
_JUNOS_CLI = re.compile(r"[\w.\-]+@[\w.\-]+[>#] ?")
_JUNOS_CLI_END = re.compile(r"(?:\A|[\r\n])[\w.\-]+@[\w.\-]+[>#] ?\Z")

_CISCO_ERRORS = (
    r"^\s*% ?(?:Invalid input|Incomplete command|Ambiguous command|Unknown command|"
    r"Unrecognized command|Bad IP address|Invalid command)"
)
_LINUX_ERRORS = r"command not found$|: not found$|^-?\w*sh: [^\r\n]*: No such file"


def _prompt(body: str) -> re.Pattern[str]:
    return re.compile(rf"(?:\A|[\r\n])(?P<prompt>{body})\Z")


_PLATFORMS: dict[DeviceKind, Platform] = {
    DeviceKind.VPCS: Platform(
        DeviceKind.VPCS,
        _prompt(r"[^\r\n]{0,64}> ?"),
        re.compile(r"^Bad command|^Invalid (?:command|address|option)", re.MULTILINE),
    ),
    DeviceKind.CISCO_IOS: Platform(
        DeviceKind.CISCO_IOS,
        _prompt(_CISCO_PROMPT),
        re.compile(_CISCO_ERRORS, re.MULTILINE),
        interrupts=(CTRL_CARET, CTRL_C),
        ntc_platform="cisco_ios",
        probe_seconds=2.0,
    ),
    DeviceKind.ARISTA_EOS: Platform(
        DeviceKind.ARISTA_EOS,
        _prompt(_CISCO_PROMPT),
        re.compile(_CISCO_ERRORS, re.MULTILINE),
        ntc_platform="arista_eos",
    ),
    DeviceKind.JUNIPER_JUNOS: Platform(
        DeviceKind.JUNIPER_JUNOS,
        _prompt(r"(?:[\w.\-]+@[\w.\-:~/ ]*[>#%]|[%#]) ?"),
        re.compile(r"^\s*(?:syntax error|unknown command|error:|invalid )", re.MULTILINE),
        ntc_platform="juniper_junos",
    ),
    DeviceKind.FRR: Platform(
        DeviceKind.FRR,
        _prompt(r"[^\r\n]{0,128}[#$>] ?"),
        re.compile(
            r"^% ?(?:Unknown command|Command incomplete|Ambiguous command|Invalid)|"
            + _LINUX_ERRORS,
            re.MULTILINE,
        ),
        ntc_platform="frr",  # parsed by adapters.gns3.model._frr_parsing
    ),
    DeviceKind.LINUX: Platform(
        DeviceKind.LINUX,
        _prompt(r"[^\r\n]{0,128}[$#>%] ?"),
        re.compile(_LINUX_ERRORS, re.MULTILINE),
        ntc_platform="linux",
    ),
    DeviceKind.HUAWEI_VRP: Platform(
        DeviceKind.HUAWEI_VRP,
        _prompt(r"(?:<[^<>\r\n]{1,64}>|\[[~*]?[^\[\]\r\n]{1,64}\]) ?"),
        re.compile(r"^\s*(?:Error:|% ?Unrecognized command)", re.MULTILINE),
        ntc_platform="huawei_vrp",
        probe_seconds=2.0,
    ),
    DeviceKind.GENERIC: Platform(
        DeviceKind.GENERIC,
        _prompt(r"[^\r\n]{0,128}[$#>%:\]] ?"),
        re.compile(_CISCO_ERRORS + "|^Error:|" + _LINUX_ERRORS, re.MULTILINE),
        interrupts=(CTRL_C, CTRL_CARET),
        probe_seconds=2.0,
    ),
}


def platform_for(kind: DeviceKind) -> Platform:
    return _PLATFORMS[kind]
