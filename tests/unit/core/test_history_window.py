"""ChatService reads only the newest history that can fit in the model's context,
and the model is prompted exactly as if it had read all of it."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import pytest

from copilot_core import (
    AgentSettings,
    BuiltinAgent,
    ChatService,
    ChatSettings,
    Message,
    ModelSelection,
    Role,
    SessionKey,
    ToolSpec,
    TurnRequest,
)
from copilot_core.bootstrap import build_chat_service
from copilot_core.errors import SessionNotFoundError
from copilot_core.ports import HistoryPage
from copilot_core.testing import (
    FakeToolExecutor,
    InMemoryCheckpointStore,
    ScriptedLanguageModel,
    SequentialIds,
    StaticModelProvider,
    SteppingClock,
    text_reply,
    tool_reply,
)

from .conftest import ALICE, PROJECT


class ReadCountingStore(InMemoryCheckpointStore):
    """Counts the messages every ``history`` call returns."""

    def __init__(self) -> None:
        super().__init__()
        self.read: list[int] = []

    async def history(
        self,
        project_id: str,
        thread_id: str,
        *,
        limit: int | None = None,
        before: int | None = None,
    ) -> HistoryPage:
        page = await super().history(project_id, thread_id, limit=limit, before=before)
        self.read.append(len(page.messages))
        return page


def look_then_answer(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> list[Any]:
    if messages[-1].role is Role.TOOL:
        return text_reply("R3's Gi0/1 is down and the hello timers differ. " * 3)
    return tool_reply(("look", {"node": "R3"}), ids=[f"call-{len(messages)}"])


def build(settings: ChatSettings) -> tuple[ChatService, ReadCountingStore, ScriptedLanguageModel]:
    store = ReadCountingStore()
    model = ScriptedLanguageModel(default=look_then_answer)
    tools = FakeToolExecutor().add("look", lambda args, ctx: {"interfaces": "Gi0/1 down " * 8})
    clock, ids = SteppingClock(), SequentialIds()
    agent = BuiltinAgent(
        tools, None, clock=clock, ids=ids, settings=AgentSettings(output_reserve_tokens=50)
    )
    title = ScriptedLanguageModel(default=text_reply("A title"))
    chat = build_chat_service(
        store,
        {"copilot": agent},
        models=StaticModelProvider(ModelSelection(model, title_model=title, context_limit=1500)),
        clock=clock,
        ids=ids,
        settings=settings,
    )
    return chat, store, model


async def run_turns(
    chat: ChatService, store: ReadCountingStore, turns: int, session_id: str | None = None
) -> str:
    for n in range(turns):
        store.read.clear()
        request = TurnRequest(PROJECT, ALICE, f"question {n}", session_id)
        async for event in chat.stream_turn(request):
            session_id = event.session_id
    assert session_id is not None
    return session_id


async def prompts_after(turns: int, settings: ChatSettings) -> tuple[list[Any], list[int], int]:
    """The last turn's model calls, the messages each history read returned, the total."""
    chat, store, model = build(settings)
    session_id = await run_turns(chat, store, turns)
    reads = list(store.read)
    total = len((await store.history(PROJECT, session_id)).messages)
    return [call.messages for call in model.calls[-2:]], reads, total


async def test_a_long_history_is_read_in_part_and_prompts_the_model_the_same() -> None:
    whole, whole_reads, total = await prompts_after(60, ChatSettings(history_chars_per_token=None))
    # 4 characters a token is exact for the approximate counter the agent uses here;
    # pages of 7 messages cut steps (4 messages a turn) in two at the window's edge.
    window, window_reads, _ = await prompts_after(
        60, ChatSettings(history_chars_per_token=4, history_page=7, history_cache_sessions=0)
    )

    assert window == whole
    assert whole_reads == [total - 4]  # the whole history before the last turn
    assert all(read == 7 for read in window_reads)
    # 1500 tokens x 4 characters: about 23 turns of ~265 characters, not 59.
    assert 20 * 4 < sum(window_reads) < 30 * 4
    # The prompt kept more than half of what was read: the window is not much wider
    # than the context (and a narrower one would change the prompt, see below).
    assert len(window[0]) > sum(window_reads) // 2


async def test_a_window_narrower_than_the_context_would_change_the_prompt() -> None:
    # The guard of the test above: reading too little is visible in the prompt.
    whole, _, _ = await prompts_after(60, ChatSettings(history_chars_per_token=None))
    narrow, _, _ = await prompts_after(
        60, ChatSettings(history_chars_per_token=1, history_page=7, history_cache_sessions=0)
    )

    assert len(narrow[0]) < len(whole[0])


async def test_a_short_history_is_read_whole() -> None:
    whole, _, _ = await prompts_after(3, ChatSettings(history_chars_per_token=None))
    window, reads, total = await prompts_after(
        3, ChatSettings(history_page=7, history_cache_sessions=0)
    )

    assert window == whole
    assert sum(reads) == total - 4 == 8


async def test_the_window_is_kept_for_the_next_turn_and_prompts_the_model_the_same() -> None:
    whole, _, _ = await prompts_after(60, ChatSettings(history_chars_per_token=None))
    kept, reads, _ = await prompts_after(
        60, ChatSettings(history_chars_per_token=4, history_page=7)
    )

    assert kept == whole
    assert reads == []  # the last turn read nothing: the turn before kept its window


async def test_a_new_sessions_first_turn_keeps_its_window_for_the_second() -> None:
    # The first turn creates the session with its question in one write; the window it
    # keeps counts that question once, so the second turn finds it current.
    chat, store, _ = build(ChatSettings(history_page=7))
    session_id = await run_turns(chat, store, 1)
    await run_turns(chat, store, 1, session_id)
    assert store.read == []


async def test_a_kept_window_is_not_used_once_the_session_changed_elsewhere() -> None:
    chat, store, model = build(ChatSettings(history_page=7))
    session_id = await run_turns(chat, store, 3)
    await run_turns(chat, store, 1, session_id)
    assert store.read == []
    # Someone else (another process on the same database) adds a message.
    outside = Message.user("outside", "a question asked elsewhere", datetime.now(UTC))
    await store.append_messages(PROJECT, session_id, [outside])
    await store.record_turn(PROJECT, session_id, datetime.now(UTC))

    await run_turns(chat, store, 1, session_id)

    assert sum(store.read) == 4 * 4 + 1
    assert "outside" in [m.id for m in model.calls[-1].messages]


async def test_a_deleted_session_leaves_no_window_behind() -> None:
    chat, store, _ = build(ChatSettings(history_page=7))
    session_id = await run_turns(chat, store, 2)
    await chat.delete(SessionKey(PROJECT, session_id, ALICE))
    with pytest.raises(SessionNotFoundError):
        await run_turns(chat, store, 1, session_id)
