"""The models a user's endpoint lists, asked over HTTP with their stored settings."""

from __future__ import annotations

import pytest
from pydantic import SecretStr

from adapters.llm import HttpModelCatalog, LLMSettings
from copilot_core.errors import LLMError, LLMNotConfiguredError
from tests.fakes.openai_server import ScriptedOpenAIServer


class _Settings:
    def __init__(self, settings: LLMSettings | None) -> None:
        self.settings = settings

    async def get_secret(self, user_id: str) -> LLMSettings | None:
        return self.settings


async def test_an_openai_compatible_endpoint_lists_its_models_sorted() -> None:
    async with ScriptedOpenAIServer(models=["qwen", "gpt-b", "gpt-a"]) as server:
        settings = LLMSettings(provider="vllm", model="gpt-a", base_url=server.base_url)
        catalog = HttpModelCatalog(_Settings(settings))
        assert await catalog.list_models("u1") == ["gpt-a", "gpt-b", "qwen"]
    assert catalog.defaults() == {"temperature": None, "context_limit": 32_000}


async def test_nothing_configured_and_an_unreachable_endpoint_are_said_plainly() -> None:
    with pytest.raises(LLMNotConfiguredError):
        await HttpModelCatalog(_Settings(None)).list_models("u1")
    gone = LLMSettings(
        provider="openai_compatible",
        model="m",
        base_url="http://127.0.0.1:9/v1",
        api_key=SecretStr("sk-never-shown-123456"),
    )
    with pytest.raises(LLMError) as caught:
        await HttpModelCatalog(_Settings(gone), timeout=2).list_models("u1")
    assert "Cannot reach the server at http://127.0.0.1:9/v1" in caught.value.message
    assert "sk-never" not in caught.value.message
