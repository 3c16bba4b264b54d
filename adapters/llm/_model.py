"""The core's :class:`~copilot_core.ports.LanguageModel` over a LangChain chat model."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncGenerator, AsyncIterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessageChunk, BaseMessageChunk
from pydantic import SecretStr

from adapters.llm._errors import ProviderInfo, translate_error
from adapters.llm._messages import content_text, to_langchain
from copilot_core import Message, ToolSpec
from copilot_core.ports import (
    CallOptions,
    FinishDelta,
    ModelDelta,
    TextDelta,
    ToolCallDelta,
    UsageDelta,
)

if TYPE_CHECKING:
    from adapters.llm._abandoned import ServerWatch

__all__ = ["LangchainLanguageModel"]

_log = logging.getLogger(__name__)


class LangchainLanguageModel:
    """Streams a LangChain chat model's reply as the core's deltas.

    * Tools are bound per call from the core's :class:`~copilot_core._tools.ToolSpec`
      (OpenAI function format); ``CallOptions`` temperature and max_tokens
      override the model's defaults for that call only.
    * Each ``AIMessageChunk`` becomes deltas: its text; one
      :class:`~copilot_core._deltas.ToolCallDelta` per ``tool_call_chunks`` entry
      with the *raw* argument fragment (never the half-parsed ``tool_calls``
      view); a :class:`~copilot_core._deltas.UsageDelta` from ``usage_metadata``;
      a :class:`~copilot_core._deltas.FinishDelta` from the finish reason. A
      provider that ends a stream cleanly without a finish reason gets one
      (``tool_calls`` if it called tools, else ``stop``).
    * Provider failures are raised as :class:`~copilot_core.errors.LLMError`
      subclasses (see :func:`adapters.llm.translate_error`); the API key never
      appears in them.
    * Closing the iterator (``aclose()``) or cancelling the task that iterates it
      closes the provider's stream at once, which closes its HTTP connection.
    * ``request_options`` go with every call (the waits an SDK takes only per request,
      :func:`adapters.llm._settings.request_options`); ``watch`` hears of each request closed
      before its first token (the model server may still be reading its prompt) and of
      each the server answered.
    """

    def __init__(
        self,
        chat_model: BaseChatModel,
        *,
        base_url: str | None = None,
        model_name: str | None = None,
        request_options: Mapping[str, Any] | None = None,
        watch: ServerWatch | None = None,
    ) -> None:
        self.chat_model = chat_model
        self.request_options: Mapping[str, Any] = dict(request_options or {})
        self.watch = watch
        self._provider = ProviderInfo(
            base_url=base_url or _base_url_of(chat_model),
            model=model_name or _model_name_of(chat_model),
            secrets=_secrets_of(chat_model),
        )

    @property
    def base_url(self) -> str:
        return self._provider.base_url

    @property
    def model_name(self) -> str:
        return self._provider.model

    def __repr__(self) -> str:
        return f"LangchainLanguageModel(model={self.model_name!r}, base_url={self.base_url!r})"

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], options: CallOptions
    ) -> AsyncGenerator[ModelDelta, None]:
        kwargs = {**self.request_options, **_call_kwargs(self.chat_model, options)}
        runnable: Any = self.chat_model
        if tools:
            runnable = self.chat_model.bind_tools([spec.to_openai() for spec in tools])
        chunks: AsyncIterator[BaseMessageChunk] = runnable.astream(to_langchain(messages), **kwargs)
        # The provider's stream is read by a task of its own, one chunk ahead at most: closing
        # this generator early cancels that task, and the cancellation unwinds the provider
        # client's own stream at once, closing its HTTP response. (Closing LangChain's
        # generator alone leaves e.g. the Anthropic SDK's stream open until it is collected.)
        handoff: asyncio.Queue[object] = asyncio.Queue(maxsize=1)
        reader = asyncio.ensure_future(_read(chunks, handoff))
        received = False
        finished = False
        called_tools = False
        answered = False  # a delta came: the server has read the prompt
        ended = False  # the server ended the stream (its end, or its failure)
        sent = time.monotonic()
        indexes = _Indexes()
        try:
            while True:
                item = await handoff.get()
                if item is _END:
                    ended = True
                    break
                if isinstance(item, _Failed):
                    # A timeout before the first token is the client giving up (the SDK
                    # closed the connection); any other failure is the server's answer.
                    ended = answered or not _timed_out(item.error)
                    raise translate_error(item.error, self._provider, streaming=received) from None
                received = True
                for delta in _deltas(cast(BaseMessageChunk, item), indexes):
                    if not answered:
                        answered = True
                        if self.watch is not None:
                            self.watch.answered()
                    if isinstance(delta, FinishDelta):
                        finished = True
                        if delta.reason == "stop" and called_tools:
                            # Ollama says "stop" after tool calls too; OpenAI says "tool_calls".
                            delta = FinishDelta("tool_calls")
                    elif isinstance(delta, ToolCallDelta):
                        called_tools = True
                    yield delta
        finally:
            if not reader.done():
                reader.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await reader
            # Closing the LangChain stream closes the provider's HTTP response now,
            # not whenever the garbage collector gets to it.
            await _close(chunks)
            if self.watch is not None and not answered:
                if ended:
                    self.watch.answered()
                else:  # given up (a timeout, the user's abort) while the server was reading
                    self.watch.gave_up(time.monotonic() - sent)
        if not finished:
            yield FinishDelta("tool_calls" if called_tools else "stop")


#: The timeouts of the SDKs and their HTTP clients, by class name (so that no SDK is
#: imported to recognise its errors): Python's and langchain-openai's chunk timeout
#: (``TimeoutError``), httpx's and httpx2's, openai's and anthropic's, LangChain's.
_TIMEOUTS = frozenset({"TimeoutError", "TimeoutException", "APITimeoutError", "ModelTimeoutError"})


def _timed_out(error: BaseException) -> bool:
    """Whether the client gave up waiting (its own timeout, whichever SDK raised it)."""
    return any(kind.__name__ in _TIMEOUTS for kind in type(error).__mro__)


class _Failed:
    __slots__ = ("error",)

    def __init__(self, error: BaseException) -> None:
        self.error = error


_END = object()


async def _read(chunks: AsyncIterator[BaseMessageChunk], handoff: asyncio.Queue[object]) -> None:
    """Hand the stream's chunks over one by one, then ``_END`` or the failure."""
    try:
        async for chunk in chunks:
            await handoff.put(chunk)
    except Exception as exc:  # handed to the consumer, which translates it
        await handoff.put(_Failed(exc))
    else:
        await handoff.put(_END)


class _Indexes:
    """Tool-call indexes for fragments that carry none: LangChain gives ``None`` for calls
    that arrive whole (Ollama sends each in its own chunk), so each new id gets the next
    free index instead of colliding at 0."""

    __slots__ = ("_by_id", "_next")

    def __init__(self) -> None:
        self._by_id: dict[str, int] = {}
        self._next = 0

    def of(self, index: object, call_id: str | None, position: int) -> int:
        if isinstance(index, int):
            self._next = max(self._next, index + 1)
            return index
        if call_id is None:
            return position
        if call_id not in self._by_id:
            self._by_id[call_id] = self._next
            self._next += 1
        return self._by_id[call_id]


_STOP_REASONS = {
    # Anthropic's stop_reason, in OpenAI's words (the core's vocabulary)
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "refusal": "content_filter",
}


def _call_kwargs(chat_model: BaseChatModel, options: CallOptions) -> dict[str, Any]:
    """The per-call options in the chat model's own terms."""
    if options.temperature is None and options.max_tokens is None:
        return {}
    if type(chat_model).__name__ == "ChatOllama":
        # ChatOllama takes per-call settings only as a whole ``options`` object.
        fields = {"temperature": "temperature", "num_predict": "num_predict", "num_ctx": "num_ctx"}
        ollama: dict[str, Any] = {
            key: getattr(chat_model, attribute)
            for key, attribute in fields.items()
            if getattr(chat_model, attribute, None) is not None
        }
        if options.temperature is not None:
            ollama["temperature"] = options.temperature
        if options.max_tokens is not None:
            ollama["num_predict"] = options.max_tokens
        return {"options": ollama}
    kwargs: dict[str, Any] = {}
    if options.temperature is not None:
        kwargs["temperature"] = options.temperature
    if options.max_tokens is not None:
        kwargs["max_tokens"] = options.max_tokens
    return kwargs


def _deltas(chunk: BaseMessageChunk, indexes: _Indexes) -> list[ModelDelta]:
    out: list[ModelDelta] = []
    text = content_text(chunk.content)
    if text:
        out.append(TextDelta(text))
    if isinstance(chunk, AIMessageChunk):
        for position, fragment in enumerate(chunk.tool_call_chunks):
            call_id = fragment.get("id") or None
            out.append(
                ToolCallDelta(
                    index=indexes.of(fragment.get("index"), call_id, position),
                    id=call_id,
                    name=fragment.get("name") or None,
                    arguments=fragment.get("args") or "",
                )
            )
        usage = chunk.usage_metadata
        if usage is not None and (usage.get("input_tokens") or usage.get("output_tokens")):
            out.append(UsageDelta(usage.get("input_tokens", 0), usage.get("output_tokens", 0)))
    metadata = chunk.response_metadata
    # OpenAI: finish_reason; Anthropic: stop_reason; Ollama: done_reason (last chunk only).
    reason = (
        metadata.get("finish_reason") or metadata.get("stop_reason") or metadata.get("done_reason")
    )
    if isinstance(reason, str) and reason:
        out.append(FinishDelta(_STOP_REASONS.get(reason, reason)))
    return out


async def _close(stream: AsyncIterator[BaseMessageChunk]) -> None:
    aclose = getattr(stream, "aclose", None)
    if aclose is None:
        return
    try:
        await aclose()
    except Exception:  # closing must not hide what ended the stream
        _log.debug("closing the chat model stream failed", exc_info=True)


def _base_url_of(chat_model: BaseChatModel) -> str:
    value = (
        getattr(chat_model, "openai_api_base", None)
        or getattr(chat_model, "anthropic_api_url", None)
        or getattr(chat_model, "base_url", None)
    )
    return str(value).rstrip("/") if value else "https://api.openai.com/v1"


def _model_name_of(chat_model: BaseChatModel) -> str:
    value = getattr(chat_model, "model_name", None) or getattr(chat_model, "model", None)
    return str(value) if value else type(chat_model).__name__


def _secrets_of(chat_model: BaseChatModel) -> tuple[str, ...]:
    secrets: list[str] = []
    for attribute in ("openai_api_key", "anthropic_api_key", "api_key"):
        value = getattr(chat_model, attribute, None)
        if isinstance(value, SecretStr):
            value = value.get_secret_value()
        if isinstance(value, str) and value:
            secrets.append(value)
    # ChatOllama: a key for a proxy in front of Ollama travels as a header.
    client = getattr(chat_model, "client_kwargs", None)
    headers = client.get("headers") if isinstance(client, dict) else None
    if isinstance(headers, dict):
        value = headers.get("Authorization")
        if isinstance(value, str) and value.startswith("Bearer "):
            secrets.append(value.removeprefix("Bearer "))
    return tuple(secrets)
