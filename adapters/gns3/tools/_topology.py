"""Topology tools: read the lab, list the templates. Neither changes anything."""

from __future__ import annotations

from pydantic import ConfigDict

from adapters.gns3.lab import (
    BOTH_MODES,
    CallScope,
    Gns3Tool,
    LabAccess,
    ToolArguments,
)
from copilot_core import ToolResult
from copilot_core.ports import ToolEffect

__all__ = ["NoArguments", "topology_tools"]


class NoArguments(ToolArguments):
    """No arguments. Anything a model adds (a ``why``, a ``reason``) is ignored: nothing
    it could say changes what these tools read."""

    model_config = ConfigDict(
        extra="ignore", frozen=True, json_schema_extra={"additionalProperties": False}
    )


async def read_topology(lab: LabAccess, args: NoArguments, scope: CallScope) -> ToolResult:
    return ToolResult((await lab.snapshot(scope)).summary())


async def list_templates(lab: LabAccess, args: NoArguments, scope: CallScope) -> ToolResult:
    templates = await lab.client.templates(scope.token)
    return ToolResult(
        {
            "templates": [
                {
                    "name": t.get("name"),
                    "template_type": t.get("template_type"),
                    "category": t.get("category"),
                    "builtin": t.get("builtin", False),
                }
                for t in sorted(templates, key=lambda t: str(t.get("name")))
            ]
        }
    )


def topology_tools() -> list[Gns3Tool[NoArguments]]:
    return [
        Gns3Tool(
            "gns3_topology_reader",
            "Read the current lab: every node (name, type, device type, status, ports and "
            "whether each is in use, console) and every link (node and port at each end).",
            NoArguments,
            read_topology,
            BOTH_MODES,
            effect=ToolEffect.READ_ONLY,
            example={},
        ),
        Gns3Tool(
            "get_gns3_templates",
            "List the templates nodes can be created from (name, type, category).",
            NoArguments,
            list_templates,
            BOTH_MODES,
            effect=ToolEffect.READ_ONLY,
            example={},
        ),
    ]
