"""What the first turn after start-up would otherwise pay for once: warmed at start-up."""

from __future__ import annotations

from collections.abc import Callable

from pydantic import SecretStr

from adapters.llm._settings import LLMSettings, build_chat_model
from adapters.llm._tokens import offline_encoding

__all__ = ["warm_up"]

#: One chat model of each kind: each step imports that provider's SDK and integration.
_PROVIDERS = (
    ("openai", "http://127.0.0.1:9/v1"),
    ("anthropic", "http://127.0.0.1:9"),
    ("ollama_native", "http://127.0.0.1:9"),
)


def warm_up(stop: Callable[[], bool] = lambda: False) -> bool:
    """Import the chat model classes, build one of each kind (their pydantic models are
    compiled on first use) and load the shipped tokenizer. Blocking: run it in a thread.
    Nothing is sent anywhere (the models point at a closed local port and are dropped).

    ``stop`` is asked before each step (a step, an import, cannot be interrupted): once
    it answers true, nothing more is loaded. Whether every step ran."""
    for provider, base_url in _PROVIDERS:
        if stop():
            return False
        settings = LLMSettings(
            provider=provider, model="warm-up", base_url=base_url, api_key=SecretStr("unused")
        )
        build_chat_model(settings)
    if stop():
        return False
    offline_encoding("cl100k_base")
    return True
