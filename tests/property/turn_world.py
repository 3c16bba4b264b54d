"""A ChatService on the core's fakes, driven synchronously for state machines."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

from copilot_core import (
    BuiltinAgent,
    Conversation,
    Message,
    ModelSelection,
    Session,
    SessionKey,
    TurnRequest,
)
from copilot_core.bootstrap import build_chat_service
from copilot_core.testing import (
    FakeToolExecutor,
    FakeTopologySource,
    InMemoryCheckpointStore,
    ScriptedLanguageModel,
    SequentialIds,
    StaticModelProvider,
    SteppingClock,
)

T = TypeVar("T")
PROJECT, USER = "p", "u"


class TurnWorld:
    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.model = ScriptedLanguageModel()
        self.tools = FakeToolExecutor()
        self.store = InMemoryCheckpointStore()
        clock, ids = SteppingClock(), SequentialIds()
        agent = BuiltinAgent(self.tools, FakeTopologySource(), clock=clock, ids=ids)
        self.service = build_chat_service(
            self.store,
            {"copilot": agent},
            models=StaticModelProvider(ModelSelection(self.model)),
            clock=clock,
            ids=ids,
        )
        self.session_id: str | None = None

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return self.loop.run_until_complete(asyncio.wait_for(coroutine, 10))

    def close(self) -> None:
        self.run(self.service.shutdown(grace=1))
        self.loop.run_until_complete(self.loop.shutdown_asyncgens())
        self.loop.close()

    def request(self, message: str) -> TurnRequest:
        return TurnRequest(PROJECT, USER, message, session_id=self.session_id)

    def session(self) -> Session:
        assert self.session_id is not None
        return self.run(self.service.get_session(SessionKey(PROJECT, self.session_id, USER)))

    def history(self) -> list[Message]:
        assert self.session_id is not None
        _, page = self.run(
            self.service.history(SessionKey(PROJECT, self.session_id, USER), limit=1000)
        )
        return page.messages

    def assert_consistent(self) -> Session:
        """The conversation is valid and complete; counters match the history."""
        history = self.history()
        assert Conversation(history).is_complete
        session = self.session()
        assert session.message_count == len(history)
        assert session.total_tokens == session.input_tokens + session.output_tokens
        return session
