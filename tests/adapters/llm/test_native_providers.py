"""The native Anthropic and Ollama providers (langchain-anthropic, langchain-ollama) over
their real wire protocols, against scripted servers on 127.0.0.1: streamed text, streamed
tool calls, usage, what goes on the wire, and every failure as the core's LLM errors."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from pydantic import SecretStr

from adapters.llm import (
    LangchainLanguageModel,
    LLMSettings,
    SettingsLanguageModelProvider,
    build_chat_model,
    parse_llm_settings,
)
from copilot_core import Message, ToolSpec
from copilot_core._accumulator import ToolCallAccumulator
from copilot_core.errors import (
    InvalidRequestError,
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
    ModelOverrides,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    UsageDelta,
)
from tests.fakes.anthropic_server import ScriptedAnthropicServer
from tests.fakes.ollama_server import ScriptedOllamaServer
from tests.fakes.openai_server import SEEN_WITHIN, Failure, Reply, ToolCallScript

ANTHROPIC_KEY = "sk-ant-api03-secret-Zx8Qw2Er4Ty6Ui8Op0As"
NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
HELLO = [Message.system("s1", "You are a lab assistant."), Message.user("u1", "Hi", NOW)]
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


@pytest.fixture
def anthropic() -> Iterator[ScriptedAnthropicServer]:
    with ScriptedAnthropicServer(api_key=ANTHROPIC_KEY, models=["claude-test"]) as server:
        yield server


@pytest.fixture
def ollama() -> Iterator[ScriptedOllamaServer]:
    with ScriptedOllamaServer(models=["llama-test"]) as server:
        yield server


def anthropic_settings(server: ScriptedAnthropicServer, **changes: object) -> LLMSettings:
    data: dict[str, object] = {
        "provider": "anthropic",
        "model": "claude-test",
        "base_url": server.base_url,
        "api_key": SecretStr(ANTHROPIC_KEY),
    }
    data.update(changes)
    return LLMSettings.model_validate(data)


def ollama_settings(server: ScriptedOllamaServer, **changes: object) -> LLMSettings:
    data: dict[str, object] = {
        "provider": "ollama_native",
        "model": "llama-test",
        "base_url": server.base_url,
    }
    data.update(changes)
    return LLMSettings.model_validate(data)


def model_for(settings: LLMSettings) -> LangchainLanguageModel:
    return LangchainLanguageModel(
        build_chat_model(settings), base_url=settings.effective_base_url, model_name=settings.model
    )


async def collect(
    model: LangchainLanguageModel,
    tools: list[ToolSpec] | None = None,
    options: CallOptions | None = None,
    messages: list[Message] | None = None,
) -> list[ModelDelta]:
    return [
        delta
        async for delta in model.stream(messages or HELLO, tools or [], options or CallOptions())
    ]


def text_of(deltas: list[ModelDelta]) -> str:
    return "".join(d.text for d in deltas if isinstance(d, TextDelta))


def parsed_calls(deltas: list[ModelDelta]) -> list[tuple[str, str, dict[str, object] | None]]:
    """What the core's accumulator makes of the fragments: (id, name, arguments) per call."""
    accumulator = ToolCallAccumulator()
    for delta in deltas:
        if isinstance(delta, ToolCallDelta):
            accumulator.add(delta)
    accumulator.finish()
    return [(call.id, call.name, call.arguments) for call in accumulator.calls()]


def usage_of(deltas: list[ModelDelta]) -> tuple[int, int]:
    usages = [d for d in deltas if isinstance(d, UsageDelta)]
    return sum(u.input_tokens for u in usages), sum(u.output_tokens for u in usages)


def finish_of(deltas: list[ModelDelta]) -> list[str]:
    return [d.reason for d in deltas if isinstance(d, FinishDelta)]


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# ============================================================================ settings
def test_the_provider_setting_selects_the_native_clients() -> None:
    from langchain_anthropic import ChatAnthropic
    from langchain_ollama import ChatOllama
    from langchain_openai import ChatOpenAI

    claude = parse_llm_settings({"provider": "Anthropic", "model": "claude-sonnet-4-5"})
    assert claude.provider == "anthropic"
    assert claude.effective_base_url == "https://api.anthropic.com"
    assert isinstance(build_chat_model(claude), ChatAnthropic)
    local = parse_llm_settings({"provider": "ollama-native", "model": "llama3.1"})
    assert local.effective_base_url == "http://localhost:11434"
    assert isinstance(build_chat_model(local), ChatOllama)
    # "ollama" stays Ollama's OpenAI-compatible endpoint (settings stored before keep working).
    compatible = parse_llm_settings({"provider": "ollama", "model": "llama3.1"})
    assert isinstance(build_chat_model(compatible), ChatOpenAI)


def test_an_unknown_provider_is_refused_with_the_list_of_known_ones() -> None:
    with pytest.raises(InvalidRequestError) as caught:
        parse_llm_settings({"provider": "gemini", "model": "m"})
    assert "anthropic" in caught.value.message and "ollama_native" in caught.value.message


# ============================================================================ Anthropic
async def test_anthropic_text_streams_with_finish_and_usage(
    anthropic: ScriptedAnthropicServer,
) -> None:
    anthropic.add(Reply(text="R1 is a Cisco router.", chunk=4, usage=(42, 7)))
    deltas = await collect(model_for(anthropic_settings(anthropic)))
    assert [d.text for d in deltas if isinstance(d, TextDelta)][:2] == ["R1 i", "s a "]
    assert text_of(deltas) == "R1 is a Cisco router."
    assert finish_of(deltas) == ["stop"]
    assert usage_of(deltas) == (42, 7)


async def test_anthropic_tool_calls_stream_as_raw_argument_fragments(
    anthropic: ScriptedAnthropicServer,
) -> None:
    anthropic.add(
        Reply(
            text="Let me look.",
            tool_calls=[
                ToolCallScript("get_nodes", {"project": "lab-1"}, id="toolu_a", fragment=4),
                ToolCallScript("start_node", {"node": "R1"}, id="toolu_b", fragment=3),
            ],
            usage=(100, 20),
        )
    )
    deltas = await collect(model_for(anthropic_settings(anthropic)), tools=TOOLS)
    fragments = [d for d in deltas if isinstance(d, ToolCallDelta)]
    assert len(fragments) > 4  # streamed piece by piece, not whole
    assert "".join(f.arguments for f in fragments if f.index == fragments[0].index) == (
        '{"project": "lab-1"}'
    )
    assert parsed_calls(deltas) == [
        ("toolu_a", "get_nodes", {"project": "lab-1"}),
        ("toolu_b", "start_node", {"node": "R1"}),
    ]
    assert text_of(deltas) == "Let me look."
    assert finish_of(deltas) == ["tool_calls"]
    assert usage_of(deltas) == (100, 20)


async def test_anthropic_gets_the_system_prompt_tools_options_and_tool_results(
    anthropic: ScriptedAnthropicServer,
) -> None:
    anthropic.add(Reply(text="R1 started."))
    history = [
        *HELLO,
        Message.assistant(
            "a1",
            "",
            NOW,
            tool_calls=(
                ToolCall(
                    id="toolu_1",
                    function=FunctionCall(name="start_node", arguments='{"node": "R1"}'),
                ),
            ),
        ),
        Message.tool("t1", "toolu_1", "start_node", '{"status": "started"}', NOW),
    ]
    await collect(
        model_for(anthropic_settings(anthropic)),
        tools=TOOLS,
        options=CallOptions(temperature=0.3, max_tokens=321),
        messages=history,
    )
    request = anthropic.requests[0]
    assert ANTHROPIC_KEY in (request.headers.get("x-api-key"), request.bearer_token)
    assert "anthropic-version" in request.headers
    body = request.body
    assert body["model"] == "claude-test" and body["stream"] is True
    assert body["temperature"] == 0.3 and body["max_tokens"] == 321
    system = body["system"]
    system_text = system if isinstance(system, str) else "".join(b["text"] for b in system)
    assert system_text == "You are a lab assistant."
    assert [tool["name"] for tool in body["tools"]] == ["get_nodes", "start_node"]
    assert body["tools"][1]["input_schema"]["required"] == ["node"]
    assistant, tool_result = body["messages"][1], body["messages"][2]
    assert assistant["role"] == "assistant"
    assert any(
        block.get("type") == "tool_use"
        and block["id"] == "toolu_1"
        and block["input"] == {"node": "R1"}
        for block in assistant["content"]
    )
    assert tool_result["role"] == "user"
    assert tool_result["content"][0]["type"] == "tool_result"
    assert tool_result["content"][0]["tool_use_id"] == "toolu_1"


@pytest.mark.parametrize(
    ("failure", "error", "words"),
    [
        (Failure(401, "invalid x-api-key"), LLMAuthenticationError, "rejected the API key"),
        (Failure(404, "model: claude-nope"), LLMModelNotFoundError, "claude-test"),
        (Failure(529, "Overloaded"), LLMUnavailableError, "HTTP 529"),
        (Failure(500, "Internal server error"), LLMUnavailableError, "HTTP 500"),
        (
            Failure(400, "prompt is too long: 208000 tokens > 200000 maximum"),
            LLMContextLengthError,
            "context window",
        ),
    ],
)
async def test_anthropic_http_failures_become_core_errors(
    anthropic: ScriptedAnthropicServer, failure: Failure, error: type[LLMError], words: str
) -> None:
    anthropic.add(failure)
    with pytest.raises(error) as caught:
        await collect(model_for(anthropic_settings(anthropic)))
    assert words in caught.value.message
    assert ANTHROPIC_KEY not in caught.value.message
    assert len(anthropic.requests) == 1  # no retries: the user is waiting


async def test_anthropic_wrong_key_and_rate_limit(anthropic: ScriptedAnthropicServer) -> None:
    with pytest.raises(LLMAuthenticationError) as caught:
        await collect(
            model_for(anthropic_settings(anthropic, api_key=SecretStr("sk-ant-wrong-1234")))
        )
    assert "sk-ant-wrong" not in caught.value.message
    anthropic.add(
        Failure(
            429, "Number of requests has exceeded your rate limit", headers={"retry-after": "7"}
        )
    )
    with pytest.raises(LLMRateLimitedError) as limited:
        await collect(model_for(anthropic_settings(anthropic)))
    assert limited.value.retry_after == 7


async def test_anthropic_in_stream_error_and_dropped_stream_keep_the_partial_answer(
    anthropic: ScriptedAnthropicServer,
) -> None:
    model = model_for(anthropic_settings(anthropic))
    anthropic.add(
        Reply(text="abcdefghijklmnop", chunk=2, error_after=5, error_message="Overloaded")
    )
    received: list[ModelDelta] = []
    with pytest.raises(LLMStreamInterruptedError) as caught:
        async for delta in model.stream(HELLO, [], CallOptions()):
            received.append(delta)
    assert text_of(received).startswith("ab") and "Overloaded" in caught.value.message

    anthropic.add(Reply(text="abcdefghijklmnop", chunk=2, drop_after=6))
    received.clear()
    with pytest.raises(LLMStreamInterruptedError):
        async for delta in model.stream(HELLO, [], CallOptions()):
            received.append(delta)
    assert text_of(received).startswith("ab")


async def test_anthropic_unreachable_is_unavailable() -> None:
    settings = LLMSettings.model_validate(
        {
            "provider": "anthropic",
            "model": "claude-test",
            "base_url": f"http://127.0.0.1:{closed_port()}",
            "api_key": SecretStr(ANTHROPIC_KEY),
        }
    )
    with pytest.raises(LLMUnavailableError) as caught:
        await collect(model_for(settings))
    assert "Cannot reach" in caught.value.message


async def test_anthropic_stream_closed_by_the_consumer_hangs_up_the_connection(
    anthropic: ScriptedAnthropicServer,
) -> None:
    anthropic.add(Reply(text="x" * 400, chunk=1, token_delay=0.01))
    stream = model_for(anthropic_settings(anthropic)).stream(HELLO, [], CallOptions())
    async for delta in stream:
        if isinstance(delta, TextDelta):
            break
    await stream.aclose()  # type: ignore[attr-defined]
    request = anthropic.requests[0]
    assert request.finished.wait(SEEN_WITHIN)
    assert request.client_disconnected
    assert request.chunks_sent < 50


# ============================================================================ Ollama
async def test_ollama_text_streams_with_finish_and_usage(ollama: ScriptedOllamaServer) -> None:
    ollama.add(Reply(text="Both PCs answer ping.", chunk=5, usage=(30, 6)))
    deltas = await collect(model_for(ollama_settings(ollama)))
    assert [d.text for d in deltas if isinstance(d, TextDelta)][:2] == ["Both ", "PCs a"]
    assert text_of(deltas) == "Both PCs answer ping."
    assert finish_of(deltas) == ["stop"]
    assert usage_of(deltas) == (30, 6)


async def test_ollama_tool_calls_arrive_whole_and_parse(ollama: ScriptedOllamaServer) -> None:
    ollama.add(
        Reply(
            tool_calls=[
                ToolCallScript("get_nodes", {"project": "lab-1"}),
                ToolCallScript("start_node", {"node": "R1"}),
            ],
            usage=(50, 9),
        )
    )
    deltas = await collect(model_for(ollama_settings(ollama)), tools=TOOLS)
    calls = parsed_calls(deltas)
    assert [(name, arguments) for _, name, arguments in calls] == [
        ("get_nodes", {"project": "lab-1"}),
        ("start_node", {"node": "R1"}),
    ]
    assert len({call_id for call_id, _, _ in calls}) == 2 and all(c[0] for c in calls)
    assert finish_of(deltas) == ["tool_calls"]
    assert usage_of(deltas) == (50, 9)


async def test_ollama_gets_tools_options_and_the_context_size(ollama: ScriptedOllamaServer) -> None:
    ollama.add(Reply(text="ok"))
    settings = ollama_settings(ollama, context_limit=16384)
    await collect(
        model_for(settings), tools=TOOLS, options=CallOptions(temperature=0.2, max_tokens=99)
    )
    body = ollama.requests[0].body
    assert body["model"] == "llama-test" and body["stream"] is True
    assert body["options"]["temperature"] == 0.2
    assert body["options"]["num_predict"] == 99
    # Ollama's default context is small and silently truncates: the user's limit is sent.
    assert body["options"]["num_ctx"] == 16384
    assert [tool["function"]["name"] for tool in body["tools"]] == ["get_nodes", "start_node"]
    assert body["messages"][0] == {"role": "system", "content": "You are a lab assistant."}


@pytest.mark.parametrize(
    ("failure", "error", "words"),
    [
        (Failure(500, "llama runner process has terminated"), LLMUnavailableError, "HTTP 500"),
        (Failure(400, "invalid options"), LLMError, "HTTP 400"),
    ],
)
async def test_ollama_http_failures_become_core_errors(
    ollama: ScriptedOllamaServer, failure: Failure, error: type[LLMError], words: str
) -> None:
    ollama.add(failure)
    with pytest.raises(error) as caught:
        await collect(model_for(ollama_settings(ollama)))
    assert words in caught.value.message
    assert failure.message in caught.value.message


async def test_ollama_unknown_model_is_model_not_found(ollama: ScriptedOllamaServer) -> None:
    with pytest.raises(LLMModelNotFoundError) as caught:
        await collect(model_for(ollama_settings(ollama, model="llama-nope")))
    assert "llama-nope" in caught.value.message


async def test_ollama_in_stream_error_and_dropped_stream(ollama: ScriptedOllamaServer) -> None:
    model = model_for(ollama_settings(ollama))
    ollama.add(Reply(text="abcdefghij", chunk=2, error_after=2, error_message="out of memory"))
    received: list[ModelDelta] = []
    with pytest.raises(LLMStreamInterruptedError) as caught:
        async for delta in model.stream(HELLO, [], CallOptions()):
            received.append(delta)
    assert text_of(received) == "abcd"
    assert "(the server said: out of memory)" in caught.value.message

    ollama.add(Reply(text="abcdefghij", chunk=2, drop_after=3))
    with pytest.raises(LLMStreamInterruptedError):
        await collect(model)


async def test_ollama_unreachable_is_unavailable() -> None:
    settings = LLMSettings.model_validate(
        {
            "provider": "ollama_native",
            "model": "llama-test",
            "base_url": f"http://127.0.0.1:{closed_port()}",
        }
    )
    with pytest.raises(LLMUnavailableError) as caught:
        await collect(model_for(settings))
    assert "Cannot reach" in caught.value.message


# ============================================================================ provider
async def test_a_user_s_native_settings_build_their_models(
    anthropic: ScriptedAnthropicServer, ollama: ScriptedOllamaServer
) -> None:
    class Source:
        def __init__(self, settings: LLMSettings) -> None:
            self.settings = settings

        async def get_secret(self, user_id: str) -> LLMSettings | None:
            return self.settings

    anthropic.add(Reply(text="from claude"))
    selection = await SettingsLanguageModelProvider(Source(anthropic_settings(anthropic))).for_user(
        "alice", ModelOverrides()
    )
    assert text_of(await collect(selection.model, options=selection.options)) == "from claude"  # type: ignore[arg-type]

    ollama.add(Reply(text="from llama"))
    selection = await SettingsLanguageModelProvider(Source(ollama_settings(ollama))).for_user(
        "alice", ModelOverrides()
    )
    assert text_of(await collect(selection.model, options=selection.options)) == "from llama"  # type: ignore[arg-type]


async def test_the_services_waits_reach_each_native_sdk_as_numbers(
    anthropic: ScriptedAnthropicServer, ollama: ScriptedOllamaServer
) -> None:
    """Each SDK gets numbers (or its own timeout type), never another library's: a new
    SDK release that changed its HTTP client (openai 3.x moved to httpx2) still builds."""

    class Source:
        def __init__(self, settings: LLMSettings) -> None:
            self.settings = settings

        async def get_secret(self, user_id: str) -> LLMSettings | None:
            return self.settings

    waits = {"connect_timeout": 2.5, "first_token_timeout": 100, "token_timeout": 10}
    provider = SettingsLanguageModelProvider(Source(ollama_settings(ollama, **waits)))
    selection = await provider.for_user("alice", ModelOverrides())
    client = selection.model.chat_model._async_client._client  # type: ignore[attr-defined]
    assert (client.timeout.connect, client.timeout.read) == (2.5, 130.0)

    provider = SettingsLanguageModelProvider(Source(anthropic_settings(anthropic, **waits)))
    selection = await provider.for_user("alice", ModelOverrides())
    sdk = selection.model.chat_model._async_client  # type: ignore[attr-defined]
    assert sdk.timeout == 130.0  # ChatAnthropic takes one number for every wait
