"""Helpers of the GNS3 adapter tests. Their real gns3-server, its admin token, a client and
a fresh project are the suite's fixtures (``tests/conftest.py``): the API tests use them too."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from copilot_core import AbortToken, CopilotMode, ToolContext

#: Two PCs on one LAN, one check: the plan the lab build tests (here and over HTTP) build.
TWO_PCS_PLAN: dict[str, Any] = {
    "summary": "two PCs on one LAN",
    "nodes": [
        {"name": "PCA", "platform": "vpcs", "x": -150, "y": 40},
        {"name": "PCB", "platform": "vpcs", "x": 150, "y": -40},
    ],
    "links": ["PCA:e0-PCB:e0"],
    "addressing": {"PCA:e0": "10.9.0.1/24", "PCB:e0": "10.9.0.2/24"},
    "config": {"PCA": ["ip 10.9.0.1/24"], "PCB": ["ip 10.9.0.2/24"]},
    "checks": [
        {"kind": "reachability", "from": "PCA", "to": "10.9.0.2", "name": "PCA reaches PCB"}
    ],
}


def make_context(
    project_id: str,
    token: str | None,
    mode: CopilotMode = CopilotMode.LAB_AUTOMATION_ASSISTANT,
    abort: AbortToken | None = None,
) -> ToolContext:
    return ToolContext(
        project_id=project_id,
        user_id="user-1",
        session_id="session-1",
        mode=mode,
        abort=abort or AbortToken(),
        credentials=token,
    )


async def eventually(predicate: Callable[[], bool], within: float = 3.0) -> None:
    """Wait, polling every 10 ms, until ``predicate()`` holds; fail after ``within`` s."""
    for _ in range(int(within / 0.01) + 1):
        if predicate():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"condition not met within {within:g} s")
