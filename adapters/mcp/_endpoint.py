"""The MCP endpoint: the copilot's MCP server over Streamable HTTP, as one ASGI app.

Mounted by the web app at ``/v3/copilot/mcp``. Every HTTP request is authenticated
with the caller's GNS3 bearer token (401 without one or with a bad one, 503 while GNS3
cannot say); the caller, their limits under the operator's policy (looked up here, once
per request, and applied by the core's gate: a ``?mode=`` above them is refused when
tools are listed or called) and the connection's options (``?mode=``, ``?project=``) go
to the handlers in the ASGI scope, and an MCP session (2025 protocol revisions) stays
bound to the GNS3 user who opened it. Each user may hold at most
``max_sessions_per_user`` sessions at once (one more: HTTP 429, saying how many and when
one expires); a session idle for ``session_idle_timeout`` is closed.

The MCP SDK is loaded (in a thread) once :meth:`McpEndpoint.running` has begun, not
with this module: ``serve`` answers ``/healthz`` without it, and a request that comes
while it loads waits for it. A shutdown that begins meanwhile stops the loading (the
thread is not waited for): the requests that waited are answered 503.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import math
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl

import structlog

from adapters.detached import in_daemon_thread, unless_set
from adapters.mcp._connection import (
    CALLER_SCOPE_KEY,
    OPTIONS_SCOPE_KEY,
    ConnectionOptions,
    McpCaller,
)
from adapters.mcp._contracts import APPROVAL_TIMEOUT, McpServerDependencies, McpServerSettings
from adapters.mcp._sessions import SessionLedger, TooManySessionsError
from copilot_core.errors import (
    AuthenticationError,
    CopilotError,
    ServiceUnavailableError,
)
from copilot_core.policy import UNLIMITED, UserLimits
from copilot_core.ports import Principal

if TYPE_CHECKING:
    from mcp.server import Server
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
    from starlette.types import Message, Receive, Scope, Send

__all__ = ["McpEndpoint"]

log = structlog.get_logger("adapters.mcp")

_MAX_TOKEN = 8192
#: The SDK's ``MCP_SESSION_ID_HEADER`` and ``MCP_PROTOCOL_VERSION_HEADER`` (a test holds
#: them equal), spelled here so that the endpoint needs no SDK to answer before it loads.
_SESSION_HEADER = b"mcp-session-id"
_VERSION_HEADER = b"mcp-protocol-version"
#: What the endpoint loads once it runs: the SDK, and the MCP server built on it.
_SDK_MODULES = (
    "mcp.server.auth.middleware.bearer_auth",
    "mcp.server.streamable_http_manager",
    "mcp_types.version",
    "adapters.mcp._server",
)
#: A JSON-RPC server error (implementation-defined range): too many sessions.
TOO_MANY_SESSIONS = -32029


class McpEndpoint:
    """The ASGI app of the MCP endpoint.

    Build it with the app; :meth:`install` its collaborators once they are open, and
    run it inside :meth:`running` (the app's lifespan): until then it answers 503.
    ``server`` (the SDK's) is built once it runs.
    """

    def __init__(
        self,
        settings: McpServerSettings | None = None,
        *,
        approval_timeout: float = APPROVAL_TIMEOUT,
        request_state_keys: tuple[bytes, ...] = (),
    ) -> None:
        self.settings = settings or McpServerSettings()
        #: Seconds an elicited approval may take before the call counts as rejected.
        self.approval_timeout = approval_timeout
        #: Secrets that seal the multi-round-trip state of 2026-07-28 clients (approvals
        #: asked with ``input_required``); the first seals, all unseal. Empty: a key of
        #: this process (with several replicas, give them all the same key).
        self.request_state_keys = request_state_keys
        self._deps: McpServerDependencies | None = None
        self._running = False
        self.server: Server[object] | None = None
        self._manager: StreamableHTTPSessionManager | None = None
        self._started = asyncio.Event()
        self._stopping = asyncio.Event()
        self.sessions = SessionLedger(
            self.settings.max_sessions_per_user, self.settings.session_idle_timeout
        )

    def install(self, deps: McpServerDependencies) -> None:
        self._deps = deps

    def _dependencies(self) -> McpServerDependencies:
        if self._deps is None:
            raise ServiceUnavailableError("The service is starting; try again in a moment.")
        return self._deps

    @asynccontextmanager
    async def running(self, stopping: asyncio.Event | None = None) -> AsyncIterator[None]:
        """Serve MCP sessions until the block ends (then every session is closed).

        The block begins at once; the SDK loads in a thread meanwhile and the session
        manager starts in a task of its own (requests that come before wait for it).
        If the block ends or ``stopping`` (the service's shutdown signal) is set before the
        SDK has loaded, the loading stops at once, without waiting for the import under
        way: the endpoint then never serves, and the requests waiting for it are answered
        503."""
        self._started = asyncio.Event()
        self._stopping = stopping or asyncio.Event()
        stop = asyncio.Event()
        serving = asyncio.ensure_future(self._serve(stop))
        self._running = True
        try:
            yield
        finally:
            self._running = False
            stop.set()
            try:
                await serving
            finally:
                self._manager = None
                self.sessions.clear()

    async def ready(self) -> bool:
        """Once :meth:`running` has begun: wait until the endpoint serves MCP (the SDK
        loaded, the session manager started), or will not (it failed to load, or the
        service began to stop first); whether it does."""
        await self._started.wait()
        return self._manager is not None

    async def _serve(self, stop: asyncio.Event) -> None:
        try:
            manager = await self._load(stop)
            if manager is None:
                return
            async with manager.run():
                self._manager = manager
                self._started.set()
                await stop.wait()
        finally:
            self._manager = None
            self._started.set()

    async def _load(self, stop: asyncio.Event) -> StreamableHTTPSessionManager | None:
        """The session manager, the SDK loaded; ``None`` when it cannot load, or when the
        service stops (``stop``, ``self._stopping``) before it has."""
        try:
            for module in _SDK_MODULES:  # in a thread: the loop answers meanwhile
                stopped = stop.is_set() or self._stopping.is_set()
                if stopped or not await unless_set(
                    in_daemon_thread(importlib.import_module, module), stop, self._stopping
                ):
                    log.info("mcp_endpoint_not_started", reason="the service is stopping")
                    return None
            from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

            from adapters.mcp._server import build_mcp_server

            if self.server is None:
                self.server = build_mcp_server(
                    self._dependencies,
                    self.settings,
                    approval_timeout=self.approval_timeout,
                    request_state_keys=self.request_state_keys,
                )
            return StreamableHTTPSessionManager(
                self.server,
                json_response=False,
                stateless=False,
                session_idle_timeout=self.settings.session_idle_timeout,
                max_sessions=self.settings.max_sessions,
            )
        except Exception as exc:  # an SDK that cannot load: every request is told so
            error = f"{type(exc).__name__}: {exc}"
            if stop.is_set() or self._stopping.is_set():  # failed as the process ends
                log.info("mcp_endpoint_not_started", reason="the service is stopping", error=error)
            else:
                log.error("mcp_endpoint_failed", error=error)
            return None

    # ---------------------------------------------------------------------- ASGI
    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        if scope.get("path", "/") not in ("", "/"):
            await _answer(send, 404, {"error": "not_found", "error_description": "Use the "
                                      "endpoint itself: /v3/copilot/mcp."})  # fmt: skip
            return
        serving = self._running and self._deps is not None and await self.ready()
        manager = self._manager
        if not serving or manager is None or self._deps is None:
            stopping = self._stopping.is_set()
            why = "The service is stopping." if stopping else "The MCP endpoint is starting."
            await _answer(send, 503, _error("unavailable", why))
            return
        from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
        from mcp.server.auth.provider import AccessToken

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
        try:
            limits = await self._limits(principal, token)
        except CopilotError as exc:  # the policy cannot be applied now
            await _answer(send, 503, _error("unavailable", exc.message))
            return
        scope[CALLER_SCOPE_KEY] = McpCaller(principal, token, limits)
        scope[OPTIONS_SCOPE_KEY] = options
        # Binds an MCP session to the GNS3 user who opened it (another one gets 404).
        scope["user"] = AuthenticatedUser(
            AccessToken(token=token, client_id="gns3", scopes=[], subject=principal.user_id)
        )
        if not _opens_or_uses_a_session(scope):  # 2026-07-28: no sessions
            await manager.handle_request(scope, receive, send)
            return
        session_id = _header(scope, _SESSION_HEADER)
        if session_id is None:
            await self._open_session(manager, principal.user_id, scope, receive, send)
        else:
            await self._use_session(manager, principal.user_id, session_id, scope, receive, send)

    async def _limits(self, principal: Principal, token: str) -> UserLimits:
        policy = self._dependencies().policy
        return UNLIMITED if policy is None else await policy.limits(principal, token)

    async def _open_session(
        self,
        manager: StreamableHTTPSessionManager,
        user_id: str,
        scope: Scope,
        receive: Receive,
        send: Send,
    ) -> None:
        try:
            self.sessions.reserve(user_id)
        except TooManySessionsError as exc:
            await _too_many(send, exc)
            return
        answer = _Answer(send)
        opened: str | None = None
        try:
            await manager.handle_request(scope, receive, answer.send)
            if answer.status is not None and answer.status < 400:
                opened = answer.session_id
        finally:
            self.sessions.opened(user_id, opened)

    async def _use_session(
        self,
        manager: StreamableHTTPSessionManager,
        user_id: str,
        session_id: str,
        scope: Scope,
        receive: Receive,
        send: Send,
    ) -> None:
        if not self.sessions.enter(user_id, session_id):
            await manager.handle_request(scope, receive, send)  # not theirs: the SDK's 404
            return
        answer = _Answer(send)
        try:
            await manager.handle_request(scope, receive, answer.send)
        finally:
            deleted = scope.get("method") == "DELETE" and (answer.status or 500) < 300
            self.sessions.leave(user_id, session_id, ended=deleted or answer.status == 404)


class _Answer:
    """Passes a response on, noting its status and the session id it names."""

    def __init__(self, send: Send) -> None:
        self._send = send
        self.status: int | None = None
        self.session_id: str | None = None

    async def send(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.status = int(message["status"])
            for name, value in message.get("headers", []):
                if bytes(name).lower() == _SESSION_HEADER:
                    self.session_id = bytes(value).decode("latin-1")
        await self._send(message)


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if bytes(key).lower() == name:
            return bytes(value).decode("latin-1")
    return None


def _opens_or_uses_a_session(scope: Scope) -> bool:
    """Whether the SDK serves this request on its stateful (2025 revisions) path, as it
    decides it: by the protocol version header."""
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

    version = _header(scope, _VERSION_HEADER)
    return version is None or version in HANDSHAKE_PROTOCOL_VERSIONS


async def _too_many(send: Send, error: TooManySessionsError) -> None:
    body = {
        "jsonrpc": "2.0",
        "id": None,
        "error": {
            "code": TOO_MANY_SESSIONS,
            "message": error.message,
            "data": {
                "reason": "too_many_sessions",
                "open_sessions": error.open_sessions,
                "max_sessions_per_user": error.limit,
                "session_idle_timeout": error.idle_timeout,
                "retry_after": round(error.retry_after, 1),
            },
        },
    }
    payload = json.dumps(body).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 429,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(payload)).encode()),
                (b"retry-after", str(max(1, math.ceil(error.retry_after))).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload})


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
