"""``Allow`` on ``OPTIONS``: every method of the resource, not only some.

Litestar answers ``OPTIONS`` from the route it built first for a path; when handlers
of one path are registered one by one (``PATCH`` and ``DELETE`` on a session), that
answer lists only the methods known at the time. This middleware rewrites the header
from the finished route table, so ``Allow`` always matches the 405 answers and the
OpenAPI document.
"""

from __future__ import annotations

from typing import Any

from litestar import Litestar
from litestar.routes import HTTPRoute
from litestar.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["complete_allow_middleware"]


def _methods_by_template(app: Litestar) -> dict[str, str]:
    methods: dict[str, set[str]] = {}
    for route in app.routes:
        if isinstance(route, HTTPRoute):
            methods.setdefault(route.path_format, set()).update(route.methods)
    return {path: ", ".join(sorted(names)) for path, names in methods.items()}


def complete_allow_middleware(app: ASGIApp) -> ASGIApp:
    table: dict[str, str] | None = None

    async def middleware(scope: Scope, receive: Receive, send: Send) -> None:
        nonlocal table
        if scope["type"] != "http" or scope.get("method") != "OPTIONS":  # type: ignore[comparison-overlap]
            await app(scope, receive, send)
            return
        if table is None:
            table = _methods_by_template(scope["litestar_app"])
        allowed = table.get(scope.get("path_template", ""))

        async def send_with_allow(message: Message) -> None:
            if message["type"] == "http.response.start" and allowed is not None:
                headers: list[Any] = [
                    (name, value) for name, value in message.get("headers", []) if name != b"allow"
                ]
                headers.append((b"allow", allowed.encode("latin-1")))
                message["headers"] = headers
            await send(message)

        await app(scope, receive, send_with_allow)

    return middleware
