"""The copilot's lab as an MCP server: GNS3 tools, topology and skill resources, prompts.

:func:`build_mcp_server` makes an MCP SDK low-level ``Server`` whose handlers serve

* **tools**: the copilot's GNS3 tools of the connection's mode, with their names,
  argument schemas (plus ``project``: an id or a name, unless the connection fixed
  one) and result shapes. Every call goes through the core's
  :class:`~copilot_core.ToolGate` (mode policy, approval, time limit), with the
  caller's GNS3 token: a project the caller cannot see is "not found";
* **resources**: ``gns3://projects/{id}/topology`` for each opened project the caller
  sees, and ``gns3://skills/{device_type}/{topic}`` for each device skill;
* **prompts**: the system prompt of each copilot mode (with a project's topology when
  one is named).

Approvals: under the caller's setting (``changes`` by default) a call that changes the
lab is asked about through MCP elicitation when the client supports it — with an
``elicitation/create`` request on 2025 protocol revisions, with an ``input_required``
result on 2026-07-28 — and refused with an explanation otherwise.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import unquote

import mcp_types as types
import structlog
from mcp.server import Server, ServerRequestContext
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from starlette.requests import Request

from adapters.mcp._contracts import (
    McpServerDependencies,
    McpServerSettings,
    ToolCallRecord,
)
from copilot_core import (
    AbortToken,
    CopilotMode,
    ParsedToolCall,
    ToolContext,
    ToolResult,
    ToolStatus,
)
from copilot_core.errors import CopilotError, InvalidRequestError, ProjectNotFoundError
from copilot_core.policy import UserLimits
from copilot_core.ports import (
    ApprovalDecision,
    ApprovalPolicy,
    ApprovalRequest,
    Principal,
    ToolEffect,
    ToolProgress,
    render_tool_output,
)

__all__ = [
    "CALLER_SCOPE_KEY",
    "OPTIONS_SCOPE_KEY",
    "ConnectionOptions",
    "McpCaller",
    "build_mcp_server",
]

log = structlog.get_logger("adapters.mcp")

#: Where the endpoint leaves the authenticated caller and the connection's options in
#: the ASGI scope of each HTTP request (the handlers read them from there).
CALLER_SCOPE_KEY: Final = "gns3_copilot.mcp.caller"
OPTIONS_SCOPE_KEY: Final = "gns3_copilot.mcp.options"

RESOURCE_NOT_FOUND: Final = -32002
_APPROVAL_KEY: Final = "approval"
_UNAVAILABLE: Final = "unavailable"

_APPROVAL_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "approve": {
            "type": "boolean",
            "title": "Approve this change",
            "description": "true: make the change; false: do not.",
        },
        "comment": {
            "type": "string",
            "title": "Comment",
            "description": "Optional: why, or what to do instead.",
            "maxLength": 2000,
        },
    },
    "required": ["approve"],
}


@dataclass(frozen=True, slots=True)
class McpCaller:
    """The authenticated GNS3 user of one HTTP request, and their token (never shown)."""

    principal: Principal
    token: str = field(repr=False)
    #: Their limits under the operator's policy.
    limits: UserLimits = field(default_factory=UserLimits)

    @property
    def user_id(self) -> str:
        return self.principal.user_id


@dataclass(frozen=True, slots=True)
class ConnectionOptions:
    """What the client chose in the endpoint's query string: ``?mode=`` and ``?project=``."""

    mode: CopilotMode = CopilotMode.TEACHING_ASSISTANT
    project: str | None = None

    @classmethod
    def from_query(cls, query: Mapping[str, str]) -> ConnectionOptions:
        """The options, or :class:`ValueError` naming what is wrong."""
        unknown = sorted(set(query) - {"mode", "project"})
        if unknown:
            raise ValueError(f"unknown query parameter {unknown[0]!r}: use mode and project")
        mode = query.get("mode") or CopilotMode.TEACHING_ASSISTANT.value
        try:
            chosen = CopilotMode(mode)
        except ValueError:
            modes = ", ".join(m.value for m in CopilotMode)
            raise ValueError(f"mode must be one of {modes}, not {mode!r}") from None
        project = (query.get("project") or "").strip() or None
        if project is not None and len(project) > 255:
            raise ValueError("project must be a GNS3 project id or name (at most 255 characters)")
        return cls(chosen, project)


def _caller(ctx: ServerRequestContext[Any, Any]) -> tuple[McpCaller, ConnectionOptions]:
    request = ctx.request
    if not isinstance(request, Request):  # only the HTTP endpoint serves this server
        raise MCPError(types.INVALID_REQUEST, "This server is served over HTTP only.")
    caller = request.scope.get(CALLER_SCOPE_KEY)
    options = request.scope.get(OPTIONS_SCOPE_KEY)
    if not isinstance(caller, McpCaller) or not isinstance(options, ConnectionOptions):
        raise MCPError(types.INVALID_REQUEST, "The request was not authenticated.")
    return caller, options


def _principal_of(ctx: ServerRequestContext[Any, Any]) -> str | None:
    """Binds 2026-07-28 ``requestState`` to the GNS3 user it was minted for."""
    request = ctx.request
    caller = request.scope.get(CALLER_SCOPE_KEY) if isinstance(request, Request) else None
    return f"gns3-user:{caller.user_id}" if isinstance(caller, McpCaller) else None


def _session_of(ctx: ServerRequestContext[Any, Any]) -> str:
    """The MCP session (2025 revisions), else ``mcp``: where a call's context says it
    comes from."""
    request = ctx.request
    session = request.headers.get("mcp-session-id") if isinstance(request, Request) else None
    return f"mcp-{session[:64]}" if session else "mcp"


def _digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, ensure_ascii=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


class _McpHandlers:
    """The request handlers, over dependencies installed once the service has started."""

    def __init__(
        self,
        dependencies: Callable[[], McpServerDependencies],
        settings: McpServerSettings,
    ) -> None:
        self._deps = dependencies
        self._settings = settings

    # ===================================================================== tools
    async def list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        _, options = _caller(ctx)
        tools = []
        for spec in self._deps().tools.specs(options.mode):
            schema = json.loads(json.dumps(spec.parameters))
            if options.project is None:
                properties = dict(schema.get("properties") or {})
                properties["project"] = {
                    "type": "string",
                    "description": "The GNS3 project to act on: its id or its exact name "
                    "(it must be opened).",
                }
                schema["properties"] = properties
                schema["required"] = ["project", *schema.get("required", [])]
            tools.append(
                types.Tool(
                    name=spec.name,
                    description=spec.description,
                    input_schema=schema,
                    annotations=_annotations(spec.effect),
                )
            )
        return types.ListToolsResult(tools=tools)

    async def call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        caller, options = _caller(ctx)
        started = time.monotonic()
        arguments = dict(params.arguments or {})
        named = arguments.pop("project", None)
        project_id: str | None = None
        try:
            reference = self._project_reference(options, named)
            project_id = await self._resolve_project(caller, reference)
            outcome = await self._run(ctx, params, caller, options, project_id, arguments)
        except CopilotError as exc:
            outcome = ToolResult.error(exc.message)
        if isinstance(outcome, types.InputRequiredResult):
            return outcome
        self._record(caller, options, project_id, params.name, outcome.status.value, started)
        return _call_result(outcome)

    @staticmethod
    def _project_reference(options: ConnectionOptions, named: Any) -> str:
        if named is not None and not isinstance(named, str):
            raise _InvalidArgument("project must be a string: a GNS3 project id or name.")
        if options.project is not None:
            if named is not None and named.strip() and named.strip() != options.project:
                raise _InvalidArgument(
                    f"This connection works on the project {options.project!r} "
                    "(?project= in its URL); leave project out, or connect without it."
                )
            return options.project
        if named is None or not named.strip():
            raise _InvalidArgument(
                "Name the GNS3 project in the argument project (its id or its name), or "
                "connect with ?project=<id or name> in the URL."
            )
        return named.strip()

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
            raise _InvalidArgument(
                f"Several of your projects are named {reference!r}; name it by its id."
            )
        if not named:
            raise ProjectNotFoundError(reference)
        project_id = str(named[0].get("project_id"))
        await deps.projects.require_open(project_id, caller.token)
        return project_id

    async def _run(
        self,
        ctx: ServerRequestContext[Any, Any],
        params: types.CallToolRequestParams,
        caller: McpCaller,
        options: ConnectionOptions,
        project_id: str,
        arguments: dict[str, Any],
    ) -> ToolResult | types.InputRequiredResult:
        deps = self._deps()
        policy = caller.limits.floor_approval(await deps.approval(caller.user_id))
        modern = ctx.protocol_version in MODERN_PROTOCOL_VERSIONS
        decide = self._decider(ctx, params, modern)
        progress = _ProgressForwarder(ctx)
        call = ParsedToolCall(
            id=f"mcp-{uuid.uuid4().hex[:16]}",
            name=params.name,
            raw_arguments=json.dumps(arguments, ensure_ascii=False),
            arguments=arguments,
        )
        context = ToolContext(
            project_id=project_id,
            user_id=caller.user_id,
            session_id=_session_of(ctx),
            mode=options.mode,
            abort=AbortToken(),
            credentials=caller.token,
            progress=progress.report,
            approval=policy,
        )

        async def drive() -> ToolResult | ApprovalRequest:
            """The gate asks, this server answers (elicitation, or a refusal); a request
            to ask in an ``input_required`` round ends the exchange here."""
            async with aclosing(deps.tools.exchange(call, context)) as flow:
                step = await anext(flow)
                while isinstance(step, ApprovalRequest):
                    decision = await decide(step)
                    if decision is None:
                        return step
                    step = await flow.asend(decision.bound(step.digest))
                return step

        running = asyncio.ensure_future(drive())
        forwarding = asyncio.ensure_future(progress.run())
        try:
            outcome = await running
        finally:
            running.cancel()
            forwarding.cancel()
        if isinstance(outcome, ApprovalRequest):  # asked in an input_required round
            return types.InputRequiredResult(
                input_requests={
                    _APPROVAL_KEY: types.ElicitRequest(
                        params=types.ElicitRequestFormParams(
                            message=_approval_message(outcome),
                            requested_schema=_APPROVAL_SCHEMA,
                        )
                    )
                },
                request_state=json.dumps(
                    {"asked": _digest(outcome.preview.to_dict()), "call": outcome.digest}
                ),
            )
        return _explain_refusal(outcome, policy, params.name)

    def _decider(
        self,
        ctx: ServerRequestContext[Any, Any],
        params: types.CallToolRequestParams,
        modern: bool,
    ) -> Callable[[ApprovalRequest], Awaitable[ApprovalDecision | None]]:
        """How this connection answers the gate's approval requests: by eliciting the
        client's decision, in ``input_required`` rounds (``None``: ask in the next
        round), or by refusing when the client cannot be asked."""
        capabilities = ctx.session.client_capabilities
        elicitation = capabilities.elicitation if capabilities is not None else None
        can_elicit = elicitation is not None and (
            elicitation.form is not None or elicitation.url is None
        )
        timeout = self._settings.approval_timeout

        async def refuse(request: ApprovalRequest) -> ApprovalDecision | None:
            return ApprovalDecision(approve=False, reason=_UNAVAILABLE)

        async def elicit(request: ApprovalRequest) -> ApprovalDecision | None:
            try:
                async with asyncio.timeout(timeout):
                    answer = await ctx.session.elicit_form(
                        _approval_message(request),
                        _APPROVAL_SCHEMA,
                        related_request_id=ctx.request_id,
                    )
            except TimeoutError:
                return ApprovalDecision(approve=False, reason="timeout")
            return _decision(answer)

        async def in_rounds(request: ApprovalRequest) -> ApprovalDecision | None:
            answer = (params.input_responses or {}).get(_APPROVAL_KEY)
            state = _state(params.request_state)
            if (
                isinstance(answer, types.ElicitResult)
                and state.get("asked") == _digest(request.preview.to_dict())
                and state.get("call") == request.digest
            ):
                return _decision(answer)
            return None

        if not can_elicit:
            return refuse
        if modern:
            return in_rounds
        if ctx.session.can_send_request:
            return elicit
        return refuse

    def _record(
        self,
        caller: McpCaller,
        options: ConnectionOptions,
        project_id: str | None,
        tool: str,
        status: str,
        started: float,
    ) -> None:
        record = ToolCallRecord(
            tool=tool,
            status=status,
            seconds=time.monotonic() - started,
            user_id=caller.user_id,
            username=caller.principal.username,
            project_id=project_id,
            mode=options.mode.value,
        )
        log.info(
            "mcp_tool_called",
            user_id=record.user_id,
            username=record.username,
            project_id=record.project_id,
            tool=record.tool,
            status=record.status,
            mode=record.mode,
            duration_ms=round(record.seconds * 1000, 1),
        )
        for observer in self._deps().observers:
            try:
                observer.tool_called(record)
            except Exception:  # an observer must never break a call
                log.exception("mcp_observer_failed", observer=type(observer).__name__)

    # ================================================================= resources
    async def list_resources(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        caller, _ = _caller(ctx)
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
        _caller(ctx)
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
        caller, options = _caller(ctx)
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
        _caller(ctx)
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
        caller, options = _caller(ctx)
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


class _InvalidArgument(InvalidRequestError):
    """A call's arguments cannot name a project (answered as a tool error)."""


class _ProgressForwarder:
    """A running tool's console output, forwarded as MCP progress notifications (when
    the client asked for progress; otherwise nothing is sent)."""

    def __init__(self, ctx: ServerRequestContext[Any, Any]) -> None:
        self._ctx = ctx
        self._queue: asyncio.Queue[ToolProgress] = asyncio.Queue(maxsize=1000)
        self._count = 0

    def report(self, progress: ToolProgress) -> None:
        with contextlib.suppress(asyncio.QueueFull):
            self._queue.put_nowait(progress)

    async def run(self) -> None:
        while True:
            progress = await self._queue.get()
            self._count += 1
            prefix = f"{progress.device}: " if progress.device else ""
            try:
                await self._ctx.session.report_progress(
                    self._count, None, (prefix + progress.text)[-4000:]
                )
            except Exception:  # the client went away: nothing more to tell it
                return


def _state(raw: str | None) -> dict[str, Any]:
    if not raw:
        return {}
    with contextlib.suppress(ValueError):
        value = json.loads(raw)
        if isinstance(value, dict):
            return value
    return {}


def _annotations(effect: ToolEffect | None) -> types.ToolAnnotations:
    """A tool's declared effect as MCP's hints (an undeclared one is a change)."""
    read_only = effect is ToolEffect.READ_ONLY
    return types.ToolAnnotations(
        read_only_hint=read_only,
        destructive_hint=None if read_only else True,
    )


def _approval_message(request: ApprovalRequest) -> str:
    preview = request.preview
    lines = [f"The copilot's tool {request.tool_name} would change the lab: {preview.summary}"]
    lines.extend(f"  {line}" for line in preview.topology)
    for device, commands in preview.devices.items():
        lines.append(f"  on {device}:")
        lines.extend(f"    {command}" for command in commands)
    lines.append("Approve this change?")
    return "\n".join(lines)


def _decision(answer: types.ElicitResult) -> ApprovalDecision:
    content = answer.content or {}
    comment = content.get("comment")
    comment = comment[:2000] if isinstance(comment, str) else ""
    if answer.action == "accept" and content.get("approve") is True:
        return ApprovalDecision(approve=True, comment=comment)
    reason = "decided" if answer.action in ("accept", "decline") else "cancelled"
    return ApprovalDecision(approve=False, comment=comment, reason=reason)


def _explain_refusal(result: ToolResult, policy: ApprovalPolicy, tool: str) -> ToolResult:
    """A call refused because nobody could approve it says how to allow such calls."""
    approval = (result.metadata or {}).get("approval") or {}
    if result.status is not ToolStatus.REJECTED or approval.get("reason") != _UNAVAILABLE:
        return result
    what = "changes the lab" if policy is ApprovalPolicy.CHANGES else "runs"
    return ToolResult(
        {
            "status": "rejected",
            "error": (
                f"{tool} {what}, and your approval setting is {policy.value!r}: such calls "
                "wait for your approval, and this MCP client cannot ask you (it does not "
                "support elicitation). Nothing was done. To allow them, either use an MCP "
                "client that supports elicitation, or set your approval to 'never' (the "
                "copilot then acts on its own within its mode): in the copilot page's "
                'settings, or with PUT /v3/copilot/llm-config and {"approval": "never"}.'
            ),
        },
        ToolStatus.REJECTED,
        result.metadata,
    )


def _call_result(result: ToolResult) -> types.CallToolResult:
    """A tool result as MCP carries it: the same JSON as the chat's ``tool_end`` output,
    as text and (for objects) as structured content."""
    output = result.output
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=render_tool_output(output))],
        structured_content=output if isinstance(output, dict) else None,
        is_error=result.status is not ToolStatus.SUCCESS,
    )


def build_mcp_server(
    dependencies: Callable[[], McpServerDependencies],
    settings: McpServerSettings | None = None,
) -> Server[Any]:
    """The low-level MCP server; ``dependencies()`` gives the collaborators at call time
    (raising :class:`~copilot_core.errors.ServiceUnavailableError` before start-up)."""
    settings = settings or McpServerSettings()
    handlers = _McpHandlers(dependencies, settings)
    server: Server[Any] = Server(
        settings.server_name,
        version=settings.server_version,
        title="GNS3 Copilot",
        instructions=(
            "The tools of a GNS3 network lab: read the topology, create and link nodes, run "
            "commands on device consoles, capture packets. Every tool needs the project "
            "(its id or name) unless the URL fixed one with ?project=. The mode "
            "(?mode=teaching_assistant, the default, or lab_automation_assistant) decides "
            "which tools exist; calls that change the lab may need your approval."
        ),
        on_list_tools=handlers.list_tools,
        on_call_tool=handlers.call_tool,
        on_list_resources=handlers.list_resources,
        on_list_resource_templates=handlers.list_resource_templates,
        on_read_resource=handlers.read_resource,
        on_list_prompts=handlers.list_prompts,
        on_get_prompt=handlers.get_prompt,
    )
    keys = settings.request_state_keys
    security = (
        RequestStateSecurity(keys=list(keys), bind_principal=_principal_of)
        if keys
        else RequestStateSecurity(keys=[os.urandom(32)], bind_principal=_principal_of)
    )
    server.middleware.append(RequestStateBoundary(security, default_audience=settings.server_name))
    return server
