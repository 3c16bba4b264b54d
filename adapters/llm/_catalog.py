"""The models a user's endpoint offers, asked with their stored settings.

The web page's settings dialog offers them; the key is read from the repository here
and sent only to the user's own endpoint. Each protocol lists models its own way:

* OpenAI-compatible servers: ``GET {base_url}/models`` (``{"data": [{"id"}]}``);
* Anthropic: ``GET {base_url}/v1/models`` with ``x-api-key`` (``{"data": [{"id"}]}``);
* Ollama's own API: ``GET {base_url}/api/tags`` (``{"models": [{"name"}]}``).

Failures are :class:`~copilot_core.errors.LLMError` s whose message says why, for a
person, without the key (a rejected key, an endpoint that lists nothing, one that
cannot be reached).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import httpx

from adapters.llm._errors import redact
from adapters.llm._provider import LLMSettingsSource
from adapters.llm._settings import DEFAULT_CONTEXT_LIMIT, LLMSettings
from copilot_core.errors import LLMError, LLMNotConfiguredError

__all__ = ["HttpModelCatalog"]

_OPENAI = "https://api.openai.com/v1"
_MAX_MODELS = 500


class HttpModelCatalog:
    """Lists the models of each user's endpoint over HTTP (see the module docstring)."""

    def __init__(
        self,
        settings: LLMSettingsSource,
        *,
        timeout: float = 10.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._settings = settings
        self._timeout = timeout
        self._transport = transport

    def defaults(self) -> Mapping[str, float | int | None]:
        # No temperature is sent when none is set: the provider's own default applies.
        return {"temperature": None, "context_limit": DEFAULT_CONTEXT_LIMIT}

    async def list_models(self, user_id: str) -> Sequence[str]:
        settings = await self._settings.get_secret(user_id)
        if settings is None:
            raise LLMNotConfiguredError()
        url, headers, field = _request(settings)
        secrets = (settings.api_key.get_secret_value(),) if settings.api_key else ()
        where = redact(url.rsplit("/", 1)[0], secrets)
        try:
            async with httpx.AsyncClient(
                timeout=self._timeout, transport=self._transport
            ) as client:
                response = await client.get(url, headers=headers)
        except httpx.TimeoutException:
            raise LLMError(f"The server at {where} did not list its models in time.") from None
        except httpx.HTTPError:
            raise LLMError(
                f"Cannot reach the server at {where}; check the base URL and that it runs."
            ) from None
        if response.status_code in (401, 403):
            raise LLMError(f"The server at {where} rejected the API key.")
        if response.status_code >= 400:
            raise LLMError(
                f"The server at {where} does not list its models (HTTP {response.status_code})."
            )
        return _names(response, field, where)


def _request(settings: LLMSettings) -> tuple[str, dict[str, str], str]:
    base = (settings.effective_base_url or _OPENAI).rstrip("/")
    key = settings.api_key.get_secret_value() if settings.api_key else ""
    if settings.provider == "anthropic":
        return f"{base}/v1/models?limit=1000", _anthropic_headers(key), "id"
    if settings.provider == "ollama_native":
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        return f"{base}/api/tags", headers, "name"
    return f"{base}/models", ({"Authorization": f"Bearer {key}"} if key else {}), "id"


def _anthropic_headers(key: str) -> dict[str, str]:
    return {"x-api-key": key, "anthropic-version": "2023-06-01"}


def _names(response: httpx.Response, field: str, where: str) -> list[str]:
    try:
        body: Any = response.json()
    except ValueError:
        raise LLMError(f"The server at {where} answered its model list with no JSON.") from None
    items = body.get("data", body.get("models")) if isinstance(body, dict) else None
    if not isinstance(items, list):
        raise LLMError(f"The server at {where} answered its model list in an unknown shape.")
    names = {
        str(item[field])
        for item in items
        if isinstance(item, dict) and isinstance(item.get(field), str) and item[field]
    }
    return sorted(names)[:_MAX_MODELS]
