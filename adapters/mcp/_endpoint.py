"""The MCP endpoint: the copilot's MCP server over Streamable HTTP, as one ASGI app.

Mounted by the web app at ``/v3/copilot/mcp``. Every HTTP request is authenticated
with the caller's GNS3 bearer token (401 without one or with a bad one, 503 while GNS3
cannot say); the caller and the connection's options (``?mode=``, ``?project=``) go
to the handlers in the ASGI scope, and an MCP session (2025 protocol revisions) stays
bound to the GNS3 user who opened it.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from urllib.parse import parse_qsl

from mcp.server import Server
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.types import Receive, Scope, Send

from adapters.mcp._contracts import McpServerDependencies, McpServerSettings
from adapters.mcp._server import (
    CALLER_SCOPE_KEY,
    OPTIONS_SCOPE_KEY,
    ConnectionOptions,
    McpCaller,
    build_mcp_server,
)
from copilot_core.errors import AuthenticationError, CopilotError, ServiceUnavailableError

__all__ = ["McpEndpoint"]

_MAX_TOKEN = 8192


class McpEndpoint:
    """The ASGI app of the MCP endpoint.

    Build it with the app; :meth:`install` its collaborators once they are open, and
    run it inside :meth:`running` (the app's lifespan): until then it answers 503.
    """

    def __init__(self, settings: McpServerSettings | None = None) -> None:
        self.settings = settings or McpServerSettings()
        self._deps: McpServerDependencies | None = None
        self._running = False
        self.server: Server[object] = build_mcp_server(self._dependencies, self.settings)
        self._manager: StreamableHTTPSessionManager | None = None

    def install(self, deps: McpServerDependencies) -> None:
        self._deps = deps

    def _dependencies(self) -> McpServerDependencies:
        if self._deps is None:
            raise ServiceUnavailableError("The service is starting; try again in a moment.")
        return self._deps

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Serve MCP sessions until the block ends (then every session is closed)."""
        manager = StreamableHTTPSessionManager(self.server, json_response=False, stateless=False)
        async with manager.run():
            self._manager, self._running = manager, True
            try:
                yield
            finally:
                self._running = False
                self._manager = None

    # ---------------------------------------------------------------------- ASGI
    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        if scope.get("path", "/") not in ("", "/"):
            await _answer(send, 404, {"error": "not_found", "error_description": "Use the "
                                      "endpoint itself: /v3/copilot/mcp."})  # fmt: skip
            return
        manager = self._manager
        if manager is None or self._deps is None:
            await _answer(send, 503, _error("unavailable", "The MCP endpoint is starting."))
            return
        try:
            options = ConnectionOptions.from_query(_query(scope))
        except ValueError as exc:
            await _answer(send, 400, _error("invalid_request", str(exc)))
            return
        try:
            token = _bearer(scope)
            principal = await self._deps.authenticator.authenticate(token)
        except AuthenticationError as exc:
            await _answer(
                send,
                401,
                _error("invalid_token", exc.message),
                [(b"www-authenticate", b'Bearer realm="gns3-copilot", error="invalid_token"')],
            )
            return
        except CopilotError as exc:  # GNS3 cannot say who this is now
            await _answer(send, 503, _error("unavailable", exc.message))
            return
        scope[CALLER_SCOPE_KEY] = McpCaller(principal, token)
        scope[OPTIONS_SCOPE_KEY] = options
        # Binds an MCP session to the GNS3 user who opened it (another one gets 404).
        scope["user"] = AuthenticatedUser(
            AccessToken(token=token, client_id="gns3", scopes=[], subject=principal.user_id)
        )
        await manager.handle_request(scope, receive, send)


def _query(scope: Scope) -> dict[str, str]:
    raw = scope.get("query_string", b"").decode("latin-1")
    pairs = parse_qsl(raw, keep_blank_values=True)
    names = [name for name, _ in pairs]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise ValueError(f"the query parameter {repeated[0]!r} is given more than once")
    return dict(pairs)


def _bearer(scope: Scope) -> str:
    values = [value for name, value in scope.get("headers", []) if name == b"authorization"]
    if not values:
        raise AuthenticationError(
            "Missing credentials: send your GNS3 token as 'Authorization: Bearer <token>'."
        )
    header: str = bytes(values[0]).decode("latin-1")
    scheme, _, token = header.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        raise AuthenticationError(
            "Malformed Authorization header: expected 'Authorization: Bearer <token>'."
        )
    if len(token) > _MAX_TOKEN or any(ch.isspace() for ch in token):
        raise AuthenticationError("Malformed bearer token.")
    return token


def _error(code: str, description: str) -> dict[str, str]:
    return {"error": code, "error_description": description}


async def _answer(
    send: Send,
    status: int,
    body: dict[str, str],
    headers: list[tuple[bytes, bytes]] | None = None,
) -> None:
    payload = json.dumps(body).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(payload)).encode()),
                *(headers or []),
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload})
