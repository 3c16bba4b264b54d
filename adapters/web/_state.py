"""Where the routes find their collaborators: ``app.state``, through ``Provide`` functions.

The composition root installs a :class:`WebDependencies` (at construction, or in
the lifespan once async resources are open); handlers receive them as
dependencies keyed by parameter name and never reach for a container.
"""

from __future__ import annotations

from typing import Any

import structlog
from litestar import Litestar, Request
from litestar.datastructures import State
from litestar.di import Provide
from litestar.exceptions import ServiceUnavailableException

from adapters.web._auth import CachingAuthenticator, Caller, bearer_token
from adapters.web._contracts import WebDependencies, WebSettings
from copilot_core.service import ChatService

__all__ = ["dependencies", "install_dependencies"]

_DEPS = "copilot_dependencies"
_AUTH = "copilot_authenticator"
_SETTINGS = "copilot_web_settings"


def install_dependencies(app: Litestar, deps: WebDependencies) -> None:
    """Hand the collaborators to a built app (the lifespan calls this after start-up)."""
    settings: WebSettings = app.state[_SETTINGS]
    app.state[_DEPS] = deps
    app.state[_AUTH] = CachingAuthenticator(
        deps.authenticator, ttl=settings.auth_cache_ttl, size=settings.auth_cache_size
    )


def installed(state: State) -> WebDependencies | None:
    deps = state.get(_DEPS)
    return deps if isinstance(deps, WebDependencies) else None


def _deps(state: State) -> WebDependencies:
    deps = installed(state)
    if deps is None:
        raise ServiceUnavailableException("The service is starting; try again in a moment.")
    return deps


def provide_deps(state: State) -> WebDependencies:
    return _deps(state)


def provide_chat(state: State) -> ChatService:
    return _deps(state).chat


def provide_web_settings(state: State) -> WebSettings:
    settings: WebSettings = state[_SETTINGS]
    return settings


async def provide_caller(request: Request[Any, Any, State]) -> Caller:
    """Authenticate the ``Authorization: Bearer`` token (401 otherwise)."""
    _deps(request.app.state)
    token = bearer_token(request.headers.get("authorization"))
    authenticator: CachingAuthenticator = request.app.state[_AUTH]
    principal = await authenticator.authenticate(token)
    structlog.contextvars.bind_contextvars(user_id=principal.user_id)
    return Caller(principal, token)


def dependencies() -> dict[str, Provide]:
    return {
        "deps": Provide(provide_deps, sync_to_thread=False),
        "chat": Provide(provide_chat, sync_to_thread=False),
        "web_settings": Provide(provide_web_settings, sync_to_thread=False),
        "caller": Provide(provide_caller),
    }


def init_state(settings: WebSettings, deps: WebDependencies | None) -> dict[str, Any]:
    state: dict[str, Any] = {_SETTINGS: settings}
    if deps is not None:
        state[_DEPS] = deps
        state[_AUTH] = CachingAuthenticator(
            deps.authenticator, ttl=settings.auth_cache_ttl, size=settings.auth_cache_size
        )
    return state
