"""How many tokens a message takes: one measure of a message's size for the whole core.

:func:`message_chars` is the size of what a model reads of a message (its text, and the
name and argument text of its tool calls); :class:`ApproximateTokenCounter` turns it
into tokens when no tokenizer for the model is known, and the history window
(:mod:`copilot_core._history`) bounds what it reads with it.

The :class:`TokenCounter` port is declared here, beneath
:class:`~copilot_core._conversation.Conversation` (which counts with it) and re-exported
by :mod:`copilot_core.ports` (whose ``AgentRunConfig`` carries a conversation): declared
in ``ports`` it would make the two modules import each other.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import Protocol

from copilot_core._messages import Message

__all__ = ["ApproximateTokenCounter", "CachedTokenCounter", "TokenCounter", "message_chars"]

_PER_MESSAGE_OVERHEAD = 4


class TokenCounter(Protocol):
    def count(self, messages: Sequence[Message]) -> int:
        """Tokens these messages take in the model's context (an estimate is fine)."""
        ...


def message_chars(message: Message) -> int:
    """The characters a model reads of ``message``."""
    chars = len(message.content)
    for call in message.tool_calls or ():
        chars += len(call.function.name) + len(call.function.arguments)
    return chars


class ApproximateTokenCounter:
    """About four characters a token, plus a few tokens of framing per message.

    Used when no tokenizer for the model is known; it errs on the high side for
    English and on the low side for CJK text.
    """

    def count(self, messages: Sequence[Message]) -> int:
        return sum(_PER_MESSAGE_OVERHEAD + (message_chars(m) + 3) // 4 for m in messages)


class CachedTokenCounter:
    """Counts each message once (messages are immutable and ids are unique)."""

    __slots__ = ("_cache", "_counter", "_max_entries")

    def __init__(self, counter: TokenCounter, max_entries: int = 100_000) -> None:
        self._counter = counter
        self._cache: OrderedDict[str, int] = OrderedDict()
        self._max_entries = max_entries

    def count(self, messages: Sequence[Message]) -> int:
        cache = self._cache
        total = 0
        for message in messages:  # a turn counts its whole history window here
            cached = cache.get(message.id)
            if cached is None:
                total += self._measure(message)
            else:
                cache.move_to_end(message.id)
                total += cached
        return total

    def _measure(self, message: Message) -> int:
        """Count a message not in the cache, and keep it there."""
        value = self._counter.count((message,))
        self._cache[message.id] = value
        if len(self._cache) > self._max_entries:
            self._cache.popitem(last=False)
        return value
