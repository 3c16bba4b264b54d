"""One GNS3 project of the router lab, read back from the real gns3-server, and what the
tests read its consoles with (the copilot's own :class:`~adapters.gns3.ConsoleRunner`)."""

from __future__ import annotations

import re
import subprocess
import time
from typing import Any

import httpx

from adapters.gns3 import ConsoleTarget
from adapters.gns3.lab._snapshot import LabSnapshot
from tests.lab.router_lab import RouterLab

__all__ = ["STRAY_PROMPT", "LabProject"]

#: A prompt alone on a line inside a command's output: what a console that takes ``\r\n`` as
#: two Enters leaves behind (``R1#``, ``R1(config-if)#``, ``root@PC1:/#``).
STRAY_PROMPT = re.compile(r"^(?:R\d|PC\d)(?:\([\w-]+\))?#\s*$|^root@[\w-]+:/#\s*$", re.MULTILINE)


class LabProject:
    """A project of the lab's gns3-server: its REST API, its nodes, their consoles."""

    def __init__(self, lab: RouterLab, token: str, project: str) -> None:
        self.lab, self.token, self.project = lab, token, project
        self.headers = {"Authorization": f"Bearer {token}"}

    def api(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        return httpx.request(
            method,
            f"{self.lab.url}/v3/projects/{self.project}{path}",
            headers=self.headers,
            timeout=120,
            **kwargs,
        )

    def snapshot(self) -> LabSnapshot:
        nodes = self.api("GET", "/nodes").json()
        names = {v: k for k, v in self.lab.templates.items()}
        return LabSnapshot({"project_id": self.project}, nodes, [], names, "127.0.0.1")

    def target(self, name: str) -> ConsoleTarget:
        snapshot = self.snapshot()
        node = snapshot.by_name(name)
        assert node is not None, f"no node {name} in {[n['name'] for n in snapshot.nodes]}"
        return snapshot.console_target(node)

    # ---------------------------------------------------------------- the oracle
    def container(self, node: str) -> str:
        """The id of ``node``'s Docker container, as gns3-server reports it."""
        nodes = self.api("GET", "/nodes").json()
        found = next(n for n in nodes if n["name"] == node)
        return str(found["properties"]["container_id"])

    def exec(self, node: str, *argv: str) -> subprocess.CompletedProcess[bytes]:
        """``argv`` run in ``node``'s container by Docker itself, never through the
        product: what the tests read a device with."""
        return subprocess.run(
            ["docker", "exec", self.container(node), *argv], capture_output=True, timeout=60
        )

    def docker(self, node: str, *argv: str, check: bool = True) -> str:
        """What ``argv`` printed in ``node``'s container (``check``: it must succeed)."""
        done = self.exec(node, *argv)
        if check:
            assert done.returncode == 0, (argv, done.stdout.decode(), done.stderr.decode())
        return done.stdout.decode(errors="replace")

    def vtysh(self, node: str, *lines: str) -> str:
        """What FRR's vtysh printed for ``lines`` on ``node`` (through Docker)."""
        return self.docker(node, "vtysh", *(arg for line in lines for arg in ("-c", line)))

    def wait_for_vtysh(self, node: str, within: float = 120.0) -> None:
        """Return once FRR's daemons answer vtysh on ``node`` (a started router): zebra
        itself, since vtysh answers ``show version`` on its own while zebra still starts
        (a configuration sent then fails with "zebra is not running", as seen with the
        lab beside the check stage)."""
        deadline = time.monotonic() + within
        while True:
            done = self.exec(node, "vtysh", "-c", "show interface brief")
            said = done.stdout.decode(errors="replace") + done.stderr.decode(errors="replace")
            if done.returncode == 0 and "is not running" not in said:
                return
            assert time.monotonic() < deadline, (
                f"FRR never answered on {node} within {within:g} s: {said}"
            )
            time.sleep(1)

    def delete(self) -> None:
        """Stop the nodes and delete the project (its containers with it)."""
        self.api("POST", "/nodes/stop")
        self.api("DELETE", "")
