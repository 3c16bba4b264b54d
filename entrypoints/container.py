"""The composition root: one dependency-injector container built from :class:`Settings`.

Resources (things that open and close) are opened and closed with the app's
lifespan (``await container.init_resources()`` / ``shutdown_resources()``).
Lines marked ``# PLACEHOLDER`` stand in for adapters that are wired in separately;
each is a single provider to replace. Tests override providers with fakes.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator
from typing import Any, TypeVar

import httpx
from dependency_injector import containers, providers

from adapters.web import SkillsReloader, WebDependencies
from adapters.web.testing import InMemoryLLMConfigRepository
from copilot_core import (
    BuiltinAgent,
    ChatService,
    ChatSettings,
    SystemClock,
    TopologySource,
    UuidIdFactory,
)
from copilot_core.testing import FakeToolExecutor, StaticModelProvider
from entrypoints.placeholders import UnwiredAuthenticator, UnwiredProjectGate, in_memory_store
from entrypoints.settings import Settings

__all__ = ["Container", "build_container", "resolve", "web_dependencies"]

T = TypeVar("T")


async def gns3_http_client(
    base_url: str, request_timeout: float
) -> AsyncIterator[httpx.AsyncClient]:
    """An HTTP client for the GNS3 server, closed at shutdown."""
    async with httpx.AsyncClient(base_url=base_url, timeout=request_timeout) as client:
        yield client


class Container(containers.DeclarativeContainer):
    config = providers.Configuration(strict=True)

    clock = providers.Singleton(SystemClock)
    ids = providers.Singleton(UuidIdFactory)
    gns3_http = providers.Resource(
        gns3_http_client, base_url=config.gns3_url, request_timeout=config.gns3_timeout
    )

    # ---------------------------------------------------------------- adapters
    # Each "# PLACEHOLDER" line stands in for an adapter wired in separately; replace the
    # line, keep the name (docs/configuration.md lists the real adapter of each).
    store = providers.Resource(in_memory_store)  # PLACEHOLDER
    authenticator = providers.Singleton(UnwiredAuthenticator)  # PLACEHOLDER
    projects = providers.Singleton(UnwiredProjectGate)  # PLACEHOLDER
    tools = providers.Singleton(FakeToolExecutor)  # PLACEHOLDER
    topology: providers.Object[TopologySource | None] = providers.Object(None)  # PLACEHOLDER
    models = providers.Singleton(StaticModelProvider, None)  # PLACEHOLDER
    llm_config = providers.Singleton(InMemoryLLMConfigRepository)  # PLACEHOLDER
    reload_skills: providers.Object[SkillsReloader | None] = providers.Object(None)  # PLACEHOLDER

    # -------------------------------------------------------------------- core
    agent = providers.Singleton(BuiltinAgent, tools, topology, clock=clock, ids=ids)
    chat_settings = providers.Singleton(
        ChatSettings,
        max_message_chars=config.max_message_chars,
        finished_turn_retention=config.finished_turn_retention,
    )
    chat = providers.Singleton(
        ChatService,
        store,
        providers.Dict(copilot=agent),
        models=models,
        clock=clock,
        ids=ids,
        settings=chat_settings,
    )


def build_container(settings: Settings) -> Container:
    container = Container()
    container.config.from_dict(settings.model_dump())
    return container


async def resolve(value: T | Any) -> Any:
    """A provider's value: providers that depend on async resources return awaitables."""
    return await value if inspect.isawaitable(value) else value


async def web_dependencies(container: Container) -> WebDependencies:
    """Build what the web adapter needs (after ``init_resources``)."""
    chat: ChatService = await resolve(container.chat())
    store = await resolve(container.store())
    gns3: httpx.AsyncClient = await resolve(container.gns3_http())

    async def store_ready() -> None:  # PLACEHOLDER: the SQLite store's own health check
        await store.list_sessions("readiness-probe", "readiness-probe", limit=1)

    async def gns3_ready() -> None:
        response = await gns3.get("/v3/version")
        response.raise_for_status()

    return WebDependencies(
        chat=chat,
        authenticator=await resolve(container.authenticator()),
        projects=await resolve(container.projects()),
        llm_config=await resolve(container.llm_config()),
        reload_skills=await resolve(container.reload_skills()),
        readiness={"store": store_ready, "gns3": gns3_ready},
        models=await resolve(container.models()),
    )
