"""One place that maps errors onto HTTP statuses and ``{"detail": ...}`` bodies.

A request the service cannot read (not JSON, nested too deeply) is a 400; one it can
read but does not accept (a value of the wrong type or out of range, an unknown field,
a malformed id) is a 422, whether the body's model, a parameter or the core refused it.

No stack trace and no secret ever reaches a response: core errors carry messages
written for users; anything unexpected becomes a plain 500 (and is logged with
its traceback, without local variables).
"""

from __future__ import annotations

from typing import Any

import structlog
from litestar import Request, Response
from litestar.exceptions import HTTPException, ValidationException
from litestar.params import ParameterKwarg
from litestar.status_codes import (
    HTTP_400_BAD_REQUEST,
    HTTP_401_UNAUTHORIZED,
    HTTP_403_FORBIDDEN,
    HTTP_404_NOT_FOUND,
    HTTP_409_CONFLICT,
    HTTP_422_UNPROCESSABLE_ENTITY,
    HTTP_429_TOO_MANY_REQUESTS,
    HTTP_500_INTERNAL_SERVER_ERROR,
    HTTP_502_BAD_GATEWAY,
    HTTP_503_SERVICE_UNAVAILABLE,
)
from litestar.types import ExceptionHandlersMap

from copilot_core.errors import (
    AgentProcessError,
    AuthenticationError,
    ConflictError,
    CopilotError,
    Gns3Error,
    Gns3UnavailableError,
    InvalidRequestError,
    LLMContextLengthError,
    LLMError,
    LLMNotConfiguredError,
    LLMRateLimitedError,
    NotFoundError,
    PermissionDeniedError,
    ServiceUnavailableError,
    StoreError,
)

__all__ = ["exception_handlers", "status_for"]

log = structlog.get_logger("adapters.web")

_STATUSES: tuple[tuple[type[CopilotError], int], ...] = (
    (InvalidRequestError, HTTP_422_UNPROCESSABLE_ENTITY),
    (LLMNotConfiguredError, HTTP_400_BAD_REQUEST),
    (LLMContextLengthError, HTTP_400_BAD_REQUEST),
    (AuthenticationError, HTTP_401_UNAUTHORIZED),
    (PermissionDeniedError, HTTP_403_FORBIDDEN),
    (NotFoundError, HTTP_404_NOT_FOUND),
    (ConflictError, HTTP_409_CONFLICT),
    (LLMRateLimitedError, HTTP_429_TOO_MANY_REQUESTS),
    (LLMError, HTTP_502_BAD_GATEWAY),
    (Gns3UnavailableError, HTTP_503_SERVICE_UNAVAILABLE),
    (Gns3Error, HTTP_502_BAD_GATEWAY),
    (AgentProcessError, HTTP_502_BAD_GATEWAY),
    (StoreError, HTTP_503_SERVICE_UNAVAILABLE),
    (ServiceUnavailableError, HTTP_503_SERVICE_UNAVAILABLE),
)


def status_for(error: CopilotError) -> int:
    """The HTTP status of a core error (the first matching class, most specific first)."""
    for kind, status in _STATUSES:
        if isinstance(error, kind):
            return status
    return HTTP_500_INTERNAL_SERVER_ERROR


def _copilot_error(_: Request[Any, Any, Any], exc: CopilotError) -> Response[dict[str, Any]]:
    status = status_for(exc)
    headers: dict[str, str] = {}
    if isinstance(exc, AuthenticationError):
        headers["WWW-Authenticate"] = 'Bearer realm="gns3-copilot"'
    if (
        isinstance(exc, LLMRateLimitedError | Gns3UnavailableError | ServiceUnavailableError)
        and exc.retry_after is not None
    ):
        headers["Retry-After"] = str(max(int(exc.retry_after + 0.999), 0))
    if status >= 500:
        log.warning("request_failed", error=type(exc).__name__, status=status)
    return Response({"detail": exc.message}, status_code=status, headers=headers)


def _wire_name(request: Request[Any, Any, Any], key: str) -> str:
    """A parameter's name as the client sends it (``Last-Event-ID``, not ``last_event_id``)."""
    handler = request.scope.get("route_handler")
    signature = getattr(handler, "parsed_fn_signature", None)
    parameter = signature.parameters.get(key) if signature is not None else None
    definition = getattr(parameter, "kwarg_definition", None)
    name = getattr(definition, "name", None) if isinstance(definition, ParameterKwarg) else None
    return name or key


def _validation_message(request: Request[Any, Any, Any], exc: ValidationException) -> str:
    problems: list[str] = []
    extra = exc.extra if isinstance(exc.extra, list) else []
    for item in extra:
        if not isinstance(item, dict):
            continue
        key = _wire_name(request, str(item["key"])) if item.get("key") else None
        message = str(item.get("message", "is invalid"))
        problems.append(f"{key}: {message}" if key else message)
    if not problems:
        return str(exc.detail) or "Invalid request."
    return "Invalid request: " + "; ".join(problems)


def _http_error(request: Request[Any, Any, Any], exc: HTTPException) -> Response[dict[str, Any]]:
    if isinstance(exc, ValidationException):
        return Response(
            {"detail": _validation_message(request, exc)},
            status_code=HTTP_422_UNPROCESSABLE_ENTITY,
        )
    return Response(
        {"detail": exc.detail}, status_code=exc.status_code, headers=exc.headers or None
    )


def _unexpected(_: Request[Any, Any, Any], exc: Exception) -> Response[dict[str, Any]]:
    log.error("unhandled_error", error=type(exc).__name__, exc_info=exc)
    return Response(
        {"detail": "Internal server error; the incident was logged."},
        status_code=HTTP_500_INTERNAL_SERVER_ERROR,
    )


exception_handlers: ExceptionHandlersMap = {
    CopilotError: _copilot_error,
    HTTPException: _http_error,
    Exception: _unexpected,
}
