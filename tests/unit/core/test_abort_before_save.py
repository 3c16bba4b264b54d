"""The ``abort`` event does not wait for the aborted turn's messages to be saved;
``done`` still does."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from copilot_core import Message, RunnerSettings, SessionKey
from copilot_core.ports import TextDelta, Usage
from copilot_core.testing import Hang, InMemoryCheckpointStore, tool_reply

from .conftest import ALICE, PROJECT, World, replay


class HeldStore(InMemoryCheckpointStore):
    """Holds every append after the user message until ``release`` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.release = asyncio.Event()
        self.held = 0

    async def append_messages(
        self,
        project_id: str,
        thread_id: str,
        messages: Sequence[Message],
        *,
        usage: Usage | None = None,
        replaces: str | None = None,
    ) -> None:
        if messages[0].role.value != "user":
            self.held += 1
            await self.release.wait()
        await super().append_messages(
            project_id, thread_id, messages, usage=usage, replaces=replaces
        )


async def abort_on(world: World, store: HeldStore, trigger: str) -> list[str]:
    """Start a turn, abort it at its first ``trigger`` event, read up to ``abort``."""
    turn = await world.service.start_turn(world.request("explain"))
    seen: list[str] = []
    async with asyncio.timeout(5):
        async for event in turn.subscribe():
            seen.append(event.type)
            if event.type == trigger and seen.count(trigger) == 1:
                await world.service.abort(SessionKey(PROJECT, turn.session_id, ALICE))
            if event.type == "abort":
                break
    # The abort event came while the save of the aborted step is still held.
    assert store.held == 1
    assert not turn.finished
    store.release.set()
    result = await asyncio.wait_for(turn.wait(), 5)
    assert result.aborted
    assert [e.type for e in await replay(turn)][-2:] == ["abort", "done"]
    return seen


async def test_abort_while_the_model_streams_is_sent_before_the_partial_answer_is_saved() -> None:
    store = HeldStore()
    world = World(store=store)
    world.model.add([TextDelta("Partial"), TextDelta(" answer"), Hang()])

    seen = await abort_on(world, store, "content")

    assert seen[-1] == "abort"
    history = [Message.from_dict(m) for m in await world.messages(await only_session(world))]
    assert history[-1].content == "Partial answer"
    assert history[-1].metadata["aborted"] is True


async def test_abort_while_a_tool_runs_is_sent_before_the_step_is_saved() -> None:
    store = HeldStore()
    world = World(store=store)

    async def forever(args: dict[str, object], ctx: object) -> str:
        await asyncio.sleep(3600)
        return "never"

    world.tools.add("forever", forever)
    world.model.add(tool_reply(("forever", {})))

    seen = await abort_on(world, store, "tool_start")

    assert seen[-2:] == ["tool_end", "abort"]
    history = [Message.from_dict(m) for m in await world.messages(await only_session(world))]
    assert [m.role.value for m in history] == ["user", "assistant", "tool"]
    assert history[-1].content == '{\n  "status": "aborted"\n}'


async def only_session(world: World) -> str:
    (session,) = await world.store.list_sessions(PROJECT, ALICE)
    return session.thread_id


async def test_tokens_already_buffered_when_abort_fires_are_neither_sent_nor_saved() -> None:
    # The model's whole reply is buffered at once; the turn is paused on the draft of its
    # first token (a draft per character) when the user aborts. The rest of the buffer
    # must go nowhere: not to the clients, not into the saved partial answer.
    store = HeldStore()
    world = World(store=store, runner_settings=RunnerSettings(draft_chars=1))
    world.model.add([TextDelta("seen"), TextDelta(" unseen"), TextDelta(" too"), Hang()])
    turn = await world.service.start_turn(world.request("explain"))
    events = []
    async with asyncio.timeout(5):
        async for event in turn.subscribe():
            events.append(event)
            if event.type == "content" and len(events) == 1:
                while store.held < 1:  # the draft of "seen" is being saved
                    await asyncio.sleep(0)
                await world.service.abort(SessionKey(PROJECT, turn.session_id, ALICE))
                store.release.set()
    assert [e.type for e in events] == ["content", "abort", "done"]
    history = [Message.from_dict(m) for m in await world.messages(await only_session(world))]
    assert history[-1].content == "seen"
    assert history[-1].metadata["aborted"] is True
