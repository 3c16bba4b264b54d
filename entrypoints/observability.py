"""structlog logging, configured once for the whole process.

Logs go to stderr: human-readable lines when stderr is a terminal (``auto``, the
default, or ``console``), else one JSON object per line (``auto`` or ``json``) with
``timestamp``, ``level``, ``logger``, ``event`` and whatever context is bound
(``request_id``, ``user_id``, ``project_id``, ``session_id``). Standard-library
loggers (uvicorn, the core) go through the same renderer. Tracebacks are rendered
as text without local variables, and values under secret-looking keys are
replaced, so a token or a key cannot reach the log.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import MutableMapping
from typing import Any, TextIO

import structlog

__all__ = ["configure_logging", "resolve_log_format"]

_SECRET_KEYS = frozenset(
    {"token", "authorization", "api_key", "password", "secret", "secret_key", "credentials"}
)
_configured = False


def _redact(_: Any, __: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    for key in list(event):
        if key.lower() in _SECRET_KEYS:
            event[key] = "[redacted]"
    return event


def resolve_log_format(fmt: str, stream: TextIO) -> str:
    """``json`` or ``console``: ``auto`` is ``console`` on a terminal, else ``json``."""
    if fmt != "auto":
        return fmt
    try:
        return "console" if stream.isatty() else "json"
    except (AttributeError, ValueError):  # a closed or unusual stream
        return "json"


def configure_logging(level: str = "info", fmt: str = "auto") -> None:
    """Configure structlog and the standard library's root logger (once per process)."""
    global _configured
    if _configured:
        return
    _configured = True
    fmt = resolve_log_format(fmt, sys.stderr)
    shared: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        _redact,
    ]
    renderer: Any = (
        structlog.processors.JSONRenderer()
        if fmt == "json"
        else structlog.dev.ConsoleRenderer(colors=_colors(sys.stderr))
    )
    structlog.configure(
        processors=[
            structlog.stdlib.filter_by_level,
            *shared,
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=True,
    )
    formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=shared,
        processors=[
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            structlog.processors.format_exc_info,
            renderer,
        ],
    )
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(formatter)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        logging.getLogger(name).handlers[:] = []
        logging.getLogger(name).propagate = True


def _colors(stream: TextIO) -> bool:
    """Colours on a terminal, unless ``NO_COLOR`` is set (https://no-color.org)."""
    try:
        return stream.isatty() and not os.environ.get("NO_COLOR")
    except (AttributeError, ValueError):
        return False
