"""The composition root: the containers that build the service from :class:`Settings`.

This is the only module that knows every concrete class. Three sub-containers, each
declaring what it needs from the others (``providers.DependenciesContainer``):

* :class:`Gateways` — what talks to the world: the store (per-project SQLite, or
  PostgreSQL), the LLM settings, the turn log (in memory, or Redis), the GNS3 client and
  everything built on it, the model provider;
* :class:`Core` — the domain objects: agents, the turn runner, the chat service;
* :class:`Web` — what the HTTP adapter is given: its settings and its collaborators.

:class:`Container` puts them together; what the web app needs is one provider,
``container.web.collaborators`` (awaited once the resources are open), and what the
MCP endpoint needs is ``container.mcp_dependencies``, sharing the web's authenticator
(one cache of tokens) and its project gate. Resources
(databases, HTTP clients) open and close with the app's lifespan
(``await container.init_resources()`` / ``shutdown_resources()``). Tests override any
provider with a fake (``container.gateways.store.override(...)``).

Each section of the settings is its component's own settings type and is passed whole
(``settings=config.agent``), as dependency-injector's asyncio-daemon example passes
``options=config.monitors.example``; a component that borrows one value of another's
section names it (``config.chat.provided.approval_timeout``). The agent's gate is the
one every caller of the tools keeps to (its ``bounds``), and there is one clock and one
id factory.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from dependency_injector import containers, providers
from pydantic import SecretStr

from adapters.gns3 import (
    DrillTools,
    FaultCatalog,
    Gns3Authenticator,
    Gns3Client,
    Gns3ClientDirectory,
    Gns3DrillLab,
    Gns3GroupDirectory,
    Gns3ProjectGate,
    Gns3Settings,
    Gns3ToolExecutor,
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
    ApprovalSettings,
    CompositeToolExecutor,
    McpEndpoint,
    McpServerDependencies,
    SkillCatalogue,
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
)
from copilot_core import (
    AgentSettings,
    BuiltinAgent,
    ChatService,
    PromptBook,
    SystemClock,
    ToolGate,
    TurnRunner,
    UuidIdFactory,
)
from copilot_core.bootstrap import history_windows
from copilot_core.drills import DrillLab, DrillResults, Drills
from copilot_core.intent import CheckProbes
from copilot_core.policy import PolicyBook
from copilot_core.ports import (
    AgentBackend,
    ApprovalPolicy,
    Clock,
    IdFactory,
    ToolExecutor,
)
from copilot_core.rollback import Rollback
from entrypoints._labs import (
    gns3_lab_build_tools,
    gns3_lab_planner,
    lab_build_use_case,
    with_lab_builds,
)
from entrypoints._resources import (
    open_console_runner,
    open_database,
    open_drill_results,
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
    "resolve",
]

T = TypeVar("T")


def agent_tools(gns3: ToolExecutor, mcp: McpToolSource | None) -> ToolExecutor:
    """What the built-in agent may call: the GNS3 tools, then the MCP servers' tools."""
    return gns3 if mcp is None else CompositeToolExecutor(gns3, mcp)


def gns3_drill_lab(tools: ToolExecutor) -> DrillLab | None:
    """The lab a drill breaks and restores: the GNS3 tools' own (their lab access, the
    console and the grammar every line is judged by); ``None`` when the tools are not
    GNS3's (an evaluation's simulated lab): that deployment has no drills."""
    return Gns3DrillLab(tools.lab) if isinstance(tools, Gns3ToolExecutor) else None


def drills_use_case(
    catalog: FaultCatalog,
    lab: DrillLab | None,
    probes: CheckProbes,
    results: DrillResults,
    clock: Clock,
    ids: IdFactory,
) -> Drills | None:
    """The troubleshooting drills over the catalog, the lab, its checks (the standing
    intent's probes: a symptom is answered as ``verify_intent`` answers it) and the
    results store, on the service's clock; ``None`` without a lab."""
    if lab is None:
        return None
    return Drills(catalog.faults, lab, probes, results, clock=clock, ids=ids)


def drill_tool_source(drills: Drills | None) -> DrillTools | None:
    """The chat's ``practice_drill`` tool over the drills (``None`` without them)."""
    return None if drills is None else DrillTools(drills)


def with_drill_tools(tools: ToolExecutor, drills: DrillTools | None) -> ToolExecutor:
    """What the built-in agent calls: its tools, then ``practice_drill`` when there are
    drills (a chat's "give me an OSPF fault")."""
    return tools if drills is None else CompositeToolExecutor(tools, drills)


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


def mcp_request_state_keys(secret_key: SecretStr | None) -> tuple[bytes, ...]:
    """The keys that seal the state of MCP approvals asked over several rounds: the
    service's secret key when set, so that any replica can resume them."""
    return (secret_key.get_secret_value().encode(),) if secret_key is not None else ()


def mcp_gate(
    agent_gate: ToolGate,
    agent_tools: ToolExecutor,
    gns3: ToolExecutor,
    drills: DrillTools | None,
    agent: AgentSettings,
) -> ToolGate:
    """The gate the MCP endpoint serves the copilot's own tools through (the GNS3 tools,
    then ``practice_drill`` when there are drills): the agent's gate when those are all
    the agent calls, else one of the same limits over them alone (the endpoint serves the
    copilot's tools, not those of the MCP servers it uses)."""
    return agent_gate if agent_tools is gns3 else agent.gate(with_drill_tools(gns3, drills))


class McpToolMetrics:
    """Counts MCP tool calls in the service's metrics, like the chat's tool calls."""

    def __init__(self, metrics: PrometheusTurnMetrics) -> None:
        self._metrics = metrics

    def tool_called(self, record: ToolCallRecord) -> None:
        self._metrics.record_tool_call(record.tool, record.status, record.seconds)


def stored_approval(llm_settings: LLMSettingsRepository) -> ApprovalSettings:
    """A user's approval setting as the MCP endpoint reads it: the one they saved with
    their LLM settings (``changes`` until they save one), as their chat turns do."""

    async def approval(user_id: str) -> ApprovalPolicy:
        settings = await llm_settings.get_public(user_id)
        return ApprovalPolicy.CHANGES if settings is None else settings.approval

    return approval


def agent_prompts(agent: BuiltinAgent) -> Callable[[], PromptBook]:
    """The built-in agent's prompts now (a skills reload replaces them)."""
    return lambda: agent.prompts


def skill_documents(skills: SkillLibrary) -> SkillCatalogue:
    """The skills as the MCP endpoint lists them, read at each listing."""

    def documents() -> list[SkillDocument]:
        return [
            SkillDocument(s.device_type, s.topic, s.title, s.summary, s.content)
            for s in skills.list()
        ]

    return documents


def policy_book(
    section: PolicySection, client: Gns3Client, gns3: Gns3Settings
) -> PolicyBook | None:
    """The operator's policy (the ``policy`` section), or ``None`` without one. Group
    rules read each user's GNS3 groups with the service's own GNS3 account (the
    ``gns3`` section's ``username`` and ``password``)."""
    policy = section.operator_policy()
    if policy is None:
        return None
    username, password = gns3.username, gns3.password
    groups: Gns3GroupDirectory | None = None
    if policy.needs_groups:
        if username is None or password is None:
            raise ValueError(
                "the operator's policy has group rules: set gns3.username and gns3.password "
                "(COPILOT_GNS3__USERNAME, COPILOT_GNS3__PASSWORD) to a GNS3 superadmin "
                "account, which may read users' GNS3 groups"
            )
        groups = Gns3GroupDirectory(client, username=username, password=password.get_secret_value())
    return PolicyBook(policy, groups, ttl=section.groups_cache_ttl)


def skill_dirs(skills_dir: Path | None) -> list[Path]:
    """Directories read besides the built-in skills."""
    return [Path(skills_dir)] if skills_dir else []


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
        settings=config.store,
    )
    redis = providers.Resource(open_redis, url=config.redis_url)
    turn_log = providers.Resource(
        open_turn_log,
        client=redis,
        retention=config.chat.provided.finished_turn_retention,
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
    gns3 = providers.Resource(open_gns3_client, settings=config.gns3)
    authenticator = providers.Singleton(Gns3Authenticator, gns3)
    projects = providers.Singleton(Gns3ProjectGate, gns3)
    directory = providers.Singleton(
        Gns3ClientDirectory, gns3, public_url=config.gns3.provided.public_url
    )
    skills = providers.Singleton(SkillLibrary, providers.Callable(skill_dirs, config.skills_dir))
    #: The troubleshooting faults, read and judged at start-up: a bad file stops it.
    faults = providers.Resource(load_fault_catalog)
    console = providers.Resource(open_console_runner, settings=config.console)
    #: The service's one clock and one id factory (restore points, turns, messages…).
    clock = providers.Singleton(SystemClock)
    ids = providers.Singleton(UuidIdFactory)
    tools = providers.Resource(
        open_tools,
        gns3,
        console=console,
        skills=skills,
        settings=config.gns3,
        restore_points=store,
        clock=clock,
        ids=ids,
        intent=store,
    )
    #: The lab's checks per caller (the GNS3 tools' own, which ``verify_intent`` uses).
    probes = tools.provided.probes
    #: The lab's restore feature (the GNS3 tools' own, which ``restore_point`` uses).
    restore = tools.provided.restore
    #: The lab a troubleshooting drill breaks and restores (``None``: not GNS3's tools).
    drill_lab = providers.Singleton(gns3_drill_lab, tools)
    #: Lab plans on the project's GNS3 server (``None``: not GNS3's tools).
    lab_planner = providers.Singleton(gns3_lab_planner, tools)
    #: Each project's active drill and each user's results (SQLite, or PostgreSQL).
    drill_results = providers.Resource(open_drill_results, config.data_dir, database)
    topology = providers.Singleton(Gns3TopologySource, gns3)
    mcp_sources = providers.Resource(open_mcp_sources, configs=config.mcp_servers)
    #: The chat's ``build_lab`` tool (``None``: no lab plans).
    lab_build_tools = providers.Singleton(gns3_lab_build_tools, tools, lab_planner)
    #: The copilot's own tools: the GNS3 tools, then ``build_lab``.
    copilot_tools = providers.Singleton(with_lab_builds, tools, lab_build_tools)
    #: What the built-in agent calls: the copilot's own tools, then the MCP servers'.
    agent_tools = providers.Callable(agent_tools, copilot_tools, mcp_sources)
    models = providers.Singleton(
        SettingsLanguageModelProvider,
        llm_settings,
        timeouts=providers.Callable(LLMTimeouts.of, config.agent),
    )
    model_catalog = providers.Singleton(HttpModelCatalog, llm_settings)
    llm_config = providers.Singleton(LLMSettingsPublicView, llm_settings)
    token_counter = providers.Singleton(TiktokenTokenCounter)
    readiness = providers.Singleton(readiness_checks, store, gns3, turn_log)
    policy = providers.Singleton(policy_book, config.policy, gns3, config.gns3)


class Core(containers.DeclarativeContainer):
    """The domain objects, over the gateways (see the module docstring)."""

    config = providers.Configuration()
    gateways = providers.DependenciesContainer()
    #: Turn observers (metrics, logs): given by the application.
    observers = providers.Dependency(instance_of=list, default=[])

    clock = gateways.clock
    ids = gateways.ids

    #: The ``agent`` section, whole: the agent's, its gate's and the model provider's.
    agent_settings = config.agent

    #: The gate every tool call of the agent goes through, with the ``agent`` section's
    #: limits (time, progress, result size).
    #: Troubleshooting drills: the fault catalog on the lab, checked by its probes.
    drills = providers.Singleton(
        drills_use_case,
        gateways.faults,
        gateways.drill_lab,
        gateways.probes,
        gateways.drill_results,
        clock,
        ids,
    )
    #: The chat's ``practice_drill`` tool over them (``None``: no drills).
    drill_tools = providers.Singleton(drill_tool_source, drills)
    #: What the agent calls: the lab's tools (and MCP servers'), then the drill tool.
    agent_tools = providers.Callable(with_drill_tools, gateways.agent_tools, drill_tools)
    gate = providers.Singleton(AgentSettings.gate, agent_settings, agent_tools)
    #: The same section's bounds of one call into the lab, which the core's own calls
    #: into it keep to (a standing intent's run, a rollback): the gate's ``bounds``.
    call_bounds = agent_settings.provided.bounds
    agent = providers.Singleton(
        BuiltinAgent,
        gate,
        gateways.topology,
        clock=clock,
        ids=ids,
        token_counter=gateways.token_counter,
        settings=agent_settings,
    )
    agents = providers.Singleton(
        agent_backends,
        agent,
        config.agents,
        config.gns3.provided.url,
        clock,
        ids,
        gateways.mcp_sources,
    )
    reload_skills = providers.Singleton(SkillsReloader, gateways.skills, agent, config.skills_dir)
    windows = providers.Singleton(history_windows, gateways.store, config.chat)
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
        settings=config.chat,
        observers=observers,
    )
    chat = providers.Singleton(
        ChatService, gateways.store, agents, runner, clock=clock, settings=config.chat
    )
    #: Each user's standing intent per project, run on the lab's probes within those bounds.
    intent = providers.Resource(
        open_standing_intent, gateways.store, gateways.probes, clock, call_bounds
    )
    #: The user's undo of a change: the lab's restore feature, within those bounds,
    #: claiming the session as a turn does.
    rollback = providers.Singleton(
        Rollback,
        gateways.store,
        gateways.store,
        gateways.restore,
        gateways.session_leases,
        clock=clock,
        ids=ids,
        bounds=call_bounds,
        windows=runner.provided.windows,
    )
    #: A plan built on the user's approval: ``build_lab`` through the agent's gate.
    lab_builds = providers.Singleton(
        lab_build_use_case,
        gate,
        gateways.lab_build_tools,
        gateways.lab_planner,
        gateways.store,
        gateways.session_leases,
        clock,
        ids,
        runner.provided.windows,
    )


class Web(containers.DeclarativeContainer):
    """What the HTTP adapter is given (see the module docstring)."""

    config = providers.Configuration()
    gateways = providers.DependenciesContainer()
    core = providers.DependenciesContainer()

    #: The web adapter's settings: the ``web`` section, whole (``create_app`` takes it).
    settings = providers.Singleton(config.web)
    #: GNS3's answer to a token, remembered briefly: the one cache the web API and the
    #: MCP endpoint both authenticate through.
    authenticator = providers.Singleton(
        CachingAuthenticator,
        gateways.authenticator,
        ttl=config.web.provided.auth_cache_ttl,
        size=config.web.provided.auth_cache_size,
    )
    #: What follows GNS3 closing or deleting a project (``None`` unless the SQLite store).
    lifecycle = providers.Singleton(
        project_lifecycle,
        core.chat,
        gateways.store,
        config.data_dir,
        config.gns3.provided.deleted_projects,
    )
    #: GNS3's gate; a project GNS3 says is gone is handled as deleted on that request.
    projects = providers.Singleton(reconciling_gate, gateways.projects, lifecycle)
    #: The caller's GNS3 projects; a database of one it lists as closed is closed.
    directory = providers.Singleton(reconciling_directory, gateways.directory, lifecycle)
    #: The one thing the web app is handed once the resources are open.
    collaborators = providers.Singleton(
        WebDependencies,
        chat=core.chat,
        authenticator=authenticator,
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
        drills=core.drills,
        labs=gateways.lab_planner,
        lab_builds=core.lab_builds,
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

    #: The copilot's tools served over MCP (GNS3's, ``build_lab``, then ``practice_drill``): see
    #: mcp_gate.
    mcp_tools = providers.Singleton(
        mcp_gate,
        core.gate,
        gateways.agent_tools,
        gateways.copilot_tools,
        core.drill_tools,
        config.agent,
    )
    #: What the MCP endpoint is given once the resources are open (awaited, as the web's
    #: collaborators are): the web's authenticator and projects, the gate above.
    mcp_dependencies = providers.Singleton(
        McpServerDependencies,
        tools=mcp_tools,
        authenticator=web.authenticator,
        projects=web.projects,
        directory=gateways.directory,
        topology=gateways.topology,
        approval=providers.Callable(stored_approval, gateways.llm_settings),
        prompts=providers.Callable(agent_prompts, core.agent),
        skills=providers.Callable(skill_documents, gateways.skills),
        observers=providers.List(providers.Singleton(McpToolMetrics, metrics)),
        policy=gateways.policy,
    )
    #: Built with the app (mounted at /v3/copilot/mcp); ``mcp_dependencies`` feeds it.
    mcp_endpoint = providers.Singleton(
        McpEndpoint,
        config.mcp,
        approval_timeout=config.chat.provided.approval_timeout,
        request_state_keys=providers.Callable(mcp_request_state_keys, config.secret_key),
    )


def build_container(settings: Settings) -> Container:
    container = Container()
    # Each section is passed whole, as the component's own settings type; the top-level
    # values as they are (SecretStr stays SecretStr).
    container.config.from_dict({name: getattr(settings, name) for name in Settings.model_fields})
    return container


async def resolve(value: T | Any) -> Any:
    """A provider's value: providers that depend on async resources return awaitables."""
    return await value if inspect.isawaitable(value) else value
