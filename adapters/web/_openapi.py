"""OpenAPI descriptions of the error bodies and of the event stream."""

from __future__ import annotations

from dataclasses import dataclass

from litestar.openapi.datastructures import ResponseSpec

__all__ = ["ErrorBody", "errors", "sse_response_spec"]

_WHY = {
    400: "Invalid input (nothing was changed), or no LLM configured",
    401: "Missing, malformed or rejected bearer token",
    403: "Not allowed for this user",
    404: "Unknown project, session (or another user's), or agent",
    409: "Project not opened in GNS3, or a turn already running on the session",
    429: "The LLM provider asks to slow down (Retry-After)",
    501: "Not available in this deployment",
    502: "The LLM provider, GNS3 or an external agent failed",
    503: "GNS3 unreachable (Retry-After), the store unavailable, or the service starting",
}


@dataclass
class ErrorBody:
    """Every error response: a message for a person."""

    detail: str


def errors(*codes: int) -> dict[int, ResponseSpec]:
    return {
        code: ResponseSpec(ErrorBody, description=_WHY[code], generate_examples=False)
        for code in codes
    }


def sse_response_spec(description: str) -> ResponseSpec:
    return ResponseSpec(
        str, media_type="text/event-stream", description=description, generate_examples=False
    )
