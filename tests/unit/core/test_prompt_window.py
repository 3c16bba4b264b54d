"""The prompt window: a conversation fitted into the model's context, and token counting."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from copilot_core import ApproximateTokenCounter, Conversation, Message
from copilot_core._tokens import CachedTokenCounter
from copilot_core.ports import FunctionCall, ToolCall

NOW = datetime(2026, 1, 1, tzinfo=UTC)


class OneTokenPerMessage:
    def __init__(self) -> None:
        self.counted = 0

    def count(self, messages: Sequence[Message]) -> int:
        self.counted += len(messages)
        return len(messages)


def conversation(turns: int) -> list[Message]:
    out: list[Message] = []
    for t in range(turns):
        out.append(Message.user(f"u{t}", f"question {t}", NOW))
        call = ToolCall(id=f"c{t}", function=FunctionCall(name="t", arguments="{}"))
        out.append(Message.assistant(f"a{t}", "", NOW, (call,)))
        out.append(Message.tool(f"r{t}", f"c{t}", "t", "{}", NOW))
        out.append(Message.assistant(f"f{t}", f"answer {t}", NOW))
    return out


SYSTEM = Message.system("system", "you are a copilot")


def trim(
    system: Message, messages: Sequence[Message], budget: int, counter: OneTokenPerMessage
) -> list[Message]:
    return Conversation(messages, counter=counter).prompt(system, budget)


def test_everything_is_kept_when_it_fits() -> None:
    messages = conversation(3)
    assert trim(SYSTEM, messages, 1000, OneTokenPerMessage()) == [SYSTEM, *messages]


def test_oldest_units_go_first_and_a_call_never_loses_its_result() -> None:
    messages = [*conversation(5), Message.user("now", "latest question", NOW)]
    kept = trim(SYSTEM, messages, 8, OneTokenPerMessage())
    # 22 tokens in all; whole units go, oldest first, until 8 fit: the pair a3/r3 goes
    # together (dropping it reaches 7), so f3 stays.
    assert [m.id for m in kept] == ["system", "f3", "u4", "a4", "r4", "f4", "now"]


def test_system_and_newest_user_message_survive_even_when_nothing_fits() -> None:
    messages = [*conversation(2), Message.user("now", "latest", NOW)]
    kept = trim(SYSTEM, messages, 0, OneTokenPerMessage())
    assert [m.id for m in kept] == ["system", "now"]


def test_the_newest_step_of_the_current_turn_is_kept() -> None:
    current = [Message.user("now", "q", NOW), *conversation(1)[1:3], *conversation(2)[5:7]]
    kept = trim(SYSTEM, [*conversation(3), *current], 1, OneTokenPerMessage())
    assert [m.id for m in kept] == ["system", "now", "a1", "r1"]


def test_a_history_cut_mid_step_is_restored_without_its_orphans() -> None:
    messages = conversation(2)
    cut = messages[2:]  # starts with the tool result of turn 0
    assert [m.id for m in Conversation.restore(cut)] == ["f0", "u1", "a1", "r1", "f1"]
    dangling = messages[:2]  # an assistant call with no result
    assert [m.id for m in Conversation.restore(dangling)] == ["u0"]


def test_approximate_counter_grows_with_text_and_the_cache_counts_each_message_once() -> None:
    counter = ApproximateTokenCounter()
    short, long = Message.user("s", "hi", NOW), Message.user("l", "x" * 400, NOW)
    assert counter.count([long]) > counter.count([short]) > 0
    inner = OneTokenPerMessage()
    cached = CachedTokenCounter(inner, max_entries=10)
    for _ in range(3):
        cached.count([short, long])
    assert inner.counted == 2


def test_a_conversation_extended_step_by_step_prompts_as_one_built_at_once() -> None:
    history = conversation(6)
    current = [Message.user("now", "latest", NOW), *conversation(8)[25:27], *conversation(8)[29:31]]
    counter = OneTokenPerMessage()
    units = Conversation(history, counter=counter)
    so_far = list(history)
    for step in ([current[0]], current[1:3], current[3:5]):
        units.extend(step)
        so_far.extend(step)
        for budget in (0, 3, 8, 13, 40):
            assert units.prompt(SYSTEM, budget) == trim(SYSTEM, so_far, budget, counter)
    assert units.last is current[-1]
    # The history was counted once, not once per prompt.
    counted = counter.counted
    units.prompt(SYSTEM, 5)
    assert counter.counted == counted + 1  # the system message only
