"""A recording proxy in front of an OpenAI-compatible model server, for benchmarks.

:class:`RecordingProxy` listens on 127.0.0.1 (a free port, its own event loop in a daemon
thread, so synchronous code can use it) and forwards every request unchanged to the
upstream server, streaming the answer back as it arrives. Of every ``POST
…/chat/completions`` it keeps a :class:`ProxiedCall`: the request body, when it came, when
the first token went back (text or a tool call's fragment), what the model said (text,
tool calls, finish reason) and what the server counted (``usage``, with llama.cpp's
``prompt_tokens_details.cached_tokens``, and its ``timings``: ``cache_n``, ``prompt_n``,
``prompt_ms``…). The product never sees the cached-token count; the model server's own
log would tell it per request, and this is that log, in JSON.

The proxy must not change what it measures: when the client hangs up (EOF on its
connection, even while the server is still silent reading the prompt), the upstream
request is cancelled at once, which closes its connection, so the model server sees the
hang-up as it would without the proxy (``ProxiedCall.hung_up``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

import httpx

__all__ = ["ProxiedCall", "RecordingProxy"]

_HOP_BY_HOP = {
    "connection",
    "keep-alive",
    "transfer-encoding",
    "content-length",
    "host",
    "accept-encoding",
    "proxy-connection",
    "te",
    "trailer",
    "upgrade",
}


@dataclass
class ProxiedCall:
    """One chat request as it went through the proxy (monotonic times)."""

    index: int
    body: dict[str, Any]
    received_at: float
    status: int | None = None
    first_token_at: float | None = None
    finished_at: float | None = None
    hung_up: bool = False
    content: str = ""
    tool_calls: dict[int, dict[str, str]] = field(default_factory=dict)
    finish_reason: str | None = None
    usage: dict[str, Any] | None = None
    timings: dict[str, Any] | None = None
    error: str | None = None

    @property
    def is_title(self) -> bool:
        """The copilot's separate title call (no tools, the title instruction)."""
        messages = self.body.get("messages") or []
        first = messages[0] if messages else {}
        text = first.get("content") if isinstance(first, dict) else ""
        return not self.body.get("tools") and str(text).startswith("Write a title")

    @property
    def prompt_tokens(self) -> int:
        return int((self.usage or {}).get("prompt_tokens") or 0)

    @property
    def completion_tokens(self) -> int:
        return int((self.usage or {}).get("completion_tokens") or 0)

    @property
    def cached_tokens(self) -> int:
        """Prompt tokens the server took from its cache (usage, else ``timings.cache_n``)."""
        details = (self.usage or {}).get("prompt_tokens_details") or {}
        if "cached_tokens" in details:
            return int(details["cached_tokens"] or 0)
        return int((self.timings or {}).get("cache_n") or 0)

    @property
    def first_token_s(self) -> float | None:
        if self.first_token_at is None:
            return None
        return self.first_token_at - self.received_at

    @property
    def total_s(self) -> float | None:
        return None if self.finished_at is None else self.finished_at - self.received_at

    def to_json(self, origin: float) -> dict[str, Any]:
        """Everything, times in seconds since ``origin`` (the request log's line)."""

        def at(value: float | None) -> float | None:
            return None if value is None else round(value - origin, 3)

        return {
            "index": self.index,
            "title_call": self.is_title,
            "received_s": at(self.received_at),
            "first_token_s": None if self.first_token_s is None else round(self.first_token_s, 3),
            "total_s": None if self.total_s is None else round(self.total_s, 3),
            "status": self.status,
            "hung_up": self.hung_up,
            "prompt_tokens": self.prompt_tokens,
            "cached_tokens": self.cached_tokens,
            "completion_tokens": self.completion_tokens,
            "timings": self.timings,
            "finish_reason": self.finish_reason,
            "content": self.content,
            "tool_calls": [self.tool_calls[i] for i in sorted(self.tool_calls)],
            "error": self.error,
            "request": self.body,
        }

    # ------------------------------------------------------------------ reading the reply
    def read_event(self, payload: dict[str, Any], now: float) -> None:
        """One streamed chunk (``data:`` JSON) of the reply."""
        if "error" in payload:
            self.error = json.dumps(payload["error"])[:2000]
        if isinstance(payload.get("usage"), dict):
            self.usage = payload["usage"]
        if isinstance(payload.get("timings"), dict):
            self.timings = payload["timings"]
        for choice in payload.get("choices") or []:
            delta = choice.get("delta") or choice.get("message") or {}
            text = delta.get("content")
            if isinstance(text, str) and text:
                self.content += text
                self.first_token_at = self.first_token_at or now
            for position, fragment in enumerate(delta.get("tool_calls") or []):
                self.first_token_at = self.first_token_at or now
                index = int(fragment.get("index", position) or 0)
                call = self.tool_calls.setdefault(index, {"name": "", "arguments": ""})
                function = fragment.get("function") or {}
                call["name"] += function.get("name") or ""
                arguments = function.get("arguments") or ""
                call["arguments"] += (
                    arguments if isinstance(arguments, str) else json.dumps(arguments)
                )
            if choice.get("finish_reason"):
                self.finish_reason = str(choice["finish_reason"])


class RecordingProxy:
    """See the module doc. ``upstream`` is the server's origin (``http://host:port``)."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.rstrip("/")
        self.origin_time = time.monotonic()
        self._lock = threading.Lock()
        self._calls: list[ProxiedCall] = []
        self._port: int | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._stopping: asyncio.Event | None = None
        self._error: BaseException | None = None

    @property
    def origin(self) -> str:
        if self._port is None:
            raise RuntimeError("the proxy is not started")
        return f"http://127.0.0.1:{self._port}"

    @property
    def base_url(self) -> str:
        return f"{self.origin}/v1"

    @property
    def calls(self) -> list[ProxiedCall]:
        with self._lock:
            return list(self._calls)

    def calls_since(self, start: int) -> list[ProxiedCall]:
        """The calls recorded after the first ``start`` ones."""
        with self._lock:
            return list(self._calls[start:])

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> RecordingProxy:
        self._thread = threading.Thread(target=self._run, name="model-proxy", daemon=True)
        self._thread.start()
        if not self._ready.wait(10) or self._error is not None:
            raise RuntimeError(f"the recording proxy did not start: {self._error!r}")
        return self

    def stop(self) -> None:
        loop, thread, stopping = self._loop, self._thread, self._stopping
        if loop is not None and stopping is not None:
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(stopping.set)
        if thread is not None:
            thread.join(15)
        self._thread = self._loop = None

    def __enter__(self) -> RecordingProxy:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            loop.run_until_complete(self._serve())
        except BaseException as exc:  # reported to start()
            self._error = exc
            self._ready.set()
        finally:
            loop.close()

    async def _serve(self) -> None:
        self._stopping = asyncio.Event()
        handlers: set[asyncio.Task[None]] = set()
        # No timeout upstream: the client's own bounds decide, and its hang-up ends the call.
        async with httpx.AsyncClient(timeout=httpx.Timeout(None, connect=10.0)) as client:

            async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
                task = asyncio.current_task()
                assert task is not None
                handlers.add(task)
                try:
                    await self._handle(client, reader, writer)
                except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
                    pass
                except asyncio.CancelledError:  # the proxy stops: a connection still open
                    pass
                finally:
                    handlers.discard(task)
                    writer.close()
                    with contextlib.suppress(ConnectionError, OSError):
                        await writer.wait_closed()

            server = await asyncio.start_server(handle, "127.0.0.1", 0, limit=2**24)
            self._port = server.sockets[0].getsockname()[1]
            self._ready.set()
            await self._stopping.wait()
            server.close()
            for task in list(handlers):
                task.cancel()
            if handlers:
                await asyncio.wait(handlers, timeout=5)

    async def _handle(
        self, client: httpx.AsyncClient, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        method, target, _ = lines[0].split(" ", 2)
        headers: dict[str, str] = {}
        for line in lines[1:]:
            if ":" in line:
                key, value = line.split(":", 1)
                headers[key.strip().lower()] = value.strip()
        length = int(headers.get("content-length") or 0)
        raw = await reader.readexactly(length) if length else b""
        call: ProxiedCall | None = None
        if method == "POST" and target.split("?", 1)[0].endswith("/chat/completions"):
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                body = {}
            with self._lock:
                call = ProxiedCall(len(self._calls), body, time.monotonic())
                self._calls.append(call)
        forwarded = {k: v for k, v in headers.items() if k not in _HOP_BY_HOP}
        forwarded["accept-encoding"] = "identity"  # the log reads the bytes as they are
        request = client.build_request(
            method, self.upstream + target, headers=forwarded, content=raw
        )
        forward = asyncio.ensure_future(self._forward(client, request, writer, call))
        # The client sends nothing more on this connection: EOF means it hung up.
        hangup = asyncio.ensure_future(reader.read(1))
        try:
            await asyncio.wait({forward, hangup}, return_when=asyncio.FIRST_COMPLETED)
            if not forward.done():
                if call is not None:
                    call.hung_up = True
                forward.cancel()
            with contextlib.suppress(asyncio.CancelledError, httpx.HTTPError, ConnectionError):
                await forward
        finally:
            hangup.cancel()
            forward.cancel()
            if call is not None and call.finished_at is None:
                call.finished_at = time.monotonic()

    async def _forward(
        self,
        client: httpx.AsyncClient,
        request: httpx.Request,
        writer: asyncio.StreamWriter,
        call: ProxiedCall | None,
    ) -> None:
        try:
            response = await client.send(request, stream=True)
        except httpx.HTTPError as exc:
            if call is not None:
                call.status, call.error = 502, f"upstream: {exc!r}"
            message = json.dumps({"error": {"message": f"proxy: upstream failed: {exc!r}"}})
            data = message.encode()
            writer.write(
                b"HTTP/1.1 502 Bad Gateway\r\nContent-Type: application/json\r\n"
                b"Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(data), data)
            )
            await writer.drain()
            return
        try:
            if call is not None:
                call.status = response.status_code
            head = [f"HTTP/1.1 {response.status_code} {response.reason_phrase}"]
            head += [f"{k}: {v}" for k, v in response.headers.items() if k not in _HOP_BY_HOP]
            head += ["Transfer-Encoding: chunked", "Connection: close", "", ""]
            writer.write("\r\n".join(head).encode("latin-1"))
            await writer.drain()
            pending = b""
            async for chunk in response.aiter_raw():
                if call is not None:
                    pending = self._read(call, pending + chunk, response.status_code)
                writer.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                await writer.drain()
            if call is not None:
                if pending.strip():
                    self._read_rest(call, pending, response.status_code)
                call.finished_at = time.monotonic()  # before the client can see the end
            writer.write(b"0\r\n\r\n")
            await writer.drain()
        finally:
            await response.aclose()

    @staticmethod
    def _read(call: ProxiedCall, buffer: bytes, status: int) -> bytes:
        """Read the complete SSE events of ``buffer``; return what is left of it."""
        if status != 200:
            return buffer
        now = time.monotonic()
        *events, rest = buffer.replace(b"\r\n", b"\n").split(b"\n\n")
        for event in events:
            for line in event.split(b"\n"):
                if not line.startswith(b"data:"):
                    continue
                data = line[5:].strip()
                if data == b"[DONE]" or not data:
                    continue
                with contextlib.suppress(ValueError):
                    payload = json.loads(data)
                    if isinstance(payload, dict):
                        call.read_event(payload, now)
        return rest

    @staticmethod
    def _read_rest(call: ProxiedCall, rest: bytes, status: int) -> None:
        """A body that was not an event stream (an error, a non-streamed reply), or the
        last event of a stream that did not end with a blank line."""
        if status == 200 and rest.lstrip().startswith(b"data:"):
            RecordingProxy._read(call, rest + b"\n\n", status)
            return
        try:
            payload = json.loads(rest)
        except ValueError:
            if status != 200:
                call.error = rest.decode(errors="replace")[:2000]
            return
        if not isinstance(payload, dict):
            return
        if status != 200:
            call.error = json.dumps(payload)[:2000]
            return
        call.read_event(payload, time.monotonic())
