"""A conversation: the ordered messages of a session, always a valid OpenAI conversation.

The invariant: every tool call of an assistant message is answered by exactly one
tool message (with its ``tool_call_id``), in order, before the next user, assistant
or system message. A conversation may *end* with unanswered calls only while a step
is being built; :attr:`Conversation.open_tool_call_ids` says which.

It is also what the model is shown: :meth:`Conversation.prompt` fits the
conversation into a token budget by dropping whole units, oldest first (an
assistant message with its tool results is one unit, so a call is never separated
from its result), always keeping the newest user message and the newest unit.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import overload

from copilot_core._messages import Message, Role
from copilot_core._tokens import TokenCounter
from copilot_core.errors import ConversationInvariantError

__all__ = ["Conversation"]


class Conversation(Sequence[Message]):
    """An append-only list of messages that refuses any append breaking the invariant.

    With a ``counter`` it also knows what each unit costs in tokens, counted once as
    messages are appended, so that :meth:`prompt` can be asked before every model call
    of a turn without counting the history again.
    """

    __slots__ = ("_costs", "_counter", "_messages", "_newest_user", "_open", "_total", "_units")

    def __init__(
        self, messages: Iterable[Message] = (), *, counter: TokenCounter | None = None
    ) -> None:
        self._messages: list[Message] = []
        self._open: dict[str, str] = {}  # open tool_call_id -> tool name, in call order
        self._counter = counter
        self._units: list[list[Message]] = []
        self._costs: list[int] = []
        self._total = 0
        self._newest_user = -1
        self.extend(messages)

    @classmethod
    def restore(
        cls, messages: Sequence[Message], *, counter: TokenCounter | None = None
    ) -> Conversation:
        """A conversation from stored messages that may be cut: tool messages whose call
        is not among them (a window that starts mid-step) and assistant calls left
        without all their results are dropped, so the rest is valid.

        A turn restores its whole history window (hundreds of messages), so a unit that
        is already valid (a message alone, or a call with its results, one each, in
        order) is taken whole; any other goes through :meth:`append`, which refuses it
        exactly as it would refuse it message by message.
        """
        conversation = cls(counter=counter)
        messages = list(messages)
        i, end = 0, len(messages)
        while i < end:
            head = messages[i]
            i += 1
            if head.role is Role.TOOL:
                continue  # a result whose call is not in the window
            calls = head.tool_calls if head.role is Role.ASSISTANT else None
            if not calls:
                conversation._add_unit([head])
                continue
            ids = [call.id for call in calls]
            first = i  # the tool messages right after it that answer one of its calls
            while i < end and messages[i].role is Role.TOOL and messages[i].tool_call_id in ids:
                i += 1
            unit = messages[first - 1 : i]
            answered = [m.tool_call_id for m in unit[1:]]
            if answered == ids and len(set(ids)) == len(ids):
                conversation._add_unit(unit)
            elif all(call_id in answered for call_id in ids):
                conversation.extend(unit)  # out of order or repeated: refused there
            # else: a call left without all its results (the window's newest step)
        return conversation

    # ------------------------------------------------------------------ mutation
    def append(self, message: Message) -> None:
        """Append one message, or raise :class:`ConversationInvariantError` and change nothing."""
        if message.role is Role.TOOL:
            call_id = message.tool_call_id
            if call_id is None:
                raise ConversationInvariantError(f"tool message {message.id!r} has no tool_call_id")
            if next(iter(self._open), None) != call_id:
                why = "is not an open call" if call_id not in self._open else "is out of order"
                raise ConversationInvariantError(
                    f"tool message {message.id!r} answers {call_id!r}, which {why}"
                )
            del self._open[call_id]
        else:
            if self._open:
                raise ConversationInvariantError(
                    f"{message.role.value} message {message.id!r} would leave tool calls "
                    f"unanswered: {', '.join(self._open)}"
                )
            if message.role is Role.ASSISTANT and message.tool_calls:
                ids = [call.id for call in message.tool_calls]
                if len(set(ids)) != len(ids):
                    raise ConversationInvariantError(
                        f"assistant message {message.id!r} repeats a tool call id"
                    )
                # Ids need only be unique within one message: some OpenAI-compatible
                # servers number calls per message ("call_0"), and each is answered
                # before the next message anyway.
                self._open = {call.id: call.function.name for call in message.tool_calls}
        if message.role is Role.TOOL and self._units:  # a result joins its call's unit
            cost = self._counter.count((message,)) if self._counter is not None else 0
            self._messages.append(message)
            self._units[-1].append(message)
            self._costs[-1] += cost
            self._total += cost
        else:
            self._add_unit([message])

    def extend(self, messages: Iterable[Message]) -> None:
        for message in messages:
            self.append(message)

    def can_append(self, messages: Iterable[Message]) -> bool:
        """Whether appending ``messages`` in order would keep the invariant (nothing changes)."""
        probe = Conversation()
        probe._open = dict(self._open)
        try:
            probe.extend(messages)
        except ConversationInvariantError:
            return False
        return True

    # -------------------------------------------------------------------- prompt
    def count_with(self, counter: TokenCounter) -> None:
        """Count the conversation with ``counter`` from now on (what is in it, at once).

        Whoever builds prompts brings the measure: the turn runner keeps the turn's one
        conversation without one (a backend may never ask for a prompt), and the agent
        gives it the counter of its model at the start of its run."""
        if counter is self._counter:
            return
        self._counter = counter
        self._costs = [counter.count(unit) for unit in self._units]
        self._total = sum(self._costs)

    def prompt(self, system: Message, budget: int) -> list[Message]:
        """``system`` followed by the newest units that fit in ``budget`` tokens.

        The newest user message and the newest unit are always kept; when even they do
        not fit they are returned anyway (the provider then reports the context error,
        which is clearer than a silently empty prompt). Needs a ``counter``.
        """
        if self._counter is None:
            raise TypeError("this conversation was built without a token counter")
        units, costs = self._units, self._costs
        total = self._counter.count((system,)) + self._total
        if total <= budget:
            return [system, *self._messages]
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
        return [system, *(m for i, unit in enumerate(units) if i not in dropped for m in unit)]

    def _add_unit(self, unit: list[Message]) -> None:
        """Start a new unit with ``unit``, whose messages were checked against the
        invariant (by :meth:`append`, or whole by :meth:`restore`)."""
        counter = self._counter
        cost = counter.count(unit) if counter is not None else 0
        if unit[0].role is Role.USER:
            self._newest_user = len(self._units)
        self._messages.extend(unit)
        self._units.append(unit)
        self._costs.append(cost)
        self._total += cost

    # ------------------------------------------------------------------- queries
    @property
    def open_tool_call_ids(self) -> tuple[str, ...]:
        """Tool calls of the last assistant message that are not answered yet, in call order."""
        return tuple(self._open)

    @property
    def is_complete(self) -> bool:
        """True when no tool call waits for its result."""
        return not self._open

    @property
    def last(self) -> Message:
        """The newest message (``IndexError`` when empty)."""
        return self._messages[-1]

    def to_dicts(self) -> list[dict[str, object]]:
        return [message.to_dict() for message in self._messages]

    @overload
    def __getitem__(self, index: int) -> Message: ...

    @overload
    def __getitem__(self, index: slice) -> list[Message]: ...

    def __getitem__(self, index: int | slice) -> Message | list[Message]:
        return self._messages[index]

    def __len__(self) -> int:
        return len(self._messages)

    def __iter__(self) -> Iterator[Message]:
        return iter(self._messages)

    def __repr__(self) -> str:
        return f"Conversation({len(self._messages)} messages, open={list(self._open)})"
