"""The core's :class:`~copilot_core.ports.LanguageModelProvider` over stored settings."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TypeAlias

from adapters.llm._abandoned import AbandonedRequests, ServerWatch
from adapters.llm._endpoints import check_endpoint, endpoint_url
from adapters.llm._errors import redact
from adapters.llm._settings import LLMSettings, build_chat_model, request_options
from adapters.llm._warm import integration_loaded
from copilot_core import AgentSettings
from copilot_core.errors import InvalidRequestError, LLMNotConfiguredError, LLMSetupError
from copilot_core.ports import CallOptions, ModelOverrides, ModelSelection, ModelTimeouts

if TYPE_CHECKING:  # LangChain loads with the first model built (``serve`` answers before)
    from langchain_core.language_models import BaseChatModel

    from adapters.llm._model import LangchainLanguageModel

__all__ = ["LLMSettingsSource", "LLMTimeouts", "SettingsLanguageModelProvider"]

_log = logging.getLogger(__name__)


_AGENT = AgentSettings()


@dataclass(frozen=True, slots=True)
class LLMTimeouts:
    """The service's waits for a model (seconds), for users whose settings set none:
    connecting to its server, its first token, the pause between two tokens."""

    connect: float = _AGENT.connect_timeout
    first_token: float = _AGENT.first_token_timeout
    between_tokens: float = _AGENT.token_timeout

    #: Every bound of the SDK's own (its HTTP client's read timeout, langchain-openai's
    #: chunk timeout) is this much above the agent's, which end a silent stream first,
    #: with a message that names the setting.
    client_margin: ClassVar[float] = 30.0

    @classmethod
    def of(cls, agent: AgentSettings) -> LLMTimeouts:
        """The waits the agent's settings give (``connect_timeout``,
        ``first_token_timeout``, ``token_timeout``)."""
        return cls(agent.connect_timeout, agent.first_token_timeout, agent.token_timeout)


class LLMSettingsSource(Protocol):
    """Where a user's settings come from (the repository, or a test's dictionary)."""

    async def get_secret(self, user_id: str) -> LLMSettings | None: ...


ChatModelFactory: TypeAlias = "Callable[..., BaseChatModel]"


class SettingsLanguageModelProvider:
    """Builds each user's models from their stored settings, per turn.

    The turn's overrides win over the user's temperature and max_tokens; their
    ``limits`` (the operator's policy) refuse an endpoint it does not allow. The title
    model is ``title_model`` when set, else the chat model itself. The user's timeouts
    win over ``timeouts`` (the service's): the connection's is the SDK's connect
    timeout, the first token's and the one between tokens go to the agent
    (``ModelSelection``), and every wait the SDK bounds of its own (read, chunk) is set
    a margin above them, so that the user's bounds are the ones in force. Building is
    cheap, so nothing is cached: a settings change applies from the next turn on.

    A request given up on before its first token (a timeout, the user's abort) may keep
    a local model server busy reading its prompt: until that server answers the same
    user again, the selection's ``server_note`` says so, and the agent's
    ``waiting_for_model`` status with it (see :mod:`adapters.llm._abandoned`).
    """

    def __init__(
        self,
        settings: LLMSettingsSource,
        *,
        factory: ChatModelFactory = build_chat_model,
        timeouts: LLMTimeouts | None = None,
        **factory_options: Any,
    ) -> None:
        self._settings = settings
        self._factory = factory
        self._timeouts = timeouts or LLMTimeouts()
        self._factory_options = factory_options
        self.abandoned = AbandonedRequests()

    async def for_user(self, user_id: str, overrides: ModelOverrides) -> ModelSelection:
        _check(overrides)
        settings = await self._settings.get_secret(user_id)
        if settings is None:
            raise LLMNotConfiguredError()
        if overrides.limits is not None:  # the operator's policy, as it is now
            await check_endpoint(settings.provider, settings.base_url, overrides.limits)
        await integration_loaded(settings.provider)  # imported off the event loop
        defaults = self._timeouts
        timeouts = ModelTimeouts(
            first_token=settings.first_token_timeout or defaults.first_token,
            between_tokens=settings.token_timeout or defaults.between_tokens,
        )
        waits = {
            "timeout": max(timeouts.first_token, timeouts.between_tokens)
            + LLMTimeouts.client_margin,
            "connect_timeout": settings.connect_timeout or defaults.connect,
        }
        server = endpoint_url(settings.provider, settings.effective_base_url)
        watch = self.abandoned.watch(user_id, server, linger=timeouts.first_token)
        model = self._model(settings, settings.model, waits, watch)
        title_model = (
            self._model(settings, settings.effective_title_model, waits, watch)
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
            timeouts=timeouts,
            tool_set=settings.tool_set,
            text_tool_calls=settings.effective_text_tool_calls,
            server_note=watch.note,
        )

    def _model(
        self, settings: LLMSettings, name: str, waits: dict[str, float], watch: ServerWatch
    ) -> LangchainLanguageModel:
        from adapters.llm._model import LangchainLanguageModel

        options = {**waits, **self._factory_options}
        try:
            chat_model = self._factory(settings, model=name, **options)
            per_call = request_options(
                settings, timeout=waits["timeout"], connect_timeout=waits["connect_timeout"]
            )
        except Exception as exc:  # whatever the SDK refuses: the turn's answer says so
            raise _setup_failed(settings, name, exc) from exc
        return LangchainLanguageModel(
            chat_model,
            base_url=settings.effective_base_url,
            model_name=name,
            request_options=per_call,
            watch=watch,
        )


def _setup_failed(settings: LLMSettings, name: str, exc: Exception) -> LLMSetupError:
    """The error a turn (or ``POST /llm-config/test``) answers when the provider's SDK
    refuses to build a client: logged here, once, with its traceback; its message says
    what to check, without the key."""
    _log.error("building the %s model %r failed", settings.provider, name, exc_info=exc)
    secrets = (settings.api_key.get_secret_value(),) if settings.api_key is not None else ()
    why = redact(f"{type(exc).__name__}: {exc}", secrets)[:300]
    return LLMSetupError(
        f"The {settings.provider} model {name!r} could not be set up from your LLM settings "
        f"({why}). Check provider, base_url and model in the LLM settings; if they are "
        "right, tell the operator (the service logged why)."
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
