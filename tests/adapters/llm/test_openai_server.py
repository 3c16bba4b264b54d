"""The scripted OpenAI server speaks OpenAI's wire format (checked with a bare HTTP client)."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import httpx
import pytest

from tests.fakes.openai_server import (
    SEEN_WITHIN,
    Failure,
    RecordedRequest,
    Reply,
    ScriptedOpenAIServer,
    ToolCallScript,
)

KEY = "sk-wire"


def post(server: ScriptedOpenAIServer, body: dict[str, Any], key: str = KEY) -> httpx.Response:
    return httpx.post(
        f"{server.base_url}/chat/completions",
        json=body,
        headers={"Authorization": f"Bearer {key}"},
        timeout=5,
    )


def events(response: httpx.Response) -> list[Any]:
    out: list[Any] = []
    for block in response.text.split("\n\n"):
        if block.startswith("data: "):
            payload = block[len("data: ") :]
            out.append(payload if payload == "[DONE]" else json.loads(payload))
    return out


CHAT = {"model": "gpt-test", "messages": [{"role": "user", "content": "hi"}]}


def test_base_url_is_loopback_with_v1() -> None:
    with ScriptedOpenAIServer() as server:
        assert server.base_url.startswith("http://127.0.0.1:")
        assert server.base_url.endswith("/v1")
        assert server.port > 0


def test_stream_has_openai_chunk_shapes() -> None:
    with ScriptedOpenAIServer([Reply(text="Hello", chunk=3, usage=(4, 2))]) as server:
        response = post(server, {**CHAT, "stream": True, "stream_options": {"include_usage": True}})

    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    got = events(response)
    assert got[-1] == "[DONE]"
    chunks = got[:-1]
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    assert [c["choices"][0]["delta"].get("content") for c in chunks[1:3]] == ["Hel", "lo"]
    assert chunks[3]["choices"][0] == {
        "index": 0,
        "delta": {},
        "logprobs": None,
        "finish_reason": "stop",
    }
    assert chunks[4]["choices"] == []
    assert chunks[4]["usage"] == {"prompt_tokens": 4, "completion_tokens": 2, "total_tokens": 6}


def test_usage_chunk_only_when_asked() -> None:
    with ScriptedOpenAIServer([Reply(text="Hi")]) as server:
        got = events(post(server, {**CHAT, "stream": True}))
    assert all("usage" not in c for c in got[:-1])


def test_tool_call_deltas_carry_index_id_name_then_fragments() -> None:
    reply = Reply(tool_calls=[ToolCallScript("ping", {"host": "R2"}, id="call_x", fragment=6)])
    with ScriptedOpenAIServer([reply]) as server:
        got = events(post(server, {**CHAT, "stream": True}))

    deltas = [c["choices"][0]["delta"]["tool_calls"][0] for c in got[1:-2]]
    assert deltas[0] == {
        "index": 0,
        "id": "call_x",
        "type": "function",
        "function": {"name": "ping", "arguments": ""},
    }
    assert "".join(d["function"]["arguments"] for d in deltas[1:]) == '{"host": "R2"}'
    assert all(set(d) == {"index", "function"} for d in deltas[1:])
    assert got[-2]["choices"][0]["finish_reason"] == "tool_calls"


def test_non_streamed_completion() -> None:
    reply = Reply(text="", tool_calls=[ToolCallScript("ping", '{"host": ')], usage=(3, 1))
    with ScriptedOpenAIServer([reply]) as server:
        body = post(server, CHAT).json()

    assert body["object"] == "chat.completion"
    choice = body["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    assert choice["message"]["content"] is None
    assert choice["message"]["tool_calls"][0]["function"] == {
        "name": "ping",
        "arguments": '{"host": ',
    }
    assert body["usage"]["total_tokens"] == 4


def test_replies_may_depend_on_the_request_and_requests_are_recorded() -> None:
    def echo(request: RecordedRequest) -> Reply:
        return Reply(text=f"{len(request.tools)} tools, last: {request.messages[-1]['content']}")

    with ScriptedOpenAIServer([echo], default=Reply(text="default")) as server:
        first = post(server, {**CHAT, "tools": [{"type": "function"}]}).json()
        second = post(server, CHAT).json()
        recorded = server.requests

    assert first["choices"][0]["message"]["content"] == "1 tools, last: hi"
    assert second["choices"][0]["message"]["content"] == "default"
    assert [r.path for r in recorded] == ["/v1/chat/completions"] * 2
    assert recorded[0].bearer_token == KEY
    assert recorded[0].model == "gpt-test"


def test_failures_have_openai_error_bodies_and_headers() -> None:
    with ScriptedOpenAIServer([Failure.rate_limited(retry_after=3)]) as server:
        response = post(server, CHAT)
    assert response.status_code == 429
    assert response.headers["retry-after"] == "3"
    assert response.json()["error"]["code"] == "rate_limit_exceeded"


def test_wrong_key_and_unknown_model_are_refused_before_the_script() -> None:
    with ScriptedOpenAIServer(
        [Reply(text="never")], api_key="sk-right", models=["gpt-test"]
    ) as server:
        unauthorized = post(server, CHAT, key="sk-wrong-key-123")
        missing = post(server, {**CHAT, "model": "gpt-x"}, key="sk-right")
        assert server.remaining == 1
        listed = httpx.get(f"{server.base_url}/models", timeout=5).json()

    assert unauthorized.status_code == 401
    assert "sk-wrong-key-123" not in unauthorized.text  # masked, like the real service
    assert missing.status_code == 404
    assert missing.json()["error"]["code"] == "model_not_found"
    assert [m["id"] for m in listed["data"]] == ["gpt-test"]


def test_empty_script_answers_500_saying_so() -> None:
    with ScriptedOpenAIServer() as server:
        response = post(server, CHAT)
    assert response.status_code == 500
    assert "no reply left" in response.json()["error"]["message"]


def test_dropped_stream_is_an_incomplete_body() -> None:
    with ScriptedOpenAIServer([Reply(text="abcdefgh", chunk=1, drop_after=3)]) as server:
        with pytest.raises(httpx.HTTPError):
            post(server, {**CHAT, "stream": True})
        (request,) = server.requests
    assert request.chunks_sent == 3


def test_slow_tokens_are_spaced_by_the_delay() -> None:
    with ScriptedOpenAIServer([Reply(text="abcd", chunk=1, token_delay=0.05)]) as server:
        arrivals: list[float] = []
        with httpx.stream(
            "POST", f"{server.base_url}/chat/completions", json={**CHAT, "stream": True}
        ) as response:
            for _ in response.iter_lines():
                arrivals.append(time.monotonic())
    # six chunks after the first (4 letters, finish, [DONE]) each wait 50 ms
    assert arrivals[-1] - arrivals[0] >= 0.05 * 5


def test_a_held_first_token_comes_when_released_and_a_stall_lasts_until_the_hang_up() -> None:
    held = threading.Event()
    script = [
        Reply(text="ab", chunk=1, first_token_held=held),
        Reply(text="abcd", chunk=1, stall_after=2),
    ]
    with ScriptedOpenAIServer(script) as server:
        url = f"{server.base_url}/chat/completions"
        with httpx.stream("POST", url, json={**CHAT, "stream": True}) as response:
            lines = (line for line in response.iter_lines() if line.startswith("data: "))
            role = json.loads(next(lines)[6:])  # sent at once; the first token waits
            assert role["choices"][0]["delta"].get("role") == "assistant"
            held.set()
            rest = list(lines)
        assert rest[-1] == "data: [DONE]"
        texts = [json.loads(line[6:])["choices"][0]["delta"].get("content") for line in rest[:-1]]
        assert "".join(t for t in texts if t) == "ab"

        seen: list[str] = []
        with (
            pytest.raises(httpx.ReadTimeout),
            httpx.stream(
                "POST", url, json={**CHAT, "stream": True}, timeout=httpx.Timeout(10, read=0.5)
            ) as response,
        ):
            seen.extend(line for line in response.iter_lines() if line.startswith("data: "))
        stalled = server.requests[1]
        assert stalled.finished.wait(SEEN_WITHIN) and stalled.client_disconnected
    assert len(seen) == 2  # the role chunk and "a", then nothing until the client left
    assert json.loads(seen[1][6:])["choices"][0]["delta"]["content"] == "a"


async def test_async_use_wait_for_requests_and_clear() -> None:
    async with ScriptedOpenAIServer(default=Reply(text="ok")) as server:
        async with httpx.AsyncClient() as client:
            response = await client.post(f"{server.base_url}/chat/completions", json=CHAT)
        assert response.json()["choices"][0]["message"]["content"] == "ok"
        assert len(server.wait_for_requests(1, timeout=1)) == 1
        with pytest.raises(TimeoutError):
            server.wait_for_requests(2, timeout=0.05)
        server.add(Reply(text="queued"))
        server.clear()
        assert server.remaining == 0
        assert server.requests == []
