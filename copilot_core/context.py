"""Fitting a conversation into the model's context window.

Trimming drops whole units, oldest first: an assistant message with its tool
results is one unit, so a tool call is never separated from its result. The
system prompt and the newest user message are always kept, as is the newest unit
of the current turn.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

from copilot_core.conversation import group_steps
from copilot_core.messages import Message, Role
from copilot_core.ports import TokenCounter

__all__ = [
    "ApproximateTokenCounter",
    "CachedTokenCounter",
    "ConversationUnits",
    "drop_orphan_tool_messages",
    "trim",
]

_PER_MESSAGE_OVERHEAD = 4


class ApproximateTokenCounter:
    """About four characters a token, plus a few tokens of framing per message.

    Used when no tokenizer for the model is known; it errs on the high side for
    English and on the low side for CJK text.
    """

    def count(self, messages: Sequence[Message]) -> int:
        total = 0
        for message in messages:
            chars = len(message.content)
            for call in message.tool_calls or ():
                chars += len(call.function.name) + len(call.function.arguments)
            total += _PER_MESSAGE_OVERHEAD + (chars + 3) // 4
        return total


class CachedTokenCounter:
    """Counts each message once (messages are immutable and ids are unique)."""

    __slots__ = ("_cache", "_counter", "_max_entries")

    def __init__(self, counter: TokenCounter, max_entries: int = 100_000) -> None:
        self._counter = counter
        self._cache: OrderedDict[str, int] = OrderedDict()
        self._max_entries = max_entries

    def count(self, messages: Sequence[Message]) -> int:
        return sum(self.count_one(message) for message in messages)

    def count_one(self, message: Message) -> int:
        cached = self._cache.get(message.id)
        if cached is not None:
            self._cache.move_to_end(message.id)
            return cached
        value = self._counter.count((message,))
        self._cache[message.id] = value
        if len(self._cache) > self._max_entries:
            self._cache.popitem(last=False)
        return value


def drop_orphan_tool_messages(messages: Sequence[Message]) -> list[Message]:
    """Drop tool messages whose call is not in ``messages`` (a history cut mid-step) and
    assistant tool calls left without results, so the rest is a valid conversation."""
    kept: list[Message] = []
    for unit in group_steps(messages):
        head = unit[0]
        if head.role is Role.TOOL:
            continue
        if head.role is Role.ASSISTANT and head.tool_calls:
            answered = {m.tool_call_id for m in unit[1:]}
            if any(call.id not in answered for call in head.tool_calls):
                continue
        kept.extend(unit)
    return kept


def trim(
    system: Message, messages: Sequence[Message], budget: int, counter: TokenCounter
) -> list[Message]:
    """``system`` followed by as much of ``messages`` as fits in ``budget`` tokens.

    ``messages`` must be a valid conversation ending in the current turn. When even
    the protected messages do not fit, they are returned anyway: the provider then
    reports the context error, which is clearer than a silently empty prompt.
    """
    return ConversationUnits(messages, counter).prompt(system, budget)


class ConversationUnits:
    """A conversation kept as units (see :func:`group_steps`) with their token costs.

    An agent loop that calls the model several times in a turn adds each step with
    :meth:`extend` and asks for :meth:`prompt` before each call, so the history is
    grouped and counted once per turn, not once per call; the prompt is exactly
    :func:`trim`'s.
    """

    __slots__ = ("_costs", "_counter", "_newest_user", "_total", "_units")

    def __init__(self, messages: Sequence[Message], counter: TokenCounter) -> None:
        self._counter = counter
        self._units: list[list[Message]] = []
        self._costs: list[int] = []
        self._total = 0
        self._newest_user = -1
        self.extend(messages)

    def extend(self, messages: Sequence[Message]) -> None:
        """Add messages that start a new unit (a user message, or an assistant message
        with all of its tool results)."""
        for unit in group_steps(messages):
            cost = self._counter.count(unit)
            if unit[0].role is Role.USER:
                self._newest_user = len(self._units)
            self._units.append(unit)
            self._costs.append(cost)
            self._total += cost

    @property
    def last(self) -> Message:
        """The newest message."""
        return self._units[-1][-1]

    def prompt(self, system: Message, budget: int) -> list[Message]:
        """``system`` and the newest units that fit in ``budget`` (see :func:`trim`)."""
        units, costs = self._units, self._costs
        total = self._counter.count((system,)) + self._total
        if total <= budget:
            return [system, *(message for unit in units for message in unit)]
        last = len(units) - 1
        newest_user = self._newest_user if self._newest_user >= 0 else last
        dropped: set[int] = set()
        for index in (*range(newest_user), *range(newest_user + 1, last)):
            if total <= budget:
                break
            if units[index][0].role is Role.SYSTEM:
                continue
            dropped.add(index)
            total -= costs[index]
        kept = [m for i, unit in enumerate(units) if i not in dropped for m in unit]
        return [system, *kept]
