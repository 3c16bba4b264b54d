"""A Redis restart under a running service (issue 29, item 10): the client's pooled
connections are all dead, and the first command on each failed with "Connection closed by
server" (a turn refused, ``/readyz`` 503) although Redis was back. Now a command that finds
its connection closed is sent again once, on a new connection, before anything fails.

A private ``redis-server`` on a free port (the machine's, which other tests share, is never
restarted), killed and started again on the same port.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator

import pytest

from adapters.redis import RedisSessionLeases, connect_redis
from copilot_core.errors import SessionBusyError

REDIS_SERVER = shutil.which("redis-server")


class PrivateRedis:
    def __init__(self) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = int(probe.getsockname()[1])
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        assert REDIS_SERVER is not None
        self.process = subprocess.Popen(
            [REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"redis-server exited with {self.process.returncode}")
            try:
                socket.create_connection(("127.0.0.1", self.port), 0.2).close()
                return
            except OSError:
                time.sleep(0.02)
        raise RuntimeError("redis-server did not listen within 30 s")

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=30)
            self.process = None

    def restart(self) -> None:
        self.stop()
        self.start()


@pytest.fixture
def private_redis() -> Iterator[PrivateRedis]:
    if REDIS_SERVER is None:
        pytest.fail("redis-server is missing (Debian's redis-server package; .ci/run has it)")
    server = PrivateRedis()
    server.start()
    try:
        yield server
    finally:
        server.stop()


async def test_the_first_commands_after_a_restart_succeed(private_redis: PrivateRedis) -> None:
    client = await connect_redis(private_redis.url)
    try:
        await client.set("k", "before")
        private_redis.restart()
        assert await client.get("k") is None  # answered (the restart lost the key)
        private_redis.restart()
        async with client.pipeline(transaction=True) as pipe:
            pipe.set("a", "1")
            pipe.get("a")
            assert await pipe.execute() == [True, b"1"]
        private_redis.restart()
        assert await client.eval("return 7", 0) == 7  # scripts (the leases' release)
    finally:
        await client.aclose()


async def test_a_session_is_claimed_at_the_first_try_after_a_restart(
    private_redis: PrivateRedis,
) -> None:
    client = await connect_redis(private_redis.url)
    leases = RedisSessionLeases(client, prefix="restart-test")
    try:
        first = await leases.claim("p", "s1", "turn-1")
        await leases.release(first)
        private_redis.restart()
        claim = await leases.claim("p", "s1", "turn-2")  # refused once, before
        assert await leases.holder("p", "s1") == "turn-2"
        with pytest.raises(SessionBusyError):
            await leases.claim("p", "s1", "turn-3")
        await leases.release(claim)
    finally:
        await client.aclose()
