"""Where the routes find their collaborators: ``app.state``, through ``Provide`` functions.

The composition root installs a :class:`WebDependencies` (at construction, or in
the lifespan once async resources are open); handlers receive them as
dependencies keyed by parameter name and never reach for a container.
"""

from __future__ import annotations

from typing import Any

import structlog
from litestar import Litestar, Request
from litestar.connection import ASGIConnection
from litestar.datastructures import State
from litestar.di import Provide
from litestar.exceptions import ServiceUnavailableException
from litestar.handlers import BaseRouteHandler

from adapters.web._auth import CachingAuthenticator, Caller, bearer_token
from adapters.web._contracts import WebDependencies, WebSettings
from copilot_core.errors import AuthenticationError

__all__ = ["authenticated", "dependencies", "install_dependencies"]

_DEPS = "copilot_dependencies"
_AUTH = "copilot_authenticator"
_SETTINGS = "copilot_web_settings"
_CALLER = "copilot_caller"


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


def provide_web_settings(state: State) -> WebSettings:
    settings: WebSettings = state[_SETTINGS]
    return settings


async def authenticated(
    connection: ASGIConnection[Any, Any, Any, Any], _: BaseRouteHandler
) -> None:
    """Guard of every ``/v3/copilot`` route: authenticate the ``Authorization: Bearer``
    token (401 otherwise) before the body is even read."""
    _deps(connection.app.state)
    token = bearer_token(connection.headers.get("authorization"))
    authenticator: CachingAuthenticator = connection.app.state[_AUTH]
    principal = await authenticator.authenticate(token)
    structlog.contextvars.bind_contextvars(user_id=principal.user_id)
    connection.state[_CALLER] = Caller(principal, token)


def provide_caller(request: Request[Any, Any, State]) -> Caller:
    caller = request.state.get(_CALLER)
    if not isinstance(caller, Caller):  # a route outside the guarded router
        raise AuthenticationError("Missing credentials.")
    return caller


def dependencies() -> dict[str, Provide]:
    return {
        "deps": Provide(provide_deps, sync_to_thread=False),
        "web_settings": Provide(provide_web_settings, sync_to_thread=False),
        "caller": Provide(provide_caller, sync_to_thread=False),
    }


def init_state(settings: WebSettings, deps: WebDependencies | None) -> dict[str, Any]:
    state: dict[str, Any] = {_SETTINGS: settings}
    if deps is not None:
        state[_DEPS] = deps
        state[_AUTH] = CachingAuthenticator(
            deps.authenticator, ttl=settings.auth_cache_ttl, size=settings.auth_cache_size
        )
    return state
