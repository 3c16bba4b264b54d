"""The composition root: the containers that build the service from :class:`Settings`.

This is the only module that knows every concrete class. Three sub-containers, each
declaring what it needs from the others (``providers.DependenciesContainer``):

* :class:`Gateways` — what talks to the world: the store (per-project SQLite, or
  PostgreSQL), the LLM settings, the turn log (in memory, or Redis), the GNS3 client and
  everything built on it, the model provider;
* :class:`Core` — the domain objects: agents, the turn runner, the chat service;
* :class:`Web` — what the HTTP adapter is given: its settings and its collaborators.

:class:`Container` puts them together; what the web app needs is one provider,
``container.web.collaborators`` (awaited once the resources are open). Resources
(databases, HTTP clients) open and close with the app's lifespan
(``await container.init_resources()`` / ``shutdown_resources()``). Tests override any
provider with a fake (``container.gateways.store.override(...)``).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from dependency_injector import containers, providers
from pydantic import SecretStr

from adapters.gns3 import (
    Gns3Authenticator,
    Gns3Client,
    Gns3ClientDirectory,
    Gns3GroupDirectory,
    Gns3ProjectGate,
    Gns3ToolSettings,
    Gns3TopologySource,
    SkillLibrary,
    load_fault_catalog,
)
from adapters.llm import (
    HttpModelCatalog,
    LLMSettingsPublicView,
    LLMSettingsRepository,
    LLMTimeouts,
    SettingsLanguageModelProvider,
    TiktokenTokenCounter,
    check_endpoint,
)
from adapters.mcp import (
    CompositeToolExecutor,
    McpEndpoint,
    McpServerDependencies,
    McpServerSettings,
    SkillDocument,
    ToolCallRecord,
    WithMcpTools,
)
from adapters.subprocess_agent import AgentConfig, build_agent_backends
from adapters.web import (
    CachingAuthenticator,
    PrometheusTurnMetrics,
    StructlogTurnObserver,
    WebDependencies,
    WebSettings,
)
from copilot_core import (
    AgentSettings,
    BuiltinAgent,
    ChatService,
    ChatSettings,
    RunnerSettings,
    SystemClock,
    ToolGate,
    TurnRunner,
    UuidIdFactory,
)
from copilot_core.bootstrap import HistoryWindows
from copilot_core.policy import PolicyBook
from copilot_core.ports import (
    AgentBackend,
    ApprovalPolicy,
    Clock,
    IdFactory,
    ModelTimeouts,
    ToolExecutor,
)
from copilot_core.rollback import Rollback
from copilot_core.rules import ArgumentLimit, ArgumentLimits, Coalescing
from entrypoints._resources import (
    open_console_runner,
    open_database,
    open_gns3_client,
    open_llm_settings,
    open_mcp_sources,
    open_standing_intent,
    open_store,
    open_tools,
    readiness_checks,
)
from entrypoints.lifecycle import project_lifecycle, reconciling_directory, reconciling_gate
from entrypoints.service_handle import ServiceHandle
from entrypoints.settings import PolicySection, Settings
from entrypoints.skills import SkillsReloader
from entrypoints.turn_ports import (
    open_redis,
    open_session_leases,
    open_turn_controls,
    open_turn_log,
)

if TYPE_CHECKING:  # built only with MCP servers configured (it imports the MCP SDK)
    from adapters.mcp import McpToolSource

__all__ = [
    "Container",
    "Core",
    "Gateways",
    "ServiceHandle",
    "Web",
    "build_container",
    "mcp_dependencies",
    "resolve",
]

T = TypeVar("T")


def agent_tools(gns3: ToolExecutor, mcp: McpToolSource | None) -> ToolExecutor:
    """What the built-in agent may call: the GNS3 tools, then the MCP servers' tools."""
    return gns3 if mcp is None else CompositeToolExecutor(gns3, mcp)


def mcp_server_list(
    mcp: McpToolSource | None,
) -> Callable[[], list[dict[str, Any]]] | None:
    """``/capabilities``' list of MCP servers (their state now), or ``None``."""
    if mcp is None:
        return None
    return lambda: [server.to_dict() for server in mcp.status()]


def agent_backends(
    builtin: BuiltinAgent,
    configs: tuple[AgentConfig | Mapping[str, Any], ...],
    gns3_url: str,
    clock: Clock,
    ids: IdFactory,
    mcp: McpToolSource | None = None,
) -> dict[str, AgentBackend]:
    """The built-in agent (always ``copilot``) and every configured external agent."""
    external = build_agent_backends(
        (AgentConfig.model_validate(config) for config in configs),
        gns3_url=gns3_url,
        clock=clock,
        ids=ids,
    )
    copilot: AgentBackend = builtin if mcp is None else WithMcpTools(builtin, mcp)
    return {"copilot": copilot, **external}


def mcp_server_settings(
    approval_timeout: float, secret_key: SecretStr | None, sessions: Mapping[str, Any]
) -> McpServerSettings:
    """The MCP endpoint's settings (``sessions``: the ``mcp`` section); the service's
    secret key (when set) seals the state of approvals asked over several rounds, so
    that any replica can resume them."""
    keys = (secret_key.get_secret_value().encode(),) if secret_key is not None else ()
    return McpServerSettings(
        approval_timeout=approval_timeout, request_state_keys=keys, **dict(sessions)
    )


class McpToolMetrics:
    """Counts MCP tool calls in the service's metrics, like the chat's tool calls."""

    def __init__(self, metrics: PrometheusTurnMetrics) -> None:
        self._metrics = metrics

    def tool_called(self, record: ToolCallRecord) -> None:
        self._metrics.record_tool_call(record.tool, record.status, record.seconds)


def policy_book(
    section: Mapping[str, Any],
    client: Gns3Client,
    username: str | None,
    password: SecretStr | None,
) -> PolicyBook | None:
    """The operator's policy (the ``policy`` section), or ``None`` without one. Group
    rules read each user's GNS3 groups with the service's own GNS3 account."""
    policy = PolicySection.model_validate(section).operator_policy()
    if policy is None:
        return None
    groups: Gns3GroupDirectory | None = None
    if policy.needs_groups:
        if username is None or password is None:
            raise ValueError(
                "the operator's policy has group rules: set gns3.username and gns3.password "
                "(COPILOT_GNS3__USERNAME, COPILOT_GNS3__PASSWORD) to a GNS3 superadmin "
                "account, which may read users' GNS3 groups"
            )
        groups = Gns3GroupDirectory(client, username=username, password=password.get_secret_value())
    return PolicyBook(policy, groups, ttl=float(section["groups_cache_ttl"]))


def skill_dirs(skills_dir: Path | None) -> list[Path]:
    """Directories read besides the built-in skills."""
    return [Path(skills_dir)] if skills_dir else []


def argument_limits(
    chars: int, items: int, per_tool: dict[str, dict[str, int | None]]
) -> ArgumentLimits:
    """The agent's argument limits from the ``agent`` section (a tool's absent bound is
    the section's)."""
    return ArgumentLimits(
        ArgumentLimit(chars, items),
        {
            name: ArgumentLimit(limit.get("max_chars") or chars, limit.get("max_items") or items)
            for name, limit in per_tool.items()
        },
    )


def tool_call_coalescing(interval: float) -> Coalescing:
    """``tool_call`` events of a call being written: at most every ``interval`` seconds."""
    return Coalescing(interval, AgentSettings().tool_call_coalescing.growth if interval else 0.0)


def heartbeat(seconds: float) -> float | None:
    """The web adapter's heartbeat: ``None`` (off) for the settings' 0."""
    return seconds or None


# ------------------------------------------------------------------ containers
class Gateways(containers.DeclarativeContainer):
    """What talks to the world (see the module docstring)."""

    config = providers.Configuration()

    database = providers.Resource(
        open_database, url=config.database_url, schema=config.database_schema
    )
    store = providers.Resource(
        open_store,
        data_dir=config.data_dir,
        database=database,
        section=config.store,
    )
    redis = providers.Resource(open_redis, url=config.redis_url)
    turn_log = providers.Resource(
        open_turn_log,
        client=redis,
        retention=config.chat.finished_turn_retention,
        lease=config.turn_lease,
        prefix=config.redis_prefix,
    )
    session_leases = providers.Resource(
        open_session_leases, client=redis, lease=config.turn_lease, prefix=config.redis_prefix
    )
    turn_controls = providers.Resource(
        open_turn_controls, client=redis, lease=config.turn_lease, prefix=config.redis_prefix
    )
    llm_settings = providers.Resource(
        open_llm_settings,
        data_dir=config.data_dir,
        secret_key=config.secret_key,
        database=database,
    )
    gns3 = providers.Resource(
        open_gns3_client, base_url=config.gns3.url, request_timeout=config.gns3.timeout
    )
    authenticator = providers.Singleton(Gns3Authenticator, gns3)
    projects = providers.Singleton(Gns3ProjectGate, gns3)
    directory = providers.Singleton(Gns3ClientDirectory, gns3, public_url=config.gns3.public_url)
    skills = providers.Singleton(SkillLibrary, providers.Callable(skill_dirs, config.skills_dir))
    #: The troubleshooting faults, read and judged at start-up: a bad file stops it.
    faults = providers.Resource(load_fault_catalog)
    console = providers.Resource(
        open_console_runner,
        command_timeout=config.console.command_timeout,
        connect_timeout=config.console.connect_timeout,
        max_output_chars=config.console.max_output_chars,
        drain_quiet=config.console.drain_quiet,
        recovery_timeout=config.console.recovery_timeout,
        wake_timeout=config.console.wake_timeout,
    )
    tool_settings = providers.Singleton(
        Gns3ToolSettings,
        start_timeout=config.gns3.start_timeout,
        max_console_wait=config.gns3.max_console_wait,
        poll_interval=config.gns3.poll_interval,
        action_settle=config.gns3.action_settle,
        start_grace=config.gns3.start_grace,
        max_command_timeout=config.gns3.max_command_timeout,
        call_budget=config.gns3.call_budget,
        capture_default_seconds=config.gns3.capture_default_seconds,
        capture_max_seconds=config.gns3.capture_max_seconds,
        capture_max_bytes=config.gns3.capture_max_bytes,
        max_batch=config.gns3.max_batch,
        max_commands=config.gns3.max_commands,
        max_verify_wait=config.gns3.max_verify_wait,
        verify_interval=config.gns3.verify_interval,
        max_change_verify_wait=config.gns3.max_change_verify_wait,
    )
    #: What restore points are stamped and named with (the tools take them first).
    clock = providers.Singleton(SystemClock)
    ids = providers.Singleton(UuidIdFactory)
    tools = providers.Resource(
        open_tools,
        gns3,
        console=console,
        skills=skills,
        settings=tool_settings,
        restore_points=store,
        clock=clock,
        ids=ids,
        intent=store,
    )
    topology = providers.Singleton(Gns3TopologySource, gns3)
    mcp_sources = providers.Resource(open_mcp_sources, configs=config.mcp_servers)
    #: What the built-in agent calls: the GNS3 tools, then the MCP servers' tools.
    agent_tools = providers.Callable(agent_tools, tools, mcp_sources)
    models = providers.Singleton(
        SettingsLanguageModelProvider,
        llm_settings,
        timeouts=providers.Factory(
            LLMTimeouts,
            connect=config.agent.connect_timeout,
            first_token=config.agent.first_token_timeout,
            between_tokens=config.agent.token_timeout,
        ),
    )
    model_catalog = providers.Singleton(HttpModelCatalog, llm_settings)
    llm_config = providers.Singleton(LLMSettingsPublicView, llm_settings)
    token_counter = providers.Singleton(TiktokenTokenCounter)
    readiness = providers.Singleton(readiness_checks, store, gns3, turn_log)
    policy = providers.Singleton(
        policy_book, config.policy, gns3, config.gns3.username, config.gns3.password
    )


class Core(containers.DeclarativeContainer):
    """The domain objects, over the gateways (see the module docstring)."""

    config = providers.Configuration()
    gateways = providers.DependenciesContainer()
    #: Turn observers (metrics, logs): given by the application.
    observers = providers.Dependency(instance_of=list, default=[])

    clock = providers.Singleton(SystemClock)
    ids = providers.Singleton(UuidIdFactory)

    agent_settings = providers.Singleton(
        AgentSettings,
        max_llm_calls=config.agent.max_llm_calls,
        max_calls_per_reply=config.agent.max_calls_per_reply,
        tool_timeout=config.agent.tool_timeout,
        topology_timeout=config.agent.topology_timeout,
        title_timeout=config.agent.title_timeout,
        output_reserve_tokens=config.agent.output_reserve_tokens,
        progress_interval=config.agent.progress_interval,
        max_result_chars=config.agent.max_result_chars,
        max_tokens=config.agent.max_tokens,
        argument_limits=providers.Callable(
            argument_limits,
            config.agent.argument_chars,
            config.agent.argument_items,
            config.agent.tool_argument_limits,
        ),
        tool_call_coalescing=providers.Callable(
            tool_call_coalescing, config.agent.tool_call_interval
        ),
        model_timeouts=providers.Factory(
            ModelTimeouts,
            first_token=config.agent.first_token_timeout,
            between_tokens=config.agent.token_timeout,
        ),
        waiting_interval=config.agent.waiting_interval,
        tool_set=config.agent.tool_set,
    )
    agent = providers.Singleton(
        BuiltinAgent,
        gateways.agent_tools,
        gateways.topology,
        clock=clock,
        ids=ids,
        token_counter=gateways.token_counter,
        settings=agent_settings,
    )
    agents = providers.Singleton(
        agent_backends, agent, config.agents, config.gns3.url, clock, ids, gateways.mcp_sources
    )
    reload_skills = providers.Singleton(SkillsReloader, gateways.skills, agent, config.skills_dir)
    chat_settings = providers.Singleton(
        ChatSettings,
        max_message_chars=config.chat.max_message_chars,
        max_page=config.chat.max_page,
        finished_turn_retention=config.chat.finished_turn_retention,
        history_chars_per_token=config.chat.history_chars_per_token,
        history_page=config.chat.history_page,
        history_cache_sessions=config.chat.history_cache_sessions,
    )
    runner_settings = providers.Singleton(
        RunnerSettings,
        approval_timeout=config.chat.approval_timeout,
        draft_interval=config.chat.draft_interval,
        draft_chars=config.chat.draft_chars,
        save_timeout=config.chat.save_timeout,
    )
    windows = providers.Singleton(
        HistoryWindows,
        gateways.store,
        chars_per_token=config.chat.history_chars_per_token,
        page=config.chat.history_page,
        keep=config.chat.history_cache_sessions,
    )
    runner = providers.Singleton(
        TurnRunner,
        gateways.store,
        gateways.turn_log,
        windows,
        leases=gateways.session_leases,
        controls=gateways.turn_controls,
        models=gateways.models,
        clock=clock,
        ids=ids,
        settings=runner_settings,
        observers=observers,
    )
    chat = providers.Singleton(
        ChatService, gateways.store, agents, runner, clock=clock, settings=chat_settings
    )
    #: Each user's standing intent per project, run through the tools' ``verify_intent``.
    intent = providers.Resource(open_standing_intent, gateways.store, gateways.tools, clock)
    #: The user's undo of a change: the GNS3 tools' ``restore_point`` rollback, through a
    #: gate of its own with the agent's limits, claiming the session as a turn does.
    rollback = providers.Singleton(
        Rollback,
        gateways.store,
        gateways.store,
        providers.Singleton(
            ToolGate,
            gateways.tools,
            timeout=config.agent.tool_timeout,
            max_result_chars=config.agent.max_result_chars,
        ),
        gateways.session_leases,
        clock=clock,
        ids=ids,
        tool="restore_point",
        windows=runner.provided.windows,
    )


class Web(containers.DeclarativeContainer):
    """What the HTTP adapter is given (see the module docstring)."""

    config = providers.Configuration()
    gateways = providers.DependenciesContainer()
    core = providers.DependenciesContainer()

    settings = providers.Singleton(
        WebSettings,
        heartbeat_interval=providers.Callable(heartbeat, config.web.heartbeat_interval),
        abort_on_disconnect=config.web.abort_on_disconnect,
        auth_cache_ttl=config.web.auth_cache_ttl,
        auth_cache_size=config.web.auth_cache_size,
        readiness_timeout=config.web.readiness_timeout,
        llm_test_timeout=config.web.llm_test_timeout,
        cors_origins=config.web.cors_origins,
    )
    #: What follows GNS3 closing or deleting a project (``None`` unless the SQLite store).
    lifecycle = providers.Singleton(
        project_lifecycle, core.chat, gateways.store, config.data_dir, config.gns3.deleted_projects
    )
    #: GNS3's gate; a project GNS3 says is gone is handled as deleted on that request.
    projects = providers.Singleton(reconciling_gate, gateways.projects, lifecycle)
    #: The caller's GNS3 projects; a database of one it lists as closed is closed.
    directory = providers.Singleton(reconciling_directory, gateways.directory, lifecycle)
    #: The one thing the web app is handed once the resources are open.
    collaborators = providers.Singleton(
        WebDependencies,
        chat=core.chat,
        authenticator=gateways.authenticator,
        projects=projects,
        llm_config=gateways.llm_config,
        reload_skills=core.reload_skills,
        readiness=gateways.readiness,
        models=gateways.models,
        directory=directory,
        mcp_servers=providers.Callable(mcp_server_list, gateways.mcp_sources),
        model_catalog=gateways.model_catalog,
        rollback=core.rollback,
        intent=core.intent,
        policy=gateways.policy,
        llm_endpoints=providers.Object(check_endpoint),
    )


class Container(containers.DeclarativeContainer):
    """The service: gateways, core and web, with the turn observers they share."""

    config = providers.Configuration(strict=True)

    metrics = providers.Singleton(PrometheusTurnMetrics)
    turn_logger = providers.Singleton(StructlogTurnObserver)
    service = providers.Singleton(ServiceHandle, grace=config.shutdown_grace)

    gateways = providers.Container(Gateways, config=config)
    core = providers.Container(
        Core, config=config, gateways=gateways, observers=providers.List(metrics, turn_logger)
    )
    web = providers.Container(Web, config=config, gateways=gateways, core=core)

    #: The GNS3 tools served over MCP, behind a gate of their own with the agent's limit.
    mcp_tools = providers.Singleton(
        ToolGate,
        gateways.tools,
        timeout=config.agent.tool_timeout,
        max_result_chars=config.agent.max_result_chars,
    )
    #: Built with the app (mounted at /v3/copilot/mcp); ``mcp_dependencies`` feeds it.
    mcp_endpoint = providers.Singleton(
        McpEndpoint,
        providers.Callable(
            mcp_server_settings, config.chat.approval_timeout, config.secret_key, config.mcp
        ),
    )


def build_container(settings: Settings) -> Container:
    container = Container()
    # model_dump keeps SecretStr values (the key, the URLs with their passwords) as they are
    container.config.from_dict(settings.model_dump())
    return container


async def resolve(value: T | Any) -> Any:
    """A provider's value: providers that depend on async resources return awaitables."""
    return await value if inspect.isawaitable(value) else value


async def mcp_dependencies(container: Container) -> McpServerDependencies:
    """What the MCP endpoint needs (after ``init_resources``)."""
    gateways = container.gateways
    agent: BuiltinAgent = await resolve(container.core.agent())
    skills: SkillLibrary = await resolve(gateways.skills())
    llm_settings: LLMSettingsRepository = await resolve(gateways.llm_settings())
    web_settings: WebSettings = container.web.settings()

    async def approval(user_id: str) -> ApprovalPolicy:
        settings = await llm_settings.get_public(user_id)
        return ApprovalPolicy.CHANGES if settings is None else settings.approval

    def skill_documents() -> list[SkillDocument]:
        return [
            SkillDocument(s.device_type, s.topic, s.title, s.summary, s.content)
            for s in skills.list()
        ]

    return McpServerDependencies(
        tools=await resolve(container.mcp_tools()),
        authenticator=CachingAuthenticator(
            await resolve(gateways.authenticator()),
            ttl=web_settings.auth_cache_ttl,
            size=web_settings.auth_cache_size,
        ),
        projects=await resolve(container.web.projects()),
        directory=await resolve(gateways.directory()),
        topology=await resolve(gateways.topology()),
        approval=approval,
        prompts=lambda: agent.prompts,
        skills=skill_documents,
        observers=(McpToolMetrics(container.metrics()),),
        policy=await resolve(gateways.policy()),
    )
