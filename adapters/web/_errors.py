"""One place that maps errors onto HTTP statuses and ``{"detail": ...}`` bodies.

A request the service cannot read (not JSON, nested too deeply) is a 400; one it can
read but does not accept (a value of the wrong type or out of range, an unknown field,
a malformed id) is a 422, whether the body's model, a parameter or the core refused it.

Every error body also has a stable ``code`` a program can branch on: the core error's
(:func:`~copilot_core.errors.error_code`: ``llm_not_configured``, ``session_busy``…),
``invalid_request`` for a value refused, the status's name for Litestar's own
(``not_found``, ``method_not_allowed``…), ``internal`` for anything unexpected.

No stack trace and no secret ever reaches a response: core errors carry messages
written for users; anything unexpected becomes a 500 that says what to do (and is
logged once, with its traceback, without local variables).
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
    DrillNotStartedError,
    DrillStepError,
    Gns3Error,
    Gns3UnavailableError,
    InvalidRequestError,
    LabDoesNotFitError,
    LLMContextLengthError,
    LLMError,
    LLMNotConfiguredError,
    LLMRateLimitedError,
    NotFoundError,
    PermissionDeniedError,
    ServiceUnavailableError,
    StoreError,
    error_code,
)

__all__ = ["exception_handlers", "status_for"]

log = structlog.get_logger("adapters.web")

_STATUSES: tuple[tuple[type[CopilotError], int], ...] = (
    (InvalidRequestError, HTTP_422_UNPROCESSABLE_ENTITY),
    # a valid request the user's state cannot serve yet (the message says how to set it)
    (LLMNotConfiguredError, HTTP_409_CONFLICT),
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
    # a drill's fault that could not be sent or did not show (the lab was restored)
    (DrillNotStartedError, HTTP_502_BAD_GATEWAY),
    (DrillStepError, HTTP_502_BAD_GATEWAY),
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
    return Response(
        {"detail": exc.message, "code": error_code(exc), **_particulars(exc)},
        status_code=status,
        headers=headers,
    )


def _particulars(exc: CopilotError) -> dict[str, Any]:
    """What a program acts on besides the message: what a lab lacks for a drill, and
    whether a drill that could not start left the lab as it was."""
    if isinstance(exc, LabDoesNotFitError):
        return {"missing": list(exc.missing)}
    if isinstance(exc, DrillNotStartedError):
        return {"restored": exc.restored, "differences": list(exc.differences)}
    return {}


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
            {"detail": _validation_message(request, exc), "code": "invalid_request"},
            status_code=HTTP_422_UNPROCESSABLE_ENTITY,
        )
    code = _HTTP_CODES.get(exc.status_code, f"http_{exc.status_code}")
    return Response(
        {"detail": exc.detail, "code": code},
        status_code=exc.status_code,
        headers=exc.headers or None,
    )


#: Litestar's own errors (routing, body limits, media types), by status.
_HTTP_CODES = {
    HTTP_400_BAD_REQUEST: "bad_request",
    HTTP_401_UNAUTHORIZED: "authentication",
    HTTP_403_FORBIDDEN: "permission_denied",
    HTTP_404_NOT_FOUND: "not_found",
    405: "method_not_allowed",
    HTTP_409_CONFLICT: "conflict",
    413: "body_too_large",
    415: "unsupported_media_type",
    HTTP_422_UNPROCESSABLE_ENTITY: "invalid_request",
    HTTP_429_TOO_MANY_REQUESTS: "rate_limited",
    HTTP_500_INTERNAL_SERVER_ERROR: "internal",
    HTTP_503_SERVICE_UNAVAILABLE: "service_unavailable",
}

#: What a 500 says: nothing of the failure itself (it is in the log), but what to do.
_UNEXPECTED = (
    "The service failed unexpectedly; the incident was logged. Try again; if it fails "
    "again, tell the operator (the log has the details)."
)


def _unexpected(_: Request[Any, Any, Any], exc: Exception) -> Response[dict[str, Any]]:
    log.error("unhandled_error", error=type(exc).__name__, exc_info=exc)
    return Response(
        {"detail": _UNEXPECTED, "code": "internal"}, status_code=HTTP_500_INTERNAL_SERVER_ERROR
    )


exception_handlers: ExceptionHandlersMap = {
    CopilotError: _copilot_error,
    HTTPException: _http_error,
    Exception: _unexpected,
}
