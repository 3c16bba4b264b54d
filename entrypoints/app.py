"""``create_app``: the service, assembled from settings and the container."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import structlog
from litestar import Litestar

from adapters.web import WebDependencies, create_web_app, install_dependencies
from entrypoints.container import Container, build_container, resolve
from entrypoints.observability import configure_logging
from entrypoints.settings import Settings

__all__ = ["create_app"]

log = structlog.get_logger("entrypoints")


def create_app(settings: Settings | None = None, container: Container | None = None) -> Litestar:
    """The Litestar app; resources open at start-up and close at shutdown, after running
    turns had ``shutdown_grace`` seconds to save. A signal handler stops running turns
    earlier through ``container.stop_turns()``."""
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
            deps: WebDependencies = await resolve(container.web.collaborators())
            install_dependencies(app, deps)
            container.stop_turns().arm(deps.chat)
            log.info("service_started", gns3_url=settings.gns3.url, data_dir=str(settings.data_dir))
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
        settings=container.web.settings(), lifespan=[lifespan], metrics=container.metrics()
    )
