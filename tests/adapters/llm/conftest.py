"""Fixtures of the LLM adapter tests: a scripted OpenAI server and models pointed at it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pydantic import SecretStr

from adapters.llm import LangchainLanguageModel, LLMSettings, build_chat_model
from tests.fakes.openai_server import ScriptedOpenAIServer

API_KEY = "sk-test-5Jq8uV2wX9yZ1aB3cD4eF6gH"


@pytest.fixture(autouse=True)
def _no_downloads(monkeypatch: pytest.MonkeyPatch) -> None:
    """tiktoken must never fetch an encoding: any attempt fails the test loudly."""
    import tiktoken.load

    def refuse(blobpath: str) -> bytes:
        if "://" in blobpath:
            raise AssertionError(f"tiktoken tried to download {blobpath}")
        with open(blobpath, "rb") as handle:
            return handle.read()

    monkeypatch.setattr(tiktoken.load, "read_file", refuse)


@pytest.fixture
def server() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer(api_key=API_KEY) as running:
        yield running


def settings_for(server: ScriptedOpenAIServer, **changes: object) -> LLMSettings:
    data: dict[str, object] = {
        "model": "gpt-test",
        "base_url": server.base_url,
        "api_key": SecretStr(API_KEY),
    }
    data.update(changes)
    return LLMSettings.model_validate(data)


@pytest.fixture
def model(server: ScriptedOpenAIServer) -> LangchainLanguageModel:
    settings = settings_for(server)
    return LangchainLanguageModel(build_chat_model(settings), base_url=settings.base_url)
