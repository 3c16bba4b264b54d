"""The ``gns3-copilot`` command: ``gns3-copilot serve`` runs the HTTP service;
``gns3-copilot --version`` prints the version."""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import importlib.metadata
import signal
import sys
import tomllib
from collections.abc import Sequence
from pathlib import Path
from types import FrameType
from typing import Any

import structlog
import uvicorn
from litestar import Litestar
from pydantic import ValidationError

from copilot_core.service import ChatService
from entrypoints.app import CHAT_SERVICE_STATE, STARTUP_ERROR_STATE, create_app
from entrypoints.settings import Settings

__all__ = ["CopilotServer", "main", "version"]

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


def _browser_url(host: str, port: int) -> str:
    """The address a person on this machine opens (a wildcard host is reached locally)."""
    if host in {"0.0.0.0", "", "::", "[::]"}:
        host = "127.0.0.1"
    elif ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"http://{host}:{port}/"


class CopilotServer(uvicorn.Server):
    """uvicorn, plus: the first SIGTERM/SIGINT aborts running turns so that they save
    and their streams end, letting the graceful shutdown finish within the grace time."""

    def __init__(self, config: uvicorn.Config, app: Litestar, grace: float) -> None:
        super().__init__(config)
        self._app = app
        self._grace = grace
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: concurrent.futures.Future[None] | None = None

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

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        super().handle_exit(sig, frame)
        if sig == signal.SIGTERM:
            # A clean stop on SIGTERM exits 0 instead of re-raising the signal.
            captured = getattr(self, "_captured_signals", None)
            if isinstance(captured, list) and sig in captured:
                captured.remove(sig)
        chat = self._app.state.get(CHAT_SERVICE_STATE)
        if self._stopping is None and self._loop is not None and isinstance(chat, ChatService):
            log.info("shutdown_requested", signal=signal.Signals(sig).name)
            self._stopping = asyncio.run_coroutine_threadsafe(
                chat.shutdown(self._grace), self._loop
            )


def _serve(args: argparse.Namespace) -> int:
    overrides = {
        "host": args.host,
        "port": args.port,
        "gns3_url": args.gns3_url,
        "data_dir": args.data_dir,
        "log_level": args.log_level,
        "database_url": args.database_url,
        "redis_url": args.redis_url,
        "log_format": args.log_format,
    }
    try:
        settings = Settings(**{k: v for k, v in overrides.items() if v is not None})
    except ValidationError as exc:
        problems = "; ".join(_problem(error) for error in exc.errors())
        print(f"gns3-copilot: invalid settings: {problems}", file=sys.stderr)
        return 2
    app = create_app(settings)
    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        log_config=None,
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=int(settings.shutdown_grace) + 5,
    )
    server = CopilotServer(config, app, settings.shutdown_grace)
    try:
        server.run()  # exits with status 3 when the start-up fails
    finally:
        error = app.state.get(STARTUP_ERROR_STATE)
        if not server.started and error:
            print(f"gns3-copilot: cannot start: {error}", file=sys.stderr)
    return 0 if server.started else 1


def _problem(error: Any) -> str:
    where = ".".join(str(part) for part in error["loc"])
    message = str(error["msg"]).removeprefix("Value error, ")
    return f"{where}: {message}" if where else message


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="gns3-copilot", description="An AI copilot for GNS3 network labs."
    )
    parser.add_argument("--version", action="version", version=f"gns3-copilot {version()}")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser(
        "serve",
        help="run the HTTP service",
        description="Run the HTTP service. Every flag is also a COPILOT_* environment variable.",
    )
    serve.add_argument("--host", help="interface to listen on (default 127.0.0.1)")
    serve.add_argument("--port", type=int, help="TCP port (default 8080)")
    serve.add_argument("--gns3-url", help="GNS3 server URL (default http://127.0.0.1:3080)")
    serve.add_argument("--data-dir", type=Path, help="per-user data directory")
    serve.add_argument("--log-level", choices=["debug", "info", "warning", "error"])
    serve.add_argument(
        "--database-url",
        help="postgresql://… URL: sessions and LLM settings in PostgreSQL, for several "
        "replicas (default: SQLite in the data directory); prefer COPILOT_DATABASE_URL, "
        "which other users cannot read in the process list",
    )
    serve.add_argument(
        "--redis-url",
        help="redis://… URL: running turns shared by every replica (re-attach, abort, one "
        "turn per session across replicas); default: in memory. Prefer COPILOT_REDIS_URL",
    )
    serve.add_argument(
        "--log-format",
        choices=["auto", "json", "console"],
        help="auto (default): human-readable on a terminal, JSON lines otherwise",
    )
    args = parser.parse_args(argv)
    if args.command == "serve":
        return _serve(args)
    return 2  # pragma: no cover - argparse requires a command
