"""A conversation: the ordered messages of a session, always a valid OpenAI conversation.

The invariant: every tool call of an assistant message is answered by exactly one
tool message (with its ``tool_call_id``) before the next user, assistant or system
message. A conversation may *end* with unanswered calls only while a step is being
built; :attr:`Conversation.open_tool_call_ids` says which.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import overload

from copilot_core.errors import ConversationInvariantError
from copilot_core.messages import Message, Role

__all__ = ["Conversation", "group_steps"]


class Conversation(Sequence[Message]):
    """An append-only list of messages that refuses any append breaking the invariant."""

    __slots__ = ("_messages", "_open")

    def __init__(self, messages: Iterable[Message] = ()) -> None:
        self._messages: list[Message] = []
        self._open: dict[str, str] = {}  # open tool_call_id -> tool name, in call order
        self.extend(messages)

    # ------------------------------------------------------------------ mutation
    def append(self, message: Message) -> None:
        """Append one message, or raise :class:`ConversationInvariantError` and change nothing."""
        if message.role is Role.TOOL:
            call_id = message.tool_call_id
            if call_id is None:
                raise ConversationInvariantError(f"tool message {message.id!r} has no tool_call_id")
            if call_id not in self._open:
                raise ConversationInvariantError(
                    f"tool message {message.id!r} answers {call_id!r}, which is not an open call"
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
        self._messages.append(message)

    def extend(self, messages: Iterable[Message]) -> None:
        for message in messages:
            self.append(message)

    def can_append(self, messages: Iterable[Message]) -> bool:
        """Whether appending ``messages`` in order would keep the invariant (nothing changes)."""
        probe = Conversation.__new__(Conversation)
        probe._messages = []
        probe._open = dict(self._open)
        try:
            probe.extend(messages)
        except ConversationInvariantError:
            return False
        return True

    # ------------------------------------------------------------------- queries
    @property
    def open_tool_call_ids(self) -> tuple[str, ...]:
        """Tool calls of the last assistant message that are not answered yet, in call order."""
        return tuple(self._open)

    @property
    def is_complete(self) -> bool:
        """True when no tool call waits for its result."""
        return not self._open

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


def group_steps(messages: Sequence[Message]) -> list[list[Message]]:
    """Split messages into units that must stay together: an assistant message with
    its tool results is one unit; every other message is a unit of its own.

    Leading tool messages whose call is not in ``messages`` (a page cut through a
    step) form units of their own; callers that need validity drop them.
    """
    units: list[list[Message]] = []
    for message in messages:
        if message.role is Role.TOOL and units and _belongs(units[-1], message):
            units[-1].append(message)
        else:
            units.append([message])
    return units


def _belongs(unit: list[Message], message: Message) -> bool:
    head = unit[0]
    return (
        head.role is Role.ASSISTANT
        and head.tool_calls is not None
        and any(call.id == message.tool_call_id for call in head.tool_calls)
    )
