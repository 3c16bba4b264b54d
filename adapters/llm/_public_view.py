"""A user's LLM settings as an API shows them: plain JSON values, never the key.

:class:`LLMSettingsPublicView` is what the web adapter's ``LLMConfigRepository`` port
asks for (mappings in, mappings out), over :class:`LLMSettingsRepository`; the web
adapter never sees this package's types.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from adapters.llm._repository import LLMSettingsRepository

__all__ = ["LLMSettingsPublicView"]


class LLMSettingsPublicView:
    """Reads and writes users' settings; answers with the public view as JSON values."""

    def __init__(self, repository: LLMSettingsRepository) -> None:
        self._repository = repository

    async def get_public(self, user_id: str) -> Mapping[str, Any] | None:
        settings = await self._repository.get_public(user_id)
        return None if settings is None else settings.model_dump(mode="json")

    async def put(self, user_id: str, settings: Mapping[str, Any]) -> Mapping[str, Any]:
        return (await self._repository.put(user_id, settings)).model_dump(mode="json")

    async def delete(self, user_id: str) -> bool:
        return await self._repository.delete(user_id)
