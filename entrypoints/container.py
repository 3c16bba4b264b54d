"""The composition root: one dependency-injector container built from :class:`Settings`.

This is the only module that knows every concrete class. Resources (things that
open and close: databases, HTTP clients) are opened and closed with the app's
lifespan (``await container.init_resources()`` / ``shutdown_resources()``).
Tests override providers with fakes (``container.store.override(...)``).
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any, TypeVar

from dependency_injector import containers, providers
from pydantic import SecretStr

from adapters.gns3 import (
    ConsoleRunner,
    Gns3Authenticator,
    Gns3Client,
    Gns3ClientDirectory,
    Gns3ProjectGate,
    Gns3ToolExecutor,
    Gns3TopologySource,
    SkillLibrary,
)
from adapters.llm import (
    LLMSettingsPublicView,
    LLMSettingsRepository,
    SettingsLanguageModelProvider,
    TiktokenTokenCounter,
)
from adapters.sqlite import SqliteCheckpointStore, SqliteStoreReadiness
from adapters.subprocess_agent import AgentConfig, build_agent_backends
from adapters.web import PrometheusTurnMetrics, StructlogTurnObserver, WebDependencies
from copilot_core import (
    BuiltinAgent,
    ChatService,
    ChatSettings,
    InMemoryTurnLog,
    RunnerSettings,
    SystemClock,
    TurnRunner,
    UuidIdFactory,
)
from copilot_core.ports import AgentBackend, Clock, IdFactory
from entrypoints.settings import Settings
from entrypoints.skills import SkillsReloader

__all__ = ["Container", "build_container", "resolve", "web_dependencies"]

T = TypeVar("T")


# ------------------------------------------------------------------- resources
async def open_store(data_dir: Path) -> AsyncIterator[SqliteCheckpointStore]:
    """Per-project SQLite databases under ``data_dir/projects``."""
    store = SqliteCheckpointStore(data_dir)
    await store.open()
    try:
        yield store
    finally:
        await store.close()


async def open_llm_settings(
    data_dir: Path, secret_key: SecretStr | None
) -> AsyncIterator[LLMSettingsRepository]:
    """The service-wide database of users' LLM settings (API keys encrypted)."""
    await asyncio.to_thread(data_dir.mkdir, parents=True, exist_ok=True)
    repository = await LLMSettingsRepository.open(data_dir, encryption_key=secret_key)
    try:
        yield repository
    finally:
        await repository.close()


async def open_gns3_client(base_url: str, request_timeout: float) -> AsyncIterator[Gns3Client]:
    async with Gns3Client(base_url, timeout=request_timeout) as client:
        yield client


def agent_backends(
    builtin: BuiltinAgent,
    configs: tuple[AgentConfig | Mapping[str, Any], ...],
    gns3_url: str,
    clock: Clock,
    ids: IdFactory,
) -> dict[str, AgentBackend]:
    """The built-in agent (always ``copilot``) and every configured external agent."""
    external = build_agent_backends(
        (AgentConfig.model_validate(config) for config in configs),
        gns3_url=gns3_url,
        clock=clock,
        ids=ids,
    )
    return {"copilot": builtin, **external}


def skill_dirs(skills_dir: Path | None) -> list[Path]:
    """Directories read besides the built-in skills."""
    return [Path(skills_dir)] if skills_dir else []


# ------------------------------------------------------------------- container
class Container(containers.DeclarativeContainer):
    config = providers.Configuration(strict=True)

    clock = providers.Singleton(SystemClock)
    ids = providers.Singleton(UuidIdFactory)

    # ---------------------------------------------------------------- adapters
    store = providers.Resource(open_store, data_dir=config.data_dir)
    llm_settings = providers.Resource(
        open_llm_settings, data_dir=config.data_dir, secret_key=config.secret_key
    )
    gns3 = providers.Resource(
        open_gns3_client, base_url=config.gns3_url, request_timeout=config.gns3_timeout
    )
    authenticator = providers.Singleton(Gns3Authenticator, gns3)
    projects = providers.Singleton(Gns3ProjectGate, gns3)
    directory = providers.Singleton(Gns3ClientDirectory, gns3)
    skills = providers.Singleton(SkillLibrary, providers.Callable(skill_dirs, config.skills_dir))
    console = providers.Singleton(ConsoleRunner, command_timeout=config.command_timeout)
    tools = providers.Singleton(Gns3ToolExecutor, gns3, runner=console, skills=skills)
    topology = providers.Singleton(Gns3TopologySource, gns3)
    models = providers.Singleton(SettingsLanguageModelProvider, llm_settings)
    llm_config = providers.Singleton(LLMSettingsPublicView, llm_settings)
    token_counter = providers.Singleton(TiktokenTokenCounter)

    # -------------------------------------------------------------------- core
    agent = providers.Singleton(
        BuiltinAgent, tools, topology, clock=clock, ids=ids, token_counter=token_counter
    )
    agents = providers.Singleton(agent_backends, agent, config.agents, config.gns3_url, clock, ids)
    reload_skills = providers.Singleton(SkillsReloader, skills, agent, config.skills_dir)
    chat_settings = providers.Singleton(
        ChatSettings,
        max_message_chars=config.max_message_chars,
        finished_turn_retention=config.finished_turn_retention,
    )
    turn_log = providers.Singleton(InMemoryTurnLog, retention=config.finished_turn_retention)
    metrics = providers.Singleton(PrometheusTurnMetrics)
    turn_logger = providers.Singleton(StructlogTurnObserver)
    runner_settings = providers.Singleton(RunnerSettings, approval_timeout=config.approval_timeout)
    runner = providers.Singleton(
        TurnRunner,
        store,
        turn_log,
        models=models,
        clock=clock,
        ids=ids,
        settings=runner_settings,
        observers=providers.List(metrics, turn_logger),
    )
    chat = providers.Singleton(
        ChatService,
        store,
        agents,
        models=models,
        clock=clock,
        ids=ids,
        settings=chat_settings,
        runner=runner,
    )


def build_container(settings: Settings) -> Container:
    container = Container()
    values = settings.model_dump()
    values["secret_key"] = settings.secret_key  # keep it a SecretStr inside the container
    container.config.from_dict(values)
    return container


async def resolve(value: T | Any) -> Any:
    """A provider's value: providers that depend on async resources return awaitables."""
    return await value if inspect.isawaitable(value) else value


async def web_dependencies(container: Container) -> WebDependencies:
    """Build what the web adapter needs (after ``init_resources``)."""
    chat: ChatService = await resolve(container.chat())
    store = await resolve(container.store())
    gns3 = await resolve(container.gns3())
    return WebDependencies(
        chat=chat,
        authenticator=await resolve(container.authenticator()),
        projects=await resolve(container.projects()),
        llm_config=await resolve(container.llm_config()),
        reload_skills=await resolve(container.reload_skills()),
        readiness={"store": SqliteStoreReadiness(store), "gns3": gns3.version},
        models=await resolve(container.models()),
        directory=await resolve(container.directory()),
    )
