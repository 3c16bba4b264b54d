"""The language model adapter: OpenAI-compatible, Anthropic and Ollama chat models behind
the core's ports.

* :class:`LangchainLanguageModel`: the core's ``LanguageModel`` over a LangChain
  chat model (streams deltas, binds tools, translates provider errors).
* :class:`SettingsLanguageModelProvider`: the core's ``LanguageModelProvider``,
  building each user's model from their stored :class:`LLMSettings`.
* :class:`LLMSettingsRepository`: per-user settings, the API key encrypted with
  Fernet, in any ``LLMSettingsStore`` (by default :class:`SqliteLLMSettingsStore`,
  the service-wide SQLite database); :class:`LLMSettingsPublicView` shows them as JSON
  values without the key (the web API's view).
* :class:`HttpModelCatalog`: the models each user's endpoint lists (the web page's
  settings dialog offers them).
* :class:`TiktokenTokenCounter`: the core's ``TokenCounter`` with tiktoken.
* :func:`to_langchain` / :func:`from_langchain`: exact message conversion.

LangChain itself loads with the first model built (or the start-up warm-up, once the
service listens): importing this package does not import it. The names that need it,
:class:`LangchainLanguageModel` and the message conversions, load on first use.
"""

import importlib
import typing

from adapters.llm._catalog import HttpModelCatalog
from adapters.llm._endpoints import check_endpoint, endpoint_url, resolve_host
from adapters.llm._errors import ProviderInfo, redact, translate_error
from adapters.llm._provider import LLMSettingsSource, LLMTimeouts, SettingsLanguageModelProvider
from adapters.llm._public_view import LLMSettingsPublicView
from adapters.llm._repository import (
    DATABASE_FILENAME,
    KEY_FILENAME,
    LLMSettingsRepository,
    load_or_create_key,
)
from adapters.llm._rows import SqliteLLMSettingsStore
from adapters.llm._settings import (
    DEFAULT_CONTEXT_LIMIT,
    NATIVE_PROVIDERS,
    OPENAI_COMPATIBLE_PROVIDERS,
    LLMSettings,
    PublicLLMSettings,
    build_chat_model,
    parse_llm_settings,
)
from adapters.llm._tokens import (
    SHIPPED_ENCODINGS,
    ShippedEncoding,
    TiktokenTokenCounter,
    offline_encoding,
)
from adapters.llm._warm import warm_up

if typing.TYPE_CHECKING:
    from adapters.llm._messages import (
        from_langchain,
        message_from_langchain,
        message_to_langchain,
        to_langchain,
    )
    from adapters.llm._model import LangchainLanguageModel

#: The names whose modules import LangChain, and where they live.
_LAZY = {
    "LangchainLanguageModel": "adapters.llm._model",
    "from_langchain": "adapters.llm._messages",
    "message_from_langchain": "adapters.llm._messages",
    "message_to_langchain": "adapters.llm._messages",
    "to_langchain": "adapters.llm._messages",
}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = [
    "DATABASE_FILENAME",
    "DEFAULT_CONTEXT_LIMIT",
    "KEY_FILENAME",
    "NATIVE_PROVIDERS",
    "OPENAI_COMPATIBLE_PROVIDERS",
    "SHIPPED_ENCODINGS",
    "HttpModelCatalog",
    "LLMSettings",
    "LLMSettingsPublicView",
    "LLMSettingsRepository",
    "LLMSettingsSource",
    "LLMTimeouts",
    "LangchainLanguageModel",
    "ProviderInfo",
    "PublicLLMSettings",
    "SettingsLanguageModelProvider",
    "ShippedEncoding",
    "SqliteLLMSettingsStore",
    "TiktokenTokenCounter",
    "build_chat_model",
    "check_endpoint",
    "endpoint_url",
    "from_langchain",
    "load_or_create_key",
    "message_from_langchain",
    "message_to_langchain",
    "offline_encoding",
    "parse_llm_settings",
    "redact",
    "resolve_host",
    "to_langchain",
    "translate_error",
    "warm_up",
]
