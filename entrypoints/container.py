"""The composition root: one dependency-injector container built from :class:`Settings`.

This is the only module that knows every concrete class. Resources (things that
open and close: databases, HTTP clients) are opened and closed with the app's
lifespan (``await container.init_resources()`` / ``shutdown_resources()``).
Tests override providers with fakes (``container.store.override(...)``).
"""

from __future__ import annotations

import asyncio
import inspect
import os
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from dependency_injector import containers, providers
from pydantic import SecretStr

from adapters.gns3 import (
    ConsoleRunner,
    Gns3Authenticator,
    Gns3Client,
    Gns3ProjectGate,
    Gns3ToolExecutor,
    Gns3TopologySource,
    SkillLibrary,
)
from adapters.llm import LLMSettingsRepository, SettingsLanguageModelProvider, TiktokenTokenCounter
from adapters.postgres import PostgresCheckpointStore, PostgresDatabase, PostgresLLMSettingsStore
from adapters.redis import RedisTurnLog, connect_redis
from adapters.sqlite import SqliteCheckpointStore
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
from copilot_core.errors import StoreError
from copilot_core.ports import AgentBackend, Clock, IdFactory, RestorePointStore
from entrypoints.settings import Settings
from entrypoints.skills import SkillsReloader

__all__ = ["Container", "Gns3ClientDirectory", "build_container", "resolve", "web_dependencies"]

T = TypeVar("T")


# ------------------------------------------------------------------- resources
async def open_database(
    url: SecretStr | None, schema: str
) -> AsyncIterator[PostgresDatabase | None]:
    """The PostgreSQL database when ``database_url`` is set (its schema migrated at
    open; a clear ``StoreError`` when it cannot be used), else ``None``."""
    if url is None:
        yield None
        return
    database = PostgresDatabase(url.get_secret_value(), schema=schema)
    await database.open()
    try:
        yield database
    finally:
        await database.close()


async def open_turn_log(
    url: SecretStr | None, retention: float, lease: float
) -> AsyncIterator[RedisTurnLog | InMemoryTurnLog]:
    """The Redis turn log when ``redis_url`` is set (a clear ``ServiceUnavailableError``
    when Redis cannot be used), else turns in this process's memory."""
    if url is None:
        yield InMemoryTurnLog(retention=retention)
        return
    client = await connect_redis(url.get_secret_value())
    turn_log = RedisTurnLog(client, retention=retention, lease=lease)
    try:
        await turn_log.start()
        yield turn_log
    finally:
        await turn_log.stop()
        await client.aclose()


async def open_store(
    data_dir: Path, database: PostgresDatabase | None = None
) -> AsyncIterator[SqliteCheckpointStore | PostgresCheckpointStore]:
    """Sessions in PostgreSQL when there is a database, else per-project SQLite
    databases under ``data_dir/projects``."""
    if database is not None:
        yield PostgresCheckpointStore(database)
        return
    store = SqliteCheckpointStore(data_dir)
    await store.open()
    try:
        yield store
    finally:
        await store.close()


async def open_llm_settings(
    data_dir: Path, secret_key: SecretStr | None, database: PostgresDatabase | None = None
) -> AsyncIterator[LLMSettingsRepository]:
    """The users' LLM settings (API keys encrypted): in PostgreSQL when there is a
    database, else in the service-wide SQLite database in ``data_dir``."""
    await asyncio.to_thread(data_dir.mkdir, parents=True, exist_ok=True)
    rows = PostgresLLMSettingsStore(database) if database is not None else None
    repository = await LLMSettingsRepository.open(data_dir, encryption_key=secret_key, rows=rows)
    try:
        yield repository
    finally:
        await repository.close()


async def open_gns3_client(base_url: str, request_timeout: float) -> AsyncIterator[Gns3Client]:
    async with Gns3Client(base_url, timeout=request_timeout) as client:
        yield client


async def open_console_runner(command_timeout: float) -> AsyncIterator[ConsoleRunner]:
    """The device consoles; at shutdown, every console still held is let go."""
    runner = ConsoleRunner(command_timeout=command_timeout)
    try:
        yield runner
    finally:
        await runner.aclose()


async def open_tools(
    client: Gns3Client,
    console: ConsoleRunner,
    skills: SkillLibrary,
    restore_points: RestorePointStore | None = None,
) -> AsyncIterator[Gns3ToolExecutor]:
    """The lab tools, warmed before the service takes requests (the first turn then
    costs what later ones do); approved changes keep their restore points with the
    sessions, in the checkpoint store."""
    tools = Gns3ToolExecutor(client, runner=console, skills=skills, restore_points=restore_points)
    await tools.warm()
    yield tools


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


class LLMConfigView:
    """The web adapter's ``LLMConfigRepository`` over the encrypted repository:
    the public view as plain JSON, never the key."""

    def __init__(self, repository: LLMSettingsRepository) -> None:
        self._repository = repository

    async def get_public(self, user_id: str) -> Mapping[str, Any] | None:
        settings = await self._repository.get_public(user_id)
        return None if settings is None else settings.model_dump(mode="json")

    async def put(self, user_id: str, settings: Mapping[str, Any]) -> Mapping[str, Any]:
        return (await self._repository.put(user_id, settings)).model_dump(mode="json")

    async def delete(self, user_id: str) -> bool:
        return await self._repository.delete(user_id)


class Gns3ClientDirectory:
    """The web adapter's ``Gns3Directory`` over :class:`Gns3Client`: sign in, list projects."""

    def __init__(self, client: Gns3Client) -> None:
        self._client = client

    async def login(self, username: str, password: str) -> str:
        return await self._client.authenticate(username, password)

    async def projects(self, token: str) -> Sequence[Mapping[str, Any]]:
        return await self._client.projects(token)


def skill_dirs(skills_dir: Path | None) -> list[Path]:
    """Directories read besides the built-in skills."""
    return [Path(skills_dir)] if skills_dir else []


# ------------------------------------------------------------------- container
class Container(containers.DeclarativeContainer):
    config = providers.Configuration(strict=True)

    clock = providers.Singleton(SystemClock)
    ids = providers.Singleton(UuidIdFactory)

    # ---------------------------------------------------------------- adapters
    database = providers.Resource(
        open_database, url=config.database_url, schema=config.database_schema
    )
    store = providers.Resource(open_store, data_dir=config.data_dir, database=database)
    turn_log = providers.Resource(
        open_turn_log,
        url=config.redis_url,
        retention=config.finished_turn_retention,
        lease=config.turn_lease,
    )
    llm_settings = providers.Resource(
        open_llm_settings,
        data_dir=config.data_dir,
        secret_key=config.secret_key,
        database=database,
    )
    gns3 = providers.Resource(
        open_gns3_client, base_url=config.gns3_url, request_timeout=config.gns3_timeout
    )
    authenticator = providers.Singleton(Gns3Authenticator, gns3)
    projects = providers.Singleton(Gns3ProjectGate, gns3)
    directory = providers.Singleton(Gns3ClientDirectory, gns3)
    skills = providers.Singleton(SkillLibrary, providers.Callable(skill_dirs, config.skills_dir))
    console = providers.Resource(open_console_runner, command_timeout=config.command_timeout)
    tools = providers.Resource(
        open_tools, gns3, console=console, skills=skills, restore_points=store
    )
    topology = providers.Singleton(Gns3TopologySource, gns3)
    models = providers.Singleton(SettingsLanguageModelProvider, llm_settings)
    llm_config = providers.Singleton(LLMConfigView, llm_settings)
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
    values["database_url"] = settings.database_url  # likewise (it may hold a password)
    values["redis_url"] = settings.redis_url
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

    async def store_ready() -> None:
        if isinstance(store, PostgresCheckpointStore):
            await store.database.ping()
            return
        if not os.access(store.data_dir, os.W_OK):
            raise StoreError(f"the data directory {store.data_dir} is not writable")

    async def gns3_ready() -> None:
        await gns3.version()

    readiness = {"store": store_ready, "gns3": gns3_ready}
    turn_log = await resolve(container.turn_log())
    if isinstance(turn_log, RedisTurnLog):
        readiness["turn_log"] = turn_log.ping

    return WebDependencies(
        chat=chat,
        authenticator=await resolve(container.authenticator()),
        projects=await resolve(container.projects()),
        llm_config=await resolve(container.llm_config()),
        reload_skills=await resolve(container.reload_skills()),
        readiness=readiness,
        models=await resolve(container.models()),
        directory=await resolve(container.directory()),
        restore_points=store,
        tools=await resolve(container.tools()),
    )
