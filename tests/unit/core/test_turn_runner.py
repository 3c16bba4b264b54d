"""The turn runner: every failure inside a turn ends it (error, then done) and releases
its session; drafts of a streaming answer; shutdown; observers."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Callable, Sequence

import pytest

from copilot_core import (
    AbortToken,
    BuiltinAgent,
    ChatService,
    ModelSelection,
    RunnerSettings,
    SessionKey,
    TurnRequest,
    TurnRunner,
)
from copilot_core.bootstrap import (
    HistoryWindows,
    InMemorySessionLeases,
    InMemoryTurnControlRelay,
    InMemoryTurnLog,
    build_chat_service,
)
from copilot_core.errors import (
    ServiceUnavailableError,
    SessionBusyError,
    SessionNotFoundError,
    StoreError,
)
from copilot_core.events import AgentEvent, ContentEvent, TurnEvent
from copilot_core.ports import (
    AgentCapabilities,
    AgentInfo,
    AgentRunConfig,
    Message,
    Role,
    Session,
    SessionClaim,
    TextDelta,
    TurnControl,
    TurnInfo,
    Usage,
)
from copilot_core.testing import (
    FakeToolExecutor,
    Hang,
    InMemoryCheckpointStore,
    RecordingEventSink,
    ScriptedLanguageModel,
    SequentialIds,
    StaticModelProvider,
    SteppingClock,
    text_reply,
)

PROJECT = "project-1"
ALICE = "alice"


class RecordingLeases(InMemorySessionLeases):
    """In-memory leases that keep every claim they handed out."""

    def __init__(self) -> None:
        super().__init__()
        self.claims: list[SessionClaim] = []

    async def claim(self, project_id: str, session_id: str, holder: str) -> SessionClaim:
        claim = await super().claim(project_id, session_id, holder)
        self.claims.append(claim)
        return claim


class Rig:
    """A ChatService over a runner built by hand (to set the runner's settings)."""

    def __init__(self, settings: RunnerSettings | None = None, *observers: object) -> None:
        self.model = ScriptedLanguageModel()
        self.store = InMemoryCheckpointStore()
        self.sink = RecordingEventSink()
        ids = SequentialIds()
        clock = SteppingClock()
        agent = BuiltinAgent(FakeToolExecutor(), None, clock=clock, ids=ids)
        self.leases = RecordingLeases()
        self.runner = TurnRunner(
            self.store,
            InMemoryTurnLog(retention=5),
            HistoryWindows(self.store),
            leases=self.leases,
            controls=InMemoryTurnControlRelay(),
            models=StaticModelProvider(ModelSelection(self.model)),
            clock=clock,
            ids=ids,
            settings=settings,
            observers=[self.sink, *observers],  # type: ignore[list-item]
        )
        self.chat = ChatService(self.store, {"copilot": agent}, self.runner, clock=clock)

    def request(self, message: str = "hello", **kwargs: object) -> TurnRequest:
        return TurnRequest(PROJECT, ALICE, message, **kwargs)  # type: ignore[arg-type]


async def until(condition: Callable[[], bool], seconds: float = 5.0) -> None:
    async with asyncio.timeout(seconds):
        while not condition():
            await asyncio.sleep(0.001)


async def follow(events: object) -> list[TurnEvent]:
    async with asyncio.timeout(10):
        return [event async for event in events]  # type: ignore[attr-defined]


def content_seen(rig: Rig, turn_id: str) -> bool:
    return any(
        info.turn_id == turn_id and isinstance(event, ContentEvent) for info, event in rig.sink.seen
    )


async def test_a_session_deleted_mid_turn_ends_the_turn_and_frees_everything() -> None:
    # Another process sharing the data directory deletes the session while the answer
    # streams: the next save finds no session, and the turn ends (error, then done).
    rig = Rig(RunnerSettings(draft_interval=0.02))
    rig.model.add([TextDelta("I am looking"), Hang(0.1), TextDelta(" into it"), Hang()])
    turn = await rig.chat.start_turn(rig.request())
    await until(lambda: content_seen(rig, turn.turn_id))
    assert await rig.store.delete_session(PROJECT, turn.session_id)
    events = await follow(turn.subscribe())
    assert [e.type for e in events][-2:] == ["error", "done"]
    error = events[-2].event
    assert error.code == "session_not_found"  # type: ignore[union-attr]
    result = await asyncio.wait_for(turn.wait(), 5)
    assert result.error is not None
    assert not await rig.runner.running(PROJECT, turn.session_id)
    assert rig.model.closed_early == 1  # the model's stream was closed, not left hanging


async def test_a_backend_that_breaks_ends_with_error_then_done_and_the_session_is_free() -> None:
    class Broken:
        def capabilities(self) -> AgentCapabilities:
            return AgentCapabilities(backend="python", uses_llm_settings=False)

        def agents(self) -> Sequence[AgentInfo]:
            return (AgentInfo("copilot", "Broken", ""),)

        async def run(
            self, query: str, history: Sequence[Message], config: AgentRunConfig
        ) -> AsyncGenerator[AgentEvent, None]:
            yield ContentEvent("half")
            raise RuntimeError("the backend broke")

    rig = Rig()
    chat = build_chat_service(
        rig.store, {"copilot": Broken()}, models=None, clock=SteppingClock(), ids=SequentialIds()
    )
    turn = await chat.start_turn(rig.request())
    events = await follow(turn.subscribe())
    assert [e.type for e in events] == ["content", "error", "done"]
    assert events[1].event.code == "internal"  # type: ignore[union-attr]
    again = await chat.start_turn(rig.request("again", session_id=turn.session_id))
    assert [e.type for e in await follow(again.subscribe())][-1] == "done"


async def test_a_backend_that_breaks_after_a_draft_leaves_the_answer_marked_incomplete() -> None:
    class Broken:
        def capabilities(self) -> AgentCapabilities:
            return AgentCapabilities(backend="python", uses_llm_settings=False)

        def agents(self) -> Sequence[AgentInfo]:
            return (AgentInfo("copilot", "Broken", ""),)

        async def run(
            self, query: str, history: Sequence[Message], config: AgentRunConfig
        ) -> AsyncGenerator[AgentEvent, None]:
            yield ContentEvent("OSPF is ")
            await asyncio.sleep(0.05)
            yield ContentEvent("a link-state")  # saved as a draft
            yield ContentEvent(" protocol")
            raise RuntimeError("the backend broke")

    rig = Rig()
    runner = TurnRunner(
        rig.store,
        InMemoryTurnLog(retention=5),
        HistoryWindows(rig.store),
        leases=InMemorySessionLeases(),
        controls=InMemoryTurnControlRelay(),
        models=None,
        clock=SteppingClock(),
        ids=SequentialIds(),
        settings=RunnerSettings(draft_interval=0.01),
    )
    chat = ChatService(rig.store, {"copilot": Broken()}, runner, clock=SteppingClock())
    turn = await chat.start_turn(rig.request("what is OSPF?"))
    await follow(turn.subscribe())
    result = await asyncio.wait_for(turn.wait(), 5)
    saved = (await rig.store.history(PROJECT, turn.session_id)).messages
    assert [m.role for m in saved] == [Role.USER, Role.ASSISTANT]
    answer = saved[-1]
    assert answer.content == "OSPF is a link-state protocol" and "partial" not in answer.metadata
    assert answer.metadata["incomplete"] == {
        "reason": "error",
        "code": "internal",
        "message": result.error,
    }
    assert result.messages[-1] == answer
    session = await rig.store.get_session(PROJECT, turn.session_id)
    assert session is not None and session.message_count == 2


async def test_a_streaming_answer_is_saved_as_a_draft_then_replaced_by_its_step() -> None:
    rig = Rig(RunnerSettings(draft_interval=0.02, draft_chars=10_000))
    rig.model.add([TextDelta("OSPF is "), Hang(0.05), TextDelta("a link-state protocol"), Hang()])
    rig.model.add(text_reply("Title"))
    turn = await rig.chat.start_turn(rig.request("what is OSPF?"))

    async def stored() -> list[Message]:
        return (await rig.store.history(PROJECT, turn.session_id)).messages

    async with asyncio.timeout(5):
        while not any(m.metadata.get("partial") for m in await stored()):
            await asyncio.sleep(0.005)
    saved = await stored()
    draft = saved[-1]
    assert draft.metadata["partial"] is True
    assert draft.content.startswith("OSPF is")
    session = await rig.store.get_session(PROJECT, turn.session_id)
    assert session is not None and session.message_count == len(saved) == 2
    # A client reading the history while the turn runs does not see the draft twice.
    _, page = await rig.chat.history(SessionKey(PROJECT, turn.session_id, ALICE))
    assert [m.role.value for m in page.messages] == ["user"]

    assert await rig.chat.abort(SessionKey(PROJECT, turn.session_id, ALICE))
    await asyncio.wait_for(turn.wait(), 5)
    final = await stored()
    assert [m.role.value for m in final] == ["user", "assistant"]
    assert final[-1].content == "OSPF is a link-state protocol"
    assert final[-1].metadata.get("aborted") is True and "partial" not in final[-1].metadata
    session = await rig.store.get_session(PROJECT, turn.session_id)
    assert session is not None and session.message_count == 2


async def test_shutdown_refuses_new_turns_and_ends_the_running_ones() -> None:
    rig = Rig()
    rig.model.add([TextDelta("thinking"), Hang()])
    turn = await rig.chat.start_turn(rig.request())
    await until(lambda: content_seen(rig, turn.turn_id))
    stopping = asyncio.create_task(rig.chat.shutdown(grace=5))
    await until(lambda: rig.runner.closing)
    with pytest.raises(ServiceUnavailableError) as refused:
        await rig.chat.start_turn(rig.request("too late"))
    assert refused.value.retry_after is not None
    await asyncio.wait_for(stopping, 10)
    events = await follow(turn.subscribe())
    assert [e.type for e in events][-2:] == ["abort", "done"]
    assert (await turn.wait()).aborted


async def test_a_turn_claimed_while_shutdown_begins_is_aborted_not_left_running() -> None:
    # A request already past its checks when shutdown begins: its turn starts aborted.
    rig = Rig()
    rig.model.add([TextDelta("never sent"), Hang()])
    gate = asyncio.Event()
    selected = asyncio.Event()

    class SlowProvider(StaticModelProvider):
        async def for_user(self, user_id: str, overrides: object) -> ModelSelection:  # type: ignore[override]
            selected.set()
            await gate.wait()
            return ModelSelection(rig.model)

    rig.runner.starter._models = SlowProvider(None)
    starting = asyncio.create_task(rig.chat.start_turn(rig.request()))
    await asyncio.wait_for(selected.wait(), 5)
    stopping = asyncio.create_task(rig.chat.shutdown(grace=5))
    await until(lambda: rig.runner.closing)
    gate.set()
    turn = await asyncio.wait_for(starting, 5)
    await asyncio.wait_for(stopping, 10)
    events = await follow(turn.subscribe())
    assert [e.type for e in events] == ["abort", "done"]
    assert rig.model.calls == []  # the model was never asked


async def test_an_observer_that_raises_does_not_disturb_the_turn() -> None:
    class Faulty:
        def emit(self, turn: TurnInfo, event: AgentEvent) -> None:
            raise RuntimeError("observer bug")

    rig = Rig(None, Faulty())
    rig.model.add(text_reply("fine"), text_reply("Title"))
    turn = await rig.chat.start_turn(rig.request())
    events = await follow(turn.subscribe())
    assert [e.type for e in events][-1] == "done"
    assert (await turn.wait()).error is None
    assert "content" in rig.sink.types()


async def test_another_turn_on_a_busy_session_is_refused_until_the_first_ends() -> None:
    rig = Rig()
    rig.model.add(text_reply("first"), text_reply("Title"))
    turn = await rig.chat.start_turn(rig.request())
    await follow(turn.subscribe())
    rig.model.add([TextDelta("slow"), Hang()])
    busy = await rig.chat.start_turn(rig.request("second", session_id=turn.session_id))
    await until(lambda: content_seen(rig, busy.turn_id))
    with pytest.raises(SessionBusyError):
        await rig.chat.start_turn(rig.request("third", session_id=turn.session_id))
    assert await rig.chat.abort(SessionKey(PROJECT, turn.session_id, ALICE))
    await follow(busy.subscribe())
    rig.model.add(text_reply("fourth"))
    fourth = await rig.chat.start_turn(rig.request("fourth", session_id=turn.session_id))
    assert [e.type for e in await follow(fourth.subscribe())][-1] == "done"
    with pytest.raises(SessionNotFoundError):
        await rig.chat.start_turn(rig.request("x", session_id="no-such-session"))


async def test_a_question_the_store_cannot_take_leaves_no_new_session_behind() -> None:
    # The new session and its question are one write: when the question cannot be
    # stored, there is no empty session left in the user's list.
    class QuestionRefusingStore(InMemoryCheckpointStore):
        async def create_session(
            self, session: Session, messages: Sequence[Message] = ()
        ) -> Session:
            if messages:
                raise StoreError("The disk is full.")
            return await super().create_session(session, messages)

        async def append_messages(
            self,
            project_id: str,
            thread_id: str,
            messages: Sequence[Message],
            *,
            usage: Usage | None = None,
            replaces: str | None = None,
        ) -> None:
            if any(message.role is Role.USER for message in messages):
                raise StoreError("The disk is full.")
            await super().append_messages(
                project_id, thread_id, messages, usage=usage, replaces=replaces
            )

    rig = Rig()
    store = QuestionRefusingStore()
    clock, ids = SteppingClock(), SequentialIds()
    chat = build_chat_service(
        store,
        {"copilot": BuiltinAgent(FakeToolExecutor(), None, clock=clock, ids=ids)},
        models=StaticModelProvider(ModelSelection(rig.model)),
        clock=clock,
        ids=ids,
    )
    with pytest.raises(StoreError, match="disk is full"):
        await chat.start_turn(rig.request("why is R1 down?"))
    assert await store.list_sessions(PROJECT, ALICE) == []


async def test_a_session_held_by_a_rollback_takes_no_turn_until_it_is_let_go() -> None:
    rig = Rig()
    rig.model.add(text_reply("first"), text_reply("Title"))
    first = await rig.chat.start_turn(rig.request())
    await follow(first.subscribe())
    rollback = await rig.leases.claim(PROJECT, first.session_id, "rollback-1")

    with pytest.raises(SessionBusyError):
        await rig.chat.start_turn(rig.request("again", session_id=first.session_id))
    assert await rig.leases.holder(PROJECT, first.session_id) == "rollback-1"

    await rig.leases.release(rollback)
    rig.model.add(text_reply("second"))
    second = await rig.chat.start_turn(rig.request("again", session_id=first.session_id))
    assert [e.type for e in await follow(second.subscribe())][-1] == "done"


async def test_a_turn_whose_claim_on_the_session_is_lost_is_aborted() -> None:
    rig = Rig()
    rig.model.add([TextDelta("working"), Hang()])
    turn = await rig.chat.start_turn(rig.request())
    await until(lambda: content_seen(rig, turn.turn_id))
    (claim,) = rig.leases.claims
    assert claim.holder == turn.turn_id

    claim.lost.abort("this copilot replica lost its claim on the session")

    assert [e.type for e in await follow(turn.subscribe())][-2:] == ["abort", "done"]
    result = await asyncio.wait_for(turn.wait(), 5)
    assert result.aborted
    assert await rig.leases.holder(PROJECT, turn.session_id) is None


async def test_a_client_that_sees_done_can_start_the_next_turn_at_once() -> None:
    rig = Rig()
    rig.model.add(text_reply("first"), text_reply("Title"), text_reply("second"))
    first = await rig.chat.start_turn(rig.request())
    follow_up = None
    async with asyncio.timeout(10):
        async for event in first.subscribe():
            if event.type == "done":  # the session is free by now, whatever comes next
                follow_up = await rig.chat.start_turn(
                    rig.request("and then?", session_id=first.session_id)
                )
    assert follow_up is not None
    assert [e.type for e in await follow(follow_up.subscribe())][-1] == "done"
    assert not await rig.chat.abort(SessionKey(PROJECT, first.session_id, ALICE))  # nothing runs


class UnreachableLog(InMemoryTurnLog):
    """A turn log that cannot open a turn (its server went away after the claim)."""

    async def open(self, turn: TurnInfo, abort: AbortToken) -> None:
        await asyncio.sleep(0)
        raise ServiceUnavailableError("The turn log (Redis) cannot be reached.")


class UnreachableRelay(InMemoryTurnControlRelay):
    async def attach(self, turn: TurnInfo, control: TurnControl) -> None:
        await asyncio.sleep(0)
        raise ServiceUnavailableError("The turn control relay (Redis) cannot be reached.")


@pytest.mark.parametrize("broken", ["log", "relay"])
async def test_a_turn_that_cannot_open_leaves_nothing_stored_and_the_session_free(
    broken: str,
) -> None:
    # The log opens and the relay attaches while the new session is saved: when either
    # fails, the new session goes again, and an existing one is left as it was.
    store = InMemoryCheckpointStore()
    model = ScriptedLanguageModel(default=text_reply("R1 is up."))
    clock, ids = SteppingClock(), SequentialIds()
    leases = InMemorySessionLeases()

    def chat(working: bool) -> ChatService:
        log = InMemoryTurnLog(retention=5)
        relay = InMemoryTurnControlRelay()
        if not working:
            log, relay = (UnreachableLog(), relay) if broken == "log" else (log, UnreachableRelay())
        return build_chat_service(
            store,
            {"copilot": BuiltinAgent(FakeToolExecutor(), None, clock=clock, ids=ids)},
            models=StaticModelProvider(ModelSelection(model)),
            clock=clock,
            ids=ids,
            turn_log=log,
            leases=leases,
            controls=relay,
        )

    failing = chat(working=False)
    with pytest.raises(ServiceUnavailableError, match="cannot be reached"):
        await failing.start_turn(TurnRequest(PROJECT, ALICE, "why is R1 down?"))
    assert await store.list_sessions(PROJECT, ALICE) == []

    first = await chat(working=True).start_turn(TurnRequest(PROJECT, ALICE, "is R1 up?"))
    await follow(first.subscribe())
    before = await store.history(PROJECT, first.session_id)
    with pytest.raises(ServiceUnavailableError, match="cannot be reached"):
        await failing.start_turn(TurnRequest(PROJECT, ALICE, "and R2?", first.session_id))
    assert await store.history(PROJECT, first.session_id) == before
    assert await leases.holder(PROJECT, first.session_id) is None


async def test_an_abort_asked_while_the_turn_lets_go_does_not_make_it_aborted() -> None:
    # The turn's work is saved and it is letting go of its session (on Redis: a round
    # trip) when an abort comes: it ran to its end, no ``abort`` is sent, and its result
    # says so. The result says ``aborted`` exactly when the clients were sent ``abort``.
    store = InMemoryCheckpointStore()
    model = ScriptedLanguageModel(default=text_reply("R1 is up."))
    clock, ids = SteppingClock(), SequentialIds()
    chat: ChatService | None = None
    asked: list[bool] = []

    class AbortingRelay(InMemoryTurnControlRelay):
        async def detach(self, turn: TurnInfo) -> None:
            assert chat is not None
            asked.append(await chat.abort(SessionKey(PROJECT, turn.session_id, ALICE)))
            await asyncio.sleep(0)
            await super().detach(turn)

    chat = build_chat_service(
        store,
        {"copilot": BuiltinAgent(FakeToolExecutor(), None, clock=clock, ids=ids)},
        models=StaticModelProvider(ModelSelection(model)),
        clock=clock,
        ids=ids,
        controls=AbortingRelay(),
    )
    turn = await chat.start_turn(TurnRequest(PROJECT, ALICE, "is R1 up?"))
    events = [e.type for e in await follow(turn.subscribe())]
    result = await asyncio.wait_for(turn.wait(), 5)
    assert asked == [True]  # the abort did reach the turn
    assert "abort" not in events
    assert events[-1] == "done"
    assert not result.aborted
    assert result.content == "R1 is up."
