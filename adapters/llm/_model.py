"""The core's :class:`~copilot_core.ports.LanguageModel` over a LangChain chat model."""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessageChunk, BaseMessageChunk
from pydantic import SecretStr

from adapters.llm._errors import ProviderInfo, translate_error
from adapters.llm._messages import content_text, to_langchain
from copilot_core.deltas import FinishDelta, ModelDelta, TextDelta, ToolCallDelta, UsageDelta
from copilot_core.messages import Message
from copilot_core.ports import CallOptions
from copilot_core.tools import ToolSpec

__all__ = ["LangchainLanguageModel"]

_log = logging.getLogger(__name__)


class LangchainLanguageModel:
    """Streams a LangChain chat model's reply as the core's deltas.

    * Tools are bound per call from the core's :class:`~copilot_core.tools.ToolSpec`
      (OpenAI function format); ``CallOptions`` temperature and max_tokens
      override the model's defaults for that call only.
    * Each ``AIMessageChunk`` becomes deltas: its text; one
      :class:`~copilot_core.deltas.ToolCallDelta` per ``tool_call_chunks`` entry
      with the *raw* argument fragment (never the half-parsed ``tool_calls``
      view); a :class:`~copilot_core.deltas.UsageDelta` from ``usage_metadata``;
      a :class:`~copilot_core.deltas.FinishDelta` from the finish reason. A
      provider that ends a stream cleanly without a finish reason gets one
      (``tool_calls`` if it called tools, else ``stop``).
    * Provider failures are raised as :class:`~copilot_core.errors.LLMError`
      subclasses (see :func:`adapters.llm.translate_error`); the API key never
      appears in them.
    * Closing the iterator (``aclose()``) or cancelling the task that iterates it
      closes the provider's stream at once, which closes its HTTP connection.
    """

    def __init__(
        self,
        chat_model: BaseChatModel,
        *,
        base_url: str | None = None,
        model_name: str | None = None,
    ) -> None:
        self.chat_model = chat_model
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
        kwargs: dict[str, Any] = {}
        if options.temperature is not None:
            kwargs["temperature"] = options.temperature
        if options.max_tokens is not None:
            kwargs["max_tokens"] = options.max_tokens
        runnable: Any = self.chat_model
        if tools:
            runnable = self.chat_model.bind_tools([spec.to_openai() for spec in tools])
        chunks: AsyncIterator[BaseMessageChunk] = runnable.astream(to_langchain(messages), **kwargs)
        received = False
        finished = False
        called_tools = False
        try:
            while True:
                try:
                    chunk = await anext(chunks)
                except StopAsyncIteration:
                    break
                except Exception as exc:
                    raise translate_error(exc, self._provider, streaming=received) from None
                received = True
                for delta in _deltas(chunk):
                    if isinstance(delta, FinishDelta):
                        finished = True
                    elif isinstance(delta, ToolCallDelta):
                        called_tools = True
                    yield delta
        finally:
            # Closing the LangChain stream closes the provider's HTTP response now,
            # not whenever the garbage collector gets to it.
            await _close(chunks)
        if not finished:
            yield FinishDelta("tool_calls" if called_tools else "stop")


def _deltas(chunk: BaseMessageChunk) -> list[ModelDelta]:
    out: list[ModelDelta] = []
    text = content_text(chunk.content)
    if text:
        out.append(TextDelta(text))
    if isinstance(chunk, AIMessageChunk):
        for position, fragment in enumerate(chunk.tool_call_chunks):
            index = fragment.get("index")
            out.append(
                ToolCallDelta(
                    index=index if isinstance(index, int) else position,
                    id=fragment.get("id") or None,
                    name=fragment.get("name") or None,
                    arguments=fragment.get("args") or "",
                )
            )
        usage = chunk.usage_metadata
        if usage is not None and (usage.get("input_tokens") or usage.get("output_tokens")):
            out.append(UsageDelta(usage.get("input_tokens", 0), usage.get("output_tokens", 0)))
    reason = chunk.response_metadata.get("finish_reason")
    if isinstance(reason, str) and reason:
        out.append(FinishDelta(reason))
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
    value = getattr(chat_model, "openai_api_base", None) or getattr(chat_model, "base_url", None)
    return str(value).rstrip("/") if value else "https://api.openai.com/v1"


def _model_name_of(chat_model: BaseChatModel) -> str:
    value = getattr(chat_model, "model_name", None) or getattr(chat_model, "model", None)
    return str(value) if value else type(chat_model).__name__


def _secrets_of(chat_model: BaseChatModel) -> tuple[str, ...]:
    secrets: list[str] = []
    for attribute in ("openai_api_key", "api_key"):
        value = getattr(chat_model, attribute, None)
        if isinstance(value, SecretStr):
            value = value.get_secret_value()
        if isinstance(value, str) and value:
            secrets.append(value)
    return tuple(secrets)
