"""A user's LLM settings, and the LangChain chat model they describe."""

from __future__ import annotations

import ipaddress
import re
import string
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self
from urllib.parse import urlsplit

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)

from copilot_core import CopilotMode
from copilot_core.errors import InvalidRequestError
from copilot_core.ports import ApprovalPolicy, ToolSet

if TYPE_CHECKING:  # langchain-core loads with the first model built, not with the settings
    from langchain_core.language_models import BaseChatModel

__all__ = [
    "DEFAULT_CONTEXT_LIMIT",
    "LOCAL_PROVIDERS",
    "MAX_TIMEOUT",
    "NATIVE_PROVIDERS",
    "OPENAI_COMPATIBLE_PROVIDERS",
    "LLMSettings",
    "PublicLLMSettings",
    "build_chat_model",
    "checked_base_url",
    "parse_llm_settings",
    "request_options",
]

DEFAULT_CONTEXT_LIMIT = 32_000
"""The context budget assumed when a user's settings name none."""

OPENAI_COMPATIBLE_PROVIDERS: Mapping[str, str | None] = {
    "openai": None,  # the OpenAI API itself, or any server given by base_url
    "openai_compatible": None,  # any OpenAI-compatible server; base_url required
    "deepseek": "https://api.deepseek.com/v1",
    "ollama": "http://localhost:11434/v1",
    "vllm": "http://localhost:8000/v1",
    "lmstudio": "http://localhost:1234/v1",
    "lemonade": "http://localhost:8000/api/v1",
}
"""Provider names served through the OpenAI protocol, with the base URL each defaults
to when ``base_url`` is not set (``None``: OpenAI's own API)."""

NATIVE_PROVIDERS: Mapping[str, str] = {
    "anthropic": "https://api.anthropic.com",  # langchain-anthropic's ChatAnthropic
    "ollama_native": "http://localhost:11434",  # langchain-ollama's ChatOllama (/api/chat)
}
"""Providers spoken in their own protocol, with their default base URL (the server's
root: no ``/v1``)."""

_KNOWN_PROVIDERS = (*OPENAI_COMPATIBLE_PROVIDERS, *NATIVE_PROVIDERS)

LOCAL_PROVIDERS = frozenset(
    {"openai_compatible", "ollama", "ollama_native", "vllm", "lmstudio", "lemonade"}
)
"""Providers that usually serve a local (often small) model: tool calls written as text
are accepted from them unless the user's settings say otherwise."""

MAX_TIMEOUT = 3600.0
"""The longest timeout a user's settings may ask for (seconds)."""

_DEFAULT_TIMEOUT = 120.0
_DEFAULT_MAX_RETRIES = 0


class _SettingsFields(BaseModel):
    """The fields shared by the stored settings and their public view."""

    model_config = ConfigDict(frozen=True, extra="forbid", str_strip_whitespace=True)

    provider: str = "openai"
    """``openai`` (OpenAI itself, or any OpenAI-compatible server through ``base_url``),
    one of the named OpenAI-compatible servers of :data:`OPENAI_COMPATIBLE_PROVIDERS`
    (``deepseek``, ``ollama``, ``vllm``, ``lmstudio``, ``lemonade``, ``openai_compatible``),
    which only differ by their default ``base_url``, or a native protocol of
    :data:`NATIVE_PROVIDERS` (``anthropic``, ``ollama_native``)."""
    model: str = Field(min_length=1, max_length=200)
    base_url: str | None = Field(default=None, max_length=2000)
    temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    max_tokens: int | None = Field(default=None, gt=0)
    context_limit: int | None = Field(default=None, gt=0)
    title_model: str | None = Field(default=None, min_length=1, max_length=200)
    copilot_mode: CopilotMode | None = None
    approval: ApprovalPolicy = ApprovalPolicy.CHANGES
    """Which tool calls wait for the user's approval: ``changes`` (every call that can
    change a device or the topology), ``always`` or ``never``."""
    connect_timeout: float | None = Field(default=None, gt=0, le=MAX_TIMEOUT)
    """Seconds to connect to the model's server (``None``: the service's default)."""
    first_token_timeout: float | None = Field(default=None, gt=0, le=MAX_TIMEOUT)
    """Seconds the model may take to its first token (a local model reading a long
    prompt on a CPU may need minutes; ``None``: the service's default)."""
    token_timeout: float | None = Field(default=None, gt=0, le=MAX_TIMEOUT)
    """Seconds the model may pause between two tokens (``None``: the service's default)."""
    tool_set: ToolSet | None = None
    """``full`` (every tool, whole descriptions) or ``compact`` (short schemas for small
    models); ``None``: the service's default."""
    text_tool_calls: bool | None = None
    """Run tool calls the model writes in its text when it makes none; ``None``: on for
    the local providers (:data:`LOCAL_PROVIDERS`), off for the others."""

    @field_validator("provider")
    @classmethod
    def _check_provider(cls, value: str) -> str:
        name = value.strip().lower().replace("-", "_").replace(" ", "_")
        if name not in _KNOWN_PROVIDERS:
            known = ", ".join(_KNOWN_PROVIDERS)
            raise ValueError(f"unknown provider {value!r}; use one of: {known}")
        return name

    @model_validator(mode="after")
    def _check_base_url_needed(self) -> Self:
        if self.provider == "openai_compatible" and self.base_url is None:
            raise ValueError("provider openai_compatible needs a base_url")
        return self

    @field_validator("base_url")
    @classmethod
    def _check_base_url(cls, value: str | None) -> str | None:
        if value is None or value == "":
            return None
        return checked_base_url(value).rstrip("/")

    @property
    def effective_base_url(self) -> str | None:
        """``base_url``, else the provider's default (``None``: OpenAI's own API)."""
        if self.base_url:
            return self.base_url
        if self.provider in NATIVE_PROVIDERS:
            return NATIVE_PROVIDERS[self.provider]
        return OPENAI_COMPATIBLE_PROVIDERS.get(self.provider)

    @property
    def effective_title_model(self) -> str:
        """The model that writes session titles: ``title_model``, else ``model``."""
        return self.title_model or self.model

    @property
    def effective_context_limit(self) -> int:
        return self.context_limit or DEFAULT_CONTEXT_LIMIT

    @property
    def effective_text_tool_calls(self) -> bool:
        """``text_tool_calls``, else whether the provider is a local one."""
        if self.text_tool_calls is not None:
            return self.text_tool_calls
        return self.provider in LOCAL_PROVIDERS


#: What a URL may be written with (RFC 3986's characters; anything else percent-encoded).
_URL_CHARACTERS = frozenset(string.ascii_letters + string.digits + "-._~!$&'()*+,;=:@/?#%[]")
_LABEL = re.compile(r"[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?")
_LONE_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})")


def checked_base_url(value: str) -> str:
    """``value`` when every HTTP client the SDKs use would take it as it is meant, else
    :class:`ValueError` saying what is wrong. An allow-list (the characters and shape
    of an http(s) URL), not the clients' own parsers: they accept more than they can
    send (a ``\x7f`` passes httpx's parser and fails when the client is built)."""
    if not value.startswith(("http://", "https://")):
        raise ValueError("must start with http:// or https://")
    odd = sorted({c for c in value if c not in _URL_CHARACTERS})
    if odd:
        shown = ", ".join(repr(c) for c in odd[:5])
        raise ValueError(f"has characters a URL cannot carry ({shown}); percent-encode them")
    if _LONE_PERCENT.search(value):
        raise ValueError("has a % that is not followed by two hexadecimal digits")
    try:
        parts = urlsplit(value)
    except ValueError as exc:  # unbalanced brackets
        raise ValueError(f"cannot be read as a URL ({exc})") from None
    path = value[len(parts.scheme) + 3 + len(parts.netloc) :]
    if "[" in path or "]" in path or "[" in parts.netloc.lstrip("["):
        raise ValueError("has brackets outside an IPv6 address")
    if "@" in parts.netloc:
        raise ValueError("must not carry a user or password (the key goes in api_key)")
    host = parts.hostname or ""
    if parts.netloc.startswith("["):
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            raise ValueError(f"has an invalid IPv6 address {host!r}") from None
    elif not host or not all(_LABEL.fullmatch(label) for label in host.rstrip(".").split(".")):
        raise ValueError(f"has no valid host name ({host!r})")
    try:
        port = parts.port
    except ValueError:
        port = 0
    if port == 0 or (port is None and parts.netloc.endswith(":")):
        raise ValueError("has a port that is not a number from 1 to 65535")
    return value


class LLMSettings(_SettingsFields):
    """Everything needed to build a user's chat model, the API key included.

    The key is a :class:`~pydantic.SecretStr`: it never shows in ``repr``, logs or
    ``model_dump()`` (unless asked for explicitly). Only the code that builds the
    model reads it.
    """

    api_key: SecretStr | None = None

    @field_validator("api_key")
    @classmethod
    def _check_api_key(cls, value: SecretStr | None) -> SecretStr | None:
        """A key travels in an HTTP header: printable ASCII, no spaces (a pasted key's
        surrounding blanks are dropped). The message never shows the key."""
        if value is None:
            return None
        key = value.get_secret_value().strip()
        if any(not ("!" <= c <= "~") for c in key):
            raise ValueError(
                "must be printable ASCII without spaces or line breaks (it is sent in an "
                "HTTP header)"
            )
        return SecretStr(key)

    def public(self) -> PublicLLMSettings:
        """The view an API response may show: no key, only whether one is set."""
        data = self.model_dump(exclude={"api_key"})
        return PublicLLMSettings(**data, api_key_set=self.has_api_key)

    @property
    def has_api_key(self) -> bool:
        return self.api_key is not None and bool(self.api_key.get_secret_value())


class PublicLLMSettings(_SettingsFields):
    """A user's LLM settings as shown to them: the API key is write-only."""

    api_key_set: bool = False


def parse_llm_settings(data: Mapping[str, Any]) -> LLMSettings:
    """Settings from a request body; :class:`~copilot_core.errors.InvalidRequestError`
    says what is wrong (never echoing the API key)."""
    try:
        return LLMSettings.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in error['loc']) or 'body'}: {error['msg']}"
            for error in exc.errors(include_input=False, include_url=False)
        )
        raise InvalidRequestError(f"Invalid LLM settings: {problems}.") from None


def build_chat_model(
    settings: LLMSettings,
    *,
    model: str | None = None,
    timeout: float = _DEFAULT_TIMEOUT,
    max_retries: int = _DEFAULT_MAX_RETRIES,
    connect_timeout: float | None = None,
    **extra: Any,
) -> BaseChatModel:
    """The LangChain chat model for ``settings`` (``model`` overrides the model name,
    for the title model): ``ChatOpenAI`` for the OpenAI-compatible providers,
    ``ChatAnthropic`` for ``anthropic``, ``ChatOllama`` for ``ollama_native``.

    ``timeout`` bounds every wait of the client, and replaces each bound the SDK or its
    LangChain integration would otherwise apply of its own: the HTTP client's read,
    write and pool timeouts, and langchain-openai's ``stream_chunk_timeout`` (120 s by
    default, or ``LANGCHAIN_OPENAI_STREAM_CHUNK_TIMEOUT_S``: it ended every call whose
    first token took longer, whatever the user's ``first_token_timeout``).
    ``connect_timeout``, when given, bounds the connection instead (``ChatAnthropic``
    takes only one number: :func:`request_options` carries its connection's bound on
    each call). Usage is always streamed. The client retries at most ``max_retries``
    times (0 by default: the user is waiting, and the agent reports the failure
    instead; Ollama's client never retries). ``extra`` goes to the model's constructor
    (tests pass an ``http_async_client`` to ``ChatOpenAI``, for instance).
    """
    name = model or settings.model
    if settings.provider == "anthropic":
        return _anthropic(settings, name, timeout, max_retries, extra)
    if settings.provider == "ollama_native":
        return _ollama(settings, name, timeout, connect_timeout, extra)
    if settings.provider in OPENAI_COMPATIBLE_PROVIDERS:
        import openai
        from langchain_openai import ChatOpenAI

        # Servers such as Ollama or vLLM need no key, but the client insists on one.
        api_key = settings.api_key if settings.has_api_key else SecretStr("not-needed")
        options: dict[str, Any] = {
            "model": name,
            "api_key": api_key,
            "base_url": settings.effective_base_url,
            "stream_usage": True,
            "max_retries": max_retries,
            # A number, or the SDK's own timeout type (``openai.Timeout``: httpx's under
            # openai 1.x, httpx2's under 3.x), never another library's.
            "timeout": (
                timeout
                if connect_timeout is None
                else openai.Timeout(timeout, connect=connect_timeout)
            ),
            # langchain-openai's own bound on the wait for each chunk, the first one
            # included: never shorter than the client's (``None`` would turn it off).
            "stream_chunk_timeout": timeout,
        }
        options.update(_sampling(settings), **extra)
        return ChatOpenAI(**options)
    raise ValueError(f"unsupported LLM provider {settings.provider!r}")  # pragma: no cover


def request_options(
    settings: LLMSettings, *, timeout: float, connect_timeout: float | None = None
) -> dict[str, Any]:
    """What each call of the model built by :func:`build_chat_model` with the same
    waits must carry for the SDK to apply them all: the Anthropic client bounds its
    connection only per request (``ChatAnthropic`` takes one number for every wait, and
    refuses a timeout object), so its calls carry ``anthropic.Timeout`` (read, write
    and pool ``timeout``, the connection ``connect_timeout``); the other clients take
    every bound when built (nothing to carry)."""
    if settings.provider != "anthropic" or connect_timeout is None:
        return {}
    import anthropic

    return {"timeout": anthropic.Timeout(timeout, connect=connect_timeout)}


def _sampling(settings: LLMSettings, *, max_tokens: str = "max_tokens") -> dict[str, Any]:
    """The user's temperature and answer length, when set (``max_tokens``: the client's
    name for the length)."""
    options: dict[str, Any] = {}
    if settings.temperature is not None:
        options["temperature"] = settings.temperature
    if settings.max_tokens is not None:
        options[max_tokens] = settings.max_tokens
    return options


def _anthropic(
    settings: LLMSettings, name: str, timeout: float, max_retries: int, extra: dict[str, Any]
) -> BaseChatModel:
    from langchain_anthropic import ChatAnthropic

    options: dict[str, Any] = {
        "model": name,
        # Anthropic needs a key; without one the server's 401 says so (no key from the env).
        "api_key": settings.api_key if settings.has_api_key else SecretStr("not-set"),
        "base_url": settings.effective_base_url,
        "stream_usage": True,
        "max_retries": max_retries,
        "default_request_timeout": timeout,
    }
    options.update(_sampling(settings), **extra)
    return ChatAnthropic(**options)


def _ollama(
    settings: LLMSettings,
    name: str,
    timeout: float,
    connect_timeout: float | None,
    extra: dict[str, Any],
) -> BaseChatModel:
    from langchain_ollama import ChatOllama

    # The Ollama SDK hands ``client_kwargs`` to its HTTP client: plain numbers, which
    # httpx and httpx2 both read, (connect, read, write, pool) — never a client's type.
    waits = timeout if connect_timeout is None else (connect_timeout, timeout, timeout, timeout)
    client: dict[str, Any] = {"timeout": waits}
    if settings.has_api_key and settings.api_key is not None:
        # Ollama itself has no keys; a proxy in front of it (or a hosted Ollama) may.
        client["headers"] = {"Authorization": f"Bearer {settings.api_key.get_secret_value()}"}
    options: dict[str, Any] = {
        "model": name,
        "base_url": settings.effective_base_url,
        "client_kwargs": client,
    }
    options.update(_sampling(settings, max_tokens="num_predict"))
    if settings.context_limit is not None:
        # Ollama's default context is a few thousand tokens and it truncates silently.
        options["num_ctx"] = settings.context_limit
    options.update(extra)
    return ChatOllama(**options)
