"""A user's LLM settings, and the LangChain chat model they describe."""

from __future__ import annotations

from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator

from copilot_core.errors import InvalidRequestError
from copilot_core.session import CopilotMode

__all__ = [
    "DEFAULT_CONTEXT_LIMIT",
    "LLMSettings",
    "PublicLLMSettings",
    "build_chat_model",
    "parse_llm_settings",
]

DEFAULT_CONTEXT_LIMIT = 32_000
"""The context budget assumed when a user's settings name none."""

_DEFAULT_TIMEOUT = 120.0
_DEFAULT_MAX_RETRIES = 0


class _SettingsFields(BaseModel):
    """The fields shared by the stored settings and their public view."""

    model_config = ConfigDict(frozen=True, extra="forbid", str_strip_whitespace=True)

    provider: Literal["openai"] = "openai"
    """``openai``: OpenAI itself, and every OpenAI-compatible server through ``base_url``
    (DeepSeek, Ollama's ``/v1``, vLLM, LM Studio, Lemonade, ...)."""
    model: str = Field(min_length=1, max_length=200)
    base_url: str | None = Field(default=None, max_length=2000)
    temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    max_tokens: int | None = Field(default=None, gt=0)
    context_limit: int | None = Field(default=None, gt=0)
    title_model: str | None = Field(default=None, min_length=1, max_length=200)
    copilot_mode: CopilotMode | None = None

    @field_validator("base_url")
    @classmethod
    def _check_base_url(cls, value: str | None) -> str | None:
        if value is None or value == "":
            return None
        if not value.startswith(("http://", "https://")):
            raise ValueError("base_url must start with http:// or https://")
        return value.rstrip("/")

    @property
    def effective_title_model(self) -> str:
        """The model that writes session titles: ``title_model``, else ``model``."""
        return self.title_model or self.model

    @property
    def effective_context_limit(self) -> int:
        return self.context_limit or DEFAULT_CONTEXT_LIMIT


class LLMSettings(_SettingsFields):
    """Everything needed to build a user's chat model, the API key included.

    The key is a :class:`~pydantic.SecretStr`: it never shows in ``repr``, logs or
    ``model_dump()`` (unless asked for explicitly). Only the code that builds the
    model reads it.
    """

    api_key: SecretStr | None = None

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


def parse_llm_settings(data: dict[str, Any]) -> LLMSettings:
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
    **extra: Any,
) -> BaseChatModel:
    """The LangChain chat model for ``settings`` (``model`` overrides the model name,
    for the title model).

    Usage is always streamed (``stream_usage``). The client retries at most
    ``max_retries`` times (0 by default: the user is waiting, and the agent reports
    the failure instead). ``extra`` goes to the model's constructor (tests pass an
    ``http_async_client``, for instance).
    """
    if settings.provider == "openai":
        from langchain_openai import ChatOpenAI

        # Servers such as Ollama or vLLM need no key, but the client insists on one.
        api_key = settings.api_key if settings.has_api_key else SecretStr("not-needed")
        options: dict[str, Any] = {
            "model": model or settings.model,
            "api_key": api_key,
            "base_url": settings.base_url,
            "stream_usage": True,
            "max_retries": max_retries,
            "timeout": timeout,
        }
        if settings.temperature is not None:
            options["temperature"] = settings.temperature
        if settings.max_tokens is not None:
            options["max_tokens"] = settings.max_tokens
        options.update(extra)
        return ChatOpenAI(**options)
    raise ValueError(f"unsupported LLM provider {settings.provider!r}")  # pragma: no cover
