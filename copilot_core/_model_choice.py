"""Choosing a turn's model: the user's selection, or why none could be built.

A request the service refuses (no settings, a temperature out of range, an endpoint the
operator's policy does not allow, the settings store down, a provider asking to slow
down) is refused before anything is stored, with the error's own status. A model that
cannot be *built* (an :class:`~copilot_core.errors.LLMSetupError`: the provider's SDK
refuses an option, a library changed under it) or a provider's bug (any other exception)
is not the request's fault: the turn starts anyway (the user's message is kept) and its
answer is the error, exactly like a model that fails in the middle of its reply.
"""

from __future__ import annotations

from dataclasses import dataclass

from copilot_core._turns import TurnRequest
from copilot_core.errors import CopilotError, LLMNotConfiguredError, LLMSetupError
from copilot_core.ports import AgentBackend, LanguageModelProvider, ModelOverrides, ModelSelection

__all__ = ["ModelChoice", "choose_model"]


@dataclass(frozen=True, slots=True)
class ModelChoice:
    """The turn's model (``None``: its backend uses no LLM settings), or ``failure``: why
    none could be built. The runner ends such a turn with that error."""

    selection: ModelSelection | None = None
    failure: Exception | None = None


async def choose_model(
    models: LanguageModelProvider | None, backend: AgentBackend, request: TurnRequest
) -> ModelChoice:
    """The user's model for this turn (see the module docstring for what is raised and
    what becomes the turn's answer)."""
    if not backend.capabilities().uses_llm_settings:
        return ModelChoice()
    if models is None:
        raise LLMNotConfiguredError()
    overrides = ModelOverrides(
        temperature=request.temperature, max_tokens=request.max_tokens, limits=request.limits
    )
    try:
        return ModelChoice(await models.for_user(request.user_id, overrides))
    except LLMSetupError as exc:  # the model could not be built: the turn says so
        return ModelChoice(failure=exc)
    except CopilotError:  # a refusal: it has its own status and message
        raise
    except Exception as exc:  # a provider's bug: the turn says so (the runner logs it)
        return ModelChoice(failure=exc)
