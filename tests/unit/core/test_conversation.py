from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from copilot_core import ApproximateTokenCounter, Conversation, Message, Role
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


# ------------------------------------------------------------------ restore
def restored_one_by_one(messages: Sequence[Message]) -> Conversation:
    """What :meth:`Conversation.restore` means, written plainly: group each assistant call
    with the tool messages right after it that answer one of its calls, drop results
    without their call and calls without all their results, append the rest one by one."""
    units: list[list[Message]] = []
    for message in messages:
        head = units[-1][0] if units else None
        if (
            message.role is Role.TOOL
            and head is not None
            and head.role is Role.ASSISTANT
            and any(call.id == message.tool_call_id for call in head.tool_calls or ())
        ):
            units[-1].append(message)
        else:
            units.append([message])
    conversation = Conversation(counter=ApproximateTokenCounter())
    for unit in units:
        head = unit[0]
        answered = {m.tool_call_id for m in unit[1:]}
        if head.role is Role.TOOL or any(c.id not in answered for c in head.tool_calls or ()):
            continue
        conversation.extend(unit)
    return conversation


def outcome(build: object) -> object:
    try:
        conversation = build()  # type: ignore[operator]
    except ConversationInvariantError as exc:
        return ("refused", str(exc))
    system = Message.system("system", "you are a copilot")
    return (
        list(conversation),
        conversation.open_tool_call_ids,
        [conversation.prompt(system, budget) for budget in (0, 30, 60, 10_000)],
    )


@st.composite
def steps(draw: st.DrawFn) -> list[Message]:
    """A call with its results: mostly as stored (one each, in order), sometimes out of
    order, repeated, missing, or calling one id twice."""
    n = draw(st.integers(0, 99))
    ids = draw(st.lists(st.sampled_from(["c1", "c2", "c3"]), min_size=1, max_size=3))
    answered = draw(
        st.one_of(
            st.just(ids),
            st.just(ids),
            st.permutations(ids),
            st.lists(st.sampled_from([*ids, "c9"]), max_size=4),
        )
    )
    return [calls(f"a{n}", *ids), *(result(f"r{n}-{k}", c) for k, c in enumerate(answered))]


units = st.one_of(
    st.builds(lambda n: [user(f"u{n}")], st.integers(0, 99)),
    st.builds(lambda n: [Message.assistant(f"f{n}", "an answer", NOW)], st.integers(0, 99)),
    steps(),
    st.builds(lambda n, c: [result(f"o{n}", c)], st.integers(0, 99), st.sampled_from(["c1", "c9"])),
)
# A window of a stored history: cut anywhere at both ends.
windows = st.builds(
    lambda parts, start, stop: [m for part in parts for m in part][start : stop or None],
    st.lists(units, max_size=8),
    st.integers(0, 3),
    st.integers(-3, 0),
)


@settings(max_examples=400)  # cheap: a few ms for all of them
@given(windows)
def test_restore_keeps_refuses_and_prompts_as_appending_one_by_one_would(
    messages: list[Message],
) -> None:
    # Cut windows, orphans, calls missing results, results out of order or repeated,
    # repeated call ids: restore takes valid units whole, and must agree with the
    # plain definition on every one of them.
    counter = ApproximateTokenCounter()
    assert outcome(lambda: Conversation.restore(messages, counter=counter)) == outcome(
        lambda: restored_one_by_one(messages)
    )
