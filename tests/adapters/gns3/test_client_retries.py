"""GNS3 unreachable or flaky: the client retries what is safe to send again (over real
loopback connections), with backoff and jitter, in bounded time, and never sends a POST,
PUT or DELETE twice once it may have reached GNS3."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest

from adapters.gns3 import Gns3Client
from copilot_core.errors import Gns3UnavailableError

PROJECT = "0f1e2d3c-4b5a-4697-8887-a6b5c4d3e2f1"


@dataclass
class FlakyGns3:
    """A loopback HTTP server: the first ``drops`` requests are read whole, then the
    connection is closed without an answer (as a GNS3 that crashed mid-request would);
    later ones get 200 with a JSON body."""

    drops: int = 0
    seen: list[str] = field(default_factory=list)
    port: int = 0

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            length = next(
                (
                    int(line.split(":", 1)[1])
                    for line in lines
                    if line.lower().startswith("content-length:")
                ),
                0,
            )
            if length:
                await reader.readexactly(length)
            self.seen.append(lines[0])
            if len(self.seen) <= self.drops:
                writer.transport.abort()
                return
            body = json.dumps({"version": "3.0.6", "project_id": PROJECT, "status": "opened"})
            writer.write(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                b"Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(body), body.encode())
            )
            await writer.drain()
        finally:
            writer.close()


@contextlib.asynccontextmanager
async def flaky(drops: int, port: int = 0) -> AsyncIterator[FlakyGns3]:
    state = FlakyGns3(drops)
    server = await asyncio.start_server(state.handle, "127.0.0.1", port)
    state.port = server.sockets[0].getsockname()[1]
    try:
        yield state
    finally:
        server.close()
        await server.wait_closed()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def client(port: int, **options: float) -> Gns3Client:
    return Gns3Client(f"http://127.0.0.1:{port}", timeout=5.0, **options)  # type: ignore[arg-type]


async def test_a_get_whose_connection_broke_is_retried_and_succeeds() -> None:
    async with flaky(drops=2) as gns3, client(gns3.port) as gns3_client:
        version = await gns3_client.version()
    assert version["version"] == "3.0.6"
    assert gns3.seen == ["GET /v3/version HTTP/1.1"] * 3


async def test_a_get_succeeds_once_gns3_comes_back_within_the_retry_time() -> None:
    port = free_port()

    async def start_later() -> AsyncIterator[FlakyGns3]:
        await asyncio.sleep(0.3)
        async with flaky(drops=0, port=port) as gns3:
            yield gns3

    starter = start_later()
    async with client(port, retries=20, retry_within=5.0, retry_backoff=0.1) as gns3_client:
        restarting = asyncio.ensure_future(anext(starter))
        project = await gns3_client.project("token", PROJECT)
        await restarting
    assert project["status"] == "opened"
    await starter.aclose()


@pytest.mark.parametrize(
    ("method", "call"),
    [
        ("POST", lambda c: c.close_project("token", PROJECT)),
        ("PUT", lambda c: c.update_node("token", PROJECT, "n1", name="R1")),
        ("DELETE", lambda c: c.delete_project("token", PROJECT)),
    ],
)
async def test_a_write_that_may_have_reached_gns3_is_never_sent_twice(method: str, call) -> None:  # type: ignore[no-untyped-def]
    async with flaky(drops=1) as gns3, client(gns3.port) as gns3_client:
        with pytest.raises(Gns3UnavailableError) as caught:
            await call(gns3_client)
    assert [line.split()[0] for line in gns3.seen] == [method]
    assert caught.value.status_code is None and caught.value.retry_after == 5
    assert "cannot be reached" in caught.value.message


async def test_unreachable_gns3_fails_within_the_bounded_retry_time(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="adapters.gns3.rest._gns3_http")
    port = free_port()  # nothing listens there
    async with client(port, retries=50, retry_within=1.0, retry_backoff=0.05) as gns3_client:
        with pytest.raises(Gns3UnavailableError) as caught:
            await gns3_client.create_project("token", "lab")  # not sent: safe to retry
    assert caught.value.status_code is None and caught.value.retry_after == 5
    assert f"GNS3 at http://127.0.0.1:{port} cannot be reached (ConnectError)" in (
        caught.value.message
    )
    # Each retry is logged with the sleep before it. A sleep is decided only while less
    # than retry_within has passed, and the sleeps before it took at least their length:
    # so all but the last fit in that second (to the log's rounding), and the last is at
    # most the backoff's 2 s. Not the 50 retries allowed: the time bound stopped them.
    sleeps = [float(s) for s in re.findall(r"retry \d+ in ([0-9.]+) s", caplog.text)]
    assert 1 <= len(sleeps) < 50, sleeps
    assert sum(sleeps[:-1]) < 1.0 + 0.005 * len(sleeps), sleeps
    assert sleeps[-1] <= 2.0


async def test_a_write_whose_connection_was_refused_is_retried(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="adapters.gns3.rest._gns3_http")
    port = free_port()

    async def start_later() -> AsyncIterator[FlakyGns3]:
        await asyncio.sleep(0.3)
        async with flaky(drops=0, port=port) as gns3:
            yield gns3

    starter = start_later()
    async with client(port, retries=20, retry_within=5.0, retry_backoff=0.1) as gns3_client:
        restarting = asyncio.ensure_future(anext(starter))
        await gns3_client.close_project("token", PROJECT)
        gns3 = await restarting
    assert gns3.seen == [f"POST /v3/projects/{PROJECT}/close HTTP/1.1"]  # sent once, when up
    assert "retry 1" in caplog.text
    await starter.aclose()


@pytest.mark.parametrize("stream", ["project", "controller"])
async def test_a_notification_stream_cut_mid_way_is_gns3_unavailable(stream: str) -> None:
    """GNS3 stops in the middle of a notification stream: the events already sent are
    delivered, then the broken connection is Gns3UnavailableError (not an httpx error)."""
    event = {"action": "node.updated", "event": {"node_id": "n1", "status": "started"}}

    async def cut_after_one_event(
        reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        await reader.readuntil(b"\r\n\r\n")
        line = json.dumps(event).encode() + b"\n"
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n" % (len(line), line)
        )
        await writer.drain()
        await asyncio.sleep(0.05)
        writer.transport.abort()  # mid-stream: no final chunk

    server = await asyncio.start_server(cut_after_one_event, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    received: list[object] = []
    try:
        async with client(port) as gns3_client, asyncio.timeout(10):
            events = (
                gns3_client.notifications("token", PROJECT)
                if stream == "project"
                else gns3_client.controller_notifications("token")
            )
            with pytest.raises(Gns3UnavailableError) as caught:
                async for item in events:
                    received.append(item)
    finally:
        server.close()
        await server.wait_closed()
    assert received == [event]
    assert caught.value.retry_after == 5
    assert f"notification stream from GNS3 at http://127.0.0.1:{port} failed" in (
        caught.value.message
    )
