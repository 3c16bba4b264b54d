"""Where the routes find their collaborators: ``app.state``, through named dependencies.

The composition root installs a :class:`WebDependencies` (at construction, or in the
lifespan once async resources are open). Routes never see that bundle: each declares
the collaborators it needs by name (``chat``, ``caller``, ``llm_config``…), and the
``Provide`` functions here hand them out. A collaborator the deployment does not have
(``directory``, ``models``, ``reload_skills``) is a 501 that says so; anything before
start-up completed is a 503.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any, TypeAlias, TypeVar

import structlog
from litestar import Litestar, Request
from litestar.connection import ASGIConnection
from litestar.datastructures import State
from litestar.di import Dependency, Provide
from litestar.exceptions import HTTPException, ServiceUnavailableException
from litestar.handlers import BaseRouteHandler
from litestar.params import SkipValidationMarker
from litestar.status_codes import HTTP_501_NOT_IMPLEMENTED

from adapters.web._auth import CachingAuthenticator, Caller, bearer_token
from adapters.web._contracts import (
    ReadinessCheck,
    WebDependencies,
    WebSettings,
)
from copilot_core.errors import AuthenticationError
from copilot_core.policy import UNLIMITED, ModelSettings, UserLimits

__all__ = [
    "CALLER",
    "Injected",
    "authenticated",
    "dependencies",
    "init_state",
    "install_dependencies",
    "installed",
]

T = TypeVar("T")

#: A collaborator a route declares by name (``chat: Injected[ChatService]``). It is
#: taken as provided: most are protocols, which a signature model cannot check.
Injected: TypeAlias = Annotated[T, Dependency(kind="named"), SkipValidationMarker()]

_DEPS = "copilot_dependencies"
_AUTH = "copilot_authenticator"
_SETTINGS = "copilot_web_settings"
CALLER = "copilot_caller"


def install_dependencies(app: Litestar, deps: WebDependencies) -> None:
    """Hand the collaborators to a built app (the lifespan calls this after start-up)."""
    settings: WebSettings = app.state[_SETTINGS]
    app.state[_DEPS] = deps
    app.state[_AUTH] = _cached(deps, settings)


def installed(state: State) -> WebDependencies | None:
    deps = state.get(_DEPS)
    return deps if isinstance(deps, WebDependencies) else None


def init_state(settings: WebSettings, deps: WebDependencies | None) -> dict[str, Any]:
    state: dict[str, Any] = {_SETTINGS: settings}
    if deps is not None:
        state[_DEPS] = deps
        state[_AUTH] = _cached(deps, settings)
    return state


def _cached(deps: WebDependencies, settings: WebSettings) -> CachingAuthenticator:
    """The authenticator the guard uses: the one given when it caches already (the
    service's, shared with its MCP endpoint), else a cache over it."""
    if isinstance(deps.authenticator, CachingAuthenticator):
        return deps.authenticator
    return CachingAuthenticator(
        deps.authenticator, ttl=settings.auth_cache_ttl, size=settings.auth_cache_size
    )


def _deps(state: State) -> WebDependencies:
    deps = installed(state)
    if deps is None:
        raise ServiceUnavailableException("The service is starting; try again in a moment.")
    return deps


def _not_here(what: str) -> HTTPException:
    return HTTPException(
        status_code=HTTP_501_NOT_IMPLEMENTED, detail=f"{what} is not available in this deployment."
    )


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
    connection.state[CALLER] = Caller(principal, token)


# ------------------------------------------------------------------- providers
def provide_caller(request: Request[Any, Any, State]) -> Caller:
    caller = request.state.get(CALLER)
    if not isinstance(caller, Caller):  # a route outside the guarded router
        raise AuthenticationError("Missing credentials.")
    return caller


async def provide_limits(request: Request[Any, Any, State]) -> UserLimits:
    """The caller's limits under the operator's policy (looked up once per request)."""
    policy = _deps(request.app.state).policy
    if policy is None:
        return UNLIMITED
    caller = provide_caller(request)
    return await policy.limits(caller.principal, caller.token)


def provide_web_settings(state: State) -> WebSettings:
    settings: WebSettings = state[_SETTINGS]
    return settings


def _collaborator(name: str, *, optional: str | None = None) -> Provide:
    """The provider of ``WebDependencies.<name>``. ``optional``: what the collaborator
    does, for the 501 that a deployment without it answers (``None``: hand out ``None``)."""

    def provide(state: State) -> Any:
        value = getattr(_deps(state), name)
        if value is None and optional is not None:
            raise _not_here(optional)
        return value

    provide.__name__ = f"provide_{name}"
    return Provide(provide, sync_to_thread=False)


def provide_mcp_servers(state: State) -> Sequence[Mapping[str, Any]]:
    """The MCP servers the built-in agent uses as tool sources (none when unconfigured)."""
    mcp_servers = _deps(state).mcp_servers
    return () if mcp_servers is None else mcp_servers()


def provide_model_settings(state: State) -> ModelSettings:
    """The use case that stores the caller's LLM settings under their limits."""
    deps = _deps(state)
    return ModelSettings(deps.llm_config, deps.llm_endpoints)


def provide_readiness(state: State) -> Mapping[str, ReadinessCheck] | None:
    """The readiness checks, or ``None`` while the service is starting."""
    deps = installed(state)
    return None if deps is None else deps.readiness


def dependencies() -> dict[str, Provide]:
    """Every named collaborator a route may declare."""
    return {
        "caller": Provide(provide_caller, sync_to_thread=False),
        "limits": Provide(provide_limits),
        "web_settings": Provide(provide_web_settings, sync_to_thread=False),
        "readiness": Provide(provide_readiness, sync_to_thread=False),
        "mcp_servers": Provide(provide_mcp_servers, sync_to_thread=False),
        "chat": _collaborator("chat"),
        "authenticator": _collaborator("authenticator"),
        "projects": _collaborator("projects"),
        "llm_config": _collaborator("llm_config"),
        "model_settings": Provide(provide_model_settings, sync_to_thread=False),
        "model_catalog": _collaborator("model_catalog"),
        "models": _collaborator("models", optional="Testing LLM settings"),
        "directory": _collaborator("directory", optional="Signing in through the copilot"),
        # For what works without it (an export names the project when it can).
        "directory_if_any": _collaborator("directory"),
        "reload_skills": _collaborator("reload_skills", optional="Reloading skills"),
        "rollback": _collaborator("rollback", optional="Rolling back to restore points"),
        "intent": _collaborator("intent", optional="Standing intent"),
        "drills": _collaborator("drills", optional="Troubleshooting drills"),
        "labs": _collaborator("labs", optional="Lab plans"),
        "lab_builds": _collaborator("lab_builds", optional="Building lab plans"),
        # For what works without it (a plan's answer gives a build's digest when it can).
        "lab_builds_if_any": _collaborator("lab_builds"),
    }
