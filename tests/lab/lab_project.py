"""One GNS3 project of the router lab, read back from the real gns3-server, and what the
tests read its consoles with (the copilot's own :class:`~adapters.gns3.ConsoleRunner`)."""

from __future__ import annotations

import re
from typing import Any

import httpx

from adapters.gns3 import ConsoleTarget
from adapters.gns3._lab import LabSnapshot
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

    def delete(self) -> None:
        """Stop the nodes and delete the project (its containers with it)."""
        self.api("POST", "/nodes/stop")
        self.api("DELETE", "")
