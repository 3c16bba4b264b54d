from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from copilot_core import (
    AgentSettings,
    BuiltinAgent,
    ChatService,
    ChatSettings,
    CopilotMode,
    ModelSelection,
    PromptBook,
    RunnerSettings,
    SessionKey,
    TurnHandle,
    TurnRequest,
    TurnRunner,
)
from copilot_core.bootstrap import (
    HistoryWindows,
    InMemorySessionLeases,
    InMemoryTurnControlRelay,
    InMemoryTurnLog,
)
from copilot_core.events import TurnEvent, event_to_record
from copilot_core.testing import (
    FakeToolExecutor,
    FakeTopologySource,
    InMemoryCheckpointStore,
    RecordingEventSink,
    ScriptedLanguageModel,
    SequentialIds,
    StaticModelProvider,
    SteppingClock,
)

PROJECT = "project-1"
ALICE = "alice"
BOB = "bob"


@dataclass
class World:
    """Everything a ChatService test needs, built from the core's own fakes."""

    model: ScriptedLanguageModel = field(default_factory=ScriptedLanguageModel)
    tools: FakeToolExecutor = field(default_factory=FakeToolExecutor)
    topology: FakeTopologySource = field(default_factory=FakeTopologySource)
    store: InMemoryCheckpointStore = field(default_factory=InMemoryCheckpointStore)
    sink: RecordingEventSink = field(default_factory=RecordingEventSink)
    clock: SteppingClock = field(default_factory=SteppingClock)
    ids: SequentialIds = field(default_factory=SequentialIds)
    agent_settings: AgentSettings = field(default_factory=AgentSettings)
    context_limit: int = 32_000
    title_model: ScriptedLanguageModel | None = None
    #: The user's model selection (default: ``model``, ``title_model``, ``context_limit``).
    selection: ModelSelection | None = None
    runner_settings: RunnerSettings | None = None
    prompts: PromptBook | None = None
    _service: ChatService | None = None

    @property
    def service(self) -> ChatService:
        if self._service is None:
            agent = BuiltinAgent(
                self.tools,
                self.topology,
                clock=self.clock,
                ids=self.ids,
                settings=self.agent_settings,
                prompts=self.prompts,
            )
            selection = self.selection or ModelSelection(
                self.model, title_model=self.title_model, context_limit=self.context_limit
            )
            models = StaticModelProvider(selection)
            runner = TurnRunner(
                self.store,
                InMemoryTurnLog(retention=5.0),
                HistoryWindows(self.store),
                leases=InMemorySessionLeases(),
                controls=InMemoryTurnControlRelay(),
                models=models,
                clock=self.clock,
                ids=self.ids,
                settings=self.runner_settings,
                observers=[self.sink],
            )
            self._service = ChatService(
                self.store,
                {"copilot": agent},
                runner,
                clock=self.clock,
                settings=ChatSettings(finished_turn_retention=5.0),
            )
        return self._service

    def request(self, message: str = "hello", **kwargs: object) -> TurnRequest:
        fields: dict[str, object] = {"project_id": PROJECT, "user_id": ALICE, "message": message}
        fields.update(kwargs)
        return TurnRequest(**fields)  # type: ignore[arg-type]

    async def turn(self, message: str = "hello", **kwargs: object) -> list[dict[str, object]]:
        """Run one turn to its end; the wire events it produced."""
        return [as_dict(e) async for e in self.service.stream_turn(self.request(message, **kwargs))]

    async def messages(self, session_id: str, user: str = ALICE) -> list[dict[str, object]]:
        _, page = await self.service.history(SessionKey(PROJECT, session_id, user), limit=1000)
        return [m.to_dict() for m in page.messages]


def as_dict(stamped: TurnEvent) -> dict[str, object]:
    """A stamped event as plain data: ``type``, ``session_id`` and the event's fields."""
    return {"session_id": stamped.session_id, **event_to_record(stamped.event)}


async def replay(turn: TurnHandle) -> list[TurnEvent]:
    """Every event of a turn that has ended, as its log still holds them."""
    assert turn.finished
    return [event async for event in turn.subscribe()]


@pytest.fixture
def world() -> World:
    return World()


__all__ = ["ALICE", "BOB", "PROJECT", "CopilotMode", "World", "as_dict", "replay"]
