"""Two replicas of the service sharing PostgreSQL and Redis, over real HTTP: a turn
started on A is re-attached, refused a second turn, and aborted on B; the history is
valid after; an approval asked by a turn on A is shown again and decided on B;
``/readyz`` checks Redis; a Redis that cannot be used stops the start-up.

Both replicas are the real app (container, PostgreSQL store, Redis turn log) on uvicorn
in this process; GNS3 is faked (authenticator, project gate, topology) and the LLM is
the scripted OpenAI server over HTTP, streaming slowly.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from httpx_sse import EventSource, ServerSentEvent

from entrypoints import Settings
from tests.api.test_postgres_service import SECRET_KEY, _client, _replica
from tests.fakes.openai_server import Reply, ScriptedOpenAIServer, ToolCallScript
from tests.real_postgres import PostgresForTests
from tests.real_redis import RedisForTests

ROOT = Path(__file__).resolve().parents[2]
PROJECT = str(uuid.UUID(int=42))  # the project the fake gate opens (test_postgres_service)
API_KEY = "sk-replicas-5Jq8uV2wX9yZ1a"
ANSWER = "OSPF adjacency needs matching MTU, hello and dead timers on both ends. " * 3


def _settings(
    postgres: PostgresForTests, schema: str, redis: RedisForTests, data_dir: Path
) -> Settings:
    return Settings(
        data_dir=data_dir,
        port=0,
        gns3={"url": "http://127.0.0.1:9"},
        database_url=postgres.url,
        database_schema=schema,
        secret_key=SECRET_KEY,
        redis_url=redis.url,
        shutdown_grace=2,
    )


async def _events(response: httpx.Response) -> AsyncIterator[ServerSentEvent]:
    async for sse in EventSource(response).aiter_sse():
        yield sse


async def test_a_turn_started_on_one_replica_is_followed_refused_and_aborted_on_the_other(
    postgres: PostgresForTests, postgres_schema: str, redis_server: RedisForTests, tmp_path: Path
) -> None:
    slow = Reply(text=ANSWER, chunk=2, token_delay=0.03)
    with ScriptedOpenAIServer(api_key=API_KEY, default=Reply(text="OSPF")) as llm:
        llm.add(slow)
        async with (
            _replica(_settings(postgres, postgres_schema, redis_server, tmp_path / "a")) as a,
            _replica(_settings(postgres, postgres_schema, redis_server, tmp_path / "b")) as b,
            _client(a) as on_a,
            _client(b) as on_b,
        ):
            ready = await on_b.get("/readyz")
            assert ready.json()["checks"]["turn_log"] == "ok"
            put = await on_a.put(
                "/v3/copilot/llm-config",
                json={
                    "provider": "openai",
                    "model": "gpt-test",
                    "base_url": llm.base_url,
                    "api_key": API_KEY,
                },
            )
            assert put.status_code == 200, put.text
            chat = f"/v3/copilot/projects/{PROJECT}/chat"
            seen_on_a: list[Any] = []
            async with on_a.stream("POST", chat + "/stream", json={"message": "Why?"}) as first:
                session_id = first.headers["x-session-id"]
                events = _events(first)
                async for sse in events:
                    seen_on_a.append(sse)
                    if len(seen_on_a) == 4:
                        break
                # Double-texting on B: the session is busy across replicas.
                busy = await on_b.post(
                    chat + "/stream", json={"message": "again", "session_id": session_id}
                )
                assert busy.status_code == 409, busy.text
                # Re-attach on B from the last event A's client saw.
                async with on_b.stream(
                    "GET",
                    f"{chat}/sessions/{session_id}/stream",
                    headers={"Last-Event-ID": seen_on_a[-1].id},
                ) as resumed:
                    assert resumed.status_code == 200
                    seen_on_b: list[Any] = []
                    async for sse in _events(resumed):
                        seen_on_b.append(sse)
                        if len(seen_on_b) == 3:
                            aborted = await on_b.post(f"{chat}/sessions/{session_id}/abort")
                            assert aborted.status_code == 200, aborted.text
                            assert aborted.json()["aborted"] is True
                        if json.loads(sse.data)["type"] == "done":
                            break
                async for sse in events:  # A's client sees the same end
                    seen_on_a.append(sse)
                    if json.loads(sse.data)["type"] == "done":
                        break

            def kinds(items: list[Any]) -> list[str]:
                return [json.loads(item.data)["type"] for item in items]

            def seqs(items: list[Any]) -> list[int]:
                return [int(item.id.rsplit(":", 1)[1]) for item in items]

            assert kinds(seen_on_b)[-2:] == ["abort", "done"]
            assert kinds(seen_on_a)[-2:] == ["abort", "done"]
            # B went on exactly where A's client stopped: no gap, no repeat.
            assert seqs(seen_on_b)[0] == seqs(seen_on_a)[3] + 1
            assert seqs(seen_on_b) == list(range(seqs(seen_on_b)[0], seqs(seen_on_b)[-1] + 1))
            assert seqs(seen_on_a)[-1] == seqs(seen_on_b)[-1]
            history = await on_b.get(f"{chat}/sessions/{session_id}/history")
            messages = history.json()["messages"]
            assert [m["role"] for m in messages] == ["user", "assistant"]
            assert messages[1]["metadata"].get("aborted") is True
            assert ANSWER.startswith(messages[1]["content"])
            # The session takes a new turn on B now.
            llm.add(Reply(text="Next answer."))
            again = await on_b.post(
                chat + "/stream",
                json={"message": "and now?", "session_id": session_id, "stream": False},
            )
            assert again.status_code == 200, again.text
            assert again.json()["content"] == "Next answer."


async def test_an_approval_asked_by_a_turn_on_one_replica_is_decided_on_the_other(
    postgres: PostgresForTests, postgres_schema: str, redis_server: RedisForTests, tmp_path: Path
) -> None:
    create = ToolCallScript(
        "create_gns3_node", {"nodes": [{"template_name": "VPCS", "name": "PC1"}]}
    )
    with ScriptedOpenAIServer(api_key=API_KEY, default=Reply(text="Adding PC1")) as llm:
        llm.add(Reply(tool_calls=[create]), Reply(text="Understood: no PC1 for now."))
        async with (
            _replica(_settings(postgres, postgres_schema, redis_server, tmp_path / "a")) as a,
            _replica(_settings(postgres, postgres_schema, redis_server, tmp_path / "b")) as b,
            _client(a) as on_a,
            _client(b) as on_b,
        ):
            put = await on_a.put(
                "/v3/copilot/llm-config",
                json={"provider": "openai", "model": "gpt-test", "base_url": llm.base_url,
                      "api_key": API_KEY},
            )  # fmt: skip
            assert put.status_code == 200, put.text
            chat = f"/v3/copilot/projects/{PROJECT}/chat"
            seen_on_a: list[Any] = []
            async with on_a.stream("POST", chat + "/stream", json={"message": "Add PC1"}) as first:
                session_id = first.headers["x-session-id"]
                events = _events(first)
                async for sse in events:
                    seen_on_a.append(sse)
                    if json.loads(sse.data)["type"] == "approval_required":
                        break
                asked = json.loads(seen_on_a[-1].data)
                decide = f"{chat}/sessions/{session_id}/approvals/{asked['approval_id']}"
                # A client that lost A re-attaches on B after the request: shown again.
                async with on_b.stream(
                    "GET",
                    f"{chat}/sessions/{session_id}/stream",
                    headers={"Last-Event-ID": seen_on_a[-1].id},
                ) as resumed:
                    assert resumed.status_code == 200
                    on_b_events = _events(resumed)
                    again = await anext(on_b_events)
                    assert again.id == seen_on_a[-1].id
                    assert json.loads(again.data)["approval_id"] == asked["approval_id"]
                    decided = await on_b.post(
                        decide, json={"decision": "reject", "comment": "not on this lab"}
                    )
                    assert decided.status_code == 200, decided.text
                    assert decided.json()["decision"] == "reject"
                    for client in (on_b, on_a):  # a second decision, from either replica
                        twice = await client.post(decide, json={"decision": "approve"})
                        assert twice.status_code == 409, twice.text
                    seen_on_b = [again]
                    async for sse in on_b_events:
                        seen_on_b.append(sse)
                        if json.loads(sse.data)["type"] == "done":
                            break
                async for sse in events:  # the turn on A goes on with B's decision
                    seen_on_a.append(sse)
                    if json.loads(sse.data)["type"] == "done":
                        break
            history = await on_b.get(f"{chat}/sessions/{session_id}/history")

    def data(items: list[Any], kind: str) -> dict[str, Any]:
        return next(d for d in (json.loads(i.data) for i in items) if d["type"] == kind)

    for seen in (seen_on_a, seen_on_b):
        resolved = data(seen, "approval_resolved")
        assert (resolved["decision"], resolved["by"], resolved["comment"]) == (
            "reject",
            "u-alice",
            "not on this lab",
        )
        assert data(seen, "tool_end")["status"] == "rejected"
    assert seen_on_a[-1].id == seen_on_b[-1].id
    messages = history.json()["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "assistant"]
    assert messages[3]["content"] == "Understood: no PC1 for now."
    assert data(seen_on_b, "done")["message_id"] == messages[3]["id"]
    approval = messages[2]["metadata"]["approval"]
    assert (approval["decision"], approval["by"], approval["comment"]) == (
        "reject",
        "u-alice",
        "not on this lab",
    )


def _serve(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("COPILOT_")}
    return subprocess.run(
        [sys.executable, "-m", "entrypoints", "serve", "--port", "0", *args],
        cwd=ROOT,
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_serve_with_a_redis_it_cannot_reach_stops_with_a_clear_message(tmp_path: Path) -> None:
    done = _serve(
        "--data-dir",
        str(tmp_path),
        env={"COPILOT_REDIS_URL": "redis://:rEdis-Pw-22@127.0.0.1:1/0"},
    )
    assert done.returncode == 3, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("gns3-copilot: cannot start: Cannot connect to Redis at ")
    assert "rEdis-Pw-22" not in done.stderr + done.stdout
    refused = _serve("--data-dir", str(tmp_path), "--redis-url", "http://127.0.0.1:6379", env={})
    assert refused.returncode == 2
    assert "redis_url: must be a redis://" in refused.stderr


@pytest.mark.parametrize("value", ["", None])
def test_no_redis_url_keeps_turns_in_memory(
    monkeypatch: pytest.MonkeyPatch, value: str | None
) -> None:
    for name in list(os.environ):
        if name.startswith("COPILOT_"):
            monkeypatch.delenv(name)
    if value is not None:
        monkeypatch.setenv("COPILOT_REDIS_URL", value)
    assert Settings().redis_url is None
