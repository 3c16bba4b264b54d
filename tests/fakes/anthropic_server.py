"""A scripted Anthropic Messages API server: real HTTP on 127.0.0.1, replies from a script.

The same script items as :mod:`tests.fakes.openai_server` (:class:`Reply`,
:class:`Failure`, callables), spoken in Anthropic's wire protocol, so that the real
``anthropic`` SDK under ``langchain-anthropic`` is exercised:

* ``POST /v1/messages`` with the key in ``x-api-key`` (or ``Authorization: Bearer``, as
  the SDK 2.x sends it) and an ``anthropic-version`` header;
* streamed (``"stream": true``) as server-sent events with an ``event:`` name each:
  ``message_start``, ``content_block_start`` / ``content_block_delta`` (``text_delta``,
  or ``input_json_delta`` argument fragments of a ``tool_use`` block) /
  ``content_block_stop``, ``ping``, ``message_delta`` (``stop_reason`` and the usage),
  ``message_stop``; an in-stream failure is an ``error`` event;
* errors as ``{"type": "error", "error": {"type": "authentication_error", ...}}`` with
  the matching HTTP status.

``Reply.finish_reason`` uses OpenAI's words (``stop``, ``tool_calls``, ``length``) and is
sent as Anthropic's ``end_turn``, ``tool_use``, ``max_tokens``.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from tests.fakes.openai_server import (
    Failure,
    RecordedRequest,
    Reply,
    ScriptedOpenAIServer,
    ToolCallScript,
    _send_json,
)

__all__ = ["Failure", "Reply", "ScriptedAnthropicServer", "ToolCallScript"]

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}
_STOP_REASONS = {"stop": "end_turn", "tool_calls": "tool_use", "length": "max_tokens"}


def _error(status: int, message: str) -> dict[str, Any]:
    kind = _ERROR_TYPES.get(status, "api_error")
    return {"type": "error", "error": {"type": kind, "message": message}}


def _api_key(request: RecordedRequest) -> str | None:
    """The key a request carries: ``x-api-key``, or a bearer token (newer SDKs send that)."""
    return request.headers.get("x-api-key") or request.bearer_token


def _event(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()


def _tool_id(call: ToolCallScript, index: int) -> str:
    return call.id or f"toolu_{index:02d}"


def _stop_reason(reply: Reply) -> str:
    reason = reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")
    return _STOP_REASONS.get(reason, reason)


class ScriptedAnthropicServer(ScriptedOpenAIServer):
    """An Anthropic Messages API on 127.0.0.1 with an ephemeral port.

    ``base_url`` is the origin (the SDK adds ``/v1/messages``). ``api_key=`` answers 401
    to any other ``x-api-key``; ``models=`` answers 404 to any other model.
    """

    @property
    def base_url(self) -> str:
        return self.origin

    async def _route(
        self,
        method: str,
        path: str,
        headers: dict[str, str],
        raw: bytes,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> None:
        if method != "POST" or path != "/v1/messages":
            await _send_json(writer, 404, _error(404, f"No route for {method} {path}"))
            return
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            await _send_json(writer, 400, _error(400, "The body is not valid JSON."))
            return
        request = RecordedRequest(method, path, headers, body if isinstance(body, dict) else {})
        with self._lock:
            self._requests.append(request)
        try:
            await self._answer_messages(request, reader, writer)
        finally:
            request.finished.set()

    async def _answer_messages(
        self, request: RecordedRequest, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        if self.api_key is not None and _api_key(request) != self.api_key:
            await _send_json(writer, 401, _error(401, "invalid x-api-key"))
            return
        if self.models is not None and request.model not in self.models:
            await _send_json(writer, 404, _error(404, f"model: {request.model}"))
            return
        item = self._next_item()
        if item is None:
            await _send_json(writer, 500, _error(500, "the scripted server has no reply left"))
            return
        resolved = item(request) if callable(item) else item
        if isinstance(resolved, Failure):
            body = _error(resolved.status, resolved.message)
            await _send_json(writer, resolved.status, body, resolved.headers)
        elif request.stream:
            await self._stream(request, resolved, reader, writer)
        else:
            await _send_json(writer, 200, self._message(request, resolved))

    # ------------------------------------------------------------------ wire shapes
    def _stream_frames(self, request: RecordedRequest, reply: Reply) -> list[bytes]:
        prompt, completion = reply.usage or (0, 0)
        message = self._message(request, Reply(usage=(prompt, 1)))
        message.update(content=[], stop_reason=None)
        frames = [_event("message_start", {"type": "message_start", "message": message})]
        block = 0
        if reply.text:
            frames.append(
                _event(
                    "content_block_start",
                    {
                        "type": "content_block_start",
                        "index": block,
                        "content_block": {"type": "text", "text": ""},
                    },
                )
            )
            frames.append(_event("ping", {"type": "ping"}))
            step = max(1, reply.chunk)
            frames.extend(
                _event(
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": block,
                        "delta": {"type": "text_delta", "text": reply.text[i : i + step]},
                    },
                )
                for i in range(0, len(reply.text), step)
            )
            frames.append(_event("content_block_stop", {"type": "content_block_stop", "index": 0}))
            block += 1
        for position, call in enumerate(reply.tool_calls):
            start = {
                "type": "tool_use",
                "id": _tool_id(call, position),
                "name": call.name,
                "input": {},
            }
            frames.append(
                _event(
                    "content_block_start",
                    {"type": "content_block_start", "index": block, "content_block": start},
                )
            )
            raw = call.raw_arguments()
            size = max(1, call.fragment)
            frames.extend(
                _event(
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": block,
                        "delta": {"type": "input_json_delta", "partial_json": raw[i : i + size]},
                    },
                )
                for i in range(0, len(raw), size)
            )
            frames.append(
                _event("content_block_stop", {"type": "content_block_stop", "index": block})
            )
            block += 1
        frames.append(
            _event(
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": _stop_reason(reply), "stop_sequence": None},
                    "usage": {"input_tokens": prompt, "output_tokens": completion},
                },
            )
        )
        frames.append(_event("message_stop", {"type": "message_stop"}))
        return frames

    def _error_frame(self, reply: Reply) -> bytes:
        return _event("error", _error(529, reply.error_message))

    @staticmethod
    def _message(request: RecordedRequest, reply: Reply) -> dict[str, Any]:
        content: list[dict[str, Any]] = []
        if reply.text:
            content.append({"type": "text", "text": reply.text})
        for position, call in enumerate(reply.tool_calls):
            arguments = json.loads(call.raw_arguments() or "{}")
            content.append(
                {
                    "type": "tool_use",
                    "id": _tool_id(call, position),
                    "name": call.name,
                    "input": arguments,
                }
            )
        prompt, completion = reply.usage or (0, 0)
        return {
            "id": "msg_scripted",
            "type": "message",
            "role": "assistant",
            "model": request.model or "claude-test",
            "content": content,
            "stop_reason": _stop_reason(reply),
            "stop_sequence": None,
            "usage": {"input_tokens": prompt, "output_tokens": completion},
        }
