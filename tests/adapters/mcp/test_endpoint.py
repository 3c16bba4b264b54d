"""The MCP endpoint's edges, without a GNS3 server: its public surface, the connection's
query options, and what it answers before it serves and outside its one path."""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import json
import threading
import types
from collections.abc import AsyncIterator
from typing import Any, cast

import httpx
import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient
from litestar.types import ASGIApp

import adapters.mcp as mcp
from adapters.mcp import ConnectionOptions, McpEndpoint, McpServerDependencies, _endpoint
from adapters.web import create_web_app
from copilot_core import CopilotMode

MCP_PATH = "/v3/copilot/mcp"
BODY = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}


def test_the_package_exports_exactly_its_public_api() -> None:
    public = {
        name
        for name in dir(mcp)  # the lazily loaded names too
        if not name.startswith("_") and not isinstance(getattr(mcp, name), types.ModuleType)
    }
    assert public == set(mcp.__all__)
    assert list(mcp.__all__) == sorted(mcp.__all__, key=lambda n: (not n.isupper(), n))


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ({}, ConnectionOptions(CopilotMode.TEACHING_ASSISTANT, None)),
        (
            {"mode": "lab_automation_assistant"},
            ConnectionOptions(CopilotMode.LAB_AUTOMATION_ASSISTANT),
        ),
        ({"project": " lab 1 "}, ConnectionOptions(CopilotMode.TEACHING_ASSISTANT, "lab 1")),
        ({"mode": "", "project": ""}, ConnectionOptions()),
    ],
)
def test_the_connection_options_come_from_the_query(
    query: dict[str, str], expected: ConnectionOptions
) -> None:
    assert ConnectionOptions.from_query(query) == expected


@pytest.mark.parametrize(
    ("query", "problem"),
    [
        ({"mode": "root"}, "mode must be one of"),
        ({"modes": "x"}, "unknown query parameter 'modes'"),
        ({"project": "p" * 300}, "at most 255"),
    ],
)
def test_bad_connection_options_say_what_is_wrong(query: dict[str, str], problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        ConnectionOptions.from_query(query)


@contextlib.asynccontextmanager
async def app_with(endpoint: McpEndpoint, *, running: bool) -> AsyncIterator[httpx.AsyncClient]:
    @contextlib.asynccontextmanager
    async def lifespan(app: Litestar) -> AsyncIterator[None]:
        if running:
            async with endpoint.running():
                yield
        else:
            yield

    app = create_web_app(lifespan=[lifespan], mounts={MCP_PATH: cast(ASGIApp, endpoint)})
    async with AsyncTestClient(app) as client:
        yield cast(httpx.AsyncClient, client)


async def test_before_it_serves_the_endpoint_answers_503() -> None:
    async with app_with(McpEndpoint(), running=True) as client:  # no dependencies installed
        response = await client.post(MCP_PATH, json=BODY)

    assert response.status_code == 503
    assert response.json()["error"] == "unavailable"


async def test_a_path_below_the_endpoint_is_not_found() -> None:
    async with app_with(McpEndpoint(), running=False) as client:
        response = await client.post(f"{MCP_PATH}/other", json=BODY)

    assert response.status_code == 404


async def test_a_request_waiting_for_the_sdk_is_answered_503_once_the_service_stops(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    release = threading.Event()

    def import_module(name: str) -> types.ModuleType:  # the SDK's load: stuck until released
        release.wait(60)
        return importlib.import_module(name)

    monkeypatch.setattr(_endpoint, "importlib", types.SimpleNamespace(import_module=import_module))
    endpoint = McpEndpoint()
    endpoint.install(cast(McpServerDependencies, object()))  # not reached before it serves
    stopping = asyncio.Event()
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": json.dumps(BODY).encode(), "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": "/", "headers": [], "query_string": b""}
    try:
        async with endpoint.running(stopping):
            request = asyncio.ensure_future(endpoint(scope, receive, send))  # type: ignore[arg-type]
            done, _ = await asyncio.wait({request}, timeout=0.2)
            assert not done  # it waits for the SDK
            stopping.set()  # the service begins to shut down: the import is not waited for
            await asyncio.wait_for(request, 30)
            assert await asyncio.wait_for(endpoint.ready(), 30) is False
    finally:
        release.set()
    assert sent[0]["status"] == 503
    assert json.loads(sent[1]["body"])["error_description"] == "The service is stopping."
