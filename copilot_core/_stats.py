"""Turn statistics: what one turn adds to its session's counters.

Decisions (see docs/decisions.md): tokens are summed over every LLM call of the
turn; the title call counts for nothing; ``messages`` is the number of messages
the turn adds to the history (user, assistant and tool), so a session's
``message_count`` always equals its history length; total = input + output.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from copilot_core._messages import Message

__all__ = ["StatsCollector", "TurnStats", "Usage", "stamp_usage"]


@dataclass(frozen=True, slots=True)
class Usage:
    """LLM calls and their tokens, as stored with the step they produced."""

    llm_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def __bool__(self) -> bool:
        return bool(self.llm_calls or self.input_tokens or self.output_tokens)

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.llm_calls + other.llm_calls,
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
        )

    def to_metadata(self) -> dict[str, int]:
        """How a step's first message carries the usage that produced it."""
        return {
            "llm_calls": self.llm_calls,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
        }

    @classmethod
    def of(cls, metadata: Mapping[str, Any]) -> Usage:
        """The usage a message carries in its metadata (none: zero)."""
        raw = metadata.get("usage")
        if not isinstance(raw, Mapping):
            return cls()
        values = [raw.get(key) for key in ("llm_calls", "input_tokens", "output_tokens")]
        return cls(*(value if isinstance(value, int) and value > 0 else 0 for value in values))


@dataclass(frozen=True, slots=True)
class TurnStats:
    """What one turn adds to its session's counters (all non-negative)."""

    messages: int = 0
    llm_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def __add__(self, other: TurnStats) -> TurnStats:
        return TurnStats(
            messages=self.messages + other.messages,
            llm_calls=self.llm_calls + other.llm_calls,
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
        )


class StatsCollector:
    """Accumulates one turn's statistics; synchronous and I/O free."""

    __slots__ = ("_input", "_llm_calls", "_messages", "_output")

    def __init__(self) -> None:
        self._messages = 0
        self._llm_calls = 0
        self._input = 0
        self._output = 0

    def messages_added(self, count: int) -> None:
        if count < 0:
            raise ValueError("a turn cannot remove messages")
        self._messages += count

    def llm_call(self, input_tokens: int = 0, output_tokens: int = 0) -> None:
        """One LLM call of the turn (never the title call) with the usage it reported."""
        if input_tokens < 0 or output_tokens < 0:
            raise ValueError("token counts are never negative")
        self._llm_calls += 1
        self._input += input_tokens
        self._output += output_tokens

    def snapshot(self) -> TurnStats:
        return TurnStats(self._messages, self._llm_calls, self._input, self._output)


def stamp_usage(messages: Sequence[Message], usage: Usage | None) -> list[Message]:
    """``messages`` with ``usage`` recorded in the first one's ``metadata.usage`` (how a
    store keeps what produced a step, so that removing the step can take it off again)."""
    if not usage or not messages:
        return list(messages)
    first = messages[0]
    stamped = first.model_copy(
        update={"metadata": {**first.metadata, "usage": usage.to_metadata()}}
    )
    return [stamped, *messages[1:]]
