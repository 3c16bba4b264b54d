"""The HTTP service on a real uvicorn server on 127.0.0.1, around the core's fakes."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
import uvicorn

from adapters.web import WebDependencies, WebSettings, create_web_app
from adapters.web.testing import (
    InMemoryLLMConfigRepository,
    StaticAuthenticator,
    StaticProjectGate,
)
from copilot_core import (
    BuiltinAgent,
    ChatService,
    ChatSettings,
    ModelSelection,
    Principal,
)
from copilot_core.testing import (
    FakeToolExecutor,
    FakeTopologySource,
    InMemoryCheckpointStore,
    ScriptedLanguageModel,
    SequentialIds,
    StaticModelProvider,
    SteppingClock,
)

ALICE = "token-alice"
BOB = "token-bob"
ADMIN = "token-admin"
OPEN = "project-open"
CLOSED = "project-closed"


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@dataclass
class Service:
    """One running service and the fakes behind it."""

    base_url: str
    chat: ChatService
    store: InMemoryCheckpointStore
    model: ScriptedLanguageModel
    tools: FakeToolExecutor
    models: StaticModelProvider
    authenticator: StaticAuthenticator
    gate: StaticProjectGate
    llm_config: InMemoryLLMConfigRepository
    reloads: list[int] = field(default_factory=list)

    def client(self, token: str | None = ALICE, **kwargs: Any) -> httpx.AsyncClient:
        headers = auth(token) if token else {}
        return httpx.AsyncClient(
            base_url=self.base_url, headers=headers, timeout=httpx.Timeout(10.0), **kwargs
        )

    def chat_url(self, project: str = OPEN) -> str:
        return f"/v3/copilot/projects/{project}/chat"


ServiceFactory = Callable[..., "contextlib.AbstractAsyncContextManager[Service]"]


@contextlib.asynccontextmanager
async def run_service(
    *,
    heartbeat: float | None = 15.0,
    abort_on_disconnect: bool = False,
    delay: float = 0.0,
    readiness: dict[str, Any] | None = None,
    configured: bool = True,
) -> AsyncIterator[Service]:
    clock = SteppingClock()
    ids = SequentialIds()
    store = InMemoryCheckpointStore()
    model = ScriptedLanguageModel(delay=delay)
    tools = FakeToolExecutor()
    agent = BuiltinAgent(tools, FakeTopologySource(), clock=clock, ids=ids)
    models = StaticModelProvider(ModelSelection(model) if configured else None)
    chat = ChatService(
        store,
        {"copilot": agent},
        models=models,
        clock=clock,
        ids=ids,
        settings=ChatSettings(max_message_chars=1000),
    )
    authenticator = StaticAuthenticator(
        {
            ALICE: Principal("u-alice", "alice"),
            BOB: Principal("u-bob", "bob"),
            ADMIN: Principal("u-admin", "admin", is_superadmin=True),
        }
    )
    gate = StaticProjectGate(opened={OPEN}, closed={CLOSED})
    llm_config = InMemoryLLMConfigRepository()
    reloads: list[int] = []

    async def reload_skills() -> dict[str, Any]:
        reloads.append(1)
        return {"skills": 3}

    app = create_web_app(
        WebDependencies(
            chat=chat,
            authenticator=authenticator,
            projects=gate,
            llm_config=llm_config,
            reload_skills=reload_skills,
            readiness=readiness or {},
        ),
        settings=WebSettings(heartbeat_interval=heartbeat, abort_on_disconnect=abort_on_disconnect),
    )
    config = uvicorn.Config(
        app, host="127.0.0.1", port=0, log_config=None, lifespan="on", timeout_graceful_shutdown=2
    )
    server = uvicorn.Server(config)
    server.install_signal_handlers = lambda: None  # type: ignore[method-assign]
    task = asyncio.create_task(server.serve())
    for _ in range(500):
        if server.started:
            break
        if task.done():
            task.result()
        await asyncio.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield Service(
            f"http://127.0.0.1:{port}",
            chat,
            store,
            model,
            tools,
            models,
            authenticator,
            gate,
            llm_config,
            reloads,
        )
    finally:
        await chat.shutdown(grace=2)
        server.should_exit = True
        await asyncio.wait_for(task, 10)


@pytest.fixture
async def service() -> AsyncIterator[Service]:
    async with run_service() as running:
        yield running
