"""``create_app``: the service, assembled from settings and the container."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import structlog
from litestar import Litestar

from adapters.web import WebSettings, create_web_app, install_dependencies
from entrypoints.container import Container, build_container, web_dependencies
from entrypoints.observability import configure_logging
from entrypoints.settings import Settings

__all__ = ["CHAT_SERVICE_STATE", "create_app"]

CHAT_SERVICE_STATE = "chat_service"

log = structlog.get_logger("entrypoints")


def create_app(settings: Settings | None = None, container: Container | None = None) -> Litestar:
    """The Litestar app; resources open at start-up and close at shutdown, after running
    turns had ``shutdown_grace`` seconds to save."""
    settings = settings or Settings()
    configure_logging(settings.log_level, settings.log_format)
    container = container or build_container(settings)

    @asynccontextmanager
    async def lifespan(app: Litestar) -> AsyncIterator[None]:
        settings.data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        initialised = container.init_resources()
        if initialised is not None:
            await initialised
        try:
            deps = await web_dependencies(container)
            install_dependencies(app, deps)
            app.state[CHAT_SERVICE_STATE] = deps.chat
            log.info("service_started", gns3_url=settings.gns3_url, data_dir=str(settings.data_dir))
            try:
                yield
            finally:
                await deps.chat.shutdown(settings.shutdown_grace)
        finally:
            closed = container.shutdown_resources()
            if closed is not None:
                await closed
            log.info("service_stopped")

    return create_web_app(
        settings=WebSettings(
            heartbeat_interval=settings.heartbeat_interval or None,
            abort_on_disconnect=settings.abort_on_disconnect,
            auth_cache_ttl=settings.auth_cache_ttl,
            readiness_timeout=settings.readiness_timeout,
            cors_origins=settings.cors_origins,
        ),
        lifespan=[lifespan],
        metrics=container.metrics(),
    )
