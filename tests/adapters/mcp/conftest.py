"""MCP servers for the MCP adapter's tests: the SDK-written fake of ``tests/fakes``, as a
real child process (stdio) or a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator, Mapping
from pathlib import Path
from typing import Any

import httpx

from adapters.mcp import McpServerConfig, McpToolSource
from tests.fakes.copilot_service import free_port
from tests.fakes.lifeline import die_with_parent

ROOT = Path(__file__).resolve().parents[3]
FAKE = [sys.executable, "-m", "tests.fakes.mcp_server"]


def stdio_config(name: str = "lab", **fields: Any) -> McpServerConfig:
    return McpServerConfig.model_validate(
        {
            "name": name,
            "transport": "stdio",
            "command": [*FAKE, "stdio"],
            "cwd": str(ROOT),
            "tools": ["*"],
            # A Python child that imports the MCP SDK took over 10 s (the default) to list
            # its tools on a 2-core machine at load 12; the wait ends once it answers.
            "connect_timeout": 120.0,
            **fields,
        }
    )


@contextlib.asynccontextmanager
async def connected(
    *configs: McpServerConfig, within: float = 150.0
) -> AsyncIterator[McpToolSource]:
    """A started source whose every server has either connected or failed once."""
    source = McpToolSource(configs, retry_min=0.2, retry_max=1.0)
    await source.start()
    try:
        for link in source.links.values():
            await link.wait_for({"up", "down"}, within)
        yield source
    finally:
        await source.aclose()


class HttpFake:
    """The fake served over Streamable HTTP by a child process, stoppable and restartable
    on the same port."""

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.env = dict(env or {})
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> HttpFake:
        import os

        self.process = subprocess.Popen(
            [*FAKE, "http", str(self.port)],
            cwd=ROOT,
            env={**os.environ, **self.env},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=die_with_parent(signal.SIGKILL),
        )
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            assert self.process.poll() is None, "the fake MCP server exited"
            with contextlib.suppress(httpx.TransportError):
                httpx.get(f"http://127.0.0.1:{self.port}/", timeout=1)
                return self
            time.sleep(0.05)
        raise AssertionError("the fake MCP server did not listen")

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            process.kill()
            process.wait(timeout=10)


@contextlib.contextmanager
def http_fake(env: Mapping[str, str] | None = None) -> Iterator[HttpFake]:
    fake = HttpFake(env).start()
    try:
        yield fake
    finally:
        fake.stop()
