"""The ``wait_for_console`` tool: wait until a node's console shows its prompt (bounded),
with :func:`~adapters.gns3.lab.wait_for_prompt`.
"""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

from pydantic import Field

from adapters.gns3.lab import (
    AUTOMATION_ONLY,
    AtMost,
    CallScope,
    Gns3Tool,
    LabAccess,
    batch,
    item,
    wait_for_prompt,
)
from adapters.gns3.tools._nodes import NodeNames
from copilot_core import ToolResult
from copilot_core.ports import ToolEffect

__all__ = ["console_tools"]

JSON = dict[str, Any]


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
