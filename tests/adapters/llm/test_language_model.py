"""LangchainLanguageModel through langchain-openai's real ChatOpenAI and a scripted server."""

from __future__ import annotations

import asyncio
import json
import logging
import socket
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest
from pydantic import SecretStr

from adapters.llm import LangchainLanguageModel, LLMSettings, build_chat_model
from copilot_core import Message, ToolSpec
from copilot_core._accumulator import ToolCallAccumulator
from copilot_core.errors import (
    LLMAuthenticationError,
    LLMContextLengthError,
    LLMError,
    LLMModelNotFoundError,
    LLMRateLimitedError,
    LLMStreamInterruptedError,
    LLMUnavailableError,
)
from copilot_core.ports import (
    CallOptions,
    FinishDelta,
    FunctionCall,
    ModelDelta,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    UsageDelta,
)
from tests.adapters.llm.conftest import API_KEY, settings_for
from tests.fakes.openai_server import (
    SEEN_WITHIN,
    Failure,
    Reply,
    ScriptedOpenAIServer,
    ToolCallScript,
)

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
HELLO = [Message.user("u1", "Hello", NOW)]
TOOLS = [
    ToolSpec(
        "get_nodes",
        "List the lab's nodes",
        {"type": "object", "properties": {"project": {"type": "string"}}},
    ),
    ToolSpec(
        "start_node",
        "Start a node",
        {"type": "object", "properties": {"node": {"type": "string"}}, "required": ["node"]},
    ),
]


async def collect(
    model: LangchainLanguageModel,
    messages: list[Message] | None = None,
    tools: list[ToolSpec] | None = None,
    options: CallOptions | None = None,
) -> list[ModelDelta]:
    return [
        delta
        async for delta in model.stream(messages or HELLO, tools or [], options or CallOptions())
    ]


def text_of(deltas: list[ModelDelta]) -> str:
    return "".join(d.text for d in deltas if isinstance(d, TextDelta))


# ------------------------------------------------------------------------ replies
async def test_text_reply_streams_as_text_deltas_then_finish_and_usage(
    server: ScriptedOpenAIServer, model: LangchainLanguageModel
) -> None:
    server.add(Reply(text="R1 is a Cisco router.", chunk=3, usage=(42, 7)))

    deltas = await collect(model)

    texts = [d for d in deltas if isinstance(d, TextDelta)]
    assert [t.text for t in texts] == ["R1 ", "is ", "a C", "isc", "o r", "out", "er."]
    assert [d for d in deltas if isinstance(d, FinishDelta)] == [FinishDelta("stop")]
    assert [d for d in deltas if isinstance(d, UsageDelta)] == [UsageDelta(42, 7)]
    assert not any(isinstance(d, ToolCallDelta) for d in deltas)
    # the finish comes after the last text
    assert deltas.index(FinishDelta("stop")) > deltas.index(texts[-1])


async def test_request_carries_messages_and_asks_for_usage(
    server: ScriptedOpenAIServer, model: LangchainLanguageModel
) -> None:
    server.add(Reply(text="ok"))

    await collect(model)

    (request,) = server.requests
    assert request.stream
    assert request.body["stream_options"] == {"include_usage": True}
    assert request.messages == [{"role": "user", "content": "Hello"}]
    assert request.model == "gpt-test"
    assert request.bearer_token == API_KEY
    assert "tools" not in request.body


async def test_two_parallel_tool_calls_stream_raw_fragments_by_index(
    server: ScriptedOpenAIServer, model: LangchainLanguageModel
) -> None:
    server.add(
        Reply(
            text="Let me look.",
            tool_calls=[
                ToolCallScript("get_nodes", {"project": "lab-1"}, id="call_a", fragment=4),
                ToolCallScript("start_node", {"node": "R1"}, id="call_b", fragment=3),
            ],
            interleave=True,
            usage=(120, 30),
        )
    )

    deltas = await collect(model, tools=TOOLS)

    calls = [d for d in deltas if isinstance(d, ToolCallDelta)]
    # the first fragment of each index names the call; the rest carry raw text only
    assert calls[0] == ToolCallDelta(0, "call_a", "get_nodes", "")
    assert calls[1] == ToolCallDelta(1, "call_b", "start_node", "")
    assert all(c.id is None and c.name is None for c in calls[2:])
    # fragments are the raw JSON pieces, interleaved, never parsed ({}) views
    raw = {i: "".join(c.arguments for c in calls if c.index == i) for i in (0, 1)}
    assert json.loads(raw[0]) == {"project": "lab-1"}
    assert json.loads(raw[1]) == {"node": "R1"}
    assert [c.index for c in calls[2:6]] == [0, 1, 0, 1]
    assert any(c.arguments == '{"pr' for c in calls)
    assert text_of(deltas) == "Let me look."
    assert FinishDelta("tool_calls") in deltas
    assert UsageDelta(120, 30) in deltas

    # the core's accumulator turns them into the two complete calls
    accumulator = ToolCallAccumulator()
    for call in calls:
        accumulator.add(call)
    accumulator.finish()
    parsed = accumulator.calls()
    assert [(p.id, p.name, p.arguments) for p in parsed] == [
        ("call_a", "get_nodes", {"project": "lab-1"}),
        ("call_b", "start_node", {"node": "R1"}),
    ]


async def test_tools_are_bound_per_call_in_openai_format(
    server: ScriptedOpenAIServer, model: LangchainLanguageModel
) -> None:
    server.add(Reply(text="a"), Reply(text="b"))

    await collect(model, tools=TOOLS)
    await collect(model, tools=TOOLS[:1])

    first, second = server.requests
    assert first.tools == [spec.to_openai() for spec in TOOLS]
    assert second.tools == [TOOLS[0].to_openai()]


async def test_call_options_override_temperature_and_max_tokens_per_call(
    server: ScriptedOpenAIServer,
) -> None:
    settings = settings_for(server, temperature=0.7, max_tokens=500)
    model = LangchainLanguageModel(build_chat_model(settings))
    server.add(Reply(text="a"), Reply(text="b"))

    await collect(model, options=CallOptions(temperature=0.1, max_tokens=64))
    await collect(model)

    overridden, default = server.requests
    assert overridden.body["temperature"] == 0.1
    assert overridden.body["max_completion_tokens"] == 64
    assert default.body["temperature"] == 0.7
    assert default.body["max_completion_tokens"] == 500


async def test_stream_without_finish_reason_still_ends_with_a_finish(
    server: ScriptedOpenAIServer, model: LangchainLanguageModel
) -> None:
    server.add(Reply(text="done", finish_reason=""))

    deltas = await collect(model)

    assert deltas[-1] == FinishDelta("stop") or FinishDelta("stop") in deltas
    assert text_of(deltas) == "done"


async def test_tool_results_reach_the_server_with_their_call_ids(
    server: ScriptedOpenAIServer, model: LangchainLanguageModel
) -> None:
    history = [
        Message.system("s", "You are a GNS3 copilot."),
        Message.user("u1", "Start R1", NOW),
        Message.assistant(
            "a1",
            "",
            NOW,
            (
                ToolCall(
                    id="call_9",
                    function=FunctionCall(name="start_node", arguments='{"node": "R1"}'),
                ),
            ),
        ),
        Message.tool("t1", "call_9", "start_node", '{"status": "started"}', NOW),
    ]
    server.add(Reply(text="R1 is started."))

    await collect(model, messages=history, tools=TOOLS)

    sent = server.requests[0].messages
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool"]
    assert sent[2]["tool_calls"][0]["id"] == "call_9"
    assert sent[2]["tool_calls"][0]["function"]["name"] == "start_node"
    assert json.loads(sent[2]["tool_calls"][0]["function"]["arguments"]) == {"node": "R1"}
    assert sent[3] == {"role": "tool", "tool_call_id": "call_9", "content": '{"status": "started"}'}


# ------------------------------------------------------------------------ failures
async def assert_raises(model: LangchainLanguageModel, kind: type[LLMError]) -> LLMError:
    with pytest.raises(kind) as caught:
        await collect(model)
    error = caught.value
    assert API_KEY not in str(error)
    assert API_KEY[:12] not in str(error)
    assert error.__cause__ is None  # nothing that could quote the key rides along
    return error


async def test_rejected_api_key_is_an_authentication_error_without_the_key(
    server: ScriptedOpenAIServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    wrong = "sk-wrong-9Zz8Yy7Xx6Ww5Vv4Uu3T"
    settings = settings_for(server, api_key=SecretStr(wrong))
    model = LangchainLanguageModel(build_chat_model(settings))

    error = await assert_raises(model, LLMAuthenticationError)

    assert wrong not in str(error)
    assert wrong[-4:] not in str(error)
    assert server.base_url in str(error)
    assert "api_key" in str(error)
    assert len(server.requests) == 1  # no retries: the user is waiting
    assert caplog.records
    assert wrong not in caplog.text


async def test_unknown_model_is_a_model_not_found_error(server: ScriptedOpenAIServer) -> None:
    server.models = ["gpt-test"]
    model = LangchainLanguageModel(build_chat_model(settings_for(server, model="gpt-nope")))

    error = await assert_raises(model, LLMModelNotFoundError)

    assert "gpt-nope" in str(error)
    assert "model name" in str(error)


async def test_rate_limit_carries_retry_after(
    server: ScriptedOpenAIServer, model: LangchainLanguageModel
) -> None:
    server.add(Failure.rate_limited(retry_after=7))

    error = await assert_raises(model, LLMRateLimitedError)

    assert isinstance(error, LLMRateLimitedError)
    assert error.retry_after == 7
    assert "7 s" in str(error)
    assert len(server.requests) == 1


async def test_rate_limit_without_retry_after(
    server: ScriptedOpenAIServer, model: LangchainLanguageModel
) -> None:
    server.add(Failure.rate_limited())

    error = await assert_raises(model, LLMRateLimitedError)

    assert isinstance(error, LLMRateLimitedError)
    assert error.retry_after is None


async def test_server_error_is_unavailable_and_names_the_status(
    server: ScriptedOpenAIServer, model: LangchainLanguageModel
) -> None:
    server.add(Failure.server_error())

    error = await assert_raises(model, LLMUnavailableError)

    assert "HTTP 500" in str(error)
    assert server.base_url in str(error)


async def test_context_length_exceeded_is_a_context_length_error(
    server: ScriptedOpenAIServer, model: LangchainLanguageModel
) -> None:
    server.add(Failure.context_length_exceeded(limit=8192))

    error = await assert_raises(model, LLMContextLengthError)

    assert "8192" in str(error)
    assert "gpt-test" in str(error)


async def test_unreachable_base_url_says_which() -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    base_url = f"http://127.0.0.1:{port}/v1"
    settings = LLMSettings(model="gpt-test", base_url=base_url, api_key=SecretStr(API_KEY))
    model = LangchainLanguageModel(build_chat_model(settings))

    error = await assert_raises(model, LLMUnavailableError)

    assert base_url in str(error)
    assert "base_url" in str(error)


async def test_connection_dropped_mid_stream_is_an_interruption(
    server: ScriptedOpenAIServer, model: LangchainLanguageModel
) -> None:
    server.add(Reply(text="The topology has three routers and", chunk=5, drop_after=4))
    received: list[ModelDelta] = []

    async def consume() -> None:
        async for delta in model.stream(HELLO, [], CallOptions()):
            received.append(delta)

    with pytest.raises(LLMStreamInterruptedError) as caught:
        await consume()

    assert text_of(received) == "The topology has "[: len(text_of(received))]
    assert text_of(received)  # part of the answer arrived before the drop
    assert API_KEY not in str(caught.value)
    assert "partial answer" in str(caught.value)


async def test_error_message_masks_a_key_the_server_echoes(
    server: ScriptedOpenAIServer, model: LangchainLanguageModel
) -> None:
    server.add(Failure(400, f"Bad request from key {API_KEY}: tools are malformed"))

    error = await assert_raises(model, LLMError)

    assert "tools are malformed" in str(error)
    assert "HTTP 400" in str(error)


# --------------------------------------------------------------------------- abort
async def _first_text(stream: AsyncIterator[ModelDelta]) -> ModelDelta:
    async for delta in stream:
        if isinstance(delta, TextDelta) and delta.text:
            return delta
    raise AssertionError("no text arrived")


async def test_aclose_closes_the_connection_within_one_chunk(
    server: ScriptedOpenAIServer, model: LangchainLanguageModel
) -> None:
    server.add(Reply(text="x" * 400, chunk=1, token_delay=0.05))
    stream = model.stream(HELLO, [], CallOptions())

    await _first_text(stream)
    await stream.aclose()  # type: ignore[attr-defined]

    (request,) = server.requests
    assert await asyncio.to_thread(request.finished.wait, SEEN_WITHIN)
    assert request.client_disconnected
    # role chunk + first text chunk were consumed; at most one more was in flight
    assert request.chunks_sent <= 3, request.chunks_sent


async def test_cancelling_the_consumer_closes_the_connection_within_one_chunk(
    server: ScriptedOpenAIServer, model: LangchainLanguageModel
) -> None:
    server.add(Reply(text="y" * 400, chunk=1, token_delay=0.05))
    seen: list[ModelDelta] = []
    first = asyncio.Event()

    async def consume() -> None:
        async for delta in model.stream(HELLO, [], CallOptions()):
            seen.append(delta)
            first.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(first.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    (request,) = server.requests
    assert await asyncio.to_thread(request.finished.wait, SEEN_WITHIN)
    assert request.client_disconnected
    assert request.chunks_sent <= len(seen) + 2, (request.chunks_sent, len(seen))
    assert request.chunks_sent < 50


async def test_error_event_mid_stream_is_an_interruption_quoting_the_server(
    server: ScriptedOpenAIServer, model: LangchainLanguageModel
) -> None:
    server.add(Reply(text="Partial answer", chunk=4, error_after=3, error_message="GPU fell over"))
    received: list[ModelDelta] = []

    async def consume() -> None:
        async for delta in model.stream(HELLO, [], CallOptions()):
            received.append(delta)

    with pytest.raises(LLMStreamInterruptedError, match="GPU fell over"):
        await consume()
    assert text_of(received) == "Partial "  # role chunk + two text chunks, then the error


async def test_error_event_before_any_content_is_unavailable(
    server: ScriptedOpenAIServer, model: LangchainLanguageModel
) -> None:
    server.add(Reply(text="never", error_after=0, error_message="overloaded"))

    error = await assert_raises(model, LLMUnavailableError)

    assert "overloaded" in str(error)
