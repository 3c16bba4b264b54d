"""A lab build streamed (``POST …/labs/build`` with ``Accept: text/event-stream``).

The build starts; a refusal before it runs (403, 404, 409, 422: the use case raises before
the gate says anything) is still the request's own status. Once the build says its first
word, the answer is a stream of Server-Sent Events, each one ``data:`` line of JSON:

* ``{"type": "tool_progress", "text": "…", "device": null}``: what the build says as it
  goes (each stage, each node and device, the checks' rounds), as the chat's
  ``tool_progress`` carries it;
* ``{"type": "lab_build", "build": {…}}``: the answer, the plain request's body, last;
* ``{"type": "error", "code": "…", "detail": "…"}``: instead, when the build failed after
  it started (the service's error, not a failing check).

A client that goes away does not stop the build: it runs to its end and is recorded in the
session, as a chat turn is.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import replace
from typing import Any

import structlog
from litestar.response import ServerSentEvent, ServerSentEventMessage

from adapters.web._sse import SSE_HEADERS
from copilot_core.errors import CopilotError, error_code
from copilot_core.labs import LabBuildOutcome, LabBuildRequest, LabBuilds
from copilot_core.ports import ToolProgress

__all__ = ["LAB_BUILD_EVENT_SCHEMA", "build_streamed", "wants_stream"]

log = structlog.get_logger("adapters.web")

#: The schema of one event's data (the OpenAPI document's ``LabBuildEvent``).
LAB_BUILD_EVENT_SCHEMA: dict[str, Any] = {
    "description": "One event of a streamed lab build: its progress, then its answer "
    "(lab_build) or the service's error.",
    "type": "object",
    "required": ["type"],
    "properties": {
        "type": {"type": "string", "enum": ["tool_progress", "lab_build", "error"]},
        "text": {"type": "string", "description": "tool_progress: what the build says"},
        "device": {"type": ["string", "null"]},
        "build": {"type": "object", "description": "lab_build: the LabBuildReply"},
        "code": {"type": "string"},
        "detail": {"type": "string"},
    },
}

#: Builds whose client went away: kept referenced until they end.
_RUNNING: set[asyncio.Task[LabBuildOutcome]] = set()


def wants_stream(accept: str | None) -> bool:
    """Whether the client asked for the build as a stream (``Accept: text/event-stream``)."""
    return accept is not None and "text/event-stream" in accept.lower()


def _message(data: Mapping[str, Any]) -> ServerSentEventMessage:
    return ServerSentEventMessage(data=json.dumps(data, ensure_ascii=False, separators=(",", ":")))


def _progress(item: ToolProgress) -> ServerSentEventMessage:
    return _message({"type": "tool_progress", "text": item.text, "device": item.device})


async def build_streamed(
    builds: LabBuilds,
    request: LabBuildRequest,
    reply: Callable[[LabBuildOutcome], Mapping[str, Any]],
) -> LabBuildOutcome | ServerSentEvent:
    """The build started with its progress queued: the outcome when it ended before it
    said anything (or the refusal it raised), else the stream (see the module)."""
    queue: asyncio.Queue[ToolProgress] = asyncio.Queue()
    task = asyncio.create_task(builds(replace(request, progress=queue.put_nowait)))
    _RUNNING.add(task)
    task.add_done_callback(_RUNNING.discard)
    first = asyncio.ensure_future(queue.get())
    await asyncio.wait({task, first}, return_when=asyncio.FIRST_COMPLETED)
    if not first.done():
        first.cancel()
        return task.result()  # ended (or refused: raised) before any progress
    said = first.result()

    async def events() -> AsyncIterator[ServerSentEventMessage]:
        yield _progress(said)
        while not task.done():
            getter = asyncio.ensure_future(queue.get())
            await asyncio.wait({task, getter}, return_when=asyncio.FIRST_COMPLETED)
            if getter.done():
                yield _progress(getter.result())
            else:
                getter.cancel()
        while not queue.empty():
            yield _progress(queue.get_nowait())
        try:
            outcome = task.result()
        except CopilotError as exc:
            yield _message({"type": "error", "code": error_code(exc), "detail": exc.message})
            return
        except Exception:
            log.exception("lab_build_failed")
            detail = "The build failed with an internal error; see the server log."
            yield _message({"type": "error", "code": "internal", "detail": detail})
            return
        yield _message({"type": "lab_build", "build": dict(reply(outcome))})

    return ServerSentEvent(events(), headers=dict(SSE_HEADERS))
