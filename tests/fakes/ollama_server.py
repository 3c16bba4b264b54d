"""A scripted Ollama server (its native API): real HTTP on 127.0.0.1, replies from a script.

The same script items as :mod:`tests.fakes.openai_server`, spoken in Ollama's own
protocol, so that the real ``ollama`` client under ``langchain-ollama`` is exercised:

* ``POST /api/chat`` with ``model``, ``messages``, ``tools``, ``options``
  (``temperature``, ``num_predict``, ``num_ctx``) and ``stream``;
* streamed as newline-delimited JSON (``application/x-ndjson``): one object per text
  fragment (``{"message": {"role": "assistant", "content": ...}, "done": false}``), the
  tool calls whole in one object (Ollama never splits a call's arguments, which are a JSON
  object, not text), then a last object with ``done: true``, ``done_reason`` and the token
  counts (``prompt_eval_count``, ``eval_count``); an in-stream failure is a line
  ``{"error": "..."}``;
* errors as ``{"error": "..."}`` with the HTTP status (404 for an unknown model).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Any

from tests.fakes.openai_server import (
    Failure,
    RecordedRequest,
    Reply,
    ScriptedOpenAIServer,
    ToolCallScript,
    _send_json,
)

__all__ = ["Failure", "Reply", "ScriptedOllamaServer", "ToolCallScript"]

_CREATED_AT = "2026-01-01T00:00:00.000000Z"


def _line(data: dict[str, Any]) -> bytes:
    return (json.dumps(data) + "\n").encode()


class ScriptedOllamaServer(ScriptedOpenAIServer):
    """Ollama's native API on 127.0.0.1 with an ephemeral port; ``base_url`` is the origin.

    ``models=`` answers 404 (as Ollama does) to any other model. Ollama has no API keys.
    """

    stream_content_type = "application/x-ndjson"

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
        if method != "POST" or path != "/api/chat":
            await _send_json(writer, 404, {"error": "404 page not found"})
            return
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            await _send_json(writer, 400, {"error": "invalid JSON body"})
            return
        request = RecordedRequest(method, path, headers, body if isinstance(body, dict) else {})
        with self._lock:
            self._requests.append(request)
        try:
            await self._answer_chat(request, reader, writer)
        finally:
            request.finished.set()

    async def _answer_chat(
        self, request: RecordedRequest, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        if self.models is not None and request.model not in self.models:
            message = f'model "{request.model}" not found, try pulling it first'
            await _send_json(writer, 404, {"error": message})
            return
        item = self._next_item()
        if item is None:
            await _send_json(writer, 500, {"error": "the scripted server has no reply left"})
            return
        resolved = item(request) if callable(item) else item
        if isinstance(resolved, Failure):
            await _send_json(writer, resolved.status, {"error": resolved.message}, resolved.headers)
        elif request.body.get("stream", True):  # Ollama streams unless told not to
            await self._stream(request, resolved, reader, writer)
        else:
            await _send_json(writer, 200, self._final(request, resolved, whole=True))

    # ------------------------------------------------------------------ wire shapes
    def _stream_frames(self, request: RecordedRequest, reply: Reply) -> list[bytes]:
        model = request.model or "llama-test"
        step = max(1, reply.chunk)
        frames = [
            _line(
                {
                    "model": model,
                    "created_at": _CREATED_AT,
                    "message": {"role": "assistant", "content": reply.text[i : i + step]},
                    "done": False,
                }
            )
            for i in range(0, len(reply.text), step)
        ]
        # Ollama sends each tool call, whole, as soon as it is parsed: one line per call.
        for index, call in enumerate(reply.tool_calls):
            message = {"role": "assistant", "content": "", "tool_calls": _tool_calls([call], index)}
            frames.append(
                _line(
                    {"model": model, "created_at": _CREATED_AT, "message": message, "done": False}
                )
            )
        frames.append(_line(self._final(request, reply, whole=False)))
        return frames

    def _error_frame(self, reply: Reply) -> bytes:
        return _line({"error": reply.error_message})

    @staticmethod
    def _final(request: RecordedRequest, reply: Reply, *, whole: bool) -> dict[str, Any]:
        prompt, completion = reply.usage or (0, 0)
        message: dict[str, Any] = {"role": "assistant", "content": reply.text if whole else ""}
        if whole and reply.tool_calls:
            message["tool_calls"] = _tool_calls(reply.tool_calls)
        return {
            "model": request.model or "llama-test",
            "created_at": _CREATED_AT,
            "message": message,
            "done": True,
            "done_reason": reply.finish_reason or "stop",
            "total_duration": 1_000_000,
            "load_duration": 1_000,
            "prompt_eval_count": prompt,
            "prompt_eval_duration": 1_000,
            "eval_count": completion,
            "eval_duration": 1_000,
        }


def _tool_calls(calls: Sequence[ToolCallScript], first: int = 0) -> list[dict[str, Any]]:
    return [
        {
            "function": {
                "index": first + offset,
                "name": call.name,
                "arguments": json.loads(call.raw_arguments()),
            }
        }
        for offset, call in enumerate(calls)
    ]
