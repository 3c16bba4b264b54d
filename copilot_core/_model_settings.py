"""A user's own LLM settings, stored under the operator's policy: one use case (issue 37).

A user may keep their own model settings (provider, endpoint, model, key, the copilot
mode and approval setting their turns start with). What they may store is decided here,
once, like every other use of the user's limits: a mode above the policy's highest, an
approval setting below its least, or an endpoint whose host no rule allows is refused
(:class:`~copilot_core.errors.PermissionDeniedError`) and nothing is stored. The web
adapter hands the caller's limits in with the request and maps the refusal to 403.

The store (:class:`ModelSettingsStore`) keeps the key encrypted and answers the public
view only; the endpoint rule (:data:`EndpointCheck`) needs the host resolved, which is
I/O, so the LLM adapter supplies it (``adapters.llm.check_endpoint``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol

from copilot_core._approvals import ApprovalPolicy
from copilot_core._limits import UserLimits
from copilot_core._session import CopilotMode
from copilot_core.errors import PermissionDeniedError

__all__ = ["EndpointCheck", "ModelSettings", "ModelSettingsStore"]

#: ``(provider, base_url, limits)``: raises PermissionDeniedError (naming the host and
#: what is allowed) when the operator's policy does not let the caller use that endpoint.
EndpointCheck = Callable[[str, str | None, UserLimits], Awaitable[None]]


class ModelSettingsStore(Protocol):
    """Where a user's LLM settings are kept, the API key write-only (encrypted at rest).

    ``get_public`` and ``put`` answer the *public* view: every setting except the key,
    plus ``api_key_set: bool``.
    """

    async def get_public(self, user_id: str) -> Mapping[str, Any] | None:
        """The user's settings without the key, or ``None`` when there are none."""
        ...

    async def put(self, user_id: str, settings: Mapping[str, Any]) -> Mapping[str, Any]:
        """Replace the user's settings with ``settings`` (validated by the caller).

        ``settings`` holds only the fields the client sent. ``api_key`` is a plain
        ``str`` here and nowhere else; when it is absent the stored key is kept.
        """
        ...


def _setting(settings: Mapping[str, Any], name: str) -> str | None:
    value = settings.get(name)
    return None if value is None else str(value)


class ModelSettings:
    """Storing a user's LLM settings, and asking whether their stored endpoint may be
    used, under their limits (see the module)."""

    __slots__ = ("_endpoints", "_store")

    def __init__(self, store: ModelSettingsStore, endpoints: EndpointCheck | None = None) -> None:
        self._store = store
        self._endpoints = endpoints

    async def store(
        self, user_id: str, settings: Mapping[str, Any], limits: UserLimits
    ) -> Mapping[str, Any]:
        """Keep ``settings`` (``provider``, ``base_url``, ``copilot_mode``, ``approval``…
        as the client sent them) as the user's, answering the public view; refused as a
        whole when one of them is outside the user's limits."""
        mode = _setting(settings, "copilot_mode")
        approval = _setting(settings, "approval")
        limits.require_mode(None if mode is None else CopilotMode(mode), "This setting")
        limits.require_approval(None if approval is None else ApprovalPolicy(approval))
        if self._endpoints is not None:
            await self._endpoints(
                _setting(settings, "provider") or "", _setting(settings, "base_url"), limits
            )
        return await self._store.put(user_id, settings)

    async def refused_endpoint(self, user_id: str, limits: UserLimits) -> str | None:
        """Why the user's stored endpoint may not be asked (the policy's sentence), or
        ``None`` when it may be, or when nothing is stored."""
        stored = await self._store.get_public(user_id)
        if stored is None or self._endpoints is None:
            return None
        try:
            await self._endpoints(str(stored["provider"]), stored.get("base_url"), limits)
        except PermissionDeniedError as exc:
            return exc.message
        return None
