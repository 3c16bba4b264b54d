"""Command lines built from the constructs that broke read-only verdicts (issue 35): shell
metacharacters and comments at every position, quotes, ``${IFS}``, GNU long-option
prefixes, combined flags, device files, CLI abbreviations, ``do``, ``!``, pipes and pastes
of other commands, around the read-only lines of a Linux host and of FRR's vtysh.

Shared by the unit property (no lab) and the router lab's oracle, which runs every line
judged read-only on a real device and compares its state before and after."""

from __future__ import annotations

from hypothesis import strategies as st

from adapters.gns3 import DeviceKind

__all__ = ["RISKY", "SAFE_LINES", "risky_line"]

SAFE_LINES: dict[DeviceKind, list[str]] = {
    DeviceKind.LINUX: [
        "ip -o addr",
        "ip -4 route show",
        "ip link show eth0",
        "sysctl net.ipv4.ip_forward",
        "ss -tuln",
        "cat /etc/hostname",
        "ping -c 1 -W 1 127.0.0.1",
        "ls -l /etc",
        "date +%s",
        "echo a",
        "grep root /etc/passwd",
        "uname -a",
        "head -n 3 /etc/passwd",
        "ps aux",
    ],
    DeviceKind.FRR: [
        "show ip route",
        "show running-config",
        "show interface brief",
        "show version",
        "sh ip ro",
        "do show ip route",
        "show running-config | include router",
        "ping 127.0.0.1",
        "who",
        "list",
    ],
}
RISKY = [
    "#", ";", "|", "&", "&&", "||", "$(id)", "`id`", "${IFS}", "$IFS", "'", '"', "\\", ">",
    ">>", "<", "*", "?", "~", "!", "(", ")", "{", "}", "\n", "%", "=", "@", "-",
]  # fmt: skip
LONG_PREFIXES = [
    "--sys", "--s", "--lo", "--w", "--ki", "--k", "--di", "--diag=/tmp/o", "--cl", "--c",
    "--fol", "--set", "--file=/dev/zero", "--all", "--val", "--no", "--r", "--flood",
]  # fmt: skip
FLAGS = ["-qp", "-pq", "-w", "-aw", "-K", "-tK", "-D", "-Dx", "-f", "-fc", "-c", "-C", "-s"]
DEVICES = ["/dev/urandom", "/dev/zero", "/proc/kcore", "/proc/kmsg", "/dev/tty", "/sys/x"]
WORDS = [
    "sysctl", "ss", "cat", "dmesg", "tail", "date", "hostname", "ip", "link", "set", "eth0",
    "down", "do", "show", "find", "list", "who", "include", "begin", "wr", "conf", "t",
    "net.ipv4.ip_forward=0", "10.0.0.1", "/etc/hosts", "/tmp/o", "-delete", "reboot", "write",
    "clear", "/etc/frr", "-name", "addr", "add", "10.66.0.1/24", "dev", "flush", "1", "0",
]  # fmt: skip
#: Changes a line may paste in, so that a hidden one would show on the device.
CHANGES = {
    DeviceKind.LINUX: [
        "ip link set eth0 down", "ip addr add 10.66.0.1/24 dev eth0", "sysctl -w "
        "net.ipv4.ip_forward=0", "touch /tmp/o", "rm -f /etc/hostname", "sysctl --sys",
    ],
    DeviceKind.FRR: ["write memory", "conf t", "clear ip ospf process", "find /etc/frr -delete"],
}  # fmt: skip


@st.composite
def risky_line(draw: st.DrawFn, kind: DeviceKind) -> str:
    """A read-only line of ``kind`` with 0 to 4 risky pieces put at any position, alone
    or glued to a word (``a#``)."""
    words = draw(st.sampled_from(SAFE_LINES[kind])).split()
    pieces = st.one_of(
        st.sampled_from(RISKY),
        st.sampled_from(LONG_PREFIXES),
        st.sampled_from(FLAGS),
        st.sampled_from(DEVICES),
        st.sampled_from(WORDS),
        st.sampled_from(CHANGES[kind]),
        st.sampled_from(SAFE_LINES[kind]),  # a paste of another command
    )
    for _ in range(draw(st.sampled_from([0, 0, 1, 1, 1, 2, 3, 4]))):  # most lines near a read
        piece = draw(pieces)
        at = draw(st.integers(0, len(words)))
        if draw(st.booleans()) and words:
            index = min(at, len(words) - 1)
            words[index] = words[index] + piece
        else:
            words.insert(at, piece)
    return " ".join(words)
