"""Service-wide routes: capabilities, agents, the caller's LLM settings, skills reload."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from contextlib import aclosing
from datetime import UTC, datetime
from typing import Any

import structlog
from litestar import Controller, delete, get, post, put
from litestar.di import NamedDependency
from litestar.exceptions import HTTPException
from litestar.params import JSONBody
from litestar.status_codes import HTTP_200_OK, HTTP_501_NOT_IMPLEMENTED

from adapters.web._auth import Caller
from adapters.web._body import json_body
from adapters.web._contracts import WebDependencies, WebSettings
from adapters.web._openapi import errors
from adapters.web._schemas import LLMConfigBody
from copilot_core.deltas import TextDelta
from copilot_core.errors import LLMUnavailableError, NotFoundError, PermissionDeniedError
from copilot_core.messages import Message
from copilot_core.ports import CallOptions, LanguageModel, ModelOverrides

__all__ = ["AccountController"]

log = structlog.get_logger("adapters.web")


def _public(view: Mapping[str, Any]) -> dict[str, Any]:
    """The public view of LLM settings: never the key, always ``api_key_set``."""
    body = {key: value for key, value in view.items() if key not in {"api_key", "user_id"}}
    body["api_key_set"] = bool(view.get("api_key_set", False))
    return body


def _agents(deps: NamedDependency[WebDependencies]) -> list[dict[str, Any]]:
    return [
        {
            "id": info.id,
            "name": info.name,
            "description": info.description,
            "default": info.id == deps.chat.settings.default_agent,
            "uses_llm_settings": backend.capabilities().uses_llm_settings,
            "capabilities": backend.capabilities().to_dict(),
        }
        for info, backend in deps.chat.agents()
    ]


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


class AccountController(Controller):
    path = "/"
    tags = ["copilot"]  # noqa: RUF012 - Litestar's declared attribute

    @get("/capabilities", operation_id="getCapabilities")
    async def capabilities(
        self, caller: NamedDependency[Caller], deps: NamedDependency[WebDependencies]
    ) -> dict[str, Any]:
        """Spec 002's capabilities of the default agent, with every available agent."""
        body = deps.chat.default_agent().capabilities().to_dict()
        body["agents"] = [
            {"id": a["id"], "name": a["name"], "description": a["description"]}
            for a in _agents(deps)
        ]
        return body

    @get("/agents", operation_id="listAgents")
    async def agents(
        self, caller: NamedDependency[Caller], deps: NamedDependency[WebDependencies]
    ) -> dict[str, Any]:
        """The agents a turn may use (``agent_id`` in the stream body)."""
        return {"default": deps.chat.settings.default_agent, "agents": _agents(deps)}

    @get("/llm-config", operation_id="getLlmConfig", responses=errors(404))
    async def get_llm_config(
        self, caller: NamedDependency[Caller], deps: NamedDependency[WebDependencies]
    ) -> dict[str, Any]:
        """The caller's LLM settings; the key is never returned, only ``api_key_set``."""
        view = await deps.llm_config.get_public(caller.user_id)
        if view is None:
            raise NotFoundError(
                "No LLM settings are stored for your account; set them with "
                "PUT /v3/copilot/llm-config."
            )
        return _public(view)

    @put(
        "/llm-config",
        operation_id="putLlmConfig",
        guards=[json_body],
        status_code=HTTP_200_OK,
    )
    async def put_llm_config(
        self,
        data: JSONBody[LLMConfigBody],
        caller: NamedDependency[Caller],
        deps: NamedDependency[WebDependencies],
    ) -> dict[str, Any]:
        """Store the caller's LLM settings (the API key is encrypted at rest and
        write-only; leaving it out keeps the stored one)."""
        view = await deps.llm_config.put(caller.user_id, data.to_settings())
        log.info("llm_config_stored", provider=data.provider, api_key_sent=data.api_key is not None)
        return _public(view)

    @post(
        "/llm-config/test",
        operation_id="testLlmConfig",
        status_code=HTTP_200_OK,
        responses=errors(400, 429, 501),
    )
    async def test_llm_config(
        self,
        caller: NamedDependency[Caller],
        deps: NamedDependency[WebDependencies],
        web_settings: NamedDependency[WebSettings],
    ) -> dict[str, Any]:
        """Check the caller's stored LLM settings with one tiny request to the model.

        200 ``{"status": "ok", "latency_ms", "reply"}`` when the model answers; 400 when
        nothing is configured; 502 (401-like provider errors included) with the
        provider's reason otherwise. Nothing is stored and no session is touched.
        """
        if deps.models is None:
            raise HTTPException(
                status_code=HTTP_501_NOT_IMPLEMENTED,
                detail="Testing LLM settings is not available in this deployment.",
            )
        selection = await deps.models.for_user(caller.user_id, ModelOverrides(max_tokens=8))
        started = time.perf_counter()
        reply = await _ping(selection.model, web_settings.llm_test_timeout)
        latency = round((time.perf_counter() - started) * 1000, 1)
        log.info("llm_config_tested", latency_ms=latency)
        return {"status": "ok", "latency_ms": latency, "reply": reply[:200]}

    @delete("/llm-config", operation_id="deleteLlmConfig")
    async def delete_llm_config(
        self, caller: NamedDependency[Caller], deps: NamedDependency[WebDependencies]
    ) -> None:
        """Forget the caller's LLM settings (204 whether or not there were any)."""
        await deps.llm_config.delete(caller.user_id)

    @post(
        "/reload/skills",
        operation_id="reloadSkills",
        status_code=HTTP_200_OK,
        responses=errors(403, 501),
    )
    async def reload_skills(
        self, caller: NamedDependency[Caller], deps: NamedDependency[WebDependencies]
    ) -> dict[str, Any]:
        """Superadmin only: reload skills, prompts and forbidden commands from disk."""
        if not caller.principal.is_superadmin:
            raise PermissionDeniedError("Only a GNS3 superadmin may reload skills.")
        if deps.reload_skills is None:
            raise HTTPException(
                status_code=HTTP_501_NOT_IMPLEMENTED,
                detail="Skills are not available in this deployment.",
            )
        summary = await deps.reload_skills()
        log.info("skills_reloaded")
        return {"status": "ok", **dict(summary)}
