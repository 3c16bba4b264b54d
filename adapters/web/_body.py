"""Reading a JSON request body: declared as JSON, valid JSON, and of bounded depth.

:func:`json_body` is the guard of every route that takes a body. It runs after the
bearer token is checked and before the body is validated against its model, so that
a body not declared as JSON gets a 415, a body the service cannot read a 400, and a
body it can read but does not accept a 422 from validation (the body models are
strict: a JSON string is never taken for a bool or a number).
"""

from __future__ import annotations

from typing import Any, Final, cast

from litestar import Request
from litestar.connection import ASGIConnection
from litestar.exceptions import ClientException, HTTPException, SerializationException
from litestar.handlers import BaseRouteHandler
from litestar.status_codes import HTTP_415_UNSUPPORTED_MEDIA_TYPE

__all__ = ["MAX_BODY_BYTES", "MAX_JSON_DEPTH", "json_body"]

#: Arrays and objects nested deeper than this are refused (the bodies of this API are
#: flat objects; the bound only stops a parser from being driven into deep recursion).
MAX_JSON_DEPTH: Final = 32

#: The largest request body read; a larger one is answered 413. Any body that breaks a
#: field's length bound only by a little (the longest field, Markdown to render, is
#: 200 000 characters: 2.4 MB at 12 bytes per escaped character) is still read, so
#: that it gets the 422 that names the field.
MAX_BODY_BYTES: Final = 4 * 1024 * 1024

_NOT_JSON = "Send the body as JSON, with 'Content-Type: application/json'"

_TOO_DEEP = (
    f"The JSON body is nested too deeply (at most {MAX_JSON_DEPTH} levels of arrays and objects)."
)


def _depth_exceeds(value: Any, limit: int) -> bool:
    """Whether arrays/objects in ``value`` nest deeper than ``limit`` (iterative)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


async def json_body(connection: ASGIConnection[Any, Any, Any, Any], _: BaseRouteHandler) -> None:
    """Guard: the request carries a JSON document (415 when it is not declared as
    such, 400 when it cannot be read).

    The decoded document is kept on the request, so validation does not parse it again.
    """
    request = cast("Request[Any, Any, Any]", connection)
    _require_json_media_type(request.headers.get("content-type"))
    body = await request.body()
    if not body.strip():
        raise ClientException("The request body is empty: send a JSON object.")
    try:
        document = await request.json()
    except RecursionError:
        raise ClientException(_TOO_DEEP) from None
    except SerializationException as exc:
        raise ClientException(f"The request body is not valid JSON: {exc}") from None
    if _depth_exceeds(document, MAX_JSON_DEPTH):
        raise ClientException(_TOO_DEEP)


def _require_json_media_type(header: str | None) -> None:
    """``application/json``, optionally with ``charset=utf-8`` (JSON is UTF-8)."""
    if not header:
        raise _unsupported(f"{_NOT_JSON}; the request has no Content-Type.")
    media_type, *parameters = (part.strip() for part in header.split(";"))
    if media_type.lower() != "application/json":
        raise _unsupported(f"{_NOT_JSON}, not {media_type!r}.")
    for parameter in parameters:
        name, _, value = parameter.partition("=")
        if name.strip().lower() == "charset" and value.strip().strip('"').lower() != "utf-8":
            raise _unsupported(f"{_NOT_JSON}; JSON is UTF-8, not {value.strip()!r}.")


def _unsupported(detail: str) -> HTTPException:
    return HTTPException(status_code=HTTP_415_UNSUPPORTED_MEDIA_TYPE, detail=detail)
