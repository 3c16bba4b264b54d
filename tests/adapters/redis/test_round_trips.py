"""What the Redis ports send, write by write: the commands asked during one pass of the
event loop go out as one write, in order, each caller getting its own reply (or error);
a script Redis does not know is sent again with its text; and a turn costs four round
trips besides its events: the claim, the log's open with the relay's attach, the detach
with the release, the close (which carries the last events).

Every write to Redis is seen where redis-py sends it (``send_packed_command``), on the
real server."""

from __future__ import annotations

import asyncio
import hashlib
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
import redis.asyncio as aioredis
from redis.asyncio.connection import AbstractConnection
from redis.exceptions import ResponseError

from adapters.redis import _leases, _scripts
from adapters.redis._commands import Commands
from copilot_core import BuiltinAgent, ModelSelection, TurnRequest
from copilot_core.bootstrap import build_chat_service
from copilot_core.testing import (
    FakeToolExecutor,
    InMemoryCheckpointStore,
    ScriptedLanguageModel,
    SequentialIds,
    StaticModelProvider,
    SteppingClock,
    text_reply,
)
from tests.adapters.redis.replica import Replica
from tests.real_redis import RedisForTests

Write = list[tuple[str, str]]  # (command, its first argument) per command of one write


def _commands(packed: Any) -> Write:
    """The commands of one write (RESP arrays), each as its name and first argument."""
    data = bytes(packed) if isinstance(packed, bytes | bytearray) else b"".join(map(bytes, packed))
    found: Write = []
    at = 0
    while at < len(data):
        end = data.index(b"\r\n", at)
        count, at = int(data[at + 1 : end]), end + 2
        parts: list[bytes] = []
        for _ in range(count):
            end = data.index(b"\r\n", at)
            size, at = int(data[at + 1 : end]), end + 2
            parts.append(data[at : at + size])
            at += size + 2
        found.append((parts[0].decode().upper(), parts[1].decode() if len(parts) > 1 else ""))
    return found


@pytest.fixture
def writes(monkeypatch: pytest.MonkeyPatch) -> list[Write]:
    """Every write to Redis from now on."""
    seen: list[Write] = []
    send = AbstractConnection.send_packed_command

    async def recorded(self: AbstractConnection, command: Any, check_health: bool = True) -> None:
        seen.append(_commands(command))
        await send(self, command, check_health)

    monkeypatch.setattr(AbstractConnection, "send_packed_command", recorded)
    return seen


@pytest.fixture
async def client(redis_server: RedisForTests) -> AsyncIterator[aioredis.Redis]:
    async with redis_server.client() as client:
        await client.ping()  # connected before anything is counted
        yield client


async def test_commands_asked_at_once_go_out_in_one_write_in_order(
    client: aioredis.Redis, writes: list[Write]
) -> None:
    commands = Commands.of(client)
    key = f"{RedisForTests.new_prefix()}:n"
    double = commands.script("return redis.call('INCRBY', KEYS[1], ARGV[1])")
    await double(keys=[key], args=[0])  # Redis knows the script from now on
    writes.clear()
    try:
        replies = await asyncio.gather(
            commands.command("INCR", key),
            double(keys=[key], args=[10]),
            commands.command("INCR", key),
            commands.command("GET", key),
        )
        sent = [[name for name, _ in write] for write in writes]
    finally:
        await client.delete(key)
    assert replies == [1, 11, 12, b"12"]
    assert sent == [["INCR", "EVALSHA", "INCR", "GET"]]
    assert Commands.of(client) is commands  # the turn ports on one client share it


async def test_a_command_that_fails_fails_alone(client: aioredis.Redis) -> None:
    commands = Commands.of(client)
    key = f"{RedisForTests.new_prefix()}:h"
    await client.hset(key, "field", "value")
    try:
        wrong, right = await asyncio.gather(
            commands.command("INCR", key), commands.command("HGET", key, "field"),
            return_exceptions=True,
        )  # fmt: skip
    finally:
        await client.delete(key)
    assert isinstance(wrong, ResponseError) and "WRONGTYPE" in str(wrong)
    assert right == b"value"


async def test_a_script_redis_does_not_know_is_sent_again_with_its_text(
    client: aioredis.Redis, writes: list[Write]
) -> None:
    # A script text of this test's own: no one loaded it (as after a restart of Redis).
    marker = uuid.uuid4().hex
    script = Commands.of(client).script(f"return '{marker}'")
    assert await script(keys=[], args=[]) == marker.encode()
    assert [[name for name, _ in write] for write in writes] == [["EVALSHA"], ["EVAL"]]
    writes.clear()
    assert await script(keys=[], args=[]) == marker.encode()
    assert [[name for name, _ in write] for write in writes] == [["EVALSHA"]]


_NAMES = {
    hashlib.sha1(text.encode()).hexdigest(): name
    for name, text in {
        "open": _scripts.LOG_OPEN,
        "append": _scripts.LOG_APPEND,
        "close": _scripts.LOG_CLOSE,
        "attach": _scripts.CONTROL_ATTACH,
        "detach": _scripts.CONTROL_DETACH,
        "release": _leases._RELEASE,
    }.items()
}


def _handshake(write: list[str]) -> bool:
    return bool(write) and all(name in {"HELLO", "CLIENT", "AUTH", "SELECT"} for name in write)


async def test_a_turn_costs_four_round_trips_besides_its_events(
    client: aioredis.Redis, writes: list[Write]
) -> None:
    prefix = RedisForTests.new_prefix()
    replica = Replica.on(client, prefix=prefix, name="r1")
    await replica.start()
    model = ScriptedLanguageModel(default=text_reply("OSPF is up on R1."))
    clock, ids = SteppingClock(), SequentialIds()
    chat = build_chat_service(
        InMemoryCheckpointStore(),
        {"copilot": BuiltinAgent(FakeToolExecutor(), None, clock=clock, ids=ids)},
        models=StaticModelProvider(ModelSelection(model)),
        clock=clock,
        ids=ids,
        turn_log=replica.log,
        leases=replica.leases,
        controls=replica.relay,
    )
    try:
        per_turn: list[list[list[str]]] = []
        for _ in range(3):  # the first makes Redis learn the scripts
            writes.clear()
            turn = await chat.start_turn(TurnRequest("project-1", "alice", "Is OSPF up?"))
            async with asyncio.timeout(10):
                assert [event.type async for event in turn.subscribe()][-1] == "done"
            named = [[_NAMES.get(arg, name) for name, arg in write] for write in writes]
            # The events' appends aside, and a new pooled connection's hand-shake (once
            # per connection, not per turn: one is opened when an append is in flight
            # as the next write goes out, as happens on a loaded machine).
            per_turn.append(
                [write for write in named if write != ["append"] and not _handshake(write)]
            )
    finally:
        await chat.shutdown(grace=2)
        await replica.stop()
        await RedisForTests.delete_prefix(client, prefix)
    assert per_turn[1:] == [[["SET"], ["open", "attach"], ["detach", "release"], ["close"]]] * 2
