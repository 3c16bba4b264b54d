"""The LanguageModel contract: one set of assertions, run on every language model.

A test describes what the provider does in neutral terms (:class:`Answer`,
:class:`Fails`); each harness makes its model do exactly that: the scripted model
from ``copilot_core.testing`` by scripting the deltas and errors a provider
produces, ``adapters.llm``'s real ChatOpenAI client by scripting the OpenAI wire
server on 127.0.0.1. Then the same assertions hold for both. To add a model, add
one entry to ``MODELS``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal, Protocol

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
    LanguageModel,
    ModelDelta,
    TextDelta,
    ToolCallDelta,
    UsageDelta,
)
from copilot_core.testing import Hang, ScriptedLanguageModel
from tests.fakes.openai_server import (
    SEEN_WITHIN,
    Failure,
    Reply,
    ScriptedOpenAIServer,
    ToolCallScript,
)

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
HELLO = [Message.user("u1", "What is in my lab?", NOW)]
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


# ==================================================================== the script
@dataclass(frozen=True, slots=True)
class Call:
    """A tool call the provider makes: its id, name and argument object."""

    id: str
    name: str
    arguments: dict[str, Any]
    fragment: int = 4  # argument characters per streamed fragment


@dataclass(frozen=True, slots=True)
class Answer:
    """A successful reply: text, then tool calls (interleaved when ``interleave``),
    then the finish, then usage. ``cut_after`` ends the stream abruptly after that many
    text pieces (the connection drops); ``slow`` waits between pieces."""

    text: str = ""
    calls: Sequence[Call] = ()
    chunk: int = 4
    usage: tuple[int, int] = (10, 5)
    interleave: bool = False
    cut_after: int | None = None
    slow: float = 0.0


Failing = Literal["auth", "model_not_found", "rate_limited", "context_length", "server_error"]


@dataclass(frozen=True, slots=True)
class Fails:
    """The provider refuses the request before answering anything."""

    kind: Failing
    retry_after: float | None = None


Scripted = Answer | Fails


class ModelHarness(Protocol):
    @property
    def model(self) -> LanguageModel: ...

    @property
    def secrets(self) -> tuple[str, ...]:
        """Strings that must never appear in an error (the API key)."""
        ...

    def script(self, *replies: Scripted) -> None: ...

    async def consumer_left(self) -> bool:
        """Whether the provider noticed that the consumer stopped reading early."""
        ...


# ================================================================== the harnesses
@dataclass
class ScriptedHarness:
    """``copilot_core.testing.ScriptedLanguageModel``, scripted with what a provider streams."""

    model: ScriptedLanguageModel = field(default_factory=ScriptedLanguageModel)
    secrets: tuple[str, ...] = ()

    def script(self, *replies: Scripted) -> None:
        for reply in replies:
            self.model.add(self._items(reply))

    async def consumer_left(self) -> bool:
        return self.model.closed_early > 0

    @staticmethod
    def _items(reply: Scripted) -> list[ModelDelta | BaseException | Hang]:
        if isinstance(reply, Fails):
            return [_error_for(reply)]
        items: list[ModelDelta | BaseException | Hang] = []
        texts = [reply.text[i : i + reply.chunk] for i in range(0, len(reply.text), reply.chunk)]
        for n, text in enumerate(texts):
            if reply.cut_after is not None and n >= reply.cut_after:
                return [*items, LLMStreamInterruptedError("the connection dropped mid-reply")]
            if n and reply.slow:
                items.append(Hang(reply.slow))
            items.append(TextDelta(text))
        per_call = [
            [ToolCallDelta(index, call.id, call.name, "")]
            + [
                ToolCallDelta(index, None, None, raw[i : i + call.fragment])
                for i in range(0, len(raw), call.fragment)
            ]
            for index, call in enumerate(reply.calls)
            for raw in [json.dumps(call.arguments)]
        ]
        if reply.interleave:
            longest = max((len(f) for f in per_call), default=0)
            items.extend(f[i] for i in range(longest) for f in per_call if i < len(f))
        else:
            items.extend(fragment for fragments in per_call for fragment in fragments)
        items.append(FinishDelta("tool_calls" if reply.calls else "stop"))
        items.append(UsageDelta(*reply.usage))
        return items


def _error_for(failure: Fails) -> LLMError:
    """The core error a provider's refusal means (what the real adapter raises)."""
    match failure.kind:
        case "auth":
            return LLMAuthenticationError("the provider rejected the API key")
        case "model_not_found":
            return LLMModelNotFoundError("the provider does not serve this model")
        case "rate_limited":
            return LLMRateLimitedError("slow down", failure.retry_after)
        case "context_length":
            return LLMContextLengthError("the conversation is too long for the model")
        case "server_error":
            return LLMUnavailableError("the provider failed with HTTP 500")


API_KEY = "sk-contract-7Hq2Lm9Xc4Vb8Nz1Pa5W"


@dataclass
class OpenAIWireHarness:
    """``adapters.llm.LangchainLanguageModel`` (the real ChatOpenAI client) over the
    scripted OpenAI wire server on 127.0.0.1."""

    server: ScriptedOpenAIServer
    model: LangchainLanguageModel
    secrets: tuple[str, ...] = (API_KEY,)

    def script(self, *replies: Scripted) -> None:
        for reply in replies:
            self.server.add(self._item(reply))

    async def consumer_left(self) -> bool:
        (request,) = self.server.requests
        finished = await asyncio.to_thread(request.finished.wait, SEEN_WITHIN)
        return finished and request.client_disconnected

    @staticmethod
    def _item(reply: Scripted) -> Reply | Failure:
        if isinstance(reply, Fails):
            match reply.kind:
                case "auth":
                    return Failure.unauthorized()
                case "model_not_found":
                    return Failure.model_not_found("gpt-test")
                case "rate_limited":
                    return Failure.rate_limited(reply.retry_after)
                case "context_length":
                    return Failure.context_length_exceeded()
                case "server_error":
                    return Failure.server_error()
        return Reply(
            text=reply.text,
            tool_calls=[
                ToolCallScript(call.name, call.arguments, id=call.id, fragment=call.fragment)
                for call in reply.calls
            ],
            usage=reply.usage,
            chunk=reply.chunk,
            interleave=reply.interleave,
            # the role chunk comes first on the wire, then one chunk per text piece
            drop_after=None if reply.cut_after is None else reply.cut_after + 1,
            token_delay=reply.slow,
        )


@contextlib.asynccontextmanager
async def _scripted() -> AsyncIterator[ModelHarness]:
    yield ScriptedHarness()


@contextlib.asynccontextmanager
async def _openai_wire() -> AsyncIterator[ModelHarness]:
    async with ScriptedOpenAIServer(api_key=API_KEY) as server:
        settings = LLMSettings(
            model="gpt-test", base_url=server.base_url, api_key=SecretStr(API_KEY)
        )
        yield OpenAIWireHarness(server, LangchainLanguageModel(build_chat_model(settings)))


MODELS: dict[str, Callable[[], contextlib.AbstractAsyncContextManager[ModelHarness]]] = {
    "scripted": _scripted,
    "openai_wire": _openai_wire,
}


@pytest.fixture(params=sorted(MODELS))
async def harness(request: pytest.FixtureRequest) -> AsyncIterator[ModelHarness]:
    async with MODELS[request.param]() as made:
        yield made


async def collect(
    harness: ModelHarness,
    tools: Sequence[ToolSpec] = (),
    received: list[ModelDelta] | None = None,
) -> list[ModelDelta]:
    deltas = received if received is not None else []
    async with asyncio.timeout(10):
        async for delta in harness.model.stream(HELLO, tools, CallOptions()):
            deltas.append(delta)
    return deltas


def text_of(deltas: Sequence[ModelDelta]) -> str:
    return "".join(d.text for d in deltas if isinstance(d, TextDelta))


def assert_finished_once(deltas: Sequence[ModelDelta], reason: str) -> None:
    """One finish, with ``reason``; after it nothing but usage."""
    finishes = [n for n, d in enumerate(deltas) if isinstance(d, FinishDelta)]
    assert len(finishes) == 1, deltas
    assert deltas[finishes[0]] == FinishDelta(reason)
    assert all(isinstance(d, UsageDelta) for d in deltas[finishes[0] + 1 :]), deltas


def total_usage(deltas: Sequence[ModelDelta]) -> tuple[int, int]:
    usage = [d for d in deltas if isinstance(d, UsageDelta)]
    return sum(u.input_tokens for u in usage), sum(u.output_tokens for u in usage)


# ========================================================================== text
async def test_text_streams_as_text_deltas_in_order(harness: ModelHarness) -> None:
    answer = "R1 and R2 are linked on Ethernet0; ça marche 🙂."
    harness.script(Answer(text=answer, chunk=5))

    deltas = await collect(harness)

    texts = [d.text for d in deltas if isinstance(d, TextDelta) and d.text]
    assert "".join(texts) == answer
    assert len(texts) == len(range(0, len(answer), 5))  # piece by piece, not one blob
    assert not any(isinstance(d, ToolCallDelta) for d in deltas)


async def test_a_finish_ends_the_stream_with_the_reason(harness: ModelHarness) -> None:
    harness.script(Answer(text="Two nodes."), Answer(calls=[Call("c1", "get_nodes", {})]))

    plain = await collect(harness)
    calling = await collect(harness, TOOLS)

    assert_finished_once(plain, "stop")
    assert_finished_once(calling, "tool_calls")
    last_text = max(n for n, d in enumerate(plain) if isinstance(d, TextDelta))
    assert last_text < plain.index(FinishDelta("stop"))


async def test_usage_arrives_with_the_reply(harness: ModelHarness) -> None:
    harness.script(Answer(text="ok", usage=(321, 45)))

    deltas = await collect(harness)

    assert total_usage(deltas) == (321, 45)


# ==================================================================== tool calls
async def test_tool_call_fragments_accumulate_to_the_call(harness: ModelHarness) -> None:
    harness.script(
        Answer(text="Starting it.", calls=[Call("call_a", "start_node", {"node": "R1"}, 3)])
    )

    deltas = await collect(harness, TOOLS)

    fragments = [d for d in deltas if isinstance(d, ToolCallDelta)]
    assert len(fragments) > 2  # streamed as fragments, not one piece
    assert fragments[0].id == "call_a" and fragments[0].name == "start_node"
    assert text_of(deltas) == "Starting it."
    accumulator = ToolCallAccumulator()
    for fragment in fragments:
        accumulator.add(fragment)
    accumulator.finish("tool_calls")
    assert [(c.id, c.name, c.arguments) for c in accumulator.calls()] == [
        ("call_a", "start_node", {"node": "R1"})
    ]


async def test_two_interleaved_parallel_calls_accumulate_to_both_calls(
    harness: ModelHarness,
) -> None:
    harness.script(
        Answer(
            calls=[
                Call("call_a", "get_nodes", {"project": "lab-1"}, 4),
                Call("call_b", "start_node", {"node": "R1"}, 3),
            ],
            interleave=True,
            usage=(120, 30),
        )
    )

    deltas = await collect(harness, TOOLS)

    fragments = [d for d in deltas if isinstance(d, ToolCallDelta)]
    indexes = [f.index for f in fragments]
    assert indexes[:4] == [0, 1, 0, 1]  # really interleaved on the way
    accumulator = ToolCallAccumulator()
    events = [event for fragment in fragments for event in accumulator.add(fragment)]
    final = accumulator.finish("tool_calls")
    assert [(e.id, e.complete) for e in final] == [("call_a", True), ("call_b", True)]
    assert {e.id for e in events} == {"call_a", "call_b"}
    assert [(c.id, c.name, c.arguments, c.is_valid) for c in accumulator.calls()] == [
        ("call_a", "get_nodes", {"project": "lab-1"}, True),
        ("call_b", "start_node", {"node": "R1"}, True),
    ]
    assert_finished_once(deltas, "tool_calls")
    assert total_usage(deltas) == (120, 30)


# ====================================================================== failures
FAILURES: list[tuple[Fails, type[LLMError]]] = [
    (Fails("auth"), LLMAuthenticationError),
    (Fails("model_not_found"), LLMModelNotFoundError),
    (Fails("rate_limited", retry_after=7), LLMRateLimitedError),
    (Fails("context_length"), LLMContextLengthError),
    (Fails("server_error"), LLMUnavailableError),
]


@pytest.mark.parametrize(
    ("failure", "kind"), FAILURES, ids=[failure.kind for failure, _ in FAILURES]
)
async def test_a_provider_refusal_is_the_core_llm_error_for_it(
    harness: ModelHarness, failure: Fails, kind: type[LLMError]
) -> None:
    harness.script(failure)
    received: list[ModelDelta] = []

    with pytest.raises(LLMError) as caught:
        await collect(harness, received=received)

    assert type(caught.value) is kind
    assert not [d for d in received if isinstance(d, TextDelta | ToolCallDelta)]
    assert caught.value.message
    for secret in harness.secrets:
        assert secret not in str(caught.value)
    if isinstance(caught.value, LLMRateLimitedError):
        assert caught.value.retry_after == failure.retry_after


async def test_a_stream_cut_mid_reply_delivers_the_start_then_an_interruption(
    harness: ModelHarness,
) -> None:
    harness.script(
        Answer(text="The topology has three routers and a switch.", chunk=5, cut_after=3)
    )
    received: list[ModelDelta] = []

    with pytest.raises(LLMStreamInterruptedError):
        await collect(harness, received=received)

    assert text_of(received) == "The topology ha"  # the three pieces sent before the cut
    assert not any(isinstance(d, FinishDelta) for d in received)


async def test_the_model_answers_again_after_a_failure(harness: ModelHarness) -> None:
    harness.script(Fails("server_error"), Answer(text="back again"))

    with pytest.raises(LLMUnavailableError):
        await collect(harness)
    deltas = await collect(harness)

    assert text_of(deltas) == "back again"


# ================================================================== early close
async def test_closing_the_stream_early_stops_the_provider(harness: ModelHarness) -> None:
    harness.script(Answer(text="x" * 200, chunk=1, slow=0.02))
    stream = harness.model.stream(HELLO, [], CallOptions())

    first = await anext(stream)
    while not isinstance(first, TextDelta):
        first = await anext(stream)
    await stream.aclose()

    assert first == TextDelta("x")
    assert await harness.consumer_left()


async def test_cancelling_the_consumer_stops_the_provider(harness: ModelHarness) -> None:
    harness.script(Answer(text="y" * 200, chunk=1, slow=0.02))
    seen: list[ModelDelta] = []
    first = asyncio.Event()

    async def consume() -> None:
        async for delta in harness.model.stream(HELLO, [], CallOptions()):
            seen.append(delta)
            if isinstance(delta, TextDelta):
                first.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(first.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    assert await harness.consumer_left()
    assert len(text_of(seen)) < 200
