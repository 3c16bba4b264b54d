"""What ``connect_redis`` says when it cannot connect: the reason, never the password,
and the reason's own words left whole."""

from __future__ import annotations

import socket

import pytest

from adapters.redis import connect_redis
from copilot_core.errors import ServiceUnavailableError


def _port_nobody_listens_on() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize("password", ["on", "nnect", "s3cret-redis-pw"])
async def test_a_refused_connection_says_why_without_the_password_and_without_mangling_words(
    password: str,
) -> None:
    port = _port_nobody_listens_on()
    with pytest.raises(ServiceUnavailableError) as caught:
        await connect_redis(f"redis://:{password}@127.0.0.1:{port}/0", connect_timeout=2)
    message = caught.value.message
    assert f"Cannot connect to Redis at redis://127.0.0.1:{port}/0" in message
    assert "onnect" in message.removeprefix("Cannot connect"), message  # "connecting"
    assert "***" not in message, message
    assert f":{password}@" not in message
