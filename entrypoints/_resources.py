"""The resources the container opens and closes with the service's lifespan: the
PostgreSQL database, the store, the LLM settings, the GNS3 client, the console runner, the
GNS3 tools, the configured MCP servers, the standing intent's runs, the drills' results;
and the readiness checks over them. Each is an
async generator (``providers.Resource``): what it yields is used, what follows its
``yield`` closes it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import SecretStr

from adapters.gns3 import (
    ConsoleRunner,
    ConsoleSettings,
    Gns3Client,
    Gns3Settings,
    Gns3ToolExecutor,
    Gns3ToolSettings,
    SkillLibrary,
    gns3_lab_tools,
)
from adapters.llm import LLMSettingsRepository
from adapters.mcp import McpServerConfig
from adapters.postgres import (
    PostgresCheckpointStore,
    PostgresDatabase,
    PostgresDrillResults,
    PostgresLLMSettingsStore,
)
from adapters.sqlite import (
    DRILLS_DATABASE_NAME,
    SqliteCheckpointStore,
    SqliteDrillResults,
    SqliteStoreReadiness,
    SqliteStoreSettings,
)
from copilot_core.bootstrap import InMemoryTurnLog
from copilot_core.drills import DrillResults
from copilot_core.intent import CheckProbes, StandingIntent
from copilot_core.ports import Clock, IdFactory, IntentStore, RestorePointStore
from copilot_core.rules import CallBounds

if TYPE_CHECKING:
    from adapters.mcp import McpToolSource

if TYPE_CHECKING:  # imported when Redis is used (the client library costs start-up time)
    from adapters.redis import RedisTurnLog

__all__ = [
    "open_console_runner",
    "open_database",
    "open_drill_results",
    "open_gns3_client",
    "open_llm_settings",
    "open_mcp_sources",
    "open_standing_intent",
    "open_store",
    "open_tools",
    "readiness_checks",
]


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


async def open_store(
    data_dir: Path, database: PostgresDatabase | None, settings: SqliteStoreSettings
) -> AsyncIterator[SqliteCheckpointStore | PostgresCheckpointStore]:
    """Sessions in PostgreSQL when there is a database, else per-project SQLite
    databases under ``data_dir/projects``, kept as the ``store`` section says."""
    if database is not None:
        yield PostgresCheckpointStore(database)
        return
    store = SqliteCheckpointStore(data_dir, settings=settings)
    await store.open()
    try:
        yield store
    finally:
        await store.close()


async def open_drill_results(
    data_dir: Path, database: PostgresDatabase | None
) -> AsyncIterator[DrillResults]:
    """The troubleshooting drills (each project's active drill, each user's results):
    in PostgreSQL when there is a database, as the sessions are, else in one
    service-wide SQLite file in ``data_dir`` (a user's history spans projects)."""
    if database is not None:
        yield PostgresDrillResults(database)
        return
    await asyncio.to_thread(data_dir.mkdir, parents=True, exist_ok=True)
    results = await SqliteDrillResults.open(data_dir / DRILLS_DATABASE_NAME)
    try:
        yield results
    finally:
        await results.close()


async def open_llm_settings(
    data_dir: Path, secret_key: SecretStr | None, database: PostgresDatabase | None
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


async def open_gns3_client(settings: Gns3Settings) -> AsyncIterator[Gns3Client]:
    """The GNS3 server at ``settings.url``, each request bounded by ``settings.timeout``."""
    async with Gns3Client(settings.url, timeout=settings.timeout) as client:
        yield client


async def open_console_runner(settings: ConsoleSettings) -> AsyncIterator[ConsoleRunner]:
    """The device consoles; at shutdown, every console still held is let go."""
    runner = settings.runner()
    try:
        yield runner
    finally:
        await runner.aclose()


async def open_standing_intent(
    store: IntentStore, probes: CheckProbes, clock: Clock, bounds: CallBounds
) -> AsyncIterator[StandingIntent]:
    """Each user's standing intent per project, run on the lab's probes within the
    bounds of a tool call; at shutdown, a run still going on in the background
    (answered 'running' to its caller) is stopped."""
    intent = StandingIntent(store, probes, clock, bounds=bounds)
    try:
        yield intent
    finally:
        await intent.aclose()


async def open_tools(
    client: Gns3Client,
    console: ConsoleRunner,
    skills: SkillLibrary,
    settings: Gns3ToolSettings,
    restore_points: RestorePointStore | None = None,
    clock: Clock | None = None,
    ids: IdFactory | None = None,
    intent: IntentStore | None = None,
) -> AsyncIterator[Gns3ToolExecutor]:
    """The lab tools, warmed before the service takes requests (the first turn then
    costs what later ones do); approved changes keep their restore points with the
    sessions, in the checkpoint store; a verified change also runs the user's standing
    intent, kept there too. The registry is every GNS3 tool and ``plan_lab``."""
    tools = Gns3ToolExecutor(
        client,
        runner=console,
        skills=skills,
        settings=settings,
        registry=gns3_lab_tools(),  # every GNS3 tool and plan_lab
        restore_points=restore_points,
        clock=clock,
        ids=ids,
        intent=intent,
    )
    await tools.warm()
    yield tools


def readiness_checks(
    store: SqliteCheckpointStore | PostgresCheckpointStore,
    gns3: Gns3Client,
    turn_log: RedisTurnLog | InMemoryTurnLog,
) -> dict[str, Callable[[], Awaitable[object]]]:
    """``/readyz``: the store answers, GNS3 answers, and Redis when turns live there."""
    checks: dict[str, Callable[[], Awaitable[object]]] = {
        "store": (
            store.database.ping
            if isinstance(store, PostgresCheckpointStore)
            else SqliteStoreReadiness(store)
        ),
        "gns3": gns3.version,
    }
    if not isinstance(turn_log, InMemoryTurnLog):  # Redis
        checks["turn_log"] = turn_log.ping
    return checks


async def open_mcp_sources(
    configs: tuple[McpServerConfig | Mapping[str, Any], ...],
) -> AsyncIterator[McpToolSource | None]:
    """The configured MCP servers as tool sources (connecting in the background: the
    service starts without waiting for them), or ``None`` when there are none."""
    if not configs:
        yield None
        return
    from adapters.mcp import McpToolSource  # the MCP SDK: only with servers configured

    source = McpToolSource([McpServerConfig.model_validate(config) for config in configs])
    await source.start()
    try:
        yield source
    finally:
        await source.aclose()
