"""MCP servers as tool sources: :class:`McpToolSource`, a core ``ToolExecutor``.

Each configured server gets a :class:`McpServerLink`: a background task that connects
(a child process for ``stdio``, Streamable HTTP for ``http``), lists the server's
tools, keeps the session open and reconnects (with backoff) when it breaks. Nothing
waits for it: the service starts while servers are still connecting, or down.

The source offers the tools a server listed *and* the configuration allows, named
``<server>__<tool>``, in the modes the configuration names. A call to a server that is
down, that breaks, or that does not answer within its ``timeout`` is answered with a
"tool unavailable" error result at once; the core's :class:`~copilot_core.ToolGate`
applies the mode's policy, approval, the agent's time limit and abort on top, as for
every tool. Results longer than ``max_result_chars`` are cut.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import Any, Literal, TextIO

import httpx2
import mcp_types as types
import structlog
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from adapters.mcp._config import NAMESPACE_SEPARATOR, McpServerConfig, namespaced
from copilot_core import CopilotMode, ParsedToolCall, ToolContext, ToolResult, ToolSpec
from copilot_core.intent import ChangeSteps
from copilot_core.ports import NOT_CLEARED, Assessment, ChangePreview, Clearance, ToolEffect

__all__ = ["LinkState", "McpServerLink", "McpServerStatus", "McpToolSource", "tool_effect"]

log = structlog.get_logger("adapters.mcp")

LinkState = Literal["connecting", "up", "down"]

_LIST_PAGES = 20
#: JSON-RPC errors the client reports for a transport that failed, not for a refusal.
_TRANSPORT_FAILURES = frozenset({types.CONNECTION_CLOSED, types.REQUEST_TIMEOUT})


class McpToolUnavailableError(Exception):
    """The server cannot answer now (down, broken, too slow): the call was not made, or
    its answer will never come."""


@dataclass(frozen=True, slots=True)
class McpServerStatus:
    """One configured server as ``/capabilities`` shows it (no secret in it)."""

    name: str
    transport: str
    where: str
    modes: tuple[str, ...]
    state: LinkState
    tools: tuple[str, ...]
    problem: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "transport": self.transport,
            "where": self.where,
            "modes": list(self.modes),
            "state": self.state,
            "available": self.state == "up",
            "tools": list(self.tools),
            "problem": self.problem,
        }


def _problem(exc: BaseException) -> str:
    """A short, secret-free description of why a server cannot be used."""
    if isinstance(exc, BaseExceptionGroup):
        first = exc.exceptions[0] if exc.exceptions else exc
        return _problem(first)
    if isinstance(exc, TimeoutError):
        return "it did not answer in time"
    if isinstance(exc, MCPError):
        return f"it answered with an error: {exc.error.message}"[:300]
    if isinstance(exc, httpx2.HTTPStatusError):
        return f"it answered HTTP {exc.response.status_code}"
    if isinstance(exc, httpx2.TransportError | OSError):
        return f"it cannot be reached ({type(exc).__name__})"
    return f"{type(exc).__name__}: {exc}"[:300]


class McpServerLink:
    """One configured server: its session, kept open and re-opened by a background task."""

    def __init__(
        self,
        config: McpServerConfig,
        *,
        retry_min: float = 1.0,
        retry_max: float = 30.0,
        errlog: TextIO | None = None,
    ) -> None:
        self.config = config
        self.state: LinkState = "connecting"
        self.problem: str | None = None
        #: The allowed tools the server listed, by the server's own name.
        self.tools: dict[str, types.Tool] = {}
        self._retry_min = retry_min
        self._retry_max = retry_max
        self._errlog = errlog or sys.stderr
        self._client: Client | None = None
        self._broken = asyncio.Event()
        self._changed = asyncio.Condition()
        self._task: asyncio.Task[None] | None = None

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(
                self._supervise(), name=f"mcp-server-{self.config.name}"
            )

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def wait_for(self, states: Iterable[LinkState], within: float) -> LinkState:
        """Wait (at most ``within`` seconds) until the link is in one of ``states``;
        returns the state then (TimeoutError otherwise)."""
        wanted = set(states)
        async with asyncio.timeout(within), self._changed:
            await self._changed.wait_for(lambda: self.state in wanted)
        return self.state

    async def _set(self, state: LinkState, problem: str | None = None) -> None:
        before = self.state
        self.state, self.problem = state, problem
        if state != before or state == "down":
            if state == "up":
                log.info("mcp_server_connected", server=self.config.name, tools=sorted(self.tools))
            elif state == "down" and before != "down":
                log.warning("mcp_server_unavailable", server=self.config.name, problem=problem)
        async with self._changed:
            self._changed.notify_all()

    async def _supervise(self) -> None:
        delay = self._retry_min
        while True:
            self._broken = asyncio.Event()
            try:
                async with AsyncExitStack() as stack:
                    async with asyncio.timeout(self.config.connect_timeout):
                        client = await stack.enter_async_context(self._connect())
                        listed = await self._list_tools(client)
                    self.tools = {
                        tool.name: tool
                        for tool in listed
                        if self.config.allows(tool.name)
                        and namespaced(self.config.name, tool.name) is not None
                    }
                    self._client = client
                    delay = self._retry_min
                    await self._set("up")
                    await self._broken.wait()
                    self._client = None
                    await self._set("down", "its connection broke")
            except asyncio.CancelledError:
                self._client = None
                raise
            except Exception as exc:  # a foreign server may fail in any way: never crash
                self._client = None
                await self._set("down", _problem(exc))
            await asyncio.sleep(delay)
            delay = min(self._retry_max, delay * 2)

    @asynccontextmanager
    async def _connect(self) -> AsyncIterator[Client]:
        config = self.config
        if config.transport == "stdio":
            command = config.command or []
            params = StdioServerParameters(
                command=command[0],
                args=command[1:],
                env={k: v.get_secret_value() for k, v in config.env.items()} or None,
                cwd=config.cwd,
            )
            async with Client(params) as client:
                yield client
            return
        headers = {k: v.get_secret_value() for k, v in config.headers.items()}
        timeout = httpx2.Timeout(config.connect_timeout, read=max(300.0, config.timeout))
        async with (
            httpx2.AsyncClient(headers=headers, timeout=timeout) as http,
            Client(streamable_http_client(config.url or "", http_client=http)) as client,
        ):
            yield client

    @staticmethod
    async def _list_tools(client: Client) -> list[types.Tool]:
        tools: list[types.Tool] = []
        cursor: str | None = None
        for _ in range(_LIST_PAGES):
            page = await client.list_tools(cursor=cursor)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                break
        return tools

    # ---------------------------------------------------------------------- calls
    async def call(self, tool: str, arguments: Mapping[str, Any]) -> types.CallToolResult:
        """Call one tool; :class:`McpToolUnavailableError` when the server cannot answer,
        :class:`MCPError` when it refuses the call."""
        client = self._client
        if client is None or self.state != "up":
            why = self.problem or "it is still connecting"
            raise McpToolUnavailableError(f"the MCP server {self.config.name} is down: {why}")
        try:
            async with asyncio.timeout(self.config.timeout):
                return await client.call_tool(tool, dict(arguments))
        except TimeoutError:
            raise McpToolUnavailableError(
                f"the MCP server {self.config.name} did not answer within {self.config.timeout:g} s"
            ) from None
        except MCPError as exc:
            if exc.error.code not in _TRANSPORT_FAILURES:
                raise  # the server refused this call: say why
            self._broken.set()
            raise McpToolUnavailableError(
                f"the MCP server {self.config.name} broke off: {exc.error.message}"
            ) from None
        except Exception as exc:  # the session broke underneath the call
            self._broken.set()
            raise McpToolUnavailableError(
                f"the MCP server {self.config.name} broke off: {_problem(exc)}"
            ) from None

    def status(self) -> McpServerStatus:
        return McpServerStatus(
            name=self.config.name,
            transport=self.config.transport,
            where=self.config.describe(),
            modes=tuple(mode.value for mode in self.config.modes),
            state=self.state,
            tools=tuple(
                name for tool in sorted(self.tools) if (name := namespaced(self.config.name, tool))
            ),
            problem=self.problem,
        )


def _schema(tool: types.Tool) -> dict[str, Any]:
    schema = dict(tool.input_schema or {})
    schema["type"] = "object"
    schema.setdefault("properties", {})
    return schema


def _text(blocks: Sequence[types.ContentBlock]) -> str:
    parts: list[str] = []
    for block in blocks:
        if isinstance(block, types.TextContent):
            parts.append(block.text)
        elif isinstance(block, types.ImageContent | types.AudioContent):
            parts.append(f"[{block.mime_type} content omitted]")
        elif isinstance(block, types.EmbeddedResource):
            resource = block.resource
            if isinstance(resource, types.TextResourceContents):
                parts.append(resource.text)
            else:
                parts.append(f"[binary resource {resource.uri} omitted]")
        elif isinstance(block, types.ResourceLink):
            parts.append(f"[resource {block.uri}]")
    return "\n".join(parts)


def declared_title(tool: types.Tool) -> Callable[[dict[str, Any]], str | None] | None:
    """The title the server declares for the tool (``title``, else its annotations'), as
    every call's title; ``None`` when it declares none (clients show the tool's name)."""
    hints = tool.annotations
    named = tool.title or (hints.title if hints is not None else None)
    if not named:
        return None

    def title(arguments: dict[str, Any]) -> str:
        return str(named)

    return title


def tool_effect(config: McpServerConfig, name: str, tool: types.Tool) -> ToolEffect:
    """The effect of an MCP server's tool: read-only when the server annotates it so
    (``readOnlyHint``), or the operator does and the server does not claim a change;
    anything else is a change (default deny), and so is a tool the operator names in
    ``changing``."""
    if config.changes(name):
        return ToolEffect.EXTERNAL_CHANGE
    hints = tool.annotations
    if hints is not None and hints.read_only_hint is True:
        return ToolEffect.READ_ONLY
    claims_change = hints is not None and (
        hints.read_only_hint is False or hints.destructive_hint is True
    )
    if config.reads_only(name) and not claims_change:
        return ToolEffect.READ_ONLY
    return ToolEffect.EXTERNAL_CHANGE


def _capped(text: str, limit: int) -> tuple[str, dict[str, Any]]:
    if len(text) <= limit:
        return text, {}
    return text[:limit], {"truncated": True, "total_chars": len(text)}


class McpToolSource:
    """The tools of the configured MCP servers (a core ``ToolExecutor``)."""

    def __init__(
        self, configs: Sequence[McpServerConfig], *, errlog: TextIO | None = None, **link: Any
    ) -> None:
        names = [config.name for config in configs]
        duplicates = sorted({name for name in names if names.count(name) > 1})
        if duplicates:
            raise ValueError(f"two MCP servers are named {duplicates[0]!r}")
        self.links = {
            config.name: McpServerLink(config, errlog=errlog, **link) for config in configs
        }

    async def start(self) -> None:
        """Start connecting every server in the background (returns at once)."""
        for link in self.links.values():
            link.start()

    async def aclose(self) -> None:
        await asyncio.gather(*(link.stop() for link in self.links.values()))

    def status(self) -> list[McpServerStatus]:
        return [link.status() for link in self.links.values()]

    # ------------------------------------------------------------- ToolExecutor
    def specs(self, mode: CopilotMode) -> Sequence[ToolSpec]:
        specs = []
        for link in self.links.values():
            if mode not in link.config.modes:
                continue
            for tool_name, tool in sorted(link.tools.items()):
                name = namespaced(link.config.name, tool_name)
                if name is None:
                    continue
                about = tool.description or tool.title or tool_name
                specs.append(
                    ToolSpec(
                        name,
                        f"[MCP server {link.config.name}] {about}",
                        _schema(tool),
                        effect=tool_effect(link.config, tool_name, tool),
                        title=declared_title(tool),
                    )
                )
        return specs

    def _target(self, name: str) -> tuple[McpServerLink, str] | None:
        server, separator, tool = name.partition(NAMESPACE_SEPARATOR)
        link = self.links.get(server)
        if not separator or link is None or not link.config.allows(tool):
            return None
        return link, tool

    async def assess(self, call: ParsedToolCall, context: ToolContext) -> Assessment:
        target = self._target(call.name)
        if target is None:
            return Assessment.read_only()
        link, tool = target
        listed = link.tools.get(tool)  # (not listed now: the server is down; a change)
        if listed is not None and tool_effect(link.config, tool, listed) is ToolEffect.READ_ONLY:
            return Assessment.read_only()
        arguments = ", ".join(f"{k}={v!r}" for k, v in (call.arguments or {}).items())
        return Assessment(
            True,
            ChangePreview(
                f"Call {tool} on the MCP server {link.config.name} ({link.config.describe()}).",
                topology=(f"{tool}({arguments})"[:1000],),
            ),
        )

    async def change_steps(
        self, call: ParsedToolCall, context: ToolContext, assessment: Assessment
    ) -> ChangeSteps | None:
        """An MCP server's tool has no verified changes: ``execute`` runs every call."""
        return None

    async def execute(
        self, call: ParsedToolCall, context: ToolContext, clearance: Clearance = NOT_CLEARED
    ) -> ToolResult:
        target = self._target(call.name)
        if target is None:
            return ToolResult.error(f"There is no MCP tool {call.name!r}.")
        link, tool = target
        if context.mode not in link.config.modes:
            return ToolResult.error(f"{call.name} is not available in {context.mode.value} mode.")
        try:
            result = await link.call(tool, call.arguments or {})
        except McpToolUnavailableError as exc:
            return ToolResult.error(f"Tool {call.name} is unavailable: {exc}.", unavailable=True)
        except MCPError as exc:
            return ToolResult.error(f"{call.name} was refused: {exc.error.message}"[:2000])
        limit = link.config.max_result_chars
        text, cut = _capped(_text(result.content), limit)
        if result.is_error:
            return ToolResult.error(f"{call.name} failed: {text or 'no details'}", **cut)
        output: dict[str, Any] = {"status": "success", "content": text, **cut}
        structured = result.structured_content
        if structured is not None:
            rendered = json.dumps(structured, ensure_ascii=False, default=str)
            if len(rendered) <= limit:
                output["result"] = structured
            else:
                output["result_omitted"] = f"structured result of {len(rendered)} characters"
        return ToolResult(output)
