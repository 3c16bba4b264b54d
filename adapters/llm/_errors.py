"""Provider failures, as the core's LLM errors a user can act on.

The OpenAI and Anthropic SDKs (under langchain-openai and langchain-anthropic) raise
their own exception types, which the LangChain packages re-raise as subclasses that
are also LangChain's provider-neutral ``ModelError`` types; the ``ollama`` client
raises ``ResponseError`` (``status_code`` -1 for an error inside the stream) and the
built-in ``ConnectionError``; the streaming transport may raise httpx (or, under
openai 3.x, httpx2) errors directly. :func:`translate_error` maps all of them onto
:class:`~copilot_core.errors.LLMError` subclasses. Messages name the base URL
and the model, never the API key: provider text is only quoted after every
key-like string has been masked.
"""

from __future__ import annotations

import email.utils
import functools
import re
import sys
import time
from dataclasses import dataclass

from copilot_core.errors import (
    LLMAuthenticationError,
    LLMContextLengthError,
    LLMError,
    LLMModelNotFoundError,
    LLMRateLimitedError,
    LLMStreamInterruptedError,
    LLMUnavailableError,
)
from copilot_core.ports import redact_secrets

__all__ = ["ProviderInfo", "redact", "translate_error"]


@dataclass(frozen=True, slots=True)
class _LangchainErrors:
    """LangChain's provider-neutral error types (langchain-core 1.x; older ones lack them)."""

    context: tuple[type[BaseException], ...]
    auth: tuple[type[BaseException], ...]
    not_found: tuple[type[BaseException], ...]
    rate: tuple[type[BaseException], ...]
    timeout: tuple[type[BaseException], ...]
    connection: tuple[type[BaseException], ...]


@functools.cache
def _lc() -> _LangchainErrors:
    """Read on the first failure to translate, not at import: langchain-core loads with
    the first model (``serve`` answers before it has)."""
    from langchain_core import exceptions as lc_errors

    def types(*names: str) -> tuple[type[BaseException], ...]:
        found = (getattr(lc_errors, name, None) for name in names)
        return tuple(t for t in found if isinstance(t, type) and issubclass(t, BaseException))

    return _LangchainErrors(
        context=types("ContextOverflowError"),
        auth=types("ModelAuthenticationError", "ModelPermissionDeniedError"),
        not_found=types("ModelNotFoundError"),
        rate=types("ModelRateLimitError"),
        timeout=types("ModelTimeoutError"),
        connection=types("ModelConnectionError"),
    )


def _loaded_types(*names: tuple[str, str]) -> tuple[type[BaseException], ...]:
    """The exception classes ``module.attribute`` of those modules already imported.

    Nothing is imported here: an exception can only come from a package that has been
    loaded, and importing every SDK with this module would cost whoever imports the
    adapters seconds and thousands of modules (anthropic alone is 3,000) for providers
    they may never use. A provider's SDK loads when a model of that provider is built.
    """
    found: list[type[BaseException]] = []
    for module_name, attribute in names:
        value = getattr(sys.modules.get(module_name), attribute, None)
        if isinstance(value, type) and issubclass(value, BaseException):
            found.append(value)
    return tuple(found)


def _transport_types(attribute: str) -> tuple[type[BaseException], ...]:
    """``httpx.<attribute>`` and, when loaded, its fork ``httpx2`` (openai 3.x uses it)."""
    return _loaded_types(("httpx", attribute), ("httpx2", attribute))


_KEY_LIKE = re.compile(r"\b(sk|pk|rk|key|gsk|xai)[-_][A-Za-z0-9_\-*.]{4,}", re.IGNORECASE)
_MAX_QUOTE = 300


@dataclass(frozen=True, slots=True)
class ProviderInfo:
    """What an error message may say about the provider: where it is and which model."""

    base_url: str
    model: str
    secrets: tuple[str, ...] = ()

    def __repr__(self) -> str:  # never show the secrets
        return f"ProviderInfo(base_url={self.base_url!r}, model={self.model!r})"


def redact(text: str, secrets: tuple[str, ...] = ()) -> str:
    """``text`` with the given secrets (by :func:`~copilot_core.ports.redact_secrets`'s
    rule) and anything shaped like an API key masked."""
    text = redact_secrets(text, secrets)
    return _KEY_LIKE.sub(lambda m: f"{m.group(1)}-***", text)


def translate_error(exc: BaseException, provider: ProviderInfo, *, streaming: bool) -> LLMError:
    """The core error for a provider failure.

    ``streaming`` says whether part of the reply had already arrived: a broken
    connection then means the stream was cut, not that the server is unreachable.
    """
    if isinstance(exc, LLMError):
        return exc
    where = provider.base_url
    model = provider.model
    status = _status_code(exc)
    detail = _provider_message(exc, provider.secrets)
    lc = _lc()

    context = LLMContextLengthError(
        f"The conversation is longer than the context window of model {model!r}"
        f"{_quote(detail)}. Start a new session, or set a smaller context_limit in "
        "your LLM settings so that older messages are trimmed."
    )
    if isinstance(exc, lc.context):
        return context
    if isinstance(exc, lc.auth) or status in {401, 403}:
        return LLMAuthenticationError(
            f"The language model server at {where} rejected the API key (HTTP {status or 401})."
            " Check the api_key in your LLM settings."
        )
    if isinstance(exc, lc.not_found) or status == 404:
        if _mentions_model(detail):
            return LLMModelNotFoundError(
                f"The language model server at {where} does not serve model {model!r}"
                f"{_quote(detail)}. Check the model name in your LLM settings."
            )
        return LLMModelNotFoundError(
            f"The language model server at {where} answered 404 Not Found for model {model!r}."
            " Check the model name, and that base_url is the API root (it usually ends in /v1)."
        )
    if isinstance(exc, lc.rate) or status == 429:
        retry_after = _retry_after(exc)
        if "quota" in detail.lower():
            return LLMRateLimitedError(
                f"The language model provider at {where} says your quota is used up"
                f"{_quote(detail)}. Check your plan and billing with the provider.",
                retry_after,
            )
        wait = (
            f" Try again in {retry_after:g} s."
            if retry_after is not None
            else " Wait a moment and try again."
        )
        return LLMRateLimitedError(
            f"The language model provider at {where} is rate limiting requests (HTTP 429).{wait}",
            retry_after,
        )
    # Only now the wording: a 429 may well speak of tokens without being about context.
    if status in {None, 400, 413, 422} and _says_context_length(detail):
        return context
    if isinstance(exc, (TimeoutError, *_transport_types("TimeoutException"), *lc.timeout)):
        if streaming:
            return LLMStreamInterruptedError(
                f"The language model server at {where} stopped sending the reply (timed out)."
                " The partial answer was kept; try again."
            )
        return LLMUnavailableError(
            f"The language model server at {where} did not answer in time. Check that it is "
            "running and not overloaded, then try again."
        )
    if status is not None and status >= 500:
        return LLMUnavailableError(
            f"The language model server at {where} failed with HTTP {status}"
            f"{_quote(detail)}. Try again later."
        )
    if isinstance(exc, (*_transport_types("TransportError"), *lc.connection, ConnectionError)) or (
        _is_sdk_connection_error(exc)
    ):
        if streaming:
            return LLMStreamInterruptedError(
                f"The language model server at {where} closed the connection in the middle of "
                "the reply. The partial answer was kept; try again."
            )
        return LLMUnavailableError(
            f"Cannot reach the language model server at {where}. Check base_url in your LLM "
            "settings and that the server is running and reachable from the copilot."
        )
    if (status is None or status < 400) and _is_sdk_api_error(exc):
        # An error event inside a stream that began with 200 (the SDKs report that status,
        # or none; Ollama's client -1): the server gave up mid-reply.
        if streaming:
            return LLMStreamInterruptedError(
                f"The language model server at {where} failed in the middle of the reply"
                f"{_quote(detail)}. The partial answer was kept; try again."
            )
        return LLMUnavailableError(
            f"The language model server at {where} reported an error{_quote(detail)}. "
            "Try again later."
        )
    if status is not None and status >= 400:
        return LLMError(
            f"The language model server at {where} refused the request (HTTP {status})"
            f"{_quote(detail)}."
        )
    return LLMError(f"The language model at {where} failed: {type(exc).__name__}{_quote(detail)}.")


# ------------------------------------------------------------------------- details
def _status_code(exc: BaseException) -> int | None:
    value = getattr(exc, "status_code", None)
    if isinstance(value, int):
        return value
    response = getattr(exc, "response", None)
    value = getattr(response, "status_code", None)
    return value if isinstance(value, int) else None


def _provider_message(exc: BaseException, secrets: tuple[str, ...]) -> str:
    body = getattr(exc, "body", None)
    message: object = None
    if isinstance(body, dict):
        error = body.get("error", body)
        message = error.get("message") if isinstance(error, dict) else error
    if not isinstance(message, str) or not message:
        # ``message`` (the SDKs), ``error`` (the ollama client: str(exc) adds a status code)
        message = getattr(exc, "message", None) or getattr(exc, "error", None) or str(exc)
    text = " ".join(str(message).split())
    if len(text) > _MAX_QUOTE:
        text = text[: _MAX_QUOTE - 1] + "…"
    return redact(text, secrets)


def _quote(detail: str) -> str:
    return f" (the server said: {detail})" if detail else ""


def _says_context_length(detail: str) -> bool:
    lowered = detail.lower()
    return any(
        marker in lowered
        for marker in (
            "context_length_exceeded",
            "maximum context length",
            "context window",
            "context length",
            "too many tokens",
            "prompt is too long",
        )
    )


def _mentions_model(detail: str) -> bool:
    return "model" in detail.lower()


def _sdk_types(attribute: str) -> tuple[type[BaseException], ...]:
    """``openai.<attribute>``, ``anthropic.<attribute>`` and, for ``APIError``, the
    ``ollama`` client's ``ResponseError``: whichever of those packages is loaded."""
    names = [("openai", attribute), ("anthropic", attribute)]
    if attribute == "APIError":
        names.append(("ollama", "ResponseError"))
    return _loaded_types(*names)


def _is_sdk_api_error(exc: BaseException) -> bool:
    return isinstance(exc, _sdk_types("APIError"))


def _is_sdk_connection_error(exc: BaseException) -> bool:
    return isinstance(exc, _sdk_types("APIConnectionError"))


def _retry_after(exc: BaseException) -> float | None:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())
