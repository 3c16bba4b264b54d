"""The ``gns3-copilot`` command: ``gns3-copilot serve`` runs the HTTP service."""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import signal
import sys
from collections.abc import Callable, Coroutine, Sequence
from types import FrameType
from typing import Any

import structlog
import uvicorn
from pydantic import ValidationError

from entrypoints.app import create_app
from entrypoints.container import build_container
from entrypoints.settings import add_setting_flags, settings_from_flags

__all__ = ["CopilotServer", "main"]

log = structlog.get_logger("entrypoints")


class CopilotServer(uvicorn.Server):
    """uvicorn, plus: the first SIGTERM/SIGINT aborts running turns so that they save
    and their streams end, letting the graceful shutdown finish within the grace time."""

    def __init__(
        self, config: uvicorn.Config, stop_turns: Callable[[], Coroutine[Any, Any, None]]
    ) -> None:
        super().__init__(config)
        self._stop_turns = stop_turns
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: concurrent.futures.Future[None] | None = None

    async def serve(self, sockets: Any = None) -> None:
        self._loop = asyncio.get_running_loop()
        await super().serve(sockets)

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        super().handle_exit(sig, frame)
        if sig == signal.SIGTERM:
            # A clean stop on SIGTERM exits 0 instead of re-raising the signal.
            captured = getattr(self, "_captured_signals", None)
            if isinstance(captured, list) and sig in captured:
                captured.remove(sig)
        if self._stopping is None and self._loop is not None:
            log.info("shutdown_requested", signal=signal.Signals(sig).name)
            self._stopping = asyncio.run_coroutine_threadsafe(self._stop_turns(), self._loop)


def _serve(args: argparse.Namespace) -> int:
    try:
        settings = settings_from_flags(args)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in error['loc'])}: {error['msg']}" for error in exc.errors()
        )
        print(f"gns3-copilot: invalid settings: {problems}", file=sys.stderr)
        return 2
    container = build_container(settings)
    app = create_app(settings, container)
    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        log_config=None,
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=int(settings.shutdown_grace) + 5,
    )
    server = CopilotServer(config, container.stop_turns())
    server.run()
    return 0 if server.started else 1


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="gns3-copilot", description="An AI copilot for GNS3 network labs."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser(
        "serve",
        help="run the HTTP service",
        description="Run the HTTP service. Every flag is also a COPILOT_* environment variable "
        "(--web-heartbeat-interval is COPILOT_WEB__HEARTBEAT_INTERVAL); see "
        "docs/configuration.md.",
    )
    add_setting_flags(serve)
    args = parser.parse_args(argv)
    if args.command == "serve":
        return _serve(args)
    return 2  # pragma: no cover - argparse requires a command
