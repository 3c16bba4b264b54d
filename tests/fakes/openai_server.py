"""A scripted OpenAI-compatible chat server: real HTTP on 127.0.0.1, replies from a script.

It speaks the part of OpenAI's wire protocol that chat clients use
(``POST /v1/chat/completions`` with ``stream`` true or false, ``GET /v1/models``),
emitting the exact chunk shapes of the real service: a role delta, content
deltas, ``tool_calls`` deltas (index, id, function name, argument fragments),
the finish reason, and the usage chunk when ``stream_options.include_usage`` is
set, then ``data: [DONE]``. Streams use chunked transfer encoding, so a dropped
connection is visible to the client as an incomplete body.

Usage::

    with ScriptedOpenAIServer() as server:            # or ``async with``
        server.add(Reply(text="Hello!", usage=(12, 3)))
        server.add(Reply(tool_calls=[ToolCallScript("get_nodes", {"project": "p"})]))
        server.add(Failure.rate_limited(retry_after=2))
        server.add(lambda request: Reply(text=f"you said {request.messages[-1]['content']}"))
        client = ChatOpenAI(base_url=server.base_url, api_key="sk-test", model="gpt-test")
        ...
        assert server.requests[0].body["temperature"] == 0.2

The server runs its own event loop in a daemon thread, so it serves equally a
synchronous test, an async test, or a browser driven by a test. Everything
public is thread-safe.

Script items (consumed one per chat request, in order; ``default`` answers once
the queue is empty, otherwise the request gets a 500 that says so):

* :class:`Reply`: text and/or tool calls, usage, finish reason, chunk size, a
  per-chunk delay (slow tokens), ``drop_after`` (close the connection after
  that many chunks, mid-stream) and ``error_after`` (send an in-stream
  ``{"error": ...}`` event after that many chunks, as servers do when they fail
  mid-reply).
* :class:`Failure`: an HTTP error with OpenAI's error body and optional headers;
  constructors :meth:`Failure.unauthorized`, :meth:`Failure.model_not_found`,
  :meth:`Failure.rate_limited`, :meth:`Failure.server_error`,
  :meth:`Failure.context_length_exceeded`.
* a callable taking the :class:`RecordedRequest` and returning one of the above,
  for replies that depend on the request's messages or tools.

Independently of the script, ``api_key=`` makes every request with another
bearer token fail with 401 (as the real service does), and ``models=`` makes
every request for another model fail with 404.

Every chat request is recorded in :attr:`ScriptedOpenAIServer.requests`
(:class:`RecordedRequest`: path, headers, JSON body, and for streams how many
chunks were sent and whether the client hung up early).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

__all__ = [
    "Failure",
    "RecordedRequest",
    "Reply",
    "ScriptItem",
    "ScriptedOpenAIServer",
    "ToolCallScript",
]


# ============================================================================ script
@dataclass(frozen=True, slots=True)
class ToolCallScript:
    """One tool call of a reply; ``arguments`` as an object or verbatim JSON text
    (to script malformed arguments). ``fragment`` is the argument characters per chunk;
    ``id`` ``None`` sends ``call_<index>``, ``""`` sends no id at all."""

    name: str
    arguments: dict[str, Any] | str = field(default_factory=dict)
    id: str | None = None
    fragment: int = 5

    def raw_arguments(self) -> str:
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(self.arguments)


@dataclass(frozen=True, slots=True)
class Reply:
    """A successful completion.

    ``usage`` is ``(prompt_tokens, completion_tokens)``, sent in streams only when
    the client asks for it (``stream_options.include_usage``) and always in
    non-streamed replies. ``finish_reason`` defaults to ``tool_calls`` when there
    are tool calls, else ``stop``. ``chunk`` is the text characters per content
    chunk. ``token_delay`` sleeps before every chunk after the first. ``drop_after``
    closes the connection, without ending the body, after that many chunks;
    ``error_after`` instead sends ``data: {"error": {"message": error_message}}``
    after that many chunks and ends the stream.
    ``interleave`` sends the fragments of parallel tool calls alternately instead
    of one call after the other. ``first_token_delay`` waits after the role chunk
    (the headers and that chunk go at once) before the first token, as a server
    reading a long prompt does; meanwhile ``keepalive`` sends an SSE comment
    (``: keep-alive``) every that many seconds, as some servers do.
    ``first_chunk_delay`` instead waits after the headers and before the first chunk
    of all (the role chunk too), sending nothing (unless ``keepalive``): llama.cpp's
    ``llama-server`` answers so while it reads a long prompt.
    ``first_token_held`` and ``first_chunk_held`` make those two waits last until the
    test sets the event, not a time (a model that speaks when the test says so, however
    slow the machine). ``stall_after`` sends nothing more after that many chunks (the
    role chunk counts) until the client hangs up: a model that stops mid-answer.
    """

    text: str = ""
    tool_calls: Sequence[ToolCallScript] = ()
    usage: tuple[int, int] | None = (10, 5)
    finish_reason: str | None = None
    chunk: int = 4
    token_delay: float = 0.0
    drop_after: int | None = None
    error_after: int | None = None
    error_message: str = "The server had an error while processing your request."
    interleave: bool = False
    first_token_delay: float = 0.0
    keepalive: float | None = None
    first_chunk_delay: float = 0.0
    first_token_held: threading.Event | None = None
    first_chunk_held: threading.Event | None = None
    stall_after: int | None = None


@dataclass(frozen=True, slots=True)
class Failure:
    """An HTTP error answered instead of a completion, with OpenAI's error body."""

    status: int
    message: str
    type: str = "invalid_request_error"
    code: str | None = None
    headers: dict[str, str] = field(default_factory=dict)

    @classmethod
    def unauthorized(cls, message: str = "Incorrect API key provided.") -> Failure:
        return cls(401, message, "invalid_request_error", "invalid_api_key")

    @classmethod
    def model_not_found(cls, model: str = "the model") -> Failure:
        return cls(
            404,
            f"The model `{model}` does not exist or you do not have access to it.",
            "invalid_request_error",
            "model_not_found",
        )

    @classmethod
    def rate_limited(cls, retry_after: float | None = None) -> Failure:
        headers = {} if retry_after is None else {"retry-after": f"{retry_after:g}"}
        return cls(
            429,
            "Rate limit reached for requests. Please try again later.",
            "requests",
            "rate_limit_exceeded",
            headers,
        )

    @classmethod
    def server_error(
        cls, message: str = "The server had an error while processing your request."
    ) -> Failure:
        return cls(500, message, "server_error", None)

    @classmethod
    def context_length_exceeded(cls, limit: int = 8192) -> Failure:
        return cls(
            400,
            f"This model's maximum context length is {limit} tokens. However, your messages "
            f"resulted in {limit + 1000} tokens. Please reduce the length of the messages.",
            "invalid_request_error",
            "context_length_exceeded",
        )


#: How long a test waits for the server to see a request end (``RecordedRequest.finished``):
#: a generous bound, for a loaded 2-core machine; the wait returns as soon as it does.
SEEN_WITHIN = 60.0


@dataclass(slots=True)
class RecordedRequest:
    """A request the server received, and what it did with a streamed reply."""

    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    chunks_sent: int = 0
    client_disconnected: bool = False
    finished: threading.Event = field(default_factory=threading.Event)
    #: ``time.monotonic()`` when the request arrived, and when the server saw the
    #: client hang up (``None``: it did not).
    received_at: float = field(default_factory=time.monotonic)
    disconnected_at: float | None = None

    def hung_up(self) -> None:
        """Record that the client closed the connection before the reply's end."""
        self.client_disconnected = True
        self.disconnected_at = time.monotonic()

    @property
    def messages(self) -> list[dict[str, Any]]:
        value = self.body.get("messages", [])
        return value if isinstance(value, list) else []

    @property
    def tools(self) -> list[dict[str, Any]]:
        value = self.body.get("tools", [])
        return value if isinstance(value, list) else []

    @property
    def stream(self) -> bool:
        return bool(self.body.get("stream", False))

    @property
    def model(self) -> str | None:
        value = self.body.get("model")
        return value if isinstance(value, str) else None

    @property
    def bearer_token(self) -> str | None:
        value = self.headers.get("authorization", "")
        return value[7:] if value.lower().startswith("bearer ") else None


ScriptItem = Reply | Failure | Callable[[RecordedRequest], "Reply | Failure"]


class _Dropped(Exception):
    """The scripted reply closes the connection mid-stream."""


# ============================================================================ server
class ScriptedOpenAIServer:
    """An OpenAI-compatible server on 127.0.0.1 with an ephemeral port (see module doc)."""

    def __init__(
        self,
        replies: Sequence[ScriptItem] = (),
        *,
        default: ScriptItem | None = None,
        api_key: str | None = None,
        models: Sequence[str] | None = None,
        host: str = "127.0.0.1",
        strict_arguments: bool = False,
    ) -> None:
        self._lock = threading.Lock()
        #: Answer 500 to a request carrying a tool call whose arguments are not a JSON
        #: object, as llama.cpp's server does (it parses them to render its template).
        self.strict_arguments = strict_arguments
        self._queue: list[ScriptItem] = list(replies)
        self.default = default
        self.api_key = api_key
        self.models = list(models) if models is not None else None
        self._host = host
        self._port: int | None = None
        self._requests: list[RecordedRequest] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.Server | None = None
        self._handlers: set[asyncio.Task[None]] = set()
        self._ready = threading.Event()
        self._startup_error: BaseException | None = None

    # ------------------------------------------------------------------ public API
    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>/v1``: what an OpenAI client takes as ``base_url``."""
        return f"{self.origin}/v1"

    @property
    def origin(self) -> str:
        if self._port is None:
            raise RuntimeError("the server is not started")
        return f"http://{self._host}:{self._port}"

    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError("the server is not started")
        return self._port

    def add(self, *items: ScriptItem) -> None:
        """Queue replies; each chat request takes the next one."""
        with self._lock:
            self._queue.extend(items)

    def clear(self) -> None:
        """Forget the queued replies and the recorded requests (``default`` stays)."""
        with self._lock:
            self._queue.clear()
            self._requests.clear()

    @property
    def remaining(self) -> int:
        with self._lock:
            return len(self._queue)

    @property
    def requests(self) -> list[RecordedRequest]:
        """The chat requests received so far, oldest first (a copy of the list)."""
        with self._lock:
            return list(self._requests)

    def wait_for_requests(self, count: int, timeout: float = 5.0) -> list[RecordedRequest]:
        """Block until ``count`` chat requests arrived; raises ``TimeoutError`` otherwise."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if len(self._requests) >= count:
                    return list(self._requests)
            time.sleep(0.005)
        raise TimeoutError(f"expected {count} requests, got {len(self.requests)}")

    def start(self) -> ScriptedOpenAIServer:
        if self._thread is not None:
            return self
        self._thread = threading.Thread(
            target=self._run, name="scripted-openai-server", daemon=True
        )
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("the scripted OpenAI server did not start in 10 s")
        if self._startup_error is not None:
            raise RuntimeError("the scripted OpenAI server failed to start") from (
                self._startup_error
            )
        return self

    def stop(self) -> None:
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        with contextlib.suppress(RuntimeError):  # loop already closed
            loop.call_soon_threadsafe(self._begin_shutdown)
        thread.join(10)
        self._thread = None
        self._loop = None

    def __enter__(self) -> ScriptedOpenAIServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    async def __aenter__(self) -> ScriptedOpenAIServer:
        return await asyncio.to_thread(self.start)

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await asyncio.to_thread(self.stop)

    # ------------------------------------------------------------------ event loop
    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            loop.run_until_complete(self._serve())
        except BaseException as exc:  # reported to start()
            self._startup_error = exc
            self._ready.set()
        finally:
            loop.close()

    async def _serve(self) -> None:
        self._stopping = asyncio.Event()
        self._server = await asyncio.start_server(self._handle, self._host, 0)
        self._port = self._server.sockets[0].getsockname()[1]
        self._ready.set()
        await self._stopping.wait()
        self._server.close()
        for task in list(self._handlers):
            task.cancel()
        if self._handlers:
            await asyncio.wait(self._handlers, timeout=5)
        await self._server.wait_closed()

    def _begin_shutdown(self) -> None:
        self._stopping.set()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._handlers.add(task)
        try:
            await self._handle_one(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError, _Dropped):
            pass
        finally:
            self._handlers.discard(task)
            if not writer.is_closing():
                writer.close()
            with contextlib.suppress(ConnectionError, OSError):
                await writer.wait_closed()

    async def _handle_one(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        method, target, _version = lines[0].split(" ", 2)
        headers: dict[str, str] = {}
        for line in lines[1:]:
            if ":" in line:
                key, value = line.split(":", 1)
                headers[key.strip().lower()] = value.strip()
        length = int(headers.get("content-length", "0") or 0)
        raw = await reader.readexactly(length) if length else b""
        path = target.split("?", 1)[0]
        await self._route(method, path, headers, raw, reader, writer)

    async def _route(
        self,
        method: str,
        path: str,
        headers: dict[str, str],
        raw: bytes,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> None:
        """Answer one parsed request (other providers' scripted servers override this)."""
        if method == "GET" and path == "/v1/models":
            names = self.models if self.models is not None else ["gpt-test"]
            data = [{"id": n, "object": "model", "created": 0, "owned_by": "test"} for n in names]
            await _send_json(writer, 200, {"object": "list", "data": data})
            return
        if method != "POST" or path != "/v1/chat/completions":
            await _send_json(writer, 404, _error_body(f"No route for {method} {path}", None))
            return
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            await _send_json(writer, 400, _error_body("The body is not valid JSON.", None))
            return
        request = RecordedRequest(method, path, headers, body if isinstance(body, dict) else {})
        with self._lock:
            self._requests.append(request)
        try:
            await self._answer(request, reader, writer)
        finally:
            request.finished.set()

    async def _answer(
        self, request: RecordedRequest, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        if self.api_key is not None and request.bearer_token != self.api_key:
            key = request.bearer_token or ""
            # Like the real service, the message names the (masked) key it got.
            masked = f"{key[:3]}****{key[-4:]}" if len(key) > 8 else "****"
            failure = Failure.unauthorized(f"Incorrect API key provided: {masked}.")
            await _send_failure(writer, failure)
            return
        if self.models is not None and request.model not in self.models:
            await _send_failure(writer, Failure.model_not_found(str(request.model)))
            return
        if self.strict_arguments and _unparsable_arguments(request.messages):
            await _send_failure(
                writer, Failure.server_error("Failed to parse tool call arguments as JSON")
            )
            return
        item = self._next_item()
        if item is None:
            await _send_failure(
                writer, Failure.server_error("the scripted OpenAI server has no reply left")
            )
            return
        resolved = item(request) if callable(item) else item
        if isinstance(resolved, Failure):
            await _send_failure(writer, resolved)
        elif request.stream:
            await self._stream(request, resolved, reader, writer)
        else:
            await _send_json(writer, 200, _completion(request, resolved))

    def _next_item(self) -> ScriptItem | None:
        with self._lock:
            if self._queue:
                return self._queue.pop(0)
            return self.default

    # What a streamed reply looks like on the wire (other providers override these three).
    stream_content_type = "text/event-stream; charset=utf-8"

    def _stream_frames(self, request: RecordedRequest, reply: Reply) -> list[bytes]:
        """The streamed reply's frames, in order, each complete (here: SSE ``data:`` events)."""
        return [f"data: {payload}\n\n".encode() for payload in _stream_payloads(request, reply)]

    def _error_frame(self, reply: Reply) -> bytes:
        """The in-stream error frame that ``error_after`` sends (then the stream ends)."""
        error = _error_body(reply.error_message, None, "server_error")
        return f"data: {json.dumps(error)}\n\n".encode()

    async def _stream(
        self,
        request: RecordedRequest,
        reply: Reply,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> None:
        writer.write(
            b"HTTP/1.1 200 OK\r\n"
            b"Content-Type: %s\r\n"
            b"Cache-Control: no-cache\r\n"
            b"Transfer-Encoding: chunked\r\n"
            b"Connection: close\r\n\r\n" % self.stream_content_type.encode()
        )
        await writer.drain()
        # The client sends nothing more on this connection: EOF means it hung up.
        hangup = asyncio.ensure_future(reader.read(1))
        try:
            for index, frame in enumerate(self._stream_frames(request, reply)):
                delay = {0: reply.first_chunk_delay, 1: reply.first_token_delay}.get(index)
                held = {0: reply.first_chunk_held, 1: reply.first_token_held}.get(index)
                if reply.stall_after is not None and index >= reply.stall_after:
                    held = threading.Event()  # never set: silent until the client leaves
                if held is not None:
                    if await self._held(held, reply.keepalive, writer, hangup):
                        request.hung_up()
                        return
                elif delay:
                    if await self._read_prompt(delay, reply.keepalive, writer, hangup):
                        request.hung_up()
                        return
                elif index and reply.token_delay:
                    await asyncio.wait({hangup}, timeout=reply.token_delay)
                if hangup.done():
                    if not _is_hangup(hangup):  # stray bytes from the client: keep watching
                        hangup = asyncio.ensure_future(reader.read(1))
                    else:
                        request.hung_up()
                        return
                if reply.drop_after is not None and request.chunks_sent >= reply.drop_after:
                    writer.transport.abort()
                    raise _Dropped
                failing = reply.error_after is not None and request.chunks_sent >= reply.error_after
                data = self._error_frame(reply) if failing else frame
                try:
                    writer.write(b"%x\r\n%s\r\n" % (len(data), data))
                    await writer.drain()
                except ConnectionError:
                    request.hung_up()
                    return
                request.chunks_sent += 1
                if failing:
                    break
            writer.write(b"0\r\n\r\n")
            await writer.drain()
        finally:
            hangup.cancel()

    async def _held(
        self,
        held: threading.Event,
        keepalive: float | None,
        writer: asyncio.StreamWriter,
        hangup: asyncio.Future[bytes],
    ) -> bool:
        """Wait until ``held`` is set, sending a keep-alive comment every ``keepalive``
        seconds (when set); whether the client hung up meanwhile."""
        quiet_since = time.monotonic()
        while not held.is_set():
            if await self._read_prompt(0.02, None, writer, hangup):
                return True
            if keepalive and time.monotonic() - quiet_since >= keepalive:
                quiet_since = time.monotonic()
                comment = b": keep-alive\n\n"
                try:
                    writer.write(b"%x\r\n%s\r\n" % (len(comment), comment))
                    await writer.drain()
                except ConnectionError:
                    return True
        return False

    async def _read_prompt(
        self,
        delay: float,
        keepalive: float | None,
        writer: asyncio.StreamWriter,
        hangup: asyncio.Future[bytes],
    ) -> bool:
        """Wait ``delay`` seconds (sending a keep-alive comment every ``keepalive``
        seconds, when set); whether the client hung up meanwhile."""
        deadline = time.monotonic() + delay
        while (left := deadline - time.monotonic()) > 0:
            step = min(left, keepalive) if keepalive else left
            if hangup.done():  # stray bytes from the client (not a hang-up): just wait
                await asyncio.sleep(step)
            else:
                await asyncio.wait({hangup}, timeout=step)
            if hangup.done() and _is_hangup(hangup):
                return True
            if keepalive and deadline - time.monotonic() > 0:
                comment = b": keep-alive\n\n"
                try:
                    writer.write(b"%x\r\n%s\r\n" % (len(comment), comment))
                    await writer.drain()
                except ConnectionError:
                    return True
        return False


def _unparsable_arguments(messages: list[dict[str, Any]]) -> bool:
    """Whether a message carries a tool call whose arguments are not a JSON object."""
    for message in messages:
        for call in message.get("tool_calls") or ():
            arguments = (call.get("function") or {}).get("arguments")
            try:
                value = json.loads(arguments) if isinstance(arguments, str) else arguments
            except ValueError:
                return True
            if not isinstance(value, dict):
                return True
    return False


def _is_hangup(read: asyncio.Future[bytes]) -> bool:
    """Whether a finished ``read(1)`` means the client is gone (EOF or a reset)."""
    if read.cancelled() or read.exception() is not None:
        return True
    return read.result() == b""


# ============================================================================ wire shapes
def _error_body(
    message: str, code: str | None, type_: str = "invalid_request_error"
) -> dict[str, Any]:
    return {"error": {"message": message, "type": type_, "param": None, "code": code}}


async def _send_failure(writer: asyncio.StreamWriter, failure: Failure) -> None:
    await _send_json(
        writer,
        failure.status,
        _error_body(failure.message, failure.code, failure.type),
        failure.headers,
    )


_REASONS = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 404: "Not Found",
            429: "Too Many Requests", 500: "Internal Server Error"}  # fmt: skip


async def _send_json(
    writer: asyncio.StreamWriter,
    status: int,
    body: dict[str, Any],
    headers: dict[str, str] | None = None,
) -> None:
    data = json.dumps(body).encode()
    extra = "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
    head = (
        f"HTTP/1.1 {status} {_REASONS.get(status, 'Error')}\r\n"
        "Content-Type: application/json\r\n"
        f"Content-Length: {len(data)}\r\n"
        f"{extra}"
        "Connection: close\r\n\r\n"
    )
    writer.write(head.encode() + data)
    await writer.drain()


def _call_id(call: ToolCallScript, index: int) -> str:
    return call.id if call.id is not None else f"call_{index}"


def _finish_reason(reply: Reply) -> str:
    return reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")


def _stream_payloads(request: RecordedRequest, reply: Reply) -> list[str]:
    """The ``data:`` payloads of a streamed reply, in order, ending with ``[DONE]``."""
    base = {
        "id": "chatcmpl-scripted",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": request.model or "gpt-test",
        "system_fingerprint": "fp_scripted",
    }
    options = request.body.get("stream_options") or {}
    include_usage = bool(options.get("include_usage")) and reply.usage is not None

    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        out: dict[str, Any] = dict(base)
        out["choices"] = [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]
        if include_usage:
            out["usage"] = None
        return json.dumps(out)

    payloads = [chunk({"role": "assistant", "content": "", "refusal": None})]
    step = max(1, reply.chunk)
    for start in range(0, len(reply.text), step):
        payloads.append(chunk({"content": reply.text[start : start + step]}))

    # Each call: a first fragment with id, type and name, then argument fragments.
    per_call: list[list[dict[str, Any]]] = []
    for index, call in enumerate(reply.tool_calls):
        raw = call.raw_arguments()
        first: dict[str, Any] = {
            "index": index,
            "id": _call_id(call, index),
            "type": "function",
            "function": {"name": call.name, "arguments": ""},
        }
        if not first["id"]:  # id="": a server that sends none
            del first["id"]
        fragments: list[dict[str, Any]] = [first]
        size = max(1, call.fragment)
        fragments.extend(
            {"index": index, "function": {"arguments": raw[i : i + size]}}
            for i in range(0, len(raw), size)
        )
        per_call.append(fragments)
    if reply.interleave:
        longest = max((len(f) for f in per_call), default=0)
        ordered = [f[i] for i in range(longest) for f in per_call if i < len(f)]
    else:
        ordered = [fragment for fragments in per_call for fragment in fragments]
    payloads.extend(chunk({"tool_calls": [fragment]}) for fragment in ordered)

    payloads.append(chunk({}, _finish_reason(reply)))
    if include_usage and reply.usage is not None:
        prompt, completion = reply.usage
        usage_chunk: dict[str, Any] = dict(base)
        usage_chunk["choices"] = []
        usage_chunk["usage"] = {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        }
        payloads.append(json.dumps(usage_chunk))
    payloads.append("[DONE]")
    return payloads


def _completion(request: RecordedRequest, reply: Reply) -> dict[str, Any]:
    """A non-streamed ``chat.completion`` object."""
    message: dict[str, Any] = {
        "role": "assistant",
        "content": reply.text or (None if reply.tool_calls else ""),
        "refusal": None,
    }
    if reply.tool_calls:
        message["tool_calls"] = [
            {
                "id": _call_id(call, index),
                "type": "function",
                "function": {"name": call.name, "arguments": call.raw_arguments()},
            }
            for index, call in enumerate(reply.tool_calls)
        ]
    prompt, completion = reply.usage or (0, 0)
    return {
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": request.model or "gpt-test",
        "system_fingerprint": "fp_scripted",
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": _finish_reason(reply),
            }
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }
