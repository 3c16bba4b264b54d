"""Service-wide routes: capabilities, agents, the caller's LLM settings, skills reload."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import structlog
from litestar import Controller, delete, get, post, put
from litestar.di import NamedDependency
from litestar.exceptions import HTTPException
from litestar.params import JSONBody
from litestar.status_codes import HTTP_200_OK, HTTP_501_NOT_IMPLEMENTED

from adapters.web._auth import Caller
from adapters.web._contracts import WebDependencies
from adapters.web._schemas import LLMConfigBody
from copilot_core.errors import NotFoundError, PermissionDeniedError

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

    @get("/llm-config", operation_id="getLlmConfig")
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

    @put("/llm-config", operation_id="putLlmConfig", status_code=HTTP_200_OK)
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

    @delete("/llm-config", operation_id="deleteLlmConfig")
    async def delete_llm_config(
        self, caller: NamedDependency[Caller], deps: NamedDependency[WebDependencies]
    ) -> None:
        """Forget the caller's LLM settings (204 whether or not there were any)."""
        await deps.llm_config.delete(caller.user_id)

    @post("/reload/skills", operation_id="reloadSkills", status_code=HTTP_200_OK)
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
