"""ChatService: validation, user scoping, session management, running turns."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from copilot_core import BuiltinAgent, CopilotMode, SessionKey
from copilot_core.bootstrap import build_chat_service
from copilot_core.errors import (
    AgentNotFoundError,
    InvalidRequestError,
    LLMNotConfiguredError,
    SessionBusyError,
    SessionNotFoundError,
)
from copilot_core.events import ContentEvent
from copilot_core.testing import Hang, StaticModelProvider, text_reply

from .conftest import ALICE, BOB, PROJECT, World


async def until(condition: Callable[[], bool], seconds: float = 5.0) -> None:
    """Wait (bounded) until ``condition`` holds."""
    async with asyncio.timeout(seconds):
        while not condition():
            await asyncio.sleep(0.001)


async def new_session(world: World, message: str = "hello", **kwargs: object) -> str:
    world.model.add(text_reply("answer"), text_reply("A title"))
    events = await world.turn(message, **kwargs)
    return str(events[0]["session_id"])


@pytest.mark.parametrize(
    ("changes", "complaint"),
    [
        ({"message": "   "}, "must not be empty"),
        ({"message": "x" * 32_001}, "the limit is 32000"),
        ({"temperature": 2.5}, "temperature"),
        ({"temperature": -0.1}, "temperature"),
        ({"max_tokens": 0}, "max_tokens"),
    ],
)
async def test_bad_turn_requests_are_refused_and_store_nothing(
    world: World, changes: dict[str, object], complaint: str
) -> None:
    with pytest.raises(InvalidRequestError, match=complaint):
        await world.service.start_turn(world.request(**changes))
    assert await world.store.list_sessions(PROJECT, ALICE) == []


async def test_unknown_agent_or_session_is_refused_and_stores_nothing(world: World) -> None:
    with pytest.raises(AgentNotFoundError, match="available agents: copilot"):
        await world.service.start_turn(world.request(agent_id="nope"))
    with pytest.raises(SessionNotFoundError):
        await world.service.start_turn(world.request(session_id="does-not-exist"))
    assert await world.store.list_sessions(PROJECT, ALICE) == []


async def test_no_llm_settings_is_refused_before_anything_is_stored(world: World) -> None:
    agent = BuiltinAgent(world.tools, world.topology, clock=world.clock, ids=world.ids)
    service = build_chat_service(
        world.store,
        {"copilot": agent},
        models=StaticModelProvider(None),
        clock=world.clock,
        ids=world.ids,
    )
    with pytest.raises(LLMNotConfiguredError, match="llm-config"):
        await service.start_turn(world.request())
    assert await world.store.list_sessions(PROJECT, ALICE) == []


async def test_a_second_turn_on_a_busy_session_is_refused(world: World) -> None:
    session_id = await new_session(world)
    world.model.add([Hang()])
    turn = await world.service.start_turn(world.request("slow", session_id=session_id))
    await until(lambda: len(world.model.calls) == 3)  # the slow reply is streaming
    with pytest.raises(SessionBusyError):
        await world.service.start_turn(world.request("again", session_id=session_id))
    await world.service.abort(SessionKey(PROJECT, session_id, ALICE))
    await asyncio.wait_for(turn.wait(), 5)
    world.model.add(text_reply("now fine"))
    await world.turn("again", session_id=session_id)  # free again


async def test_another_users_session_behaves_exactly_like_a_missing_one(world: World) -> None:
    session_id = await new_session(world)
    service = world.service
    attempts = [
        service.get_session(SessionKey(PROJECT, session_id, BOB)),
        service.history(SessionKey(PROJECT, session_id, BOB)),
        service.rename(SessionKey(PROJECT, session_id, BOB), "mine now"),
        service.set_pinned(SessionKey(PROJECT, session_id, BOB), True),
        service.delete(SessionKey(PROJECT, session_id, BOB)),
        service.abort(SessionKey(PROJECT, session_id, BOB)),
        service.start_turn(world.request(user_id=BOB, session_id=session_id)),
    ]
    for attempt in attempts:
        with pytest.raises(SessionNotFoundError) as caught:
            await attempt
        missing = SessionNotFoundError(session_id)
        assert str(caught.value) == str(missing)
    assert await service.list_sessions(PROJECT, BOB) == []
    assert await service.attach(SessionKey(PROJECT, session_id, BOB)) is None
    session = await service.get_session(SessionKey(PROJECT, session_id, ALICE))
    assert (session.title, session.pinned) == ("A title", False)


async def test_sessions_are_listed_pinned_first_then_newest_first(world: World) -> None:
    first = await new_session(world, "first")
    second = await new_session(world, "second")
    third = await new_session(world, "third")
    await world.service.set_pinned(SessionKey(PROJECT, first, ALICE), True)
    listed = [s.thread_id for s in await world.service.list_sessions(PROJECT, ALICE)]
    assert listed == [first, third, second]
    page = await world.service.list_sessions(PROJECT, ALICE, limit=1, offset=1)
    assert [s.thread_id for s in page] == [third]
    await world.service.set_pinned(SessionKey(PROJECT, first, ALICE), False)
    listed = [s.thread_id for s in await world.service.list_sessions(PROJECT, ALICE)]
    assert listed == [third, second, first]
    with pytest.raises(InvalidRequestError):
        await world.service.list_sessions(PROJECT, ALICE, limit=0)


async def test_sessions_can_be_filtered_by_copilot_mode(world: World) -> None:
    teaching = await new_session(world)
    automation = await new_session(world, copilot_mode=CopilotMode.LAB_AUTOMATION_ASSISTANT)
    only = await world.service.list_sessions(
        PROJECT, ALICE, copilot_mode=CopilotMode.LAB_AUTOMATION_ASSISTANT
    )
    assert [s.thread_id for s in only] == [automation]
    assert teaching != automation


async def test_rename_trims_and_bounds_the_title(world: World) -> None:
    session_id = await new_session(world)
    renamed = await world.service.rename(SessionKey(PROJECT, session_id, ALICE), "  OSPF   lab  ")
    assert renamed.title == "OSPF lab"
    for bad in ("", "   ", "x" * 256):
        with pytest.raises(InvalidRequestError, match="1 to 255"):
            await world.service.rename(SessionKey(PROJECT, session_id, ALICE), bad)
    assert (
        await world.service.rename(SessionKey(PROJECT, session_id, ALICE), "y" * 255)
    ).title == "y" * 255


async def test_delete_removes_the_session_and_its_messages(world: World) -> None:
    session_id = await new_session(world)
    await world.service.delete(SessionKey(PROJECT, session_id, ALICE))
    with pytest.raises(SessionNotFoundError):
        await world.service.history(SessionKey(PROJECT, session_id, ALICE))
    assert await world.store.get_session(PROJECT, session_id) is None


async def test_delete_aborts_a_running_turn_first(world: World) -> None:
    session_id = await new_session(world)
    world.model.add([Hang()])
    turn = await world.service.start_turn(world.request("slow", session_id=session_id))
    await until(lambda: len(world.model.calls) == 3)
    await asyncio.wait_for(world.service.delete(SessionKey(PROJECT, session_id, ALICE)), 5)
    assert turn.finished and turn.result is not None and turn.result.aborted
    assert await world.store.get_session(PROJECT, session_id) is None


async def test_delete_project_removes_every_users_sessions(world: World) -> None:
    await new_session(world)
    await new_session(world, user_id=BOB)
    assert await world.service.delete_project(PROJECT) == 2
    assert await world.service.list_sessions(PROJECT, BOB) == []


async def test_history_pages_back_with_a_cursor(world: World) -> None:
    session_id = await new_session(world, "one")
    for word in ("two", "three"):
        world.model.add(text_reply(f"answer {word}"))
        await world.turn(word, session_id=session_id)
    _, newest = await world.service.history(SessionKey(PROJECT, session_id, ALICE), limit=2)
    assert [m.content for m in newest.messages] == ["three", "answer three"]
    assert newest.next_cursor is not None
    _, older = await world.service.history(
        SessionKey(PROJECT, session_id, ALICE), limit=3, before=newest.next_cursor
    )
    assert [m.content for m in older.messages] == ["answer", "two", "answer two"]
    _, oldest = await world.service.history(
        SessionKey(PROJECT, session_id, ALICE), limit=3, before=older.next_cursor
    )
    assert [m.content for m in oldest.messages] == ["one"]
    assert oldest.next_cursor is None


async def test_counters_grow_by_whole_turns_and_match_the_history(world: World) -> None:
    session_id = await new_session(world)
    world.model.add(text_reply("second", usage=(7, 3)))
    await world.turn("again", session_id=session_id)
    session = await world.service.get_session(SessionKey(PROJECT, session_id, ALICE))
    _, page = await world.service.history(SessionKey(PROJECT, session_id, ALICE), limit=1000)
    assert session.message_count == len(page.messages) == 4
    assert (session.llm_calls_count, session.input_tokens, session.output_tokens) == (2, 17, 8)
    assert session.total_tokens == 25
    assert session.last_message_at == session.updated_at


async def test_a_late_subscriber_replays_the_turn_and_then_follows_it_live(world: World) -> None:
    world.model.add([*text_reply("abc", chunk=1)[:2], Hang(0.05), *text_reply("abc", chunk=1)[2:]])
    world.model.add(text_reply("t"))
    turn = await world.service.start_turn(world.request())
    early = [e async for e in turn.subscribe()]
    late = [e async for e in turn.subscribe(after=2)]
    assert [e.seq for e in early] == list(range(1, len(early) + 1))
    assert late == early[2:]
    assert early[-1].type == "done"
    again = await world.service.attach(
        SessionKey(PROJECT, turn.session_id, ALICE)
    )  # still attachable
    assert again is not None and again.turn_id == turn.turn_id and again.finished
    assert [e async for e in again.subscribe(after=again.last_seq - 1)] == early[-1:]


async def test_heartbeats_are_sent_while_the_turn_is_quiet(world: World) -> None:
    world.model.add([Hang(0.3), *text_reply("late")], text_reply("t"))
    turn = await world.service.start_turn(world.request())
    events = [e async for e in turn.subscribe(heartbeat=0.05)]
    beats = [e for e in events if e.type == "heartbeat"]
    assert len(beats) >= 2
    assert all(e.seq == 0 for e in beats)
    assert [e.seq for e in events if e.type != "heartbeat"] == list(
        range(1, len(events) - len(beats) + 1)
    )


async def test_observers_see_every_event_of_every_turn(world: World) -> None:
    world.model.add(text_reply("answer"), text_reply("t"))
    events = await world.turn("x")
    assert world.sink.types() == [e["type"] for e in events]


async def test_shutdown_aborts_running_turns_and_lets_them_save(world: World) -> None:
    session_id = await new_session(world)
    world.model.add([*text_reply("partial", usage=None)[:-1], Hang()])
    turn = await world.service.start_turn(world.request("slow", session_id=session_id))
    await until(
        lambda: any(
            info.turn_id == turn.turn_id and isinstance(event, ContentEvent)
            for info, event in world.sink.seen
        )
    )
    await world.service.shutdown(grace=5)
    assert turn.result is not None and turn.result.aborted
    session = await world.service.get_session(SessionKey(PROJECT, session_id, ALICE))
    _, page = await world.service.history(SessionKey(PROJECT, session_id, ALICE), limit=1000)
    assert page.messages[-1].content == "partial"
    assert session.message_count == len(page.messages)


async def test_the_last_question_can_be_asked_again_and_counters_keep_only_what_stays(
    world: World,
) -> None:
    world.model.add(text_reply("first answer", usage=(100, 10)), text_reply("A title"))
    session_id = str((await world.turn("what is OSPF?"))[0]["session_id"])
    world.model.add(text_reply("second answer", usage=(200, 20)))
    await world.turn("and BGP?", session_id=session_id)
    history = await world.messages(session_id)
    question = history[2]
    assert question["content"] == "and BGP?"
    world.model.add(text_reply("BGP, again", usage=(300, 30)))
    events = await world.turn(
        "and BGP, briefly?", session_id=session_id, replace_from=question["id"]
    )
    assert events[-1]["type"] == "done"
    after = await world.messages(session_id)
    assert [m["content"] for m in after] == [
        "what is OSPF?",
        "first answer",
        "and BGP, briefly?",
        "BGP, again",
    ]
    session = await world.service.get_session(SessionKey(PROJECT, session_id, ALICE))
    assert session.message_count == 4
    assert (session.llm_calls_count, session.input_tokens, session.output_tokens) == (2, 400, 40)


async def test_only_the_last_question_can_be_replaced(world: World) -> None:
    world.model.add(text_reply("one"), text_reply("A title"), text_reply("two"))
    session_id = str((await world.turn("first"))[0]["session_id"])
    await world.turn("second", session_id=session_id)
    first = (await world.messages(session_id))[0]
    with pytest.raises(InvalidRequestError, match="last question"):
        await world.service.start_turn(
            world.request("again", session_id=session_id, replace_from=first["id"])
        )
    with pytest.raises(InvalidRequestError, match="session_id"):
        await world.service.start_turn(world.request("again", replace_from=first["id"]))
    assert len(await world.messages(session_id)) == 4


async def test_sessions_are_found_by_title_and_text(world: World) -> None:
    world.model.add(text_reply("Use an MTU of 1500 on both ends."), text_reply("MTU trouble"))
    session_id = str((await world.turn("OSPF neighbours stuck in EXSTART"))[0]["session_id"])
    found = await world.service.search_sessions(PROJECT, ALICE, "  mtu ")
    assert [(m.session.thread_id, m.message_id is not None) for m in found] == [(session_id, True)]
    assert await world.service.search_sessions(PROJECT, BOB, "mtu") == []
    with pytest.raises(InvalidRequestError):
        await world.service.search_sessions(PROJECT, ALICE, "   ")
