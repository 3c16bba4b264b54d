"""The ``gns3-copilot`` command: ``gns3-copilot serve`` runs the HTTP service;
``gns3-copilot eval`` scores a model on lab tasks (:mod:`entrypoints.evaluation`);
``gns3-copilot --version`` prints the version."""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import contextlib
import errno
import gc
import importlib.metadata
import logging
import signal
import socket
import sys
import tomllib
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from types import FrameType
from typing import Any
from urllib.parse import urlsplit

import structlog
import uvicorn
from pydantic import ValidationError

from adapters.web import BASE_URL_PATTERN
from entrypoints.app import create_app
from entrypoints.container import build_container
from entrypoints.eval_cli import add_eval, run_eval
from entrypoints.service_handle import ServiceHandle
from entrypoints.settings import Settings, add_setting_flags, settings_from_flags

__all__ = ["CopilotServer", "main", "settle_heap", "version"]

log = structlog.get_logger("entrypoints")


def version() -> str:
    """The installed distribution's version, else (a source checkout) pyproject's."""
    try:
        return importlib.metadata.version("gns3-copilot")
    except importlib.metadata.PackageNotFoundError:
        pyproject = Path(__file__).resolve().parents[1] / "pyproject.toml"
        try:
            with pyproject.open("rb") as handle:
                return str(tomllib.load(handle)["project"]["version"])
        except (OSError, KeyError, tomllib.TOMLDecodeError):
            return "unknown"


def settle_heap() -> tuple[int, int]:
    """Take what start-up built out of the garbage collector's full passes.

    Modules, classes, compiled schemas and the wired container live as long as the
    process: about 400,000 objects once ``serve`` has started (warm-up included), that
    each full collection would otherwise walk again, with the event loop stopped, every
    few seconds under load (150-250 ms each on a 2-core machine, felt by every open
    stream at once). Start-up's garbage is collected
    first; what is left is frozen. For the process that owns the service, once it has
    started (never a library: freezing is process-wide). Returns the objects collected
    and the objects now frozen.
    """
    collected = gc.collect()
    gc.freeze()
    return collected, gc.get_freeze_count()


def _browser_url(host: str, port: int) -> str:
    """The address a person on this machine opens (a wildcard host is reached locally)."""
    if host in {"0.0.0.0", "", "::", "[::]"}:
        host = "127.0.0.1"
    elif ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"http://{host}:{port}/"


class CopilotServer(uvicorn.Server):
    """uvicorn, plus: the first SIGTERM/SIGINT runs ``begin_shutdown`` at once (the
    service's: stop start-up's deferred work, abort running turns so that they save and
    their streams end), letting the graceful shutdown finish within the grace time;
    ``on_started`` runs once the app has started and the sockets listen."""

    def __init__(
        self,
        config: uvicorn.Config,
        begin_shutdown: Callable[[], Coroutine[Any, Any, None]],
        *,
        on_started: Callable[[], Coroutine[Any, Any, None]] | None = None,
    ) -> None:
        super().__init__(config)
        self._begin_shutdown = begin_shutdown
        self._on_started = on_started
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: concurrent.futures.Future[None] | None = None
        self._after_start: asyncio.Future[None] | None = None

    async def serve(self, sockets: Any = None) -> None:
        self._loop = asyncio.get_running_loop()
        await super().serve(sockets)

    async def startup(self, sockets: Any = None) -> None:
        await super().startup(sockets)
        if self.should_exit or not self.servers:
            return
        # The port actually bound (``--port 0`` picks one), printed for the person who started it.
        port = next(
            (s.getsockname()[1] for server in self.servers for s in server.sockets or ()),
            self.config.port,
        )
        url = _browser_url(self.config.host, port)
        note = " (listening on every interface)" if self.config.host in {"0.0.0.0", "::"} else ""
        print(f"gns3-copilot {version()}: open {url} in a browser{note}", flush=True)
        if self._on_started is not None:
            self._after_start = asyncio.ensure_future(self._on_started())

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        super().handle_exit(sig, frame)
        if sig == signal.SIGTERM:
            # A clean stop on SIGTERM exits 0 instead of re-raising the signal.
            captured = getattr(self, "_captured_signals", None)
            if isinstance(captured, list) and sig in captured:
                captured.remove(sig)
        if self._stopping is None and self._loop is not None:
            log.info("shutdown_requested", signal=signal.Signals(sig).name)
            self._stopping = asyncio.run_coroutine_threadsafe(self._begin_shutdown(), self._loop)


def _serve(args: argparse.Namespace) -> int:
    try:
        settings = settings_from_flags(args)
    except ValidationError as exc:
        problems = "; ".join(_problem(error) for error in exc.errors())
        print(f"gns3-copilot: invalid settings: {problems}", file=sys.stderr)
        return 2
    if unusable := _url_problems(settings):
        print(f"gns3-copilot: invalid settings: {'; '.join(unusable)}", file=sys.stderr)
        return 2
    try:  # before anything starts: a port in use is one line, not a start-up undone
        listening = _bind(settings.host, settings.port)
    except OSError as exc:
        print(f"gns3-copilot: cannot start: {_bind_problem(settings, exc)}", file=sys.stderr)
        return 1
    container = build_container(settings)
    app = create_app(settings, container)
    service = container.service()
    logging.getLogger("uvicorn.error").addFilter(_StartupFailure(service))
    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        log_config=None,
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=int(settings.shutdown_grace) + 5,
    )

    async def settle() -> None:  # once warm: start-up's objects, warm-up's included
        if service.warmed is not None:
            with contextlib.suppress(Exception):
                await service.warmed
        if not service.stopping.is_set():  # a shutdown does not wait for a full collection
            _settle_heap()

    server = CopilotServer(config, service.begin_shutdown, on_started=settle)
    try:
        with listening:
            server.run(sockets=[listening])  # exits with status 3 when the start-up fails
    finally:
        if not server.started and service.startup_error:
            print(f"gns3-copilot: cannot start: {service.startup_error}", file=sys.stderr)
        # The service has stopped: what is left lives until the process exits. Frozen (as
        # once warm), the interpreter's last collections at exit do not walk it: a stop
        # during the warm-up, before the heap was settled, took 0.8-0.9 s more to exit.
        gc.freeze()
    return 0 if server.started else 1


class _StartupFailure(logging.Filter):
    """A start-up the service refused (a database that cannot be reached…) is said once,
    as ``startup_failed`` and one line on stderr: uvicorn's own lines about it (the
    lifespan's whole traceback, "Application startup failed") are left out."""

    def __init__(self, service: ServiceHandle) -> None:
        super().__init__()
        self._service = service

    def filter(self, record: logging.LogRecord) -> bool:
        if self._service.startup_error is None or record.levelno < logging.ERROR:
            return True
        message = record.getMessage()
        return not ("Traceback (most recent call last)" in message or "startup failed" in message)


def _bind(host: str, port: int) -> socket.socket:
    """The listening socket, bound now (uvicorn serves on it)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6 and host in {"::", "[::]"}:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        sock.bind((host.strip("[]"), port))
        sock.listen(2048)
        sock.set_inheritable(True)
    except BaseException:
        sock.close()
        raise
    return sock


def _bind_problem(settings: Settings, exc: OSError) -> str:
    where = f"{settings.host}:{settings.port}"
    if exc.errno == errno.EADDRINUSE:
        return (
            f"{where} is already in use (another gns3-copilot?): stop it, "
            "or choose another port with --port (COPILOT_PORT)"
        )
    if exc.errno == errno.EADDRNOTAVAIL:
        return f"{where}: this machine has no address {settings.host} (--host, COPILOT_HOST)"
    if exc.errno == errno.EACCES:
        return f"{where}: not allowed to listen there (ports below 1024 need privileges)"
    return f"cannot listen on {where}: {exc.strerror or exc}"


def _settle_heap() -> None:
    collected, frozen = settle_heap()
    log.info("heap_settled", collected=collected, frozen=frozen)


def _problem(error: Any) -> str:
    where = ".".join(str(part) for part in error["loc"])
    message = str(error["msg"]).removeprefix("Value error, ")
    if (
        error.get("type") == "string_pattern_mismatch"
        and (error.get("ctx") or {}).get("pattern") == BASE_URL_PATTERN
    ):
        # The pattern itself is a thousand characters of regex: say what it means.
        message = (
            f"{error.get('input')!r} is not a URL: it must start with http:// or https:// "
            "(http(s)://host[:port][/path], no user or password), e.g. http://127.0.0.1:3080"
        )
    return f"{where}: {message}" if where else message


def _url_problems(settings: Settings) -> list[str]:
    """What is wrong with URLs that validate but cannot work."""
    problems = []
    for where, url in (
        ("gns3.url", settings.gns3.url),
        ("gns3.public_url", settings.gns3.public_url),
    ):
        if url and urlsplit(url).path.rstrip("/").lower().endswith("/v3"):
            problems.append(
                f"{where}: give GNS3's own address without /v3 (the copilot adds /v3 itself), "
                f"e.g. {url.rstrip('/')[: -len('/v3')]}"
            )
    return problems


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="gns3-copilot", description="An AI copilot for GNS3 network labs."
    )
    parser.add_argument("--version", action="version", version=f"gns3-copilot {version()}")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser(
        "serve",
        help="run the HTTP service",
        description="Run the HTTP service. Every flag is also a COPILOT_* environment variable "
        "(--web-heartbeat-interval is COPILOT_WEB__HEARTBEAT_INTERVAL); see "
        "docs/configuration.md.",
    )
    add_setting_flags(serve)
    add_eval(commands)
    args = parser.parse_args(argv)
    if args.command == "serve":
        return _serve(args)
    if args.command == "eval":
        return run_eval(args)
    return 2  # pragma: no cover - argparse requires a command
