"""A Linux shell line: every command of it must be read-only.

The line is split where the shell splits it (``;``, ``&&``, ``||``, ``|``, ``&``, quotes
respected); command substitution (``$(…)``, backticks, ``${…}``), redirections (``>``,
``>>``, ``<``), subshells and variable assignments make it a change. Each command's first
word must be on the read-only list, exactly as written (the shell takes no
abbreviations), and some take only read-only arguments: ``ip`` shows addresses, routes,
links, neighbours and rules (no arguments, ``show``/``list``, ``route get``); ``hostname``,
``date``, ``ifconfig``, ``route``, ``arp``, ``sysctl``, ``dmesg``, ``ethtool`` only in
their reading forms.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from adapters.gns3._grammar._verdict import LABELS, Verdict
from adapters.gns3._grammar._words import Expansion, names
from adapters.gns3._platforms import DeviceKind

__all__ = ["LINUX", "ShellGrammar"]

_ANY = names(
    "cat head tail grep egrep fgrep wc ls pwd whoami id uname uptime free df du ps ping "
    "ping6 traceroute traceroute6 tracepath netstat echo printenv which nslookup dig host "
    "lsmod stat w who true false basename dirname readlink realpath md5sum sha256sum lsblk "
    "lscpu nproc groups tty"
)

# Words the shell knows as commands that can change something (for the generic rule).
_KNOWN_CHANGES = names(
    "sh bash ash dash zsh busybox sudo su env nohup timeout exec eval source xargs nice "
    "rm mv cp ln mkdir rmdir touch chmod chown dd tee truncate kill killall pkill reboot "
    "shutdown halt poweroff init systemctl service ifup ifdown dhclient udhcpc iptables "
    "ip6tables nft tc bridge vi vim nano sed awk python python3 perl curl wget apt apt-get "
    "apk yum dnf mount umount modprobe insmod rmmod crontab passwd useradd userdel vtysh "
    "find sort uniq tcpdump"
)

_IP_OBJECTS = names(
    "address addrlabel maddress route rule neighbor neighbour ntable ntbl link l2tp fou ila "
    "macsec tunnel tunl tuntap tap token tcpmetrics tcp_metrics monitor xfrm mroute mrule "
    "netns netconf vrf sr nexthop mptcp ioam stats help"
)
_IP_READ_OBJECTS = {"address", "maddress", "route", "rule", "neighbor", "neighbour", "link"}
_IP_OPTIONS = {
    *names(
        "-4 -6 -s -stats -statistics -d -details -br -brief -c -color -j -json -p -pretty "
        "-o -oneline -h -human -r -resolve -a -all -t -timestamp"
    )
}


def _ip(args: Sequence[str]) -> bool:
    index = 0
    while index < len(args) and args[index].startswith("-"):
        if args[index] not in _IP_OPTIONS and not args[index].startswith("-color="):
            return False
        index += 1
    if index == len(args):
        return False  # `ip` alone prints its usage; nothing to read
    typed = args[index]
    obj = next((name for name in _IP_OBJECTS if name.startswith(typed)), None)
    if obj not in _IP_READ_OBJECTS:
        return False
    rest = args[index + 1 :]
    if not rest:
        return True
    verb = rest[0]
    if verb in ("show", "list", "lst") or (obj == "route" and verb == "get"):
        return True
    if len(verb) >= 2 and ("show".startswith(verb) or "list".startswith(verb)):
        return True
    return obj == "route" and len(verb) >= 2 and "get".startswith(verb)


def _flags_only(allowed: set[str]) -> Callable[[Sequence[str]], bool]:
    return lambda args: all(arg in allowed for arg in args)


def _date(args: Sequence[str]) -> bool:
    return all(arg.startswith("+") or arg in ("-u", "-R", "--utc", "-I") for arg in args)


def _ifconfig(args: Sequence[str]) -> bool:
    return not args or args == ["-a"] or (len(args) == 1 and not args[0].startswith("-"))


def _sysctl(args: Sequence[str]) -> bool:
    refused = {"-w", "--write", "-p", "--load", "-f", "--system"}
    return bool(args) and not any(arg in refused or "=" in arg for arg in args)


def _ethtool(args: Sequence[str]) -> bool:
    shows = {"-i", "-S", "-k", "-g", "-a", "-c", "-l", "-m", "-P", "-T"}
    return len(args) == 1 or (len(args) == 2 and args[0] in shows)


def _ss(args: Sequence[str]) -> bool:
    return not any(arg in ("-K", "--kill") or (arg[:1] == "-" and "K" in arg) for arg in args)


_CHECKED: dict[str, Callable[[Sequence[str]], bool]] = {
    "ip": _ip,
    "hostname": _flags_only({"-f", "-i", "-I", "-s", "-d", "-A", "-a", "--fqdn"}),
    "date": _date,
    "ifconfig": _ifconfig,
    "route": _flags_only({"-n", "-e", "-ee", "-v", "-4", "-6", "-F", "-C"}),
    "arp": _flags_only({"-n", "-a", "-e", "-v", "-an", "-na"}),
    "sysctl": _sysctl,
    "dmesg": _flags_only({"-T", "-H", "-x", "-k", "-t", "-L", "--ctime", "--human"}),
    "ethtool": _ethtool,
    "ss": _ss,
    "env": lambda args: not args,
}
_SEPARATORS = {";", "&&", "||", "|", "&", ";;", "|&", "\n"}


@dataclass(frozen=True, slots=True)
class ShellGrammar:
    kind: DeviceKind = DeviceKind.LINUX
    abbreviates: bool = False

    @property
    def label(self) -> str:
        return LABELS[self.kind]

    def read_only_commands(self) -> list[str]:
        return sorted({*_ANY, *_CHECKED})

    def judge(self, command: str, *, config: bool = False) -> Verdict:
        text = command.strip()
        if not text:
            return Verdict(command, self.kind, "", False, known=False)
        for mark, what in (
            ("$(", "command substitution"),
            ("`", "command substitution"),
            ("${", "parameter expansion"),
            ("<(", "process substitution"),
            (">(", "process substitution"),
        ):
            if mark in text:
                return self._change(
                    command, text, f"'{text}' uses {what} ('{mark}'): it can run anything"
                )
        try:
            lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
            lexer.whitespace_split = True
            tokens = list(lexer)
        except ValueError as exc:
            return self._change(command, text, f"'{text}' cannot be read as a shell line ({exc})")
        segments: list[list[str]] = [[]]
        for token in tokens:
            if token in _SEPARATORS:
                segments.append([])
            elif token and all(char in "();<>|&" for char in token):
                return self._change(
                    command,
                    text,
                    f"'{text}' uses '{token}' (a redirection or a subshell): a change",
                )
            else:
                segments[-1].append(token)
        runs = tuple(Expansion(tuple(words), 0) for words in segments if words)
        known = any(
            words[0] in _ANY or words[0] in _CHECKED or words[0] in _KNOWN_CHANGES
            for words in segments
            if words
        )
        if config:
            return Verdict(
                command, self.kind, text, True, f"'{text}' is run as a change", runs, known
            )
        for words in segments:
            if not words:
                continue
            first, args = words[0], words[1:]
            if "=" in first:
                return Verdict(
                    command,
                    self.kind,
                    text,
                    True,
                    f"'{first}' sets a shell variable: not known to be read-only",
                    runs,
                    True,
                )
            check = _CHECKED.get(first)
            if first in _ANY or (check is not None and check(args)):
                continue
            shown = " ".join(words)
            if check is not None or first in _KNOWN_CHANGES:
                why = f"'{shown}' can change the device (not a read-only form on {self.label})"
            else:
                why = f"'{first}' is not on {self.label}'s read-only list"
            return Verdict(command, self.kind, text, True, why, runs, known)
        return Verdict(command, self.kind, text, False, None, runs, known)

    def _change(self, command: str, text: str, reason: str) -> Verdict:
        return Verdict(
            command, self.kind, text, True, reason, (Expansion(tuple(text.split()), 0),), True
        )


LINUX = ShellGrammar()
