"""The read side of the MCP server: the lab's resources (each opened project's topology,
each device skill) and prompts (the system prompt of each copilot mode), and naming a
project (by id or by name) the way every handler does."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import Any, Final
from urllib.parse import unquote

import mcp_types as types
from mcp.server import ServerRequestContext
from mcp.shared.exceptions import MCPError

from adapters.mcp._connection import ConnectionOptions, InvalidArgument, McpCaller, caller_of
from adapters.mcp._contracts import McpServerDependencies
from copilot_core import AbortToken, CopilotMode, ToolContext
from copilot_core.errors import CopilotError, ProjectNotFoundError

__all__ = ["RESOURCE_NOT_FOUND", "CatalogHandlers"]

RESOURCE_NOT_FOUND: Final = -32002


class CatalogHandlers:
    """Resources and prompts, over dependencies installed once the service has started."""

    def __init__(
        self,
        dependencies: Callable[[], McpServerDependencies],
        approval_timeout: float,
    ) -> None:
        self._deps = dependencies
        #: Seconds an elicited approval may take before the call counts as rejected.
        self._approval_timeout = approval_timeout

    async def _resolve_project(self, caller: McpCaller, reference: str) -> str:
        """The id of the opened project ``reference`` names (an id, or a unique name);
        a project the caller cannot see is not found."""
        deps = self._deps()
        try:
            uuid.UUID(reference)
        except ValueError:
            pass
        else:
            await deps.projects.require_open(reference, caller.token)
            return reference.lower()
        projects = await deps.directory.projects(caller.token)
        named = [p for p in projects if p.get("name") == reference]
        if not named:
            folded = reference.casefold()
            named = [p for p in projects if str(p.get("name", "")).casefold() == folded]
        if len(named) > 1:
            raise InvalidArgument(
                f"Several of your projects are named {reference!r}; name it by its id."
            )
        if not named:
            raise ProjectNotFoundError(reference)
        project_id = str(named[0].get("project_id"))
        await deps.projects.require_open(project_id, caller.token)
        return project_id

    # ================================================================= resources
    async def list_resources(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        caller, _ = caller_of(ctx)
        deps = self._deps()
        resources: list[types.Resource] = []
        try:
            projects = await deps.directory.projects(caller.token)
        except CopilotError as exc:
            raise MCPError(types.INTERNAL_ERROR, exc.message) from None
        for project in projects:
            if project.get("status") != "opened":
                continue
            project_id, name = str(project.get("project_id")), str(project.get("name"))
            resources.append(
                types.Resource(
                    uri=f"gns3://projects/{project_id}/topology",
                    name=f"{name} topology",
                    description=f"The nodes and links of the GNS3 project {name!r}.",
                    mime_type="application/json",
                )
            )
        for skill in deps.skills():
            resources.append(
                types.Resource(
                    uri=f"gns3://skills/{skill.device_type}/{skill.topic}",
                    name=skill.title,
                    description=skill.summary or None,
                    mime_type="text/markdown",
                )
            )
        return types.ListResourcesResult(resources=resources)

    async def list_resource_templates(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        caller_of(ctx)
        return types.ListResourceTemplatesResult(
            resource_templates=[
                types.ResourceTemplate(
                    uri_template="gns3://projects/{project_id}/topology",
                    name="GNS3 project topology",
                    description="The nodes and links of an opened GNS3 project.",
                    mime_type="application/json",
                ),
                types.ResourceTemplate(
                    uri_template="gns3://skills/{device_type}/{topic}",
                    name="Device skill",
                    description="How to work with one kind of device.",
                    mime_type="text/markdown",
                ),
            ]
        )

    async def read_resource(
        self, ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        caller, options = caller_of(ctx)
        uri = str(params.uri)
        parts = uri.removeprefix("gns3://").split("/")
        if uri.startswith("gns3://projects/") and len(parts) == 3 and parts[2] == "topology":
            project_id = unquote(parts[1])
            try:
                await self._deps().projects.require_open(project_id, caller.token)
                topology = await self._deps().topology.read(
                    self._read_context(caller, options, project_id)
                )
            except ProjectNotFoundError:
                raise MCPError(RESOURCE_NOT_FOUND, f"Resource not found: {uri}") from None
            except CopilotError as exc:
                raise MCPError(types.INTERNAL_ERROR, exc.message) from None
            text = json.dumps(topology, ensure_ascii=False, indent=2, default=str)
            return types.ReadResourceResult(
                contents=[
                    types.TextResourceContents(uri=uri, mime_type="application/json", text=text)
                ]
            )
        if uri.startswith("gns3://skills/") and len(parts) == 3:
            for skill in self._deps().skills():
                if (skill.device_type, skill.topic) == (unquote(parts[1]), unquote(parts[2])):
                    text = f"# {skill.title}\n\n{skill.content}"
                    return types.ReadResourceResult(
                        contents=[
                            types.TextResourceContents(
                                uri=uri, mime_type="text/markdown", text=text
                            )
                        ]
                    )
        raise MCPError(RESOURCE_NOT_FOUND, f"Resource not found: {uri}")

    @staticmethod
    def _read_context(
        caller: McpCaller, options: ConnectionOptions, project_id: str
    ) -> ToolContext:
        return ToolContext(
            project_id=project_id,
            user_id=caller.user_id,
            session_id="mcp",
            mode=options.mode,
            abort=AbortToken(),
            credentials=caller.token,
        )

    # =================================================================== prompts
    async def list_prompts(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        caller_of(ctx)
        about = {
            CopilotMode.TEACHING_ASSISTANT: "The teaching assistant: diagnoses, never "
            "changes a device's configuration.",
            CopilotMode.LAB_AUTOMATION_ASSISTANT: "The lab automation assistant: diagnoses "
            "and configures.",
        }
        return types.ListPromptsResult(
            prompts=[
                types.Prompt(
                    name=mode.value,
                    description=f"The copilot's system prompt. {about[mode]}",
                    arguments=[
                        types.PromptArgument(
                            name="project",
                            description="A GNS3 project (id or name) whose topology the "
                            "prompt includes.",
                            required=False,
                        )
                    ],
                )
                for mode in CopilotMode
            ]
        )

    async def get_prompt(
        self, ctx: ServerRequestContext[Any, Any], params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        caller, options = caller_of(ctx)
        try:
            mode = CopilotMode(params.name)
        except ValueError:
            names = ", ".join(m.value for m in CopilotMode)
            raise MCPError(types.INVALID_PARAMS, f"Unknown prompt; prompts: {names}.") from None
        reference = (params.arguments or {}).get("project") or options.project
        topology: dict[str, Any] | None = None
        problem = "no project was named"
        if reference:
            try:
                project_id = await self._resolve_project(caller, reference)
                topology = await self._deps().topology.read(
                    self._read_context(caller, options, project_id)
                )
            except CopilotError as exc:
                raise MCPError(types.INVALID_PARAMS, exc.message) from None
        text = self._deps().prompts().render(mode, topology, problem)
        return types.GetPromptResult(
            description=f"The copilot's system prompt in {mode.value} mode.",
            messages=[
                types.PromptMessage(role="user", content=types.TextContent(type="text", text=text))
            ],
        )
