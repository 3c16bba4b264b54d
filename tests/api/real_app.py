"""The service as ``serve`` builds it (``build_container``, ``create_app``, uvicorn on
127.0.0.1), with GNS3's side faked: the real LLM settings repository and provider, so a
turn goes through the real provider SDK to whatever ``base_url`` the user stores."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from dependency_injector import providers

from adapters.web.testing import StaticAuthenticator, StaticProjectGate
from copilot_core.ports import Principal
from copilot_core.testing import (
    FakeCheckProbes,
    FakeRestorePoints,
    FakeToolExecutor,
    FakeTopologySource,
    InMemoryCheckpointStore,
)
from entrypoints import Settings, build_container, create_app
from entrypoints.cli import CopilotServer
from tests.api.conftest import OPEN

__all__ = ["TOKEN", "RealApp", "real_app"]

TOKEN = "tok-real-app"


@dataclass(frozen=True)
class RealApp:
    base_url: str
    store: InMemoryCheckpointStore
    #: The lab's checks (a standing-intent run's probe records who called it).
    probes: FakeCheckProbes | None = None

    def client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(
            base_url=self.base_url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30
        )

    def chat_url(self, project: str = OPEN) -> str:
        return f"/v3/copilot/projects/{project}/chat/stream"


@contextlib.asynccontextmanager
async def real_app(
    data_dir: Path,
    *,
    tools: FakeToolExecutor | None = None,
    factory: Callable[..., Any] | None = None,
    policy: Mapping[str, Any] | None = None,
) -> AsyncIterator[RealApp]:
    """The real app; ``factory`` replaces the provider's model factory when given;
    ``policy`` is the operator's policy (``policy.rules``; the caller is ``user``)."""
    import uvicorn

    settings = Settings(
        data_dir=data_dir,
        port=0,
        shutdown_grace=5,
        **({"policy": {"rules": policy}} if policy is not None else {}),  # type: ignore[arg-type]
    )
    container = build_container(settings)
    store = InMemoryCheckpointStore()

    async def fake_store() -> AsyncIterator[InMemoryCheckpointStore]:
        yield store

    gateways = container.gateways
    gateways.store.override(providers.Resource(fake_store))
    gateways.authenticator.override(
        providers.Object(StaticAuthenticator({TOKEN: Principal("u1", "user")}))
    )
    gateways.projects.override(providers.Object(StaticProjectGate(opened={OPEN})))
    gateways.tools.override(providers.Object(tools or FakeToolExecutor()))
    probes = FakeCheckProbes()
    gateways.probes.override(providers.Object(probes))  # the lab's checks too
    gateways.restore.override(providers.Object(FakeRestorePoints(store)))  # and its undo
    gateways.topology.override(providers.Object(FakeTopologySource()))
    if factory is not None:
        gateways.models.add_kwargs(factory=factory)
    app = create_app(settings, container)
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_config=None, lifespan="on")
    server = CopilotServer(config, container.service().begin_shutdown)
    server.install_signal_handlers = lambda: None  # type: ignore[method-assign]
    task = asyncio.create_task(server.serve())
    for _ in range(3000):  # at most 30 s, however loaded the machine
        if server.started or task.done():
            break
        await asyncio.sleep(0.01)
    if task.done():
        task.result()
    assert server.started, "the service did not start within 30 s"
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield RealApp(f"http://127.0.0.1:{port}", store, probes)
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 15)
