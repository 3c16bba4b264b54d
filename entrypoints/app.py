"""``create_app``: the service, assembled from settings and the container."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from typing import Any, cast

import structlog
from litestar import Litestar
from litestar.types import ASGIApp

from adapters.detached import in_daemon_thread, unless_set
from adapters.gns3 import Gns3ProjectWatcher
from adapters.llm import warm_up
from adapters.mcp import McpEndpoint
from adapters.sqlite import SqliteCheckpointStore
from adapters.web import (
    API_PREFIX,
    ReadinessCheck,
    WebDependencies,
    create_web_app,
    install_dependencies,
)
from copilot_core import CopilotError
from copilot_core.errors import ServiceUnavailableError
from entrypoints.container import Container, build_container, resolve
from entrypoints.lifecycle import ProjectLifecycle
from entrypoints.observability import configure_logging
from entrypoints.settings import Settings

__all__ = ["create_app"]

log = structlog.get_logger("entrypoints")


async def _warn_if_gns3_unreachable(container: Container, gns3_url: str) -> None:
    gns3 = await resolve(container.gateways.gns3())
    try:
        version = await gns3.version()
    except CopilotError as exc:
        log.warning(
            "gns3_unreachable",
            gns3_url=gns3_url,
            reason=exc.message,
            hint="the service runs, but every chat route answers 503 until GNS3 answers",
        )
    else:
        log.info("gns3_reachable", gns3_url=gns3_url, gns3_version=version.get("version"))


async def _warm(mcp: McpEndpoint, stopping: asyncio.Event, models_warm: asyncio.Event) -> None:
    """Start-up's deferred work, done while the service answers: LangChain, the
    providers' integrations, a model call's path and the tokenizer (in a thread; then
    ``models_warm`` is set: ``/readyz`` waits for it), and the MCP endpoint's SDK.

    Stopped by ``stopping`` (shutdown): the thread loads nothing after the step it is in,
    and is not waited for (an import cannot be interrupted; it ends with the process)."""
    halt = threading.Event()  # ``stopping``, as the thread sees it
    started = time.monotonic()
    try:
        try:
            loaded = await unless_set(in_daemon_thread(warm_up, halt.is_set), stopping)
        except Exception:  # not ready forever would be worse: the first turn loads it
            log.warning("llm_warm_up_failed", exc_info=True)
            loaded = True
        if not loaded:  # stopping: readiness stays "not ready"
            return
        models_warm.set()
        log.info("llm_warm_up_done", seconds=round(time.monotonic() - started, 2))
        await unless_set(mcp.ready(), stopping)
    finally:
        halt.set()


def _warm_check(models_warm: asyncio.Event) -> ReadinessCheck:
    """``/readyz``'s ``warm_up`` check: ready for chats once what a turn's model loads is
    loaded (until then a turn would wait for those imports, seconds on a busy machine).
    It answers at once, never waiting for the warm-up."""

    async def check() -> None:
        if not models_warm.is_set():
            raise ServiceUnavailableError(
                "still loading the LLM libraries (start-up warm-up); a chat turn now would "
                "wait for them"
            )

    return check


def _quiet_generator_closing(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """Once the service has stopped: the HTTP responses of LLM streams that aborted turns
    left suspended (the provider SDK's generators, which LangChain does not close) are
    closed by asyncio as the loop ends; that they fail to close then is said at debug
    level, not as errors of an orderly stop. Anything else goes to asyncio's handler."""
    if "closing of asynchronous generator" in str(context.get("message", "")):
        log.debug("stream_closed_at_exit", reason=str(context.get("exception")))
        return
    loop.default_exception_handler(context)


def _watch_gns3_projects(
    container: Container, settings: Settings, lifecycle: ProjectLifecycle | None, store: object
) -> asyncio.Future[None] | None:
    """Follow projects being closed or deleted in GNS3 (needs ``gns3.username``; the
    per-project SQLite store only: with PostgreSQL, sessions of deleted projects stay)."""
    if lifecycle is None or not isinstance(store, SqliteCheckpointStore):
        log.info("gns3_project_watch_off", reason="only the SQLite store follows GNS3 projects")
        return None
    gns3 = settings.gns3
    if gns3.username is None or gns3.password is None:
        log.info(
            "gns3_project_watch_off",
            hint="set COPILOT_GNS3__USERNAME and COPILOT_GNS3__PASSWORD (a GNS3 superadmin) "
            "to clean up the conversations of deleted projects at once (without them, a "
            "project GNS3 says is gone is cleaned up on its next request)",
        )
        return None
    username, password = gns3.username, gns3.password.get_secret_value()

    async def watch() -> None:
        watcher = Gns3ProjectWatcher(
            await resolve(container.gateways.gns3()),
            lifecycle,
            store.stored_projects,
            username=username,
            password=password,
        )
        await watcher.run()

    return asyncio.ensure_future(watch())


def create_app(settings: Settings | None = None, container: Container | None = None) -> Litestar:
    """The Litestar app; resources open at start-up and close at shutdown, after running
    turns had ``shutdown_grace`` seconds to save. The process running it talks to the
    service through ``container.service()`` (stop turns on a signal; why a start-up
    failed)."""
    settings = settings or Settings()
    configure_logging(settings.log_level, settings.log_format)
    container = container or build_container(settings)
    service = container.service()

    @asynccontextmanager
    async def lifespan(app: Litestar) -> AsyncIterator[None]:
        service.stopping = asyncio.Event()  # this run's: set first thing on shutdown
        service.models_warm = asyncio.Event()  # this run's: set once the warm-up loaded
        settings.data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        try:
            initialised = container.init_resources()
            if initialised is not None:
                await initialised
        except CopilotError as exc:  # a database that cannot be reached, for instance
            service.failed(exc.message)
            log.error("startup_failed", error=exc.message)
            closed = container.shutdown_resources()  # what did open
            if closed is not None:
                await closed
            raise
        try:
            deps: WebDependencies = await resolve(container.web.collaborators())
            # Ready for chats once the warm-up has loaded what a turn's model needs.
            warm_check = _warm_check(service.models_warm)
            deps = replace(deps, readiness={**deps.readiness, "warm_up": warm_check})
            install_dependencies(app, deps)
            service.arm(deps.chat)
            gns3_url = settings.gns3.url
            log.info("service_started", gns3_url=gns3_url, data_dir=str(settings.data_dir))
            # Say at once when GNS3 does not answer (the service starts all the same).
            probe = asyncio.ensure_future(_warn_if_gns3_unreachable(container, gns3_url))
            store = await resolve(container.gateways.store())
            lifecycle = await resolve(container.web.lifecycle())
            watching = _watch_gns3_projects(container, settings, lifecycle, store)
            mcp = container.mcp_endpoint()
            mcp.install(await resolve(container.mcp_dependencies()))
            try:
                # The MCP SDK loads meanwhile, in a thread (stopped by a shutdown).
                async with mcp.running(service.stopping):
                    # What the first turn would pay for once (imports, tokenizer): loaded in
                    # a thread once the rest has started, while the service already answers
                    # (/healthz, the page, sign-in); /readyz says ready once it is loaded.
                    service.warmed = asyncio.ensure_future(
                        _warm(mcp, service.stopping, service.models_warm)
                    )
                    yield
            finally:
                # Already set on a signal (ServiceHandle.begin_shutdown); set here too for
                # a stop without one: the warm-up ends at once, its threads not waited for.
                service.stopping.set()
                probe.cancel()
                if service.warmed is not None:
                    with contextlib.suppress(Exception):
                        await service.warmed
                if watching is not None:
                    watching.cancel()
                    with contextlib.suppress(asyncio.CancelledError, Exception):
                        await watching
                await deps.chat.shutdown(settings.shutdown_grace)
        finally:
            closed = container.shutdown_resources()
            if closed is not None:
                await closed
            log.info("service_stopped")
            asyncio.get_running_loop().set_exception_handler(_quiet_generator_closing)

    return create_web_app(
        settings=container.web.settings(),
        lifespan=[lifespan],
        metrics=container.metrics(),
        # The MCP endpoint is a plain ASGI app (it authenticates every request itself).
        mounts={f"{API_PREFIX}/mcp": cast(ASGIApp, container.mcp_endpoint())},
    )
