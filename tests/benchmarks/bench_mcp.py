"""MCP figures: a tool call through the copilot's MCP endpoint (official client, real HTTP on
127.0.0.1, both protocol eras) against the same call straight through the ``ToolGate``;
and a call to an MCP server used as a tool source (the SDK-written fake over stdio).

Run: ``python -m tests.benchmarks.bench_mcp``. Prints figures; asserts nothing. The tool
behind the endpoint is a fake that answers at once, so the figures are the MCP layer's
own cost (auth cache hit, project gate, approval setting, JSON, HTTP).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import statistics
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import Any, cast

import httpx2
import structlog
import uvicorn
from litestar import Litestar
from litestar.types import ASGIApp
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from adapters.mcp import McpEndpoint, McpServerDependencies
from adapters.web import create_web_app
from adapters.web.testing import StaticAuthenticator, StaticProjectGate
from copilot_core import AbortToken, CopilotMode, ParsedToolCall, ToolContext, ToolGate
from copilot_core.ports import ApprovalPolicy, Principal
from copilot_core.testing import FakeToolExecutor, FakeTopologySource
from tests.adapters.mcp.conftest import connected, stdio_config
from tests.fakes.copilot_service import free_port

CALLS = 200
PROJECT = "3f2a9c1e-0000-4000-8000-0000000000aa"


class _Projects:
    async def projects(self, token: str) -> Sequence[Mapping[str, Any]]:
        return [{"project_id": PROJECT, "name": "lab", "status": "opened"}]


async def _never(user_id: str) -> ApprovalPolicy:
    return ApprovalPolicy.NEVER


def _gate() -> ToolGate:
    tools = FakeToolExecutor()
    tools.add("gns3_topology_reader", lambda args, ctx: {"nodes": [], "links": []})
    return ToolGate(tools)


@contextlib.asynccontextmanager
async def _served(gate: ToolGate) -> AsyncIterator[str]:
    endpoint = McpEndpoint()
    endpoint.install(
        McpServerDependencies(
            tools=gate,
            authenticator=StaticAuthenticator({"t": Principal("u1", "bench")}),
            projects=StaticProjectGate(opened=[PROJECT]),
            directory=_Projects(),
            topology=FakeTopologySource(),
            approval=_never,
        )
    )

    @contextlib.asynccontextmanager
    async def lifespan(app: Litestar) -> AsyncIterator[None]:
        async with endpoint.running():
            yield

    app = create_web_app(lifespan=[lifespan], mounts={"/mcp": cast(ASGIApp, endpoint)})
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    task = asyncio.create_task(server.serve())
    while not server.started:
        await asyncio.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.should_exit = True
        await task


async def _timed(call: Callable[[], Awaitable[object]], n: int = CALLS) -> list[float]:
    for _ in range(5):
        await call()
    times = []
    for _ in range(n):
        started = time.perf_counter()
        await call()
        times.append(time.perf_counter() - started)
    return times


def _report(what: str, times: list[float]) -> None:
    ordered = sorted(times)
    print(
        f"{what}: median {statistics.median(ordered) * 1000:.2f} ms, "
        f"p90 {ordered[int(len(ordered) * 0.9)] * 1000:.2f} ms over {len(ordered)} calls",
        flush=True,
    )


async def main() -> None:
    gate = _gate()
    context = ToolContext(PROJECT, "u1", "s", CopilotMode.TEACHING_ASSISTANT, AbortToken())
    direct = ParsedToolCall.parse("c", "gns3_topology_reader", "{}")
    _report("ToolGate.call, no MCP", await _timed(lambda: gate.call(direct, context)))

    async with _served(gate) as url:
        for era in ("legacy", "auto"):
            async with (
                httpx2.AsyncClient(headers={"Authorization": "Bearer t"}) as http,
                Client(streamable_http_client(url, http_client=http), mode=era) as client,
            ):

                async def over_mcp(client: Client = client) -> object:
                    return await client.call_tool("gns3_topology_reader", {"project": "lab"})

                _report(f"tools/call over MCP ({client.protocol_version})", await _timed(over_mcp))

    async with connected(stdio_config("lab", tools=["echo"])) as source:
        sourced = ToolGate(source)
        echo = ParsedToolCall.parse("e", "lab__echo", json.dumps({"text": "x"}))
        _report(
            "MCP tool source (stdio fake) through the ToolGate",
            await _timed(lambda: sourced.call(echo, context)),
        )


if __name__ == "__main__":
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    logging.basicConfig(level=logging.WARNING)
    asyncio.run(main())
