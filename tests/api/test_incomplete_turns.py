"""Issue 29, item 1, over HTTP with the real LLM adapter and the real SQLite store: a turn
that ends in an error (the LLM unreachable, a 429, a stream cut mid-reply) or is aborted
leaves ``metadata.incomplete`` on its last saved message, which ``history`` returns; sending
the question again with ``replace_from`` (the page's Retry) replaces the failed turn."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import SecretStr

from adapters.llm import LangchainLanguageModel, LLMSettings, build_chat_model
from adapters.sqlite import SqliteCheckpointStore
from tests.api.conftest import RawEvent, Service, raw_events, run_service
from tests.fakes.openai_server import Failure, Reply, ScriptedOpenAIServer

KEY = "sk-incomplete"


@pytest.fixture
def llm() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer(api_key=KEY) as server:
        yield server


def closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@asynccontextmanager
async def served(tmp_path: Path, base_url: str) -> AsyncIterator[Service]:
    model = LangchainLanguageModel(
        build_chat_model(
            LLMSettings(model="gpt-test", base_url=base_url, api_key=SecretStr(KEY)), timeout=5
        )
    )
    store = SqliteCheckpointStore(tmp_path)
    await store.open()
    try:
        async with run_service(store=store, language_model=model) as service:
            yield service
    finally:
        await store.close()


async def turn(
    client: httpx.AsyncClient, service: Service, body: dict[str, Any], *, abort_on: str = ""
) -> tuple[str, list[RawEvent]]:
    events: list[RawEvent] = []
    async with client.stream("POST", service.chat_url() + "/stream", json=body) as response:
        assert response.status_code == 200, await response.aread()
        session_id = response.headers["x-session-id"]
        async for event in raw_events(response):
            events.append(event)
            if event.type == abort_on:
                abort_on = ""
                stopped = await client.post(service.chat_url() + f"/sessions/{session_id}/abort")
                assert stopped.status_code == 200, stopped.text
            if event.type == "done":
                break
    return session_id, events


async def history(client: httpx.AsyncClient, service: Service, session_id: str) -> Any:
    response = await client.get(service.chat_url() + f"/sessions/{session_id}/history")
    assert response.status_code == 200, response.text
    return response.json()


async def test_an_unreachable_llm_marks_the_question_incomplete_and_retry_replaces_it(
    tmp_path: Path, llm: ScriptedOpenAIServer
) -> None:
    async with served(tmp_path, f"http://127.0.0.1:{closed_port()}/v1") as service:
        async with service.client() as client:
            session_id, events = await turn(client, service, {"message": "What is in my lab?"})
            error = next(e for e in events if e.type == "error")
            saved = await history(client, service, session_id)
        [question] = saved["messages"]
        assert question["role"] == "user" and question["content"] == "What is in my lab?"
        mark = question["metadata"]["incomplete"]
        expected = {"reason": "error", "code": error.data["code"], "message": error.data["error"]}
        assert mark == expected
        assert mark["code"].startswith("llm"), mark
        assert saved["message_count"] == 1

    # Retry: the same question, replacing the failed turn, once the LLM answers.
    llm.add(Reply(text="Two routers."))
    async with served(tmp_path, llm.base_url) as service, service.client() as client:
        body = {"message": "What is in my lab?", "session_id": session_id}
        await turn(client, service, body | {"replace_from": question["id"]})
        retried = await history(client, service, session_id)
    assert [(m["role"], m["content"]) for m in retried["messages"]] == [
        ("user", "What is in my lab?"),
        ("assistant", "Two routers."),
    ]
    assert not any("incomplete" in m["metadata"] for m in retried["messages"])
    assert retried["message_count"] == 2


async def test_a_rate_limited_llm_is_saved_with_its_code(
    tmp_path: Path, llm: ScriptedOpenAIServer
) -> None:
    llm.add(Failure.rate_limited(retry_after=30))
    async with served(tmp_path, llm.base_url) as service, service.client() as client:
        session_id, _ = await turn(client, service, {"message": "hello"})
        saved = await history(client, service, session_id)
    mark = saved["messages"][-1]["metadata"]["incomplete"]
    assert mark["reason"] == "error" and mark["code"] == "llm_rate_limited", mark
    assert mark["message"]


async def test_an_answer_cut_mid_reply_is_kept_and_marked_incomplete(
    tmp_path: Path, llm: ScriptedOpenAIServer
) -> None:
    llm.add(Reply(text="Your lab has two routers and a switch", chunk=4, error_after=4))
    async with served(tmp_path, llm.base_url) as service, service.client() as client:
        session_id, events = await turn(client, service, {"message": "topology?"})
        saved = await history(client, service, session_id)
    streamed = "".join(e.data["content"] for e in events if e.type == "content")
    assert streamed, [e.type for e in events]
    question, answer = saved["messages"]
    assert "incomplete" not in question["metadata"]
    assert answer["role"] == "assistant" and answer["content"] == streamed
    assert answer["metadata"]["incomplete"]["reason"] == "error"
    # The mark takes the answer's place: the counters still match the history.
    assert saved["message_count"] == 2


async def test_an_aborted_turn_is_marked_incomplete_with_its_reason(
    tmp_path: Path, llm: ScriptedOpenAIServer
) -> None:
    llm.add(Reply(text="word " * 400, chunk=5, token_delay=0.02))
    async with served(tmp_path, llm.base_url) as service, service.client() as client:
        session_id, events = await turn(client, service, {"message": "long"}, abort_on="content")
        saved = await asyncio.wait_for(history(client, service, session_id), 10)
    assert [e.type for e in events][-2:] == ["abort", "done"]
    answer = saved["messages"][-1]
    assert answer["role"] == "assistant" and answer["metadata"]["aborted"] is True
    assert answer["metadata"]["incomplete"] == {"reason": "aborted", "message": "aborted by user"}
