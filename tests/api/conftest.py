"""The HTTP service on a real uvicorn server on 127.0.0.1, around the core's fakes."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import uuid
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
import uvicorn
from pydantic import SecretStr

from adapters.gns3 import DrillTools
from adapters.llm import LangchainLanguageModel, LLMSettings, build_chat_model
from adapters.mcp import CompositeToolExecutor
from adapters.web import (
    Gns3Directory,
    ModelCatalog,
    WebDependencies,
    WebSettings,
    create_web_app,
)
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
)
from copilot_core.bootstrap import InMemorySessionLeases, build_chat_service
from copilot_core.drills import Drills
from copilot_core.intent import StandingIntent
from copilot_core.policy import PolicyBook
from copilot_core.ports import (
    AgentBackend,
    Authenticator,
    CheckpointStore,
    LanguageModel,
    Principal,
)
from copilot_core.rollback import Rollback
from copilot_core.testing import (
    FakeCheckProbes,
    FakeRestorePoints,
    FakeToolExecutor,
    FakeTopologySource,
    FakeWaitClock,
    InMemoryCheckpointStore,
    ScriptedLanguageModel,
    SequentialIds,
    StaticModelProvider,
    SteppingClock,
    text_reply,
)

ALICE = "token-alice"
BOB = "token-bob"
ADMIN = "token-admin"
#: GNS3 project ids are UUIDs: one project is opened, the other closed.
OPEN = "0b1e2c3d-4f50-4a6b-8c7d-9e0f1a2b3c4d"
CLOSED = "c105ed00-0000-4000-8000-00000000c105"
#: A project GNS3 does not know, and a session nobody created.
UNKNOWN = "00000000-dead-4000-8000-000000000404"


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


class SequentialUuids:
    """Ids of the product's shape (UUIDs: sessions must be), numbered for reproducibility."""

    def __init__(self) -> None:
        self._counter = itertools.count(1)

    def new_id(self) -> str:
        return str(uuid.UUID(int=next(self._counter)))


@dataclass(frozen=True)
class RawEvent:
    """One SSE event exactly as sent: its ``id:`` line (if any) and its JSON data."""

    id: str | None
    data: dict[str, Any]

    @property
    def type(self) -> str:
        return str(self.data["type"])


async def raw_events(response: httpx.Response) -> AsyncIterator[RawEvent]:
    """Parse an SSE body line by line (httpx-sse carries ids over; this does not)."""
    event_id: str | None = None
    data: list[str] = []
    async for line in response.aiter_lines():
        if line == "":
            if data:
                yield RawEvent(event_id, json.loads("\n".join(data)))
            event_id, data = None, []
        elif line.startswith("id:"):
            event_id = line[3:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].lstrip())


async def collect_until_done(response: httpx.Response, limit: int = 10_000) -> list[RawEvent]:
    """Every event up to and including ``done`` (bounded)."""
    events: list[RawEvent] = []
    async for event in raw_events(response):
        events.append(event)
        if event.type == "done" or len(events) >= limit:
            break
    return events


#: A tool of a scripted turn: its handler (arguments, context -> output) and description.
TurnTool = tuple[Callable[[dict[str, Any], Any], Any], str]


async def one_turn(
    base_url: str, key: str, question: str, tools: Mapping[str, TurnTool]
) -> tuple[list[RawEvent], list[dict[str, Any]]]:
    """One streamed turn asking ``question`` of a service whose model is the real LLM
    adapter on the scripted OpenAI-compatible server at ``base_url`` (``key``), with
    ``tools``: its events up to ``done`` (none an ``error``) and the stored history."""
    model = LangchainLanguageModel(
        build_chat_model(LLMSettings(model="gpt-test", base_url=base_url, api_key=SecretStr(key)))
    )
    async with run_service(language_model=model) as service:
        for name, (handler, description) in tools.items():
            service.tools.add(name, handler, description=description)
        url = service.chat_url()
        async with (
            service.client() as client,
            client.stream("POST", url + "/stream", json={"message": question}) as stream,
        ):
            session_id = stream.headers["x-session-id"]
            events = await collect_until_done(stream)
            history = (await client.get(f"{url}/sessions/{session_id}/history")).json()
    assert "error" not in [e.type for e in events], [e.data for e in events]
    return events, history["messages"]


@dataclass
class Service:
    """One running service and the fakes behind it."""

    base_url: str
    chat: ChatService
    store: CheckpointStore
    model: ScriptedLanguageModel
    tools: FakeToolExecutor
    models: StaticModelProvider
    authenticator: StaticAuthenticator
    gate: StaticProjectGate
    llm_config: InMemoryLLMConfigRepository
    reloads: list[int] = field(default_factory=list)
    #: The lab the standing intent's runs ask (every check passes unless told otherwise).
    probes: FakeCheckProbes = field(default_factory=FakeCheckProbes)
    #: What those runs wait on between rounds (time moves only when they sleep).
    wait_clock: FakeWaitClock = field(default_factory=FakeWaitClock)
    #: The lab's restore feature the rollbacks go through (scripted, recorded).
    restore: FakeRestorePoints = field(
        default_factory=lambda: FakeRestorePoints(InMemoryCheckpointStore())
    )

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
    retention: float = 60.0,
    readiness_timeout: float = 3.0,
    cors_origins: tuple[str, ...] = (),
    extra_agents: Mapping[str, AgentBackend] | None = None,
    store: CheckpointStore | None = None,
    authenticator: Authenticator | None = None,
    directory: Gns3Directory | None = None,
    model_catalog: ModelCatalog | None = None,
    with_models: bool = True,
    with_skills: bool = True,
    language_model: LanguageModel | None = None,
    policy: PolicyBook | None = None,
    intent_round_s: float = 30.0,
    drills: Drills | None = None,
) -> AsyncIterator[Service]:
    """The service around the core's fakes; ``store`` and ``authenticator`` replace the
    in-memory store and the static token map (by a real SQLite store, say);
    ``language_model`` replaces the scripted model (by the real adapter over HTTP);
    ``policy`` is the operator's policy; ``intent_round_s`` the standing intent's
    ``round_s`` (its answer is due ``wait_s`` plus that); ``drills`` the troubleshooting
    drills (their routes, and the agent's ``practice_drill`` tool; none: 501)."""
    clock = SteppingClock()
    probes, wait_clock = FakeCheckProbes(), FakeWaitClock()
    ids = SequentialUuids()
    store = store or InMemoryCheckpointStore()
    model = ScriptedLanguageModel(delay=delay)
    tools = FakeToolExecutor()
    agent_tools = tools if drills is None else CompositeToolExecutor(tools, DrillTools(drills))
    agent = BuiltinAgent(agent_tools, FakeTopologySource(), clock=clock, ids=ids)
    title_model = ScriptedLanguageModel(default=text_reply("Lab help"))
    models = StaticModelProvider(
        ModelSelection(language_model or model, title_model=title_model) if configured else None
    )
    leases = InMemorySessionLeases()
    chat = build_chat_service(
        store,
        {"copilot": agent, **(extra_agents or {})},
        models=models,
        clock=clock,
        ids=ids,
        settings=ChatSettings(max_message_chars=1000, finished_turn_retention=retention),
        leases=leases,
    )
    points: Any = store  # a CheckpointStore that also keeps restore points
    restore = FakeRestorePoints(points, clock=clock, ids=ids)
    rollback = Rollback(
        store, points, restore, leases, clock=clock, ids=ids, windows=chat.runner.windows
    )
    static_authenticator = StaticAuthenticator(
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
        return {"skills": 3, "forbidden_commands": 12, "problems": [], "prompts": ["common"]}

    app = create_web_app(
        WebDependencies(
            chat=chat,
            authenticator=authenticator or static_authenticator,
            projects=gate,
            llm_config=llm_config,
            reload_skills=reload_skills if with_skills else None,
            readiness=readiness or {},
            models=models if with_models else None,
            directory=directory,
            model_catalog=model_catalog,
            rollback=rollback,
            intent=StandingIntent(
                store,  # type: ignore[arg-type]  # a CheckpointStore that also keeps intent
                probes,
                clock,
                round_s=intent_round_s,
                wait_clock=wait_clock,
            ),
            drills=drills,
            policy=policy,
        ),
        settings=WebSettings(
            heartbeat_interval=heartbeat,
            abort_on_disconnect=abort_on_disconnect,
            readiness_timeout=readiness_timeout,
            llm_test_timeout=0.5,
            cors_origins=cors_origins,
        ),
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
            static_authenticator,
            gate,
            llm_config,
            reloads,
            probes,
            wait_clock,
            restore,
        )
    finally:
        await chat.shutdown(grace=2)
        server.should_exit = True
        await asyncio.wait_for(task, 10)


@contextlib.asynccontextmanager
async def serving(app: Any) -> AsyncIterator[str]:
    """``app`` on uvicorn on 127.0.0.1 (a free port) while the block runs: its base URL."""
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=0, log_config=None, lifespan="on")
    )
    server.install_signal_handlers = lambda: None  # type: ignore[method-assign]
    task = asyncio.create_task(server.serve())
    for _ in range(1000):
        if server.started or task.done():
            break
        await asyncio.sleep(0.01)
    assert server.started, "the service did not start"
    try:
        yield f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}"
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 15)


def chat_without_model(
    store: CheckpointStore,
    clock: SteppingClock,
    ids: SequentialIds,
    leases: InMemorySessionLeases | None = None,
) -> ChatService:
    """The chat service of routes that need sessions, not turns: the built-in agent on fake
    tools, no model configured."""
    agent = BuiltinAgent(FakeToolExecutor(), FakeTopologySource(), clock=clock, ids=ids)
    return build_chat_service(
        store,
        {"copilot": agent},
        models=StaticModelProvider(None),
        clock=clock,
        ids=ids,
        settings=ChatSettings(),
        leases=leases,
    )


@pytest.fixture
async def service() -> AsyncIterator[Service]:
    async with run_service() as running:
        yield running
