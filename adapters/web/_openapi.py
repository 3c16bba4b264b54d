"""The OpenAPI document, made to describe the service exactly.

Litestar generates the document from the routes; a few things it cannot know or
loses on the way are put right once, by :func:`exact_document`, before the document
is served (``/schema/openapi.json``, and the Swagger and ReDoc pages built on it):

* **request bodies** are described by pydantic's own JSON Schema of each body model,
  which is what validation enforces (``additionalProperties: false``, the bounds and
  patterns of optional fields, ``exclusiveMinimum``); the message's ``maxLength`` and
  the ``limit`` parameters' ``maximum`` are this deployment's (:class:`Limits`);
* **parameters** are never null on the wire: an optional parameter is described by
  its type (and its bounds);
* **errors** all have the one :class:`ErrorBody` schema, and every operation lists
  every status its guards can answer: 401 (and 502, GNS3 failing) when it needs a
  token (checked by GNS3), 422 when it has
  parameters, 400/413/415/422 when it takes a body, 503 (starting, store down) for
  every ``/v3/copilot`` operation; Litestar's generic 400 is dropped elsewhere;
* **event streams** are described event by event (OpenAPI 3.1's reading of a
  ``text/event-stream`` schema): an ``id`` (``<turn_id>:<seq>``; heartbeats have none)
  and ``data``, a JSON :data:`STREAM_EVENT` (``type`` and ``session_id``; each type's
  fields are in ``docs/sse-protocol.md``);
* operations that stream besides their declared JSON reply (the turn's, with
  ``"stream": true``) have their ``text/event-stream`` content added, and those that
  answer in another media type too (an export as Markdown) have it added;
* **turns' sessions**: the responses that start or follow a turn declare their
  ``X-Session-Id`` and ``X-Turn-Id`` headers, and the turn's response links to every
  operation on its session (OpenAPI links), so a client (or a test generator) can
  follow a new session through the API.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from litestar import Request
from litestar.openapi.datastructures import ResponseSpec
from litestar.openapi.plugins import OpenAPIRenderPlugin
from pydantic import TypeAdapter

__all__ = [
    "ERROR_SCHEMA",
    "ErrorBody",
    "ExactDocument",
    "Limits",
    "RefinedRenderPlugin",
    "errors",
    "exact_document",
    "sse_response_spec",
]

JSON = "application/json"
SSE = "text/event-stream"
ERROR_SCHEMA = "ErrorBody"
STREAM_EVENT = "StreamEvent"
_ERROR_REF = {"$ref": f"#/components/schemas/{ERROR_SCHEMA}"}

_STREAM_EVENT_SCHEMA: dict[str, Any] = {
    "title": STREAM_EVENT,
    "description": "One event of a turn. Every event has a type and the session's id; the "
    "fields of each type are described in docs/sse-protocol.md, and clients ignore types "
    "they do not know.",
    "type": "object",
    "required": ["type", "session_id"],
    "properties": {
        "type": {"type": "string", "description": "content, tool_call, done, heartbeat…"},
        "session_id": {"type": "string", "description": "The session the turn belongs to."},
    },
}


def _sse_message(event_schema: str) -> dict[str, Any]:
    """One Server-Sent Event whose data is a JSON ``event_schema``."""
    return {
        "description": "One Server-Sent Event: its id (absent on heartbeats) and its JSON data.",
        "type": "object",
        "required": ["data"],
        "properties": {
            "id": {
                "type": "string",
                "pattern": r"^\S+:[0-9]+$",
                "description": "<turn_id>:<seq>, to send back as Last-Event-ID.",
            },
            "data": {
                "type": "string",
                "contentMediaType": JSON,
                "contentSchema": {"$ref": f"#/components/schemas/{event_schema}"},
            },
            "event": {"type": "string"},
            "retry": {"type": "integer", "minimum": 0},
        },
    }


_TURN_HEADERS: dict[str, Any] = {
    "X-Session-Id": {
        "description": "The session of the turn (new or continued).",
        "required": True,
        "schema": {"type": "string"},
    },
    "X-Turn-Id": {
        "description": "The turn (the first half of every event id).",
        "required": True,
        "schema": {"type": "string"},
    },
}

_WHY = {
    400: "A body the service cannot read (empty, not JSON, nested too deeply), or a "
    "conversation too long for the model",
    401: "Missing, malformed or rejected bearer token",
    403: "Not allowed for this user (a superadmin route, above the operator's policy, or "
    "GNS3 refused the user's role the privilege)",
    404: "Unknown project, session (or another user's), or agent",
    409: "Project not opened in GNS3, a turn already running on the session, or no LLM "
    "configured yet (the message says how)",
    413: "A body larger than 4 MiB",
    415: "A body not declared as 'Content-Type: application/json'",
    422: "A value that was read but is refused (missing, unknown, mistyped or out of range); "
    "nothing was changed",
    429: "The LLM provider asks to slow down (Retry-After)",
    501: "Not available in this deployment",
    502: "GNS3 (which checks the token), the LLM provider or an external agent failed, or "
    "a drill's fault could not be put in the lab",
    503: "GNS3 unreachable (Retry-After), the store unavailable, or the service starting",
}

_BODY_ERRORS = (400, 413, 415, 422)


@dataclass(frozen=True, slots=True)
class Limits:
    """This deployment's bounds, which the document states: the longest message and the
    largest page (the chat service's settings)."""

    message_chars: int
    page: int


@dataclass
class ErrorBody:
    """Every error response: a message for a person (what happened, what to do) and a
    stable code for a program (``llm_not_configured``, ``invalid_request``, ``internal``…).
    A drill's errors add what a program acts on: ``missing`` (what the lab lacks, 409
    ``lab_does_not_fit``), ``restored`` and ``differences`` (502 ``drill_not_started``);
    a lab plan's, ``problems`` (each ``field`` and ``message``, 422 ``invalid_plan``)."""

    detail: str
    code: str
    missing: list[str] | None = None
    restored: bool | None = None
    differences: list[str] | None = None
    problems: list[dict[str, str]] | None = None


def errors(*codes: int) -> dict[int, ResponseSpec]:
    """Error responses an operation declares itself (its guards' are added for it)."""
    return {
        code: ResponseSpec(ErrorBody, description=_WHY[code], generate_examples=False)
        for code in codes
    }


def sse_response_spec(description: str) -> ResponseSpec:
    return ResponseSpec(
        str, media_type="text/event-stream", description=description, generate_examples=False
    )


def _schema_of(kind: Any, components: dict[str, Any]) -> dict[str, Any]:
    """``kind``'s JSON Schema (pydantic's), its definitions moved into ``components``."""
    schema = TypeAdapter(kind).json_schema(
        ref_template="#/components/schemas/{model}", mode="validation"
    )
    components.update(schema.pop("$defs", {}))
    return schema


def _without_null(schema: dict[str, Any]) -> dict[str, Any]:
    """A parameter's schema without its ``null`` alternative (absent is how a client
    sends nothing), with integral bounds of integers written as integers."""
    for key in ("oneOf", "anyOf"):
        alternatives = schema.get(key)
        if not isinstance(alternatives, list):
            continue
        kept = [alt for alt in alternatives if alt != {"type": "null"}]
        if len(kept) == 1 and len(kept) < len(alternatives):
            rest = {k: v for k, v in schema.items() if k != key}
            schema = {**kept[0], **rest}
    if schema.get("type") == "integer":
        for bound in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
            value = schema.get(bound)
            if isinstance(value, float) and value.is_integer():
                schema[bound] = int(value)
    return schema


def _error_response(code: int) -> dict[str, Any]:
    return {"description": _WHY[code], "content": {JSON: {"schema": dict(_ERROR_REF)}}}


def _refine_operation(path: str, operation: dict[str, Any], api_prefix: str) -> None:
    for parameter in operation.get("parameters", []):
        if isinstance(parameter.get("schema"), dict):
            parameter["schema"] = _without_null(parameter["schema"])
    body = operation.get("requestBody")
    if isinstance(body, dict):
        body["required"] = True
    responses: dict[str, Any] = operation.setdefault("responses", {})
    for status in [s for s in responses if s.isdigit() and int(s) >= 400]:
        schema = responses[status].get("content", {}).get(JSON, {}).get("schema")
        if isinstance(schema, dict) and "$ref" in schema:
            continue  # declared by the route (ErrorBody, or its own shape)
        if status == "400" and body is None:
            del responses[status]  # Litestar's generic validation error: a 422 here
        else:
            responses[status] = _error_response(int(status))
    wanted: set[int] = set()
    if path.startswith(api_prefix):
        wanted.add(503)
        if operation.get("security") != []:
            wanted.update((401, 502))  # the token is checked by GNS3
    if operation.get("parameters"):
        wanted.add(422)
    if body is not None:
        wanted.update(_BODY_ERRORS)
    for code in sorted(wanted):
        responses.setdefault(str(code), _error_response(code))


def _link_turn_to_session(paths: Mapping[str, Any], turn_operations: Iterable[str]) -> None:
    """Turn responses: their headers, and links to every operation on their session."""
    operations = [
        (path, operation)
        for path, item in paths.items()
        for operation in item.values()
        if isinstance(operation, dict) and "operationId" in operation
    ]
    targets = {  # operations that need nothing but the project and the session
        operation["operationId"]: path
        for path, operation in operations
        if "{session_id}" in path
        and set(re.findall(r"{(\w+)}", path)) == {"project_id", "session_id"}
    }
    for _, operation in operations:
        if operation["operationId"] not in turn_operations:
            continue
        success = operation["responses"].get("200")
        if not isinstance(success, dict):
            continue
        success["headers"] = copy.deepcopy(_TURN_HEADERS)
        success["links"] = {
            target: {
                "operationId": target,
                "parameters": {
                    "project_id": "$request.path.project_id",
                    "session_id": "$response.header.X-Session-Id",
                },
            }
            for target in sorted(targets)
            if target != operation["operationId"]
        }


def exact_document(
    document: Mapping[str, Any],
    *,
    api_prefix: str,
    bodies: Iterable[type[Any]] = (),
    event_streams: Iterable[str] = (),
    turn_operations: Iterable[str] = (),
    limits: Limits | None = None,
    alternative_media: Mapping[str, Mapping[str, dict[str, Any]]] | None = None,
    event_schemas: Mapping[str, tuple[str, dict[str, Any]]] | None = None,
) -> dict[str, Any]:
    """A copy of Litestar's ``document``, refined as the module docstring says.

    ``event_schemas`` names, per operation, the schema of its events' data when they are
    not turn events (``StreamEvent``): ``{operationId: (name, schema)}``."""
    alternatives = alternative_media or {}
    other_events = dict(event_schemas or {})
    refined = copy.deepcopy(dict(document))
    components: dict[str, Any] = refined.setdefault("components", {}).setdefault("schemas", {})
    components[STREAM_EVENT] = copy.deepcopy(_STREAM_EVENT_SCHEMA)
    for name, schema in other_events.values():
        components[name] = copy.deepcopy(schema)
    for body in bodies:
        components[body.__name__] = _schema_of(body, components)
    chat = components.get("ChatRequest", {}).get("properties", {}).get("message")
    if limits is not None and isinstance(chat, dict):
        chat["maxLength"] = min(
            int(chat.get("maxLength", limits.message_chars)), limits.message_chars
        )
    components[ERROR_SCHEMA] = _schema_of(ErrorBody, components)
    streaming = set(event_streams)
    for path, item in refined.get("paths", {}).items():
        for operation in item.values():
            if not isinstance(operation, dict) or "responses" not in operation:
                continue
            _refine_operation(path, operation, api_prefix)
            if limits is not None:
                for parameter in operation.get("parameters", []):
                    if parameter.get("in") == "query" and parameter.get("name") == "limit":
                        parameter["schema"]["maximum"] = limits.page
            if operation.get("operationId") in streaming:
                success = operation["responses"].setdefault("200", {"description": "OK"})
                success.setdefault("content", {})[SSE] = {}
            for media, schema in alternatives.get(str(operation.get("operationId")), {}).items():
                success = operation["responses"].setdefault("200", {"description": "OK"})
                success.setdefault("content", {})[media] = {"schema": copy.deepcopy(schema)}
            events = other_events.get(str(operation.get("operationId")), (STREAM_EVENT, {}))[0]
            for response in operation["responses"].values():
                if SSE in response.get("content", {}):
                    response["content"][SSE]["schema"] = _sse_message(events)
    _link_turn_to_session(refined.get("paths", {}), set(turn_operations))
    return refined


class ExactDocument:
    """The refined document, computed once the deployment's limits are known."""

    def __init__(
        self,
        *,
        api_prefix: str,
        bodies: Sequence[type[Any]],
        event_streams: Sequence[str] = (),
        turn_operations: Sequence[str] = (),
        limits: Callable[[Request[Any, Any, Any]], Limits | None],
        alternative_media: Mapping[str, Mapping[str, dict[str, Any]]] | None = None,
        event_schemas: Mapping[str, tuple[str, dict[str, Any]]] | None = None,
    ) -> None:
        self._api_prefix = api_prefix
        self._bodies = tuple(bodies)
        self._streams = tuple(event_streams)
        self._turns = tuple(turn_operations)
        self._limits = limits
        self._alternatives = dict(alternative_media or {})
        self._events = dict(event_schemas or {})
        self._cached: dict[str, Any] | None = None

    def __call__(
        self, request: Request[Any, Any, Any], document: Mapping[str, Any]
    ) -> dict[str, Any]:
        if self._cached is not None:
            return self._cached
        limits = self._limits(request)
        refined = exact_document(
            document,
            api_prefix=self._api_prefix,
            bodies=self._bodies,
            event_streams=self._streams,
            turn_operations=self._turns,
            limits=limits,
            alternative_media=self._alternatives,
            event_schemas=self._events,
        )
        if limits is not None:  # the deployment is installed: its limits are final
            self._cached = refined
        return refined


class RefinedRenderPlugin(OpenAPIRenderPlugin):
    """Serves another render plugin's page (or file) from the refined document."""

    def __init__(self, inner: OpenAPIRenderPlugin, refine: ExactDocument) -> None:
        super().__init__(path=inner.paths, media_type=inner.media_type)
        self._inner = inner
        self._refine = refine

    def render(self, request: Request[Any, Any, Any], openapi_schema: dict[str, Any]) -> bytes:
        return self._inner.render(request, self._refine(request, openapi_schema))
