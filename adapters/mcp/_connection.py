"""Who an MCP request comes from, and what its connection chose (``?mode=``,
``?project=``): the endpoint leaves both in the request's ASGI scope; the handlers read
them back."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from copilot_core import CopilotMode
from copilot_core.errors import InvalidRequestError, PermissionDeniedError
from copilot_core.policy import UNLIMITED, UserLimits
from copilot_core.ports import Principal

if TYPE_CHECKING:  # the handlers' side; the endpoint's (options, caller) needs no SDK
    from mcp.server import ServerRequestContext

__all__ = [
    "CALLER_SCOPE_KEY",
    "FORBIDDEN",
    "OPTIONS_SCOPE_KEY",
    "ConnectionOptions",
    "InvalidArgument",
    "McpCaller",
    "caller_of",
    "principal_of",
    "refused_as_mcp_error",
    "session_of",
]

#: Where the endpoint leaves the authenticated caller and the connection's options in
#: the ASGI scope of each HTTP request (the handlers read them from there).
CALLER_SCOPE_KEY: Final = "gns3_copilot.mcp.caller"
OPTIONS_SCOPE_KEY: Final = "gns3_copilot.mcp.options"
#: A JSON-RPC server error (implementation-defined range): the operator's policy does not
#: allow the caller this (the HTTP API's 403).
FORBIDDEN: Final = -32003


@dataclass(frozen=True, slots=True)
class McpCaller:
    """The authenticated GNS3 user of one HTTP request, and their token (never shown)."""

    principal: Principal
    token: str = field(repr=False)
    #: Their limits under the operator's policy (the core's gate applies them).
    limits: UserLimits = UNLIMITED

    @property
    def user_id(self) -> str:
        return self.principal.user_id


@dataclass(frozen=True, slots=True)
class ConnectionOptions:
    """What the client chose in the endpoint's query string: ``?mode=`` and ``?project=``."""

    mode: CopilotMode = CopilotMode.TEACHING_ASSISTANT
    project: str | None = None

    @classmethod
    def from_query(cls, query: Mapping[str, str]) -> ConnectionOptions:
        """The options, or :class:`ValueError` naming what is wrong."""
        unknown = sorted(set(query) - {"mode", "project"})
        if unknown:
            raise ValueError(f"unknown query parameter {unknown[0]!r}: use mode and project")
        mode = query.get("mode") or CopilotMode.TEACHING_ASSISTANT.value
        try:
            chosen = CopilotMode(mode)
        except ValueError:
            modes = ", ".join(m.value for m in CopilotMode)
            raise ValueError(f"mode must be one of {modes}, not {mode!r}") from None
        project = (query.get("project") or "").strip() or None
        if project is not None and len(project) > 255:
            raise ValueError("project must be a GNS3 project id or name (at most 255 characters)")
        return cls(chosen, project)


@contextmanager
def refused_as_mcp_error() -> Iterator[None]:
    """The core's refusal under the operator's policy (a PermissionDeniedError) as the
    MCP error :data:`FORBIDDEN` with its message: the adapter maps it, never decides it."""
    try:
        yield
    except PermissionDeniedError as exc:
        from mcp.shared.exceptions import MCPError

        raise MCPError(FORBIDDEN, exc.message) from None


def caller_of(ctx: ServerRequestContext[Any, Any]) -> tuple[McpCaller, ConnectionOptions]:
    import mcp_types as types
    from mcp.shared.exceptions import MCPError
    from starlette.requests import Request

    request = ctx.request
    if not isinstance(request, Request):  # only the HTTP endpoint serves this server
        raise MCPError(types.INVALID_REQUEST, "This server is served over HTTP only.")
    caller = request.scope.get(CALLER_SCOPE_KEY)
    options = request.scope.get(OPTIONS_SCOPE_KEY)
    if not isinstance(caller, McpCaller) or not isinstance(options, ConnectionOptions):
        raise MCPError(types.INVALID_REQUEST, "The request was not authenticated.")
    return caller, options


def principal_of(ctx: ServerRequestContext[Any, Any]) -> str | None:
    """Binds 2026-07-28 ``requestState`` to the GNS3 user it was minted for."""
    from starlette.requests import Request

    request = ctx.request
    caller = request.scope.get(CALLER_SCOPE_KEY) if isinstance(request, Request) else None
    return f"gns3-user:{caller.user_id}" if isinstance(caller, McpCaller) else None


def session_of(ctx: ServerRequestContext[Any, Any]) -> str:
    """The MCP session (2025 revisions), else ``mcp``: where a call's context says it
    comes from."""
    from starlette.requests import Request

    request = ctx.request
    session = request.headers.get("mcp-session-id") if isinstance(request, Request) else None
    return f"mcp-{session[:64]}" if session else "mcp"


class InvalidArgument(InvalidRequestError):
    """A call's arguments cannot name a project (answered as a tool error)."""
