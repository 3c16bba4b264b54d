"""Serving an ASGI app on 127.0.0.1 for benchmarks, in this process or in a child one.

* :func:`serve`: uvicorn on a free loopback port inside the running event loop.
* :class:`ServerProcess`: a benchmark module started as a child process that serves
  an app and prints ``READY <json>`` (with its port) on stdout; the parent talks to it
  over HTTP and reads its peak RSS from ``/proc`` before stopping it. The child dies
  with the benchmark, even when that is killed from outside.
* :func:`sse_until`: read an SSE response with httpx-sse until an event type shows up.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
from collections.abc import AsyncIterator, Callable, Collection
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from httpx_sse import EventSource

from tests.fakes.lifeline import die_with_parent

__all__ = [
    "ServerProcess",
    "announce_ready",
    "peak_rss_kib",
    "serve",
    "sse_until",
    "wait_for_stop",
]


@contextlib.asynccontextmanager
async def serve(app: Any) -> AsyncIterator[int]:
    """Run ``app`` with uvicorn on 127.0.0.1 (a free port, yielded) until the block ends."""
    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=0,
        log_config=None,
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=2,
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    for _ in range(1000):
        if server.started:
            break
        if task.done():
            task.result()
        await asyncio.sleep(0.01)
    else:
        raise TimeoutError("uvicorn did not start within 10 s")
    try:
        yield int(server.servers[0].sockets[0].getsockname()[1])
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 10)


def announce_ready(info: dict[str, Any]) -> None:
    """What a child server prints once it listens (read by :class:`ServerProcess`)."""
    print("READY " + json.dumps(info), flush=True)


async def wait_for_stop() -> None:
    """Block until SIGTERM or SIGINT (a child server's main loop)."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()


def peak_rss_kib(pid: int | str = "self") -> int:
    """The process's peak resident set size (``VmHWM``), in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


class ServerProcess:
    """``python -m <module> <args>`` as a child that serves HTTP on 127.0.0.1.

    ``async with ServerProcess(...) as server``: ``server.info`` is what the child
    announced (``port`` at least), ``server.base_url`` its address.
    """

    def __init__(self, module: str, *args: str, start_timeout: float = 120.0) -> None:
        self.argv = [sys.executable, "-m", module, *args]
        self.start_timeout = start_timeout
        self.info: dict[str, Any] = {}
        self._process: asyncio.subprocess.Process | None = None

    @property
    def pid(self) -> int:
        assert self._process is not None
        return self._process.pid

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.info['port']}"

    def peak_rss_kib(self) -> int:
        return peak_rss_kib(self.pid)

    async def __aenter__(self) -> ServerProcess:
        self._process = await asyncio.create_subprocess_exec(
            *self.argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
            # A benchmark killed from outside (a time limit) takes its servers with it.
            preexec_fn=die_with_parent(signal.SIGKILL),
        )
        assert self._process.stdout is not None
        async with asyncio.timeout(self.start_timeout):
            while True:
                line = await self._process.stdout.readline()
                if not line:
                    raise RuntimeError(f"{' '.join(self.argv)} exited before it was ready")
                if line.startswith(b"READY "):
                    self.info = json.loads(line[6:])
                    return self

    async def __aexit__(self, *exc: object) -> None:
        process = self._process
        if process is None or process.returncode is not None:
            return
        process.send_signal(signal.SIGTERM)
        try:
            async with asyncio.timeout(15):
                await process.wait()
        except TimeoutError:
            process.kill()
            await process.wait()


async def sse_until(
    response: httpx.Response,
    stop: Collection[str] = ("done",),
    on_event: Callable[[dict[str, Any]], None] | None = None,
    limit: int = 1_000_000,
) -> int:
    """Read SSE events (httpx-sse) until one whose ``type`` is in ``stop``; returns how
    many were read. ``on_event`` sees every decoded event."""
    count = 0
    async for sse in EventSource(response).aiter_sse():
        event = json.loads(sse.data)
        count += 1
        if on_event is not None:
            on_event(event)
        if event.get("type") in stop or count >= limit:
            return count
    raise RuntimeError(f"the stream ended without any of {sorted(stop)}")
