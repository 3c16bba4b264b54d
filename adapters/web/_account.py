"""Service-wide routes: capabilities, agents, the caller's LLM settings, skills reload."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from contextlib import aclosing
from datetime import UTC, datetime
from typing import Any

import structlog
from litestar import Controller, delete, get, post, put
from litestar.connection import ASGIConnection
from litestar.handlers import BaseRouteHandler
from litestar.params import JSONBody
from litestar.status_codes import HTTP_200_OK

from adapters.web._auth import Caller
from adapters.web._body import json_body
from adapters.web._contracts import (
    LLMConfigRepository,
    ModelCatalog,
    SkillsReloader,
    WebSettings,
)
from adapters.web._openapi import errors
from adapters.web._responses import (
    AgentBody,
    AgentsBody,
    CapabilitiesBody,
    LLMDefaults,
    LLMTestReply,
    ModelList,
    PolicyBody,
    PublicLLMConfig,
    SkillsReloaded,
)
from adapters.web._schemas import LLMConfigBody
from adapters.web._state import CALLER, Injected
from copilot_core import ChatService, Message
from copilot_core.errors import (
    LLMError,
    LLMNotConfiguredError,
    LLMUnavailableError,
    NotFoundError,
    PermissionDeniedError,
)
from copilot_core.policy import ModelSettings, UserLimits
from copilot_core.ports import (
    CallOptions,
    LanguageModel,
    LanguageModelProvider,
    ModelOverrides,
    TextDelta,
)

__all__ = ["AccountController", "superadmin"]

log = structlog.get_logger("adapters.web")


def _agents(chat: ChatService) -> list[AgentBody]:
    default = chat.default_agent_id
    return [AgentBody.of(info, backend, default) for info, backend in chat.agents()]


_PING = (
    Message.system("llm-test-system", "Answer with the single word: pong."),
    Message.user("llm-test-user", "ping", datetime(2000, 1, 1, tzinfo=UTC)),
)


async def _ping(model: LanguageModel, limit: float) -> str:
    parts: list[str] = []

    async def collect() -> None:
        async with aclosing(model.stream(_PING, (), CallOptions(max_tokens=8))) as deltas:
            async for delta in deltas:
                if isinstance(delta, TextDelta):
                    parts.append(delta.text)

    try:
        async with asyncio.timeout(limit):
            await collect()
    except TimeoutError:
        raise LLMUnavailableError(
            f"The model did not answer within {limit:g} seconds; check base_url and model."
        ) from None
    return "".join(parts)


async def _tested(
    models: LanguageModelProvider, user_id: str, limit: float, limits: UserLimits
) -> LLMTestReply:
    selection = await models.for_user(user_id, ModelOverrides(max_tokens=8, limits=limits))
    started = time.perf_counter()
    reply = await _ping(selection.model, limit)
    latency = round((time.perf_counter() - started) * 1000, 1)
    log.info("llm_config_tested", latency_ms=latency)
    return LLMTestReply(status="ok", latency_ms=latency, reply=reply[:200])


async def _stored(llm_config: LLMConfigRepository, user_id: str) -> PublicLLMConfig:
    view = await llm_config.get_public(user_id)
    if view is None:
        raise NotFoundError(
            "No LLM settings are stored for your account yet: choose a provider and a model "
            "in the LLM settings."
        )
    return PublicLLMConfig.from_public(view)


async def _models(
    catalog: ModelCatalog | None, user_id: str, refused: str | None = None
) -> ModelList:
    defaults = catalog.defaults() if catalog is not None else {}
    temperature, limit = defaults.get("temperature"), defaults.get("context_limit")
    body = LLMDefaults(
        temperature=None if temperature is None else float(temperature),
        context_limit=int(limit) if limit is not None else 32_000,
    )

    def unavailable(reason: str) -> ModelList:
        return ModelList(available=False, models=[], reason=reason, defaults=body)

    if refused is not None:
        return unavailable(refused)
    if catalog is None:
        return unavailable("Listing models is not available in this deployment.")
    try:
        names = await catalog.list_models(user_id)
    except LLMNotConfiguredError:
        return unavailable("No LLM is configured yet: save a provider first.")
    except LLMError as exc:
        return unavailable(exc.message)
    return ModelList(available=True, models=list(names), reason=None, defaults=body)


async def superadmin(connection: ASGIConnection[Any, Any, Any, Any], _: BaseRouteHandler) -> None:
    """Guard: the caller is a GNS3 superadmin (403 otherwise)."""
    caller = connection.state.get(CALLER)
    if not (isinstance(caller, Caller) and caller.principal.is_superadmin):
        raise PermissionDeniedError("Only a GNS3 superadmin may reload skills.")


class AccountController(Controller):
    path = "/"
    tags = ["copilot"]  # noqa: RUF012 - Litestar's declared attribute

    @get("/capabilities", operation_id="getCapabilities")
    async def capabilities(
        self, chat: Injected[ChatService], mcp_servers: Injected[Sequence[Mapping[str, Any]]]
    ) -> CapabilitiesBody:
        """Spec 002's capabilities of the default agent, with every available agent and
        the MCP servers the built-in agent uses as tool sources."""
        return CapabilitiesBody.of(
            chat.default_agent().capabilities(),
            _agents(chat),
            mcp_servers,
            default_copilot_mode=chat.settings.default_mode.value,
        )

    @get("/agents", operation_id="listAgents")
    async def agents(self, chat: Injected[ChatService]) -> AgentsBody:
        """The agents a turn may use (``agent_id`` in the stream body)."""
        return AgentsBody(default=chat.default_agent_id, agents=_agents(chat))

    @get("/llm-config", operation_id="getLlmConfig", responses=errors(404))
    async def get_llm_config(
        self, caller: Injected[Caller], llm_config: Injected[LLMConfigRepository]
    ) -> PublicLLMConfig:
        """The caller's LLM settings; the key is never returned, only ``api_key_set``."""
        return await _stored(llm_config, caller.user_id)

    @put(
        "/llm-config",
        operation_id="putLlmConfig",
        guards=[json_body],
        status_code=HTTP_200_OK,
        responses=errors(403),
    )
    async def put_llm_config(
        self,
        data: JSONBody[LLMConfigBody],
        caller: Injected[Caller],
        model_settings: Injected[ModelSettings],
        limits: Injected[UserLimits],
    ) -> PublicLLMConfig:
        """Store the caller's LLM settings (the API key is encrypted at rest and
        write-only; leaving it out keeps the stored one). A ``copilot_mode`` above or an
        ``approval`` below what the operator's policy allows the caller is a 403 (see
        ``GET /policy``), and so is a ``base_url`` (or a provider's default endpoint)
        whose host the policy does not allow; nothing is stored then."""
        view = await model_settings.store(caller.user_id, data.to_settings(), limits)
        log.info("llm_config_stored", provider=data.provider, api_key_sent=data.api_key is not None)
        return PublicLLMConfig.from_public(view)

    @get("/policy", operation_id="getPolicy")
    async def policy(self, limits: Injected[UserLimits]) -> PolicyBody:
        """What the operator's policy allows the caller: the copilot modes (``modes``,
        up to ``max_mode``), the approval settings (``approvals``, from
        ``min_approval``) and the LLM endpoints (``llm_endpoints``: lists an endpoint
        must be on, one per rule that applies; ``null``: any). Without a policy,
        everything."""
        return PolicyBody.of(limits)

    @get("/llm-config/models", operation_id="listLlmModels")
    async def list_models(
        self,
        caller: Injected[Caller],
        model_catalog: Injected[ModelCatalog | None],
        model_settings: Injected[ModelSettings],
        limits: Injected[UserLimits],
    ) -> ModelList:
        """The models the caller's stored endpoint lists (asked with the stored key, which
        never leaves the service), and the defaults of settings left empty. When they
        cannot be listed, ``available`` is false and ``reason`` says why (an endpoint
        the operator's policy does not allow is not asked)."""
        refused = await model_settings.refused_endpoint(caller.user_id, limits)
        if refused is not None:
            return await _models(None, caller.user_id, refused)
        return await _models(model_catalog, caller.user_id)

    @post(
        "/llm-config/test",
        operation_id="testLlmConfig",
        status_code=HTTP_200_OK,
        responses=errors(403, 409, 429, 501),
    )
    async def test_llm_config(
        self,
        caller: Injected[Caller],
        models: Injected[LanguageModelProvider],
        web_settings: Injected[WebSettings],
        limits: Injected[UserLimits],
    ) -> LLMTestReply:
        """Check the caller's stored LLM settings with one tiny request to the model.

        200 ``{"status": "ok", "latency_ms", "reply"}`` when the model answers; 400 when
        nothing is configured; 502 (401-like provider errors included) with the
        provider's reason otherwise. Nothing is stored and no session is touched.
        """
        return await _tested(models, caller.user_id, web_settings.llm_test_timeout, limits)

    @delete("/llm-config", operation_id="deleteLlmConfig")
    async def delete_llm_config(
        self, caller: Injected[Caller], llm_config: Injected[LLMConfigRepository]
    ) -> None:
        """Forget the caller's LLM settings (204 whether or not there were any)."""
        await llm_config.delete(caller.user_id)

    @post(
        "/reload/skills",
        operation_id="reloadSkills",
        status_code=HTTP_200_OK,
        guards=[superadmin],
        responses=errors(403, 501),
    )
    async def reload_skills(self, reload_skills: Injected[SkillsReloader]) -> SkillsReloaded:
        """Superadmin only: reload skills, prompts and forbidden commands from disk."""
        log.info("skills_reloading")
        return SkillsReloaded.from_summary(await reload_skills())
