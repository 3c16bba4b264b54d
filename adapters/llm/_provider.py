"""The core's :class:`~copilot_core.ports.LanguageModelProvider` over stored settings."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from langchain_core.language_models import BaseChatModel

from adapters.llm._endpoints import check_endpoint
from adapters.llm._model import LangchainLanguageModel
from adapters.llm._settings import LLMSettings, build_chat_model
from copilot_core.errors import InvalidRequestError, LLMNotConfiguredError
from copilot_core.ports import CallOptions, ModelOverrides, ModelSelection

__all__ = ["LLMSettingsSource", "SettingsLanguageModelProvider"]


class LLMSettingsSource(Protocol):
    """Where a user's settings come from (the repository, or a test's dictionary)."""

    async def get_secret(self, user_id: str) -> LLMSettings | None: ...


ChatModelFactory = Callable[..., BaseChatModel]


class SettingsLanguageModelProvider:
    """Builds each user's models from their stored settings, per turn.

    The turn's overrides win over the user's temperature and max_tokens; their
    ``limits`` (the operator's policy) refuse an endpoint it does not allow. The title
    model is ``title_model`` when set, else the chat model itself. Building is
    cheap (langchain-openai shares its HTTP client per base URL), so nothing is
    cached: a settings change applies from the next turn on.
    """

    def __init__(
        self,
        settings: LLMSettingsSource,
        *,
        factory: ChatModelFactory = build_chat_model,
        **factory_options: Any,
    ) -> None:
        self._settings = settings
        self._factory = factory
        self._factory_options = factory_options

    async def for_user(self, user_id: str, overrides: ModelOverrides) -> ModelSelection:
        _check(overrides)
        settings = await self._settings.get_secret(user_id)
        if settings is None:
            raise LLMNotConfiguredError()
        if overrides.limits is not None:  # the operator's policy, as it is now
            await check_endpoint(settings.provider, settings.base_url, overrides.limits)
        model = self._model(settings, settings.model)
        title_model = (
            self._model(settings, settings.effective_title_model)
            if settings.effective_title_model != settings.model
            else model
        )
        options = CallOptions(
            temperature=(
                overrides.temperature if overrides.temperature is not None else settings.temperature
            ),
            max_tokens=(
                overrides.max_tokens if overrides.max_tokens is not None else settings.max_tokens
            ),
        )
        return ModelSelection(
            model=model,
            options=options,
            title_model=title_model,
            context_limit=settings.effective_context_limit,
            copilot_mode=settings.copilot_mode,
            approval=settings.approval,
        )

    def _model(self, settings: LLMSettings, name: str) -> LangchainLanguageModel:
        chat_model = self._factory(settings, model=name, **self._factory_options)
        return LangchainLanguageModel(
            chat_model, base_url=settings.effective_base_url, model_name=name
        )


def _check(overrides: ModelOverrides) -> None:
    if overrides.temperature is not None and not 0.0 <= overrides.temperature <= 2.0:
        raise InvalidRequestError(
            f"temperature must be between 0 and 2, not {overrides.temperature:g}."
        )
    if overrides.max_tokens is not None and overrides.max_tokens <= 0:
        raise InvalidRequestError(
            f"max_tokens must be a positive number, not {overrides.max_tokens}."
        )
