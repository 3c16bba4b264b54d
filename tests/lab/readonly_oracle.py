"""The real device as the oracle of read-only verdicts (issue 35).

:class:`Oracle` holds one throwaway Linux host (PC1) and one FRR router (R1) of the router
lab, read only with ``docker exec`` (never through the product): addresses, links and
routes, ``sysctl -a`` without its volatile keys (learnt by reading it twice at rest), a
listing of every file under ``/etc``, ``/root`` and ``/tmp`` (path, type, mode, content
digest; shell history files left out: any typed command writes them),
and vtysh's ``show running-config`` on the router. :meth:`Oracle.try_line` asks the
product's verdict (``judge``) and runs a line called read-only as the product would reach
the device: in the host's bash; on the router in vtysh *and* in bash (a console left in
bash by mistake, issue 35 case 5), each bounded by ``timeout``; then reads the state again.
A line judged read-only that changed anything is an escape, kept with the difference.
"""

from __future__ import annotations

import contextlib
import re
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from adapters.gns3 import DeviceKind
from adapters.gns3.model._grammar import judge
from tests.lab.lab_project import LabProject
from tests.lab.router_lab import HOST_TEMPLATE, ROUTER_TEMPLATE, RouterLab

__all__ = ["SYSCTL_D", "Escape", "Oracle", "oracle_project"]

#: What /etc/sysctl.d says on PC1 (`sysctl --system` would apply it); ip_forward is 1.
SYSCTL_D = "net.ipv4.ip_forward = 0\n"

_FILES = (
    "find /etc /root /tmp -xdev \\( -type f -printf '%p f %m ' -exec md5sum {} \\; \\) "
    "-o -printf '%p %y %m %l\\n' 2>/dev/null | sort"
)
#: A shell's or vtysh's own history of what was typed: written by any command, read-only or
#: not (the product's console writes it too), so it is not the device's state.
_HISTORY = re.compile(r"/root/\.(history_frr|bash_history|lesshst|viminfo)\b")
#: Counters of the kernel's own use (a pty opened by any session counts in kernel.pty.nr:
#: the benchmark's first run flagged it 2 -> 3 -> 2 around `vtysh -c`).
_ALWAYS_VOLATILE = (
    "kernel.random.",
    "kernel.pty.nr",
    "fs.dentry-state",
    "fs.inode-",
    "fs.file-nr",
    "kernel.ns_",
)


def _exec(container: str, *argv: str, timeout: float = 30.0) -> str:
    done = subprocess.run(
        ["docker", "exec", "-i", container, *argv],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=timeout,
        check=False,
    )
    return done.stdout.decode(errors="replace")


def _difference(before: str, after: str) -> tuple[str, str]:
    """The lines only before and only after (a file tree's listing is long)."""
    old, new = set(before.splitlines()), set(after.splitlines())
    return "\n".join(sorted(old - new))[:2000], "\n".join(sorted(new - old))[:2000]


@dataclass
class Escape:
    platform: str
    line: str
    how: str
    changed: dict[str, tuple[str, str]]


@dataclass
class Oracle:
    """One host and one router of a lab project, their state read with ``docker exec``."""

    lab: LabProject
    containers: dict[str, str] = field(default_factory=dict)
    volatile: dict[str, set[str]] = field(default_factory=dict)
    figures: dict[str, int] = field(default_factory=dict)
    escapes: list[Escape] = field(default_factory=list)
    seen: set[tuple[str, str]] = field(default_factory=set)

    def __post_init__(self) -> None:
        for node in self.lab.api("GET", "/nodes").json():
            self.containers[node["name"]] = node["properties"]["container_id"]
        for name in self.containers:
            first, second = self._sysctl(name), self._sysctl(name)
            self.volatile[name] = {k for k in first.keys() | second.keys()
                                   if first.get(k) != second.get(k)}  # fmt: skip

    def run(self, node: str, *argv: str, timeout: float = 30.0) -> str:
        return _exec(self.containers[node], *argv, timeout=timeout)

    def _sysctl(self, node: str) -> dict[str, str]:
        values: dict[str, str] = {}
        for line in self.run(node, "sysctl", "-a").splitlines():
            key, _, value = line.partition(" = ")
            if not key.startswith(_ALWAYS_VOLATILE):
                values[key] = value
        return values

    def state(self, node: str) -> dict[str, str]:
        """What a read-only line must leave as it was (see the module's docstring)."""
        sysctl = self._sysctl(node)
        kept = {k: v for k, v in sysctl.items() if k not in self.volatile[node]}
        parts = {
            "addresses": self.run(node, "ip", "-o", "addr"),
            "links": self.run(node, "ip", "-o", "link"),
            "routes": self.run(node, "ip", "route") + self.run(node, "ip", "-6", "route"),
            "sysctl": "\n".join(f"{k} = {v}" for k, v in sorted(kept.items())),
            "files": "\n".join(
                line
                for line in self.run(node, "sh", "-c", _FILES).splitlines()
                if not _HISTORY.match(line)
            ),
        }
        if node.startswith("R"):
            parts["running-config"] = self.run(node, "vtysh", "-c", "show running-config")
        return parts

    def admin_up(self, node: str, interface: str) -> bool:
        """Whether ``interface`` is set up (its ``UP`` flag; a TAP's state says UNKNOWN)."""
        shown = self.run(node, "ip", "-o", "link", "show", interface)
        return re.search(r"<[^>]*\bUP\b", shown) is not None

    def answers(self, node: str) -> bool:
        return self.run(node, "echo", "alive", timeout=20).strip() == "alive"

    def try_line(self, line: str, kind: DeviceKind) -> bool:
        """Judge ``line``; run it on the device when it is read-only (once per line) and
        record an escape when the device changed. Whether it was run."""
        self.figures["generated"] = self.figures.get("generated", 0) + 1
        if judge(line, kind).changes:
            return False
        self.figures["read_only"] = self.figures.get("read_only", 0) + 1
        if (kind.value, line) in self.seen:
            return False
        self.seen.add((kind.value, line))
        node = "PC1" if kind is DeviceKind.LINUX else "R1"
        ways = [("bash", ["timeout", "5", "bash", "-c", line])]
        if kind is DeviceKind.FRR:
            ways.insert(0, ("vtysh", ["timeout", "5", "vtysh", "-c", line]))
        for how, argv in ways:
            before = self.state(node)
            with contextlib.suppress(subprocess.TimeoutExpired):  # the state says what it did
                self.run(node, *argv, timeout=40)
            after = self.state(node)
            changed = {k: _difference(before[k], after[k]) for k in before if before[k] != after[k]}
            if not self.answers(node):
                changed["answers"] = ("yes", "no")
            self.figures["runs_on_devices"] = self.figures.get("runs_on_devices", 0) + 1
            if changed:
                self.escapes.append(Escape(kind.value, line, how, changed))
        return True


def _wait(what: str, ready: Callable[[], bool], limit: float = 120.0) -> None:
    deadline = time.monotonic() + limit
    while not ready():
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} not ready after {limit} s")
        time.sleep(1)


def oracle_project(router_lab: RouterLab) -> Oracle:
    """A new project with PC1 (a Linux host) linked to R1 (FRR) by eth0, started; PC1's
    ``net.ipv4.ip_forward`` is 1 while ``/etc/sysctl.d`` says 0, so that a hidden
    ``sysctl --system`` shows. Delete it with ``oracle.lab.delete()``."""
    token = router_lab.server.token()
    project = router_lab.server.new_project("readonly-oracle", token)
    lab = LabProject(router_lab, token, project)
    ids = {}
    for template in (HOST_TEMPLATE, ROUTER_TEMPLATE):
        made = lab.api(
            "POST",
            f"/templates/{router_lab.templates[template]}",
            json={"x": 0, "y": 0, "compute_id": "local"},
        )
        if made.status_code != 201:
            raise RuntimeError(made.text)
        ids[made.json()["name"]] = made.json()["node_id"]
    ends = [{"node_id": ids[name], "adapter_number": 0, "port_number": 0} for name in ids]
    link = lab.api("POST", "/links", json={"nodes": ends})
    if link.status_code != 201:
        raise RuntimeError(link.text)
    if lab.api("POST", "/nodes/start").status_code not in (200, 204):
        raise RuntimeError("the nodes did not start")
    try:
        oracle = Oracle(lab)
        _wait("R1's vtysh", lambda: "hostname" in oracle.run("R1", "vtysh", "-c", "show run"))
        _wait("PC1's eth0", lambda: oracle.admin_up("PC1", "eth0"))
        oracle.run("PC1", "sysctl", "-w", "net.ipv4.ip_forward=1")
        oracle.run("PC1", "sh", "-c", f"printf '{SYSCTL_D}' > /etc/sysctl.d/99-lab.conf")
    except BaseException:
        lab.delete()
        raise
    return oracle
