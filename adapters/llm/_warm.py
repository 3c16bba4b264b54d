"""What the first turn after start-up would otherwise pay for once: warmed at start-up.

A turn that comes before the warm-up has loaded what its model needs waits for those
imports (Python's import lock), seconds on a busy machine: that is why ``/readyz`` says
the service is ready for chats only once :func:`warm_up` has ended (``entrypoints.app``).
Such a turn waits in a thread (:func:`integration_loaded`), not on the event loop, which
keeps answering every other request meanwhile.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
from collections.abc import Callable
from datetime import UTC, datetime

from pydantic import SecretStr

from adapters.detached import in_daemon_thread
from adapters.llm._settings import LLMSettings, build_chat_model
from adapters.llm._tokens import offline_encoding

__all__ = ["integration_loaded", "integration_of", "warm_up", "warm_up_steps"]

_log = logging.getLogger(__name__)

#: A closed local port: the warm-up's models are built, never used (nothing is sent).
_NOWHERE = "http://127.0.0.1:9"

#: A tool as the agent binds it (OpenAI function format), to convert once.
_TOOL = {
    "type": "function",
    "function": {
        "name": "warm_up",
        "description": "Nothing: binding it loads LangChain's tool conversion.",
        "parameters": {"type": "object", "properties": {"device": {"type": "string"}}},
    },
}


#: The integrations whose import has completed (not merely begun: a module another
#: thread is still importing is already in ``sys.modules``).
_LOADED: set[str] = set()


def integration_of(provider: str) -> str:
    """The LangChain integration module ``provider``'s models are built with."""
    if provider == "anthropic":
        return "langchain_anthropic"
    if provider == "ollama_native":
        return "langchain_ollama"
    return "langchain_openai"  # every OpenAI-compatible provider


async def integration_loaded(provider: str) -> None:
    """Once ``provider``'s integration is imported: at once when it is (the warm-up or
    an earlier turn did it), else after importing it, or waiting for the warm-up's
    import of it, in a thread of its own. Building a model in the event loop while
    another thread imports its integration would hold the whole loop on the import
    lock (every request, every stream: 1.6-2.0 s measured). A failed import is left
    for building the model to report."""
    module = integration_of(provider)
    if module in _LOADED:
        return
    with contextlib.suppress(Exception):
        await in_daemon_thread(importlib.import_module, module)
        _LOADED.add(module)


def _chat_model(provider: str, base_url: str) -> None:
    """Import a provider's SDK and integration and build one model (its pydantic models
    are compiled on first use); an OpenAI one also binds a tool, as every turn does."""
    settings = LLMSettings(
        provider=provider, model="warm-up", base_url=base_url, api_key=SecretStr("unused")
    )
    model = build_chat_model(settings)
    if provider == "openai":
        model.bind_tools([_TOOL])
    _LOADED.add(integration_of(provider))


def _turn_path() -> None:
    """One call through the service's own model adapter, with LangChain's local fake
    model (no SDK, no network, no LangSmith trace): what LangChain loads on a model's first
    call (callbacks, tracers, message conversion) and the adapter's own modules."""
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage
    from langsmith.run_helpers import tracing_context

    from adapters.llm._model import LangchainLanguageModel
    from copilot_core import Message
    from copilot_core.ports import CallOptions

    fake = GenericFakeChatModel(messages=iter([AIMessage("ok")]))
    model = LangchainLanguageModel(fake, base_url=_NOWHERE, model_name="warm-up")
    question = Message.user("warm-up", "warm up", datetime.now(UTC))

    async def call() -> None:
        async for _ in model.stream([question], [], CallOptions()):
            pass

    with tracing_context(enabled=False):
        asyncio.run(call())  # the warm-up's own thread, its own loop


def warm_up_steps() -> tuple[tuple[str, Callable[[], object]], ...]:
    """The warm-up's steps, named, in order: the OpenAI integration first (the default
    provider, and the one every OpenAI-compatible provider uses), then a model call's
    path, the tokenizer, the other providers."""
    return (
        ("openai", lambda: _chat_model("openai", f"{_NOWHERE}/v1")),
        ("turn path", _turn_path),
        ("tokenizer", lambda: offline_encoding("cl100k_base")),
        ("anthropic", lambda: _chat_model("anthropic", _NOWHERE)),
        ("ollama_native", lambda: _chat_model("ollama_native", _NOWHERE)),
    )


def warm_up(stop: Callable[[], bool] = lambda: False) -> bool:
    """Load what a turn loads the first time (:func:`warm_up_steps`). Blocking: run it
    in a thread. Nothing is sent anywhere.

    ``stop`` is asked before each step (a step, an import mostly, cannot be
    interrupted): once it answers true, nothing more is loaded. A step that fails is
    logged (the first turn that needs it loads it, or reports why it cannot) and the
    next one runs. Whether every step was run."""
    for name, step in warm_up_steps():
        if stop():
            return False
        try:
            step()
        except Exception:  # the warm-up must not stop the service; the turn will say
            _log.warning("the start-up warm-up could not load %s", name, exc_info=True)
    return True
