"""Two ``gns3-copilot serve`` processes sharing PostgreSQL and Redis; one is SIGKILLed
mid-turn.

A turn runs on replica A; its client re-attaches on replica B (``Last-Event-ID``), then A
is killed (SIGKILL: nothing is closed, nothing is said). Once A's lease expires (a short
one here, ``COPILOT_TURN_LEASE``), B ends the turn for its client with ``error`` (code
``replica_lost``) then ``done``; the history holds the user's message and the answer
saved so far (a draft, marked partial), and the session takes a new turn on B.

Everything is real: the two services are subprocesses, GNS3 is a real gns3-server, the
LLM the scripted OpenAI-compatible server over HTTP (streaming slowly), the database a
schema of its own on the machine's PostgreSQL, Redis a key prefix of its own.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis
from cryptography.fernet import Fernet
from httpx_sse import EventSource, ServerSentEvent

from tests.fakes.copilot_service import ServedCopilot, serve_copilot
from tests.fakes.gns3_server import RealGns3Server
from tests.fakes.load import configure_llm
from tests.fakes.openai_server import Reply, ScriptedOpenAIServer
from tests.real_postgres import PostgresForTests
from tests.real_redis import RedisForTests

pytestmark = [pytest.mark.timeout(300), pytest.mark.gns3, pytest.mark.slow]

API_KEY = "sk-replicas-killed-7Hq2"
#: Seconds after which B may end the turn of a replica that stopped renewing its lease.
LEASE = 3
#: A bound, not a measure: B's stream must end well within it once A is dead.
ENDED_WITHIN = 60.0
ANSWER = "An OSPF adjacency needs matching hello and dead timers, MTU and area. " * 60


def replica_env(
    postgres: PostgresForTests, schema: str, redis: RedisForTests, prefix: str, key: str
) -> dict[str, str]:
    return {
        "COPILOT_DATABASE_URL": postgres.url,
        "COPILOT_DATABASE_SCHEMA": schema,
        "COPILOT_REDIS_URL": redis.url,
        "COPILOT_REDIS_PREFIX": prefix,
        "COPILOT_SECRET_KEY": key,
        "COPILOT_TURN_LEASE": str(LEASE),
        # Save the streamed answer often, so that some of it is saved before the kill.
        "COPILOT_CHAT__DRAFT_INTERVAL": "0.2",
        "COPILOT_HEARTBEAT_INTERVAL": "1",
    }


@pytest.fixture
def lab(gns3_server: RealGns3Server) -> Iterator[tuple[str, str]]:
    with gns3_server.scratch_project("replicas-killed") as made:
        yield made


@pytest.fixture
def redis_prefix(redis_server: RedisForTests) -> Iterator[str]:
    prefix = redis_server.new_prefix()
    yield prefix
    client = redis.Redis.from_url(redis_server.url)
    try:
        keys = list(client.scan_iter(match=f"{prefix}:*", count=500))
        if keys:
            client.delete(*keys)
    finally:
        client.close()


def kind(sse: ServerSentEvent) -> str:
    return str(json.loads(sse.data)["type"])


def seq(sse: ServerSentEvent) -> int:
    return int(sse.id.rsplit(":", 1)[1])


def log_tail(*replicas: ServedCopilot) -> str:
    return "\n".join(f"--- {r.url}\n{r.log.read_text()[-3000:]}" for r in replicas)


def test_a_replica_killed_mid_turn_is_ended_on_the_other_and_the_session_goes_on(
    gns3_server: RealGns3Server,
    lab: tuple[str, str],
    postgres: PostgresForTests,
    postgres_schema: str,
    redis_server: RedisForTests,
    redis_prefix: str,
    tmp_path: Path,
) -> None:
    project, token = lab
    env = replica_env(
        postgres, postgres_schema, redis_server, redis_prefix, Fernet.generate_key().decode()
    )
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    headers = {"Authorization": f"Bearer {token}"}
    with (
        ScriptedOpenAIServer(api_key=API_KEY, default=Reply(text="OSPF")) as llm,
        serve_copilot(gns3_server.url, tmp_path / "a", env=env) as a,
        serve_copilot(gns3_server.url, tmp_path / "b", env=env) as b,
    ):
        llm.add(Reply(text=ANSWER, chunk=4, token_delay=0.02))  # ~25 s of tokens
        configure_llm(a.url, token, llm.base_url, API_KEY)
        chat = f"/v3/copilot/projects/{project}/chat"
        seen_on_a: list[ServerSentEvent] = []
        with (
            httpx.Client(base_url=a.url, headers=headers, timeout=30) as on_a,
            httpx.Client(base_url=b.url, headers=headers, timeout=30) as on_b,
        ):
            with on_a.stream("POST", chat + "/stream", json={"message": "Why no adjacency?"}) as r:
                assert r.status_code == 200, r.read()
                session_id = r.headers["x-session-id"]
                streamed = ""
                for sse in EventSource(r).iter_sse():
                    if kind(sse) == "heartbeat":
                        continue
                    seen_on_a.append(sse)
                    if kind(sse) == "content":
                        streamed += json.loads(sse.data)["content"]
                    # Enough for a few drafts (one every 0.2 s) to be saved.
                    if len(streamed) >= 300:
                        break
                assert kind(seen_on_a[-1]) == "content", [kind(s) for s in seen_on_a]
                # The client lost A's connection: it re-attaches on B from where it was.
                seen_on_b: list[ServerSentEvent] = []
                with on_b.stream(
                    "GET",
                    f"{chat}/sessions/{session_id}/stream",
                    headers={"Last-Event-ID": seen_on_a[-1].id},
                ) as resumed:
                    assert resumed.status_code == 200, resumed.read()
                    events = EventSource(resumed).iter_sse()
                    for sse in events:  # B follows the turn live, A still runs it
                        if kind(sse) != "heartbeat":
                            seen_on_b.append(sse)
                        if len(seen_on_b) == 3:
                            break
                    a.process.kill()  # SIGKILL: no lease released, nothing said
                    a.process.wait(10)
                    killed = time.monotonic()
                    for sse in events:
                        if kind(sse) != "heartbeat":
                            seen_on_b.append(sse)
                        if kind(sse) == "done":
                            break
                        assert time.monotonic() - killed < ENDED_WITHIN, log_tail(b)
            assert seen_on_b, log_tail(a, b)
            kinds = [kind(sse) for sse in seen_on_b]
            assert kinds[-2:] == ["error", "done"], (kinds, log_tail(b))
            assert set(kinds[:-2]) <= {"content"}, kinds
            error = json.loads(seen_on_b[-2].data)
            assert error["code"] == "replica_lost", error
            # B went on where the client was: no gap, no repeat, up to the end.
            seqs = [seq(sse) for sse in seen_on_b]
            assert seqs == list(range(seq(seen_on_a[-1]) + 1, seqs[-1] + 1)), seqs
            streamed_on_b = "".join(
                json.loads(sse.data)["content"] for sse in seen_on_b if kind(sse) == "content"
            )
            assert ANSWER.startswith(streamed + streamed_on_b)

            # The history is valid: the user's message, then what A saved of the answer.
            history = on_b.get(f"{chat}/sessions/{session_id}/history")
            assert history.status_code == 200, history.text
            messages: list[dict[str, Any]] = history.json()["messages"]
            assert [m["role"] for m in messages] == ["user", "assistant"], messages
            assert messages[0]["content"] == "Why no adjacency?"
            answer = messages[1]
            assert answer["content"] and ANSWER.startswith(answer["content"]), answer
            assert answer["metadata"].get("partial") is True, answer["metadata"]
            assert not answer.get("tool_calls")
            assert history.json()["message_count"] == 2

            # The session takes a new turn on B, at once (the lease is gone).
            llm.add(Reply(text="Check the MTU on both ends."))
            again = on_b.post(
                chat + "/stream",
                json={"message": "What first?", "session_id": session_id, "stream": False},
            )
            assert again.status_code == 200, again.text
            assert again.json()["content"] == "Check the MTU on both ends.", (
                again.json(),
                log_tail(b),
            )
            after = on_b.get(f"{chat}/sessions/{session_id}/history").json()
            roles = [m["role"] for m in after["messages"]]
            assert roles == ["user", "assistant", "user", "assistant"], roles
            assert after["messages"][3]["content"] == "Check the MTU on both ends."
            assert after["message_count"] == 4
    # Both replicas kept their turns under the prefix they were given.
    with redis.Redis.from_url(redis_server.url) as client:
        assert any(True for _ in client.scan_iter(match=f"{redis_prefix}:turn:*", count=500))
