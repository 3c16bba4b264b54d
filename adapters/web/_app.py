"""The Litestar application: routes, OpenAPI, error mapping and dependencies in one place."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any

from litestar import Litestar, Request, Router, asgi
from litestar.config.cors import CORSConfig
from litestar.datastructures import State
from litestar.openapi import OpenAPIConfig
from litestar.openapi.plugins import (
    JsonRenderPlugin,
    OpenAPIRenderPlugin,
    RedocRenderPlugin,
    SwaggerRenderPlugin,
    YamlRenderPlugin,
)
from litestar.openapi.spec import Components, SecurityScheme
from litestar.plugins.pydantic import PydanticPlugin
from litestar.types import ASGIApp

from adapters.web._account import AccountController
from adapters.web._body import MAX_BODY_BYTES
from adapters.web._chat import ChatController
from adapters.web._contracts import WebDependencies, WebSettings
from adapters.web._directory import (
    CreateProjectRequest,
    DirectoryController,
    LoginController,
    LoginRequest,
    RenderRequest,
    RenderToolsRequest,
)
from adapters.web._drills import DrillController, StartDrillBody
from adapters.web._errors import exception_handlers
from adapters.web._health import healthz, readyz
from adapters.web._intent import IntentBody, IntentController
from adapters.web._lab import TOPOLOGY_EVENT_SCHEMA, LabController
from adapters.web._lab_stream import LAB_BUILD_EVENT_SCHEMA
from adapters.web._labs import LabBuildBody, LabPlanController, LabPlanRequest
from adapters.web._logging import request_context_middleware
from adapters.web._methods import complete_allow_middleware
from adapters.web._observers import PrometheusTurnMetrics, metrics_route
from adapters.web._openapi import ExactDocument, Limits, RefinedRenderPlugin
from adapters.web._page import page_routes
from adapters.web._restore_points import RestorePointController
from adapters.web._schemas import ChatRequest, DecisionRequest, LLMConfigBody, RenameRequest
from adapters.web._state import authenticated, dependencies, init_state, installed

__all__ = ["API_PREFIX", "create_web_app"]

API_PREFIX = "/v3/copilot"

Lifespan = Callable[[Litestar], AbstractAsyncContextManager[None]]


def create_web_app(
    deps: WebDependencies | None = None,
    *,
    settings: WebSettings | None = None,
    lifespan: Sequence[Lifespan] = (),
    middleware: Sequence[Callable[[ASGIApp], ASGIApp]] = (),
    metrics: PrometheusTurnMetrics | None = None,
    mounts: Mapping[str, ASGIApp] | None = None,
) -> Litestar:
    """Build the HTTP service around already-built collaborators.

    Pass ``deps`` now, or install them later (typically from a ``lifespan`` once
    async resources are open) with :func:`install_dependencies`; until then every
    route but ``/healthz`` answers 503. With ``metrics`` (an observer of the turn
    runner), ``/metrics`` serves them. ``mounts`` are ASGI apps served under their
    path as they are (the MCP endpoint at ``/v3/copilot/mcp``: it authenticates itself).
    """
    settings = settings or WebSettings()
    api = Router(
        path=API_PREFIX,
        route_handlers=[
            ChatController,
            LabController,
            RestorePointController,
            IntentController,
            DrillController,
            LabPlanController,
            AccountController,
            DirectoryController,
        ],
        security=[{"BearerToken": []}],
        guards=[authenticated],
    )
    sign_in = Router(path=API_PREFIX, route_handlers=[LoginController])
    return Litestar(
        route_handlers=[
            api,
            sign_in,
            healthz,
            readyz,
            *page_routes(),
            *([metrics_route(metrics)] if metrics is not None else []),
            *(
                asgi(path, is_mount=True, copy_scope=True, include_in_schema=False)(app)
                for path, app in (mounts or {}).items()
            ),
        ],
        dependencies=dependencies(),
        exception_handlers=exception_handlers,
        middleware=[request_context_middleware, complete_allow_middleware, *middleware],
        lifespan=list(lifespan),
        state=_state(settings, deps),
        openapi_config=OpenAPIConfig(
            title=settings.title,
            version=settings.version,
            description=(
                "gns3-copilot: chat with an LLM agent about a GNS3 lab. Every /v3/copilot route "
                "needs 'Authorization: Bearer <GNS3 token>'."
            ),
            components=Components(
                security_schemes={
                    "BearerToken": SecurityScheme(
                        type="http",
                        scheme="bearer",
                        description="The caller's GNS3 access token (JWT).",
                    )
                }
            ),
            use_handler_docstrings=True,
            path="/schema",
            render_plugins=_render_plugins(),
        ),
        cors_config=_cors(settings),
        request_max_body_size=MAX_BODY_BYTES,
        # Bodies are validated strictly: no string is taken for a bool or a number.
        plugins=[PydanticPlugin(validate_strict=True)],
        debug=settings.debug,
        logging_config=None,  # the composition root configures logging
    )


def _limits(request: Request[Any, Any, Any]) -> Limits | None:
    deps = installed(request.app.state)
    if deps is None:
        return None
    return Limits(
        message_chars=deps.chat.settings.max_message_chars, page=deps.chat.settings.max_page
    )


def _render_plugins() -> list[OpenAPIRenderPlugin]:
    """``/schema/openapi.json`` (and ``.yaml``), ``/schema/swagger`` and ``/schema/redoc``
    (also ``/schema``), all from the document made exact (see ``_openapi``)."""
    exact = ExactDocument(
        api_prefix=API_PREFIX,
        bodies=(
            ChatRequest,
            RenameRequest,
            DecisionRequest,
            LLMConfigBody,
            LoginRequest,
            RenderRequest,
            RenderToolsRequest,
            CreateProjectRequest,
            IntentBody,
            StartDrillBody,
            LabPlanRequest,
            LabBuildBody,
        ),
        event_streams=("streamChat", "buildLab"),
        alternative_media={
            "exportChatSession": {"text/markdown": {"type": "string"}},
            # the plan's YAML file: a client reading YAML reads the plan document
            "getCurrentLab": {"application/yaml": {"type": "object"}},
        },
        event_schemas={
            "followTopology": ("TopologyEvent", TOPOLOGY_EVENT_SCHEMA),
            "buildLab": ("LabBuildEvent", LAB_BUILD_EVENT_SCHEMA),
        },
        turn_operations=("streamChat", "resumeChatStream"),
        limits=_limits,
    )
    return [
        RefinedRenderPlugin(JsonRenderPlugin(path="/openapi.json"), exact),
        RefinedRenderPlugin(YamlRenderPlugin(path="/openapi.yaml"), exact),
        RefinedRenderPlugin(RedocRenderPlugin(path=["/redoc", "/"]), exact),
        RefinedRenderPlugin(SwaggerRenderPlugin(path="/swagger"), exact),
    ]


def _cors(settings: WebSettings) -> CORSConfig | None:
    if not settings.cors_origins:
        return None
    return CORSConfig(
        allow_origins=list(settings.cors_origins),
        allow_methods=["GET", "POST", "PUT", "PATCH", "DELETE"],
        allow_headers=["Authorization", "Content-Type", "Last-Event-ID", "X-Request-ID"],
        expose_headers=["X-Session-Id", "X-Turn-Id", "X-Request-ID", "Retry-After"],
    )


def _state(settings: WebSettings, deps: WebDependencies | None) -> State:
    return State(init_state(settings, deps))
