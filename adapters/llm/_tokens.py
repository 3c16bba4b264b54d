"""Token counting for the core's context trimming, with tiktoken.

tiktoken normally downloads its encoding files on first use. The copilot never
does: ``cl100k_base`` ships with this package (``adapters/llm/data``) and is
loaded from there after its SHA-256 is checked against the official file's. An
encoding that is not shipped falls back to the core's
:class:`~copilot_core._tokens.ApproximateTokenCounter` (about four characters a
token), and :attr:`TiktokenTokenCounter.exact` says which one counts.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from typing import TYPE_CHECKING

from copilot_core import ApproximateTokenCounter
from copilot_core.ports import Message

if TYPE_CHECKING:
    from tiktoken import Encoding

__all__ = ["SHIPPED_ENCODINGS", "ShippedEncoding", "TiktokenTokenCounter", "offline_encoding"]

_log = logging.getLogger(__name__)

# OpenAI's accounting for chat messages: a few tokens of framing per message and
# one more when a name is given. The reply's constant priming (3 tokens) is left
# out so that counts add up message by message (the core caches them that way).
_PER_MESSAGE = 3
_PER_NAME = 1
_PER_TOOL_CALL = 3


@dataclass(frozen=True, slots=True)
class ShippedEncoding:
    """An encoding whose rank file ships in ``adapters/llm/data``, with what tiktoken
    needs besides the ranks (the split pattern and the special tokens)."""

    file: str
    sha256: str
    pattern: str
    special_tokens: dict[str, int]


SHIPPED_ENCODINGS: dict[str, ShippedEncoding] = {
    "cl100k_base": ShippedEncoding(
        file="cl100k_base.tiktoken",
        sha256="223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
        pattern=(
            r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+"
            r"| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s"
        ),
        special_tokens={
            "<|endoftext|>": 100257,
            "<|fim_prefix|>": 100258,
            "<|fim_middle|>": 100259,
            "<|fim_suffix|>": 100260,
            "<|endofprompt|>": 100276,
        },
    )
}
"""Encodings available offline, by tiktoken's name."""


def _read_ranks(data: bytes) -> dict[bytes, int]:
    ranks: dict[bytes, int] = {}
    for line in data.splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


@functools.cache
def offline_encoding(name: str) -> Encoding | None:
    """The tiktoken encoding ``name`` if its file ships with the package, else ``None``.

    Never touches the network. The file's SHA-256 is checked first: a damaged or
    replaced file is refused (with a warning) and counting falls back to the estimate.
    Cached: an encoder is built once per process.
    """
    shipped = SHIPPED_ENCODINGS.get(name)
    if shipped is None:
        return None
    try:
        import tiktoken
    except ImportError:  # pragma: no cover - tiktoken is a dependency
        return None
    try:
        data = resources.files("adapters.llm").joinpath("data", shipped.file).read_bytes()
    except OSError as exc:
        _log.warning("tiktoken encoding %s could not be read: %s", name, exc)
        return None
    digest = hashlib.sha256(data).hexdigest()
    if digest != shipped.sha256:
        _log.warning(
            "tiktoken encoding %s is damaged (SHA-256 %s, expected %s); counting by estimate",
            name,
            digest,
            shipped.sha256,
        )
        return None
    return tiktoken.Encoding(
        name=name,
        pat_str=shipped.pattern,
        mergeable_ranks=_read_ranks(data),
        special_tokens=shipped.special_tokens,
    )


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
