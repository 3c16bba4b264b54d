from __future__ import annotations

from datetime import UTC, datetime

import pytest

from copilot_core import Conversation, Message
from copilot_core.errors import ConversationInvariantError
from copilot_core.ports import FunctionCall, ToolCall

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def user(i: str) -> Message:
    return Message.user(i, "q", NOW)


def calls(i: str, *ids: str) -> Message:
    return Message.assistant(
        i, "", NOW, tuple(ToolCall(id=c, function=FunctionCall(name="t")) for c in ids)
    )


def result(i: str, call_id: str) -> Message:
    return Message.tool(i, call_id, "t", "{}", NOW)


def test_a_step_with_every_call_answered_in_order_is_complete() -> None:
    conversation = Conversation([user("u"), calls("a", "c1", "c2"), result("r1", "c1")])
    assert conversation.open_tool_call_ids == ("c2",)
    assert not conversation.is_complete
    conversation.append(result("r2", "c2"))
    assert conversation.is_complete
    conversation.append(user("u2"))
    assert len(conversation) == 5


@pytest.mark.parametrize(
    "messages",
    [
        [user("u"), result("r", "c1")],  # answers nothing
        [user("u"), calls("a", "c1"), user("u2")],  # user while a call is open
        [user("u"), calls("a", "c1"), calls("b", "c2")],  # assistant while a call is open
        [user("u"), calls("a", "c1"), result("r", "c1"), result("r2", "c1")],  # answered twice
        [user("u"), calls("a", "c1", "c1")],  # duplicate id in one message
        [user("u"), calls("a", "c1", "c2"), result("r", "c2")],  # answered out of order
    ],
)
def test_an_append_that_breaks_the_invariant_raises_and_changes_nothing(
    messages: list[Message],
) -> None:
    conversation = Conversation()
    with pytest.raises(ConversationInvariantError):
        for message in messages:
            before = list(conversation)
            try:
                conversation.append(message)
            except ConversationInvariantError:
                assert list(conversation) == before
                raise


def test_a_call_id_may_come_back_in_a_later_step() -> None:
    conversation = Conversation([calls("a", "call_0"), result("r", "call_0"), calls("b", "call_0")])
    assert conversation.open_tool_call_ids == ("call_0",)


def test_can_append_probes_without_changing_anything() -> None:
    conversation = Conversation([user("u"), calls("a", "c1")])
    assert conversation.can_append([result("r", "c1"), user("u2")])
    assert not conversation.can_append([user("u2")])
    assert conversation.open_tool_call_ids == ("c1",)
    assert len(conversation) == 2
