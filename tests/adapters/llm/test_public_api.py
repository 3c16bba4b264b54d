"""The adapter's public API is exactly what its package exports."""

from __future__ import annotations

import importlib
import pkgutil
import types

import adapters.llm


def test_exported_names_are_exactly_all() -> None:
    public = {
        name
        for name in dir(adapters.llm)  # the lazily loaded names too
        if not name.startswith("_")
        and not isinstance(getattr(adapters.llm, name), types.ModuleType)
    }
    assert public == set(adapters.llm.__all__)


def test_every_module_declares_all() -> None:
    for info in pkgutil.iter_modules(adapters.llm.__path__):
        module = importlib.import_module(f"adapters.llm.{info.name}")
        assert hasattr(module, "__all__"), info.name


def test_adapters_satisfy_the_core_ports() -> None:
    from langchain_openai import ChatOpenAI

    from adapters.llm import (
        LangchainLanguageModel,
        LLMSettings,
        SettingsLanguageModelProvider,
        TiktokenTokenCounter,
    )
    from copilot_core.ports import LanguageModel, LanguageModelProvider, TokenCounter

    class NoSettings:
        async def get_secret(self, user_id: str) -> LLMSettings | None:
            return None

    chat = ChatOpenAI(model="m", api_key="sk-x", base_url="http://127.0.0.1:9/v1")
    model: LanguageModel = LangchainLanguageModel(chat)
    counter: TokenCounter = TiktokenTokenCounter()
    provider: LanguageModelProvider = SettingsLanguageModelProvider(NoSettings())
    assert provider is not None
    assert isinstance(model, LanguageModel)
    assert counter.count([]) == 0
    assert "sk-x" not in repr(model)
    assert LangchainLanguageModel(chat).base_url == "http://127.0.0.1:9/v1"
