"""Console readiness: wait until a node's console shows its prompt (bounded).

A node reported "started" may still be booting (a router takes minutes); its console
then shows nothing usable. :func:`wait_for_prompt` tries the console until it shows the
device's prompt, the node stops, or time runs out. The ``wait_for_console`` tool and a
rollback that restarts a device (``restore._devices``) both wait with it.
"""

from __future__ import annotations

import asyncio
from typing import Any

from adapters.gns3.lab._registry import CallScope, LabAccess
from adapters.gns3.lab._results import item
from adapters.gns3.lab._snapshot import LabSnapshot
from adapters.gns3.model import DeviceKind
from copilot_core.errors import CopilotError

__all__ = ["wait_for_prompt"]

JSON = dict[str, Any]


async def wait_for_prompt(
    lab: LabAccess,
    scope: CallScope,
    snapshot: LabSnapshot,
    node: JSON,
    within: float,
    kind: DeviceKind | None = None,
) -> JSON:
    """One result item: ``success`` with the prompt once the console shows it; ``failed``
    when the node is not started, has no telnet console, asks for a login, or shows no
    prompt within ``within`` seconds."""
    name = str(node.get("name"))
    node_id = str(node["node_id"])
    loop = asyncio.get_running_loop()
    started = loop.time()
    deadline = started + within
    last = "its console was not tried"
    while True:
        try:
            current = await lab.client.node(scope.token, scope.project_id, node_id)
        except CopilotError as exc:
            return item(name, "failed", error=exc.message)
        status = current.get("status")
        if status != "started":
            return item(
                name,
                "failed",
                {"status": status},
                error=f"{name} is {status}; start it first with start_gns3_node.",
            )
        if current.get("console_type") != "telnet" or not current.get("console"):
            return item(
                name,
                "failed",
                {"status": status},
                error=f"{name} has no telnet console (console type "
                f"{current.get('console_type')!r}).",
            )
        target = snapshot.console_target(current, kind)
        remaining = deadline - loop.time()
        try:
            async with asyncio.timeout(max(remaining, 0.1)):
                transcript = await lab.runner.run(target, [])
        except TimeoutError:
            transcript = None
        if transcript is not None and transcript.error is None and transcript.prompt:
            return item(
                name,
                "success",
                {
                    "status": "ready",
                    "prompt": transcript.prompt,
                    "waited_s": round(loop.time() - started, 2),
                },
            )
        if transcript is not None and transcript.error is not None:
            last = transcript.error
            if "login" in last:
                return item(name, "failed", {"status": status}, error=last)
        if loop.time() >= deadline:
            return item(
                name,
                "failed",
                {"status": status},
                error=f"no prompt on {name}'s console within {within:g} s ({last}).",
            )
        await asyncio.sleep(min(lab.settings.poll_interval, max(0.0, deadline - loop.time())))
