"""Console readiness: wait until a node's console shows its prompt (bounded).

A node reported "started" may still be booting (a router takes minutes); its console
then shows nothing usable. :func:`wait_for_prompt` tries the console until it shows the
device's prompt, the node stops, or time runs out; ``wait_for_console`` is the tool.
"""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

from pydantic import Field

from adapters.gns3._lab import LabSnapshot
from adapters.gns3._platforms import DeviceKind
from adapters.gns3._tools.nodes import NodeNames
from adapters.gns3._tools.registry import (
    AUTOMATION_ONLY,
    AtMost,
    CallScope,
    Gns3Tool,
    LabAccess,
)
from adapters.gns3._tools.results import batch, item
from copilot_core import ToolResult
from copilot_core.errors import CopilotError
from copilot_core.ports import ToolEffect

__all__ = ["console_tools", "wait_for_prompt"]

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


class WaitForConsole(NodeNames):
    timeout_s: Annotated[float, Field(gt=0), AtMost("max_console_wait")] | None = Field(
        None, description="seconds to wait at most; default: the server's start timeout"
    )


async def wait_for_consoles(lab: LabAccess, args: WaitForConsole, scope: CallScope) -> ToolResult:
    snapshot = await lab.snapshot(scope)
    within = args.timeout_s or lab.settings.start_timeout

    async def one(name: str) -> JSON:
        node = snapshot.by_name(name)
        if node is None:
            return item(name, "failed", error=snapshot.unknown_node(name))
        return await wait_for_prompt(lab, scope, snapshot, node, within)

    return batch(list(await asyncio.gather(*(one(name) for name in args.node_names))))


def console_tools() -> list[Gns3Tool[Any]]:
    return [
        Gns3Tool(
            "wait_for_console",
            "Wait until started nodes' consoles show their prompt (a booting router takes "
            "a while), at most timeout_s (default {settings.start_timeout:g} s, at most "
            "{settings.max_console_wait:g} s); returns "
            "each node's prompt and how long it took.",
            WaitForConsole,
            wait_for_consoles,
            AUTOMATION_ONLY,
            effect=ToolEffect.READ_ONLY,
            example={"node_names": ["R1"], "timeout_s": 60},
        )
    ]
