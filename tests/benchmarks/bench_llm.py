"""Benchmark of the LLM adapter: prints figures, asserts nothing about speed.

Run: ``python -m tests.benchmarks.bench_llm``. Everything runs against the scripted
OpenAI server on 127.0.0.1 through langchain-openai's real client.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from datetime import UTC, datetime

from pydantic import SecretStr

from adapters.llm import LangchainLanguageModel, LLMSettings, TiktokenTokenCounter, build_chat_model
from copilot_core import Message
from copilot_core.ports import CallOptions, TextDelta
from tests.fakes.openai_server import Reply, ScriptedOpenAIServer

__all__ = ["main"]

NOW = datetime(2026, 1, 1, tzinfo=UTC)
HELLO = [Message.user("u", "hi", NOW)]


async def _stream_figures() -> None:
    async with ScriptedOpenAIServer() as server:
        settings = LLMSettings(model="gpt-test", base_url=server.base_url, api_key=SecretStr("k"))
        model = LangchainLanguageModel(build_chat_model(settings))
        server.add(Reply(text="warm-up"))
        async for _ in model.stream(HELLO, [], CallOptions()):
            pass

        chunks = 4000
        server.add(Reply(text="x" * chunks, chunk=1))
        start = time.perf_counter()
        first: float | None = None
        count = 0
        async for delta in model.stream(HELLO, [], CallOptions()):
            count += 1
            if first is None and isinstance(delta, TextDelta):
                first = time.perf_counter() - start
        total = time.perf_counter() - start
        print(f"stream: {count} deltas in {total:.2f} s = {count / total:.0f} deltas/s")

        rounds = []
        for _ in range(30):
            server.add(Reply(text="hello"))
            start = time.perf_counter()
            async for _ in model.stream(HELLO, [], CallOptions()):
                pass
            rounds.append(time.perf_counter() - start)
        print(
            f"short reply, request to end of stream: median {statistics.median(rounds) * 1e3:.1f}"
            f" ms, max {max(rounds) * 1e3:.1f} ms"
        )

        server.add(Reply(text="y" * 1000, chunk=1, token_delay=0.02))
        stream = model.stream(HELLO, [], CallOptions())
        async for delta in stream:
            if isinstance(delta, TextDelta) and delta.text:
                break
        start = time.perf_counter()
        await stream.aclose()  # type: ignore[attr-defined]
        request = server.requests[-1]
        await asyncio.to_thread(request.finished.wait, 5)
        print(
            f"abort: server saw the hang-up {(time.perf_counter() - start) * 1e3:.1f} ms after"
            f" aclose(), having sent {request.chunks_sent} chunks"
        )


def _build_figures() -> None:
    settings = LLMSettings(model="m", base_url="http://127.0.0.1:9/v1", api_key=SecretStr("k"))
    build_chat_model(settings)
    start = time.perf_counter()
    for _ in range(200):
        build_chat_model(settings)
    print(f"build_chat_model: {(time.perf_counter() - start) / 200 * 1e3:.2f} ms per model")


def _token_figures() -> None:
    start = time.perf_counter()
    counter = TiktokenTokenCounter()
    print(f"tiktoken cl100k_base load: {(time.perf_counter() - start) * 1e3:.0f} ms (once)")
    text = "show ip ospf neighbor on R1 and compare the areas of R2. " * 200
    messages = [Message.user(f"u{i}", text, NOW) for i in range(50)]
    start = time.perf_counter()
    tokens = counter.count(messages)
    elapsed = time.perf_counter() - start
    chars = sum(len(m.content) for m in messages)
    print(f"token count: {tokens} tokens of {chars} characters in {elapsed * 1e3:.0f} ms")


def main() -> None:
    _token_figures()
    _build_figures()
    asyncio.run(_stream_figures())


if __name__ == "__main__":
    main()
