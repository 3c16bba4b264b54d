"""The copilot's lab as an MCP server: GNS3 tools, topology and skill resources, prompts.

:func:`build_mcp_server` makes an MCP SDK low-level ``Server`` whose handlers serve (tools
here; resources and prompts in ``_catalog``; the caller and its options in ``_connection``)

* **tools**: the copilot's GNS3 tools of the connection's mode, with their names,
  argument schemas (plus ``project``: an id or a name, unless the connection fixed
  one) and result shapes. Every call goes through the core's
  :class:`~copilot_core.ToolGate` (the operator's policy, mode policy, approval, time
  limit), with the caller's GNS3 token: a project the caller cannot see is "not found";
  the gate's refusal under the policy is the MCP error ``FORBIDDEN``, for the tool list
  too;
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
from collections.abc import Awaitable, Callable
from contextlib import aclosing
from typing import Any, Final

import mcp_types as types
import structlog
from mcp.server import Server, ServerRequestContext
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from adapters.mcp._catalog import CatalogHandlers
from adapters.mcp._connection import (
    ConnectionOptions,
    InvalidArgument,
    McpCaller,
    caller_of,
    principal_of,
    refused_as_mcp_error,
    session_of,
)
from adapters.mcp._contracts import (
    APPROVAL_TIMEOUT,
    McpServerDependencies,
    McpServerSettings,
    ToolCallRecord,
)
from copilot_core import (
    AbortToken,
    ParsedToolCall,
    ToolContext,
    ToolResult,
    ToolStatus,
)
from copilot_core.errors import CopilotError
from copilot_core.ports import (
    ApprovalDecision,
    ApprovalPolicy,
    ApprovalRequest,
    ToolEffect,
    ToolProgress,
    render_tool_output,
)

__all__ = ["build_mcp_server"]

log = structlog.get_logger("adapters.mcp")

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


def _digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, ensure_ascii=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


class _McpHandlers(CatalogHandlers):
    """The request handlers: tools here, resources and prompts in :class:`CatalogHandlers`."""

    # ===================================================================== tools
    async def list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        caller, options = caller_of(ctx)
        tools = []
        with refused_as_mcp_error():  # a mode above the caller's limits (the gate decides)
            offered = self._deps().tools.offered(options.mode, caller.limits)
        for spec in offered:
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
        caller, options = caller_of(ctx)
        started = time.monotonic()
        arguments = dict(params.arguments or {})
        named = arguments.pop("project", None)
        project_id: str | None = None
        with refused_as_mcp_error():  # the operator's policy first: the gate's refusal
            self._deps().tools.offered(options.mode, caller.limits)
        try:
            reference = self._project_reference(options, named)
            project_id = await self._resolve_project(caller, reference)
            with refused_as_mcp_error():
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
            raise InvalidArgument("project must be a string: a GNS3 project id or name.")
        if options.project is not None:
            if named is not None and named.strip() and named.strip() != options.project:
                raise InvalidArgument(
                    f"This connection works on the project {options.project!r} "
                    "(?project= in its URL); leave project out, or connect without it."
                )
            return options.project
        if named is None or not named.strip():
            raise InvalidArgument(
                "Name the GNS3 project in the argument project (its id or its name), or "
                "connect with ?project=<id or name> in the URL."
            )
        return named.strip()

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
            session_id=session_of(ctx),
            mode=options.mode,
            abort=AbortToken(),
            credentials=caller.token,
            progress=progress.report,
            approval=await deps.approval(caller.user_id),
            limits=caller.limits,
        )
        # The gate applies the caller's limits (PermissionDeniedError, or the approval
        # setting raised to the policy's least: the one a refusal below explains).
        context = deps.tools.admit(context)
        policy = context.approval

        async def drive() -> ToolResult | ApprovalRequest:
            """The gate asks, this server answers (elicitation, or a refusal); a request
            to ask in an ``input_required`` round ends the exchange here."""
            async with aclosing(deps.tools.exchange(call, context)) as flow:
                step = await anext(flow)
                while isinstance(step, ApprovalRequest):
                    decision = await decide(step)
                    if decision is None:
                        return step
                    step = await flow.asend(decision)  # the gate binds it to the call
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
        timeout = self._approval_timeout

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
    *,
    approval_timeout: float = APPROVAL_TIMEOUT,
    request_state_keys: tuple[bytes, ...] = (),
) -> Server[Any]:
    """The low-level MCP server; ``dependencies()`` gives the collaborators at call time
    (raising :class:`~copilot_core.errors.ServiceUnavailableError` before start-up).
    ``approval_timeout`` and ``request_state_keys``: see :class:`McpEndpoint`."""
    settings = settings or McpServerSettings()
    handlers = _McpHandlers(dependencies, approval_timeout)
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
    keys = request_state_keys
    security = (
        RequestStateSecurity(keys=list(keys), bind_principal=principal_of)
        if keys
        else RequestStateSecurity(keys=[os.urandom(32)], bind_principal=principal_of)
    )
    server.middleware.append(RequestStateBoundary(security, default_audience=settings.server_name))
    return server
