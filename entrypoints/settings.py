"""The service's settings: command-line flags, then ``COPILOT_*`` environment variables,
then defaults (see docs/configuration.md).

The service's own settings are top-level (``host``, ``port``, ``data_dir``…); every
tunable of a component is in that component's section: ``gns3``, ``console``,
``agent``, ``chat``, ``web``, ``store``. A section's field is
``COPILOT_<SECTION>__<FIELD>`` in the environment (``COPILOT_WEB__HEARTBEAT_INTERVAL``)
and ``--<section>-<field>`` on the command line (``--web-heartbeat-interval``). The
flat names of earlier versions (``COPILOT_HEARTBEAT_INTERVAL``…) still work: they are
aliases, read after the sectioned names (:data:`FLAT_ALIASES`).

Defaults are not repeated here: each comes from the component that owns it (the
core's rules and settings, the adapters' constructors), so the service and a library
user of the same component start from the same values.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, Self, get_args, get_origin

import yaml
from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator
from pydantic.fields import FieldInfo
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from adapters.gns3 import ConsoleRunner, Gns3ToolSettings
from adapters.llm import LLMTimeouts
from adapters.mcp import McpServerConfig, McpServerSettings
from adapters.sqlite import SqliteCheckpointStore
from adapters.subprocess_agent import AgentConfig
from adapters.web import BASE_URL_PATTERN, WebSettings
from copilot_core import AgentSettings, ChatSettings, RunnerSettings
from copilot_core.policy import OperatorPolicy
from copilot_core.rules import MAX_MESSAGE_CHARS

__all__ = [
    "FLAT_ALIASES",
    "AgentSection",
    "ChatSection",
    "ConsoleSection",
    "Gns3Section",
    "McpSection",
    "PolicySection",
    "Settings",
    "StoreSection",
    "WebSection",
    "add_setting_flags",
    "default_data_dir",
    "settings_from_flags",
]

_AGENT = AgentSettings()
_CHAT = ChatSettings()
_RUNNER = RunnerSettings()
_TOOLS = Gns3ToolSettings()
_WEB = WebSettings()
_MCP = McpServerSettings()
_LLM_TIMEOUTS = LLMTimeouts()


def _default(component: Callable[..., object], name: str) -> Any:
    """The default a component's constructor gives ``name``."""
    return inspect.signature(component).parameters[name].default


def default_data_dir() -> Path:
    """``$XDG_DATA_HOME/gns3-copilot``, else ``~/.local/share/gns3-copilot``."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "gns3-copilot"


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Gns3Section(_Section):
    """The GNS3 server, and the bounds of the lab tools."""

    url: str = Field(
        default="http://127.0.0.1:3080",
        pattern=BASE_URL_PATTERN,
        description="Base URL of the GNS3 server (its v3 API): http(s)://host[:port], no "
        "credentials.",
    )
    timeout: float = Field(default=10.0, gt=0, description="Seconds per GNS3 request.")
    public_url: str | None = Field(
        default=None,
        pattern=BASE_URL_PATTERN,
        description="GNS3's address as people's browsers reach it (the web page's console "
        "addresses and links to GNS3's web UI); unset: url.",
    )
    username: str | None = Field(
        default=None,
        description=(
            "A GNS3 account (a superadmin, to see every project) the service uses to follow "
            "projects being closed or deleted; unset: their copilot data is left alone."
        ),
    )
    password: SecretStr | None = Field(default=None, description="Its password.")
    deleted_projects: Literal["delete", "archive"] = Field(
        default="delete",
        description=(
            "What happens to the conversations of a project deleted in GNS3: deleted, or "
            "moved to data_dir/archive."
        ),
    )
    start_timeout: float = Field(
        default=_TOOLS.start_timeout, gt=0, description="Seconds a node may take to start."
    )
    max_console_wait: float = Field(
        default=_TOOLS.max_console_wait,
        gt=0,
        description="The longest wait_for_console may wait for a console's prompt (seconds).",
    )
    poll_interval: float = Field(
        default=_TOOLS.poll_interval, gt=0, description="Seconds between status polls."
    )
    action_settle: float = Field(
        default=_TOOLS.action_settle,
        gt=0,
        description="Seconds a stop or suspend is given to show in the node's status.",
    )
    start_grace: float = Field(
        default=_TOOLS.start_grace,
        gt=0,
        description="Seconds a started node may still read stopped before the start failed.",
    )
    max_command_timeout: float = Field(
        default=_TOOLS.max_command_timeout,
        gt=0,
        description="The longest timeout a console command of a tool call may ask for.",
    )
    call_budget: float = Field(
        default=_TOOLS.call_budget,
        gt=0,
        description="Seconds one console tool call may take (keep it under agent.tool_timeout).",
    )
    capture_default_seconds: float = Field(
        default=_TOOLS.capture_default_seconds, gt=0, description="A capture's default length."
    )
    capture_max_seconds: float = Field(
        default=_TOOLS.capture_max_seconds, gt=0, description="A capture's longest length."
    )
    capture_max_bytes: int = Field(
        default=_TOOLS.capture_max_bytes, ge=1024, description="The largest capture read."
    )
    max_batch: int = Field(
        default=_TOOLS.max_batch, ge=1, description="Devices one batch tool call may touch."
    )
    max_commands: int = Field(
        default=_TOOLS.max_commands, ge=1, description="Commands one tool call may send."
    )


class ConsoleSection(_Section):
    """The device consoles (telnet)."""

    command_timeout: float = Field(
        default=_default(ConsoleRunner, "command_timeout"),
        gt=0,
        description="Seconds one console command may take.",
    )
    connect_timeout: float = Field(
        default=_default(ConsoleRunner, "connect_timeout"),
        gt=0,
        description="Seconds to open a console.",
    )
    max_output_chars: int = Field(
        default=_default(ConsoleRunner, "max_output_chars"),
        ge=100,
        description="Output kept of one command (characters).",
    )
    drain_quiet: float = Field(
        default=_default(ConsoleRunner, "drain_quiet"),
        gt=0,
        description="Seconds of silence that end a command's output.",
    )
    recovery_timeout: float = Field(
        default=_default(ConsoleRunner, "recovery_timeout"),
        gt=0,
        description="Seconds to bring a console back to its prompt.",
    )
    wake_timeout: float = Field(
        default=_default(ConsoleRunner, "wake_timeout"),
        gt=0,
        description="Seconds to wake a console that does not answer at once.",
    )


class ArgumentLimitSetting(BaseModel):
    """One tool's argument limit (an absent bound is the section's)."""

    model_config = ConfigDict(extra="forbid")

    max_chars: int | None = Field(default=None, ge=2)
    max_items: int | None = Field(default=None, ge=1)


class AgentSection(_Section):
    """The built-in agent's limits (external agents have theirs in ``agents``)."""

    max_llm_calls: int = Field(
        default=_AGENT.max_llm_calls, ge=1, description="The step budget: model calls per turn."
    )
    tool_timeout: float = Field(
        default=_AGENT.tool_timeout, gt=0, description="Seconds one tool call may take."
    )
    topology_timeout: float = Field(
        default=_AGENT.topology_timeout, gt=0, description="Seconds to read the lab's topology."
    )
    title_timeout: float = Field(
        default=_AGENT.title_timeout, gt=0, description="Seconds to write a session's title."
    )
    output_reserve_tokens: int = Field(
        default=_AGENT.output_reserve_tokens,
        ge=0,
        description="Tokens of the context kept free for the answer.",
    )
    progress_interval: float = Field(
        default=_AGENT.progress_interval,
        gt=0,
        description="Seconds between progress events of one running tool.",
    )
    max_result_chars: int = Field(
        default=_AGENT.max_result_chars,
        ge=1000,
        description="Characters of one tool result the model reads; a longer one is cut.",
    )
    max_tokens: int | None = Field(
        default=_AGENT.max_tokens,
        gt=0,
        description="The longest answer of one model call (tokens) for users whose LLM "
        "settings set none; null leaves it to the model.",
    )
    argument_chars: int = Field(
        default=_AGENT.argument_limits.default.max_chars,
        ge=2,
        description="Characters one tool call's arguments may have; a call that grows past "
        "it is stopped while the model writes it.",
    )
    argument_items: int = Field(
        default=_AGENT.argument_limits.default.max_items,
        ge=1,
        description="Items any list in one tool call's arguments may have (stopped the same way).",
    )
    tool_argument_limits: dict[str, ArgumentLimitSetting] = Field(
        default_factory=dict,
        description='Limits of particular tools, as a JSON object: {"tool": {"max_chars": '
        'N, "max_items": M}}; the others have argument_chars and argument_items.',
    )
    connect_timeout: float = Field(
        default=_LLM_TIMEOUTS.connect,
        gt=0,
        description="Seconds to connect to a model's server, for users whose LLM settings "
        "set none (connect_timeout there).",
    )
    first_token_timeout: float = Field(
        default=_AGENT.model_timeouts.first_token,
        gt=0,
        description="Seconds a model may take to its first token (a local model reading a "
        "long prompt may need minutes), for users whose LLM settings set none.",
    )
    token_timeout: float = Field(
        default=_AGENT.model_timeouts.between_tokens,
        gt=0,
        description="Seconds a model may pause between two tokens, for users whose LLM "
        "settings set none.",
    )
    waiting_interval: float = Field(
        default=_AGENT.waiting_interval,
        gt=0,
        description="Seconds between waiting_for_model status events while a model has "
        "not answered yet.",
    )
    tool_set: Literal["full", "compact"] = Field(
        default=_AGENT.tool_set,
        description="The tool schemas models read, for users whose LLM settings do not "
        "say: full, or compact (short schemas for small models).",
    )
    tool_call_interval: float = Field(
        default=_AGENT.tool_call_coalescing.interval,
        ge=0,
        description="Seconds between two tool_call events of a call being written (each "
        "also waits for the arguments to grow by a quarter); 0 sends every fragment.",
    )


class ChatSection(_Section):
    """Chat limits and the turns' bounds."""

    max_message_chars: int = Field(
        default=_CHAT.max_message_chars,
        ge=1,
        le=MAX_MESSAGE_CHARS,
        description="Longest accepted user message (the core's ceiling is the maximum).",
    )
    max_page: int = Field(
        default=_CHAT.max_page, ge=1, description="Most sessions or messages one page holds."
    )
    finished_turn_retention: float = Field(
        default=_CHAT.finished_turn_retention,
        ge=0,
        description="Seconds a finished turn can still be re-attached.",
    )
    approval_timeout: float = Field(
        default=_RUNNER.approval_timeout,
        gt=0,
        description="Seconds a tool call waits for the user's approval before it counts "
        "as rejected.",
    )
    draft_interval: float = Field(
        default=_RUNNER.draft_interval,
        gt=0,
        description="Seconds between saves of an answer being streamed.",
    )
    draft_chars: int = Field(
        default=_RUNNER.draft_chars,
        ge=1,
        description="…or characters streamed since the last save, whichever comes first.",
    )
    save_timeout: float = Field(
        default=_RUNNER.save_timeout, gt=0, description="Seconds a turn's final save may take."
    )
    history_chars_per_token: int | None = Field(
        default=_CHAT.history_chars_per_token,
        ge=1,
        description="A turn reads the newest history that fits this many characters per "
        "token of the model's context; null reads it all.",
    )
    history_page: int = Field(
        default=_CHAT.history_page, ge=1, description="Messages read per page of history."
    )
    history_cache_sessions: int = Field(
        default=_CHAT.history_cache_sessions,
        ge=0,
        description="Sessions whose history window stays in memory (0: none).",
    )


class WebSection(_Section):
    """The HTTP API."""

    heartbeat_interval: float = Field(
        default=_WEB.heartbeat_interval or 0,
        ge=0,
        description="Seconds of quiet before an SSE heartbeat; 0 disables.",
    )
    abort_on_disconnect: bool = Field(
        default=_WEB.abort_on_disconnect,
        description="Abort a turn when its streaming client disconnects.",
    )
    auth_cache_ttl: float = Field(
        default=_WEB.auth_cache_ttl, ge=0, description="Seconds a validated token is remembered."
    )
    auth_cache_size: int = Field(
        default=_WEB.auth_cache_size, ge=1, description="Tokens remembered at most."
    )
    readiness_timeout: float = Field(
        default=_WEB.readiness_timeout, gt=0, description="Seconds each /readyz check may take."
    )
    llm_test_timeout: float = Field(
        default=_WEB.llm_test_timeout,
        gt=0,
        description="Seconds POST /llm-config/test waits for the model.",
    )
    cors_origins: tuple[str, ...] = Field(
        default=_WEB.cors_origins,
        description='Browser origins allowed cross-site (JSON list, e.g. ["https://ui.lab"]).',
    )


class StoreSection(_Section):
    """The per-project SQLite databases."""

    max_open: int = Field(
        default=_default(SqliteCheckpointStore, "max_open"),
        ge=1,
        description="Databases kept open at once (least recently used ones close).",
    )
    busy_timeout: float = Field(
        default=_default(SqliteCheckpointStore, "busy_timeout"),
        gt=0,
        description="Seconds a write waits for another writer.",
    )
    synchronous: Literal["NORMAL", "FULL"] = Field(
        default=_default(SqliteCheckpointStore, "synchronous"),
        description="SQLite's synchronous mode: FULL survives a power loss at some speed.",
    )


class McpSection(_Section):
    """The copilot's own MCP endpoint (``/v3/copilot/mcp``)."""

    max_sessions_per_user: int = Field(
        default=_MCP.max_sessions_per_user,
        ge=1,
        description="MCP sessions one GNS3 user may hold open at once (one more: HTTP 429).",
    )
    session_idle_timeout: float = Field(
        default=_MCP.session_idle_timeout,
        gt=0,
        description="Seconds an MCP session may go without a request before it is closed.",
    )
    max_sessions: int = Field(
        default=_MCP.max_sessions,
        ge=2,
        description="MCP sessions of every user together (beyond: 503); above "
        "max_sessions_per_user.",
    )

    @model_validator(mode="after")
    def _no_user_fills_the_endpoint(self) -> Self:
        if self.max_sessions <= self.max_sessions_per_user:
            raise ValueError(
                "max_sessions must be above max_sessions_per_user: one user must never "
                "fill the endpoint for everyone else"
            )
        return self


class PolicySection(_Section):
    """The operator's policy (docs/configuration.md): per GNS3 user or group, the highest
    copilot mode, the least approval setting and the LLM endpoints allowed."""

    file: Path | None = Field(
        default=None,
        description="A YAML or JSON file with the policy (default, groups, users); read "
        "at start-up.",
    )
    rules: OperatorPolicy | None = Field(
        default=None,
        description="The policy itself, as JSON (instead of file).",
    )
    deny_private_llm_endpoints: bool = Field(
        default=False,
        description="Refuse LLM base_urls on loopback, private, link-local and other "
        "non-public addresses unless a rule's llm_endpoints names them.",
    )
    groups_cache_ttl: float = Field(
        default=30.0, ge=0, description="Seconds a user's GNS3 groups are remembered."
    )

    @model_validator(mode="after")
    def _one_source(self) -> Self:
        if self.file is not None and self.rules is not None:
            raise ValueError("give the policy as file or as rules, not both")
        if self.file is not None:
            self.operator_policy()  # a file that cannot be read stops the start-up
        return self

    def operator_policy(self) -> OperatorPolicy | None:
        """The policy (read from ``file`` when one is given); ``None``: there is none."""
        policy = self.rules
        if self.file is not None:
            policy = _policy_file(self.file)
        if policy is None and not self.deny_private_llm_endpoints:
            return None
        policy = policy or OperatorPolicy()
        if self.deny_private_llm_endpoints:
            policy = policy.model_copy(update={"deny_private_llm_endpoints": True})
        return policy


def _policy_file(path: Path) -> OperatorPolicy:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"cannot read the policy file {str(path)!r}: {exc.strerror}") from None
    try:
        data = json.loads(text) if path.suffix.lower() == ".json" else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as exc:
        raise ValueError(f"the policy file {str(path)!r} is not valid YAML/JSON: {exc}") from None
    try:
        return OperatorPolicy.model_validate(data or {})
    except ValueError as exc:
        raise ValueError(f"the policy file {str(path)!r}: {exc}") from None


#: The flat environment names of earlier versions, and the section field each now is.
FLAT_ALIASES: Mapping[str, tuple[str, str]] = {
    "COPILOT_GNS3_URL": ("gns3", "url"),
    "COPILOT_GNS3_TIMEOUT": ("gns3", "timeout"),
    "COPILOT_GNS3_USERNAME": ("gns3", "username"),
    "COPILOT_GNS3_PASSWORD": ("gns3", "password"),
    "COPILOT_DELETED_PROJECTS": ("gns3", "deleted_projects"),
    "COPILOT_COMMAND_TIMEOUT": ("console", "command_timeout"),
    "COPILOT_MAX_MESSAGE_CHARS": ("chat", "max_message_chars"),
    "COPILOT_FINISHED_TURN_RETENTION": ("chat", "finished_turn_retention"),
    "COPILOT_APPROVAL_TIMEOUT": ("chat", "approval_timeout"),
    "COPILOT_HEARTBEAT_INTERVAL": ("web", "heartbeat_interval"),
    "COPILOT_ABORT_ON_DISCONNECT": ("web", "abort_on_disconnect"),
    "COPILOT_AUTH_CACHE_TTL": ("web", "auth_cache_ttl"),
    "COPILOT_READINESS_TIMEOUT": ("web", "readiness_timeout"),
    "COPILOT_CORS_ORIGINS": ("web", "cors_origins"),
}


class _FlatAliases(PydanticBaseSettingsSource):
    """The :data:`FLAT_ALIASES` found in the environment, as section values (read after
    the sectioned names, so ``COPILOT_WEB__HEARTBEAT_INTERVAL`` wins)."""

    def __init__(self, settings_cls: type[BaseSettings], environ: Mapping[str, str]) -> None:
        super().__init__(settings_cls)
        self._environ = environ

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False  # every value comes from __call__

    def __call__(self) -> dict[str, Any]:
        found: dict[str, dict[str, Any]] = {}
        for name, (section, field) in FLAT_ALIASES.items():
            raw = self._environ.get(name)
            if raw is None:
                continue
            annotation = _section_model(section).model_fields[field].annotation
            found.setdefault(section, {})[field] = _parsed(raw, annotation)
        return found


def _section_model(section: str) -> type[BaseModel]:
    model = Settings.model_fields[section].annotation
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        raise TypeError(f"{section!r} is not a section of the settings")
    return model


def _parsed(raw: str, annotation: Any) -> Any:
    """An environment string for a field: JSON for lists, the text otherwise (pydantic
    validates it, as it does the sectioned names)."""
    if raw == "null":
        return None
    origin = get_origin(annotation) or annotation
    return json.loads(raw) if origin in (tuple, list) else raw


class Settings(BaseSettings):
    """Every setting of ``gns3-copilot serve`` (see the module docstring)."""

    model_config = SettingsConfigDict(
        env_prefix="COPILOT_",
        env_nested_delimiter="__",
        env_parse_none_str="null",
        extra="forbid",
        frozen=True,
    )

    host: str = Field(default="127.0.0.1", description="Interface to listen on.")
    port: int = Field(default=8080, ge=0, le=65535, description="TCP port (0: any free port).")
    data_dir: Path = Field(
        default_factory=default_data_dir,
        description="Per-user data directory (LLM settings database, skills).",
    )
    secret_key: SecretStr | None = Field(
        default=None,
        description="Fernet key that encrypts stored API keys; generated into data_dir if unset.",
    )
    shutdown_grace: float = Field(
        default=10.0, ge=0, description="Seconds running turns get to save on shutdown."
    )
    skills_dir: Path | None = Field(
        default=None,
        description=(
            "Extra skills directory (device skills, forbidden_commands.txt, prompts/*.md) "
            "read besides the built-in one; reloaded by POST /v3/copilot/reload/skills."
        ),
    )
    agents: tuple[AgentConfig, ...] = Field(
        default=(),
        description="External agent programs (spec 002), as a JSON list of agent objects.",
    )
    mcp_servers: tuple[McpServerConfig, ...] = Field(
        default=(),
        description=(
            "MCP servers whose tools the built-in agent may use (as <server>__<tool>), as a "
            "JSON list of server objects (docs/mcp.md)."
        ),
    )
    log_level: Literal["debug", "info", "warning", "error"] = "info"
    log_format: Literal["auto", "json", "console"] = Field(
        default="auto",
        description="auto: human-readable on a terminal, JSON lines otherwise.",
    )
    database_url: SecretStr | None = Field(
        default=None,
        description=(
            "PostgreSQL URL (postgresql://user:password@host:5432/dbname?sslmode=…): sessions "
            "and LLM settings live there, shared by every replica; unset: SQLite files in "
            "data_dir. Needs secret_key. Prefer the environment: other users cannot read it "
            "in the process list."
        ),
    )
    database_schema: str = Field(
        default="gns3_copilot",
        pattern=r"^[a-z_][a-z0-9_]{0,62}$",
        description="PostgreSQL schema of the copilot's tables (created when missing).",
    )
    redis_url: SecretStr | None = Field(
        default=None,
        description=(
            "Redis URL (redis://[:password@]host:6379/0, rediss:// for TLS): running turns "
            "are followed, re-attached and aborted from any replica; unset: in memory. "
            "Prefer the environment."
        ),
    )
    redis_prefix: str = Field(
        default="gns3-copilot",
        pattern=r"^[A-Za-z0-9_.-]{1,64}$",
        description=(
            "With Redis: the prefix of the copilot's keys and channels (one per deployment "
            "sharing a Redis server; every replica of a deployment uses the same)."
        ),
    )
    turn_lease: float = Field(
        default=15.0,
        gt=0,
        description=(
            "With Redis: seconds after which the turn of a replica that stopped responding "
            "is ended and its session freed (the running replica renews it every third)."
        ),
    )

    gns3: Gns3Section = Field(default_factory=Gns3Section)
    console: ConsoleSection = Field(default_factory=ConsoleSection)
    agent: AgentSection = Field(default_factory=AgentSection)
    chat: ChatSection = Field(default_factory=ChatSection)
    web: WebSection = Field(default_factory=WebSection)
    store: StoreSection = Field(default_factory=StoreSection)
    mcp: McpSection = Field(default_factory=McpSection)
    policy: PolicySection = Field(default_factory=PolicySection)

    @field_validator("redis_url", mode="before")
    @classmethod
    def _redis_url(cls, value: Any) -> Any:
        text = value.get_secret_value() if isinstance(value, SecretStr) else value
        if text is None or text == "":
            return None  # COPILOT_REDIS_URL= (empty): in memory
        if not isinstance(text, str) or not text.startswith(("redis://", "rediss://", "unix://")):
            raise ValueError("must be a redis://, rediss:// or unix:// URL")  # never echoed
        return value

    @field_validator("mcp_servers")
    @classmethod
    def _one_name_per_mcp_server(
        cls, value: tuple[McpServerConfig, ...]
    ) -> tuple[McpServerConfig, ...]:
        names = [server.name for server in value]
        for name in names:
            if names.count(name) > 1:
                raise ValueError(f"two MCP servers are named {name!r}")
        return value

    @field_validator("database_url", mode="before")
    @classmethod
    def _postgres_url(cls, value: Any) -> Any:
        text = value.get_secret_value() if isinstance(value, SecretStr) else value
        if text is None or text == "":
            return None  # COPILOT_DATABASE_URL= (empty): SQLite
        if not isinstance(text, str) or not text.startswith(("postgresql://", "postgres://")):
            # Never echo the value: it may hold a password.
            raise ValueError("must be a postgresql:// URL")
        return value

    @model_validator(mode="after")
    def _one_key_for_every_replica(self) -> Self:
        if self.database_url is not None and self.secret_key is None:
            raise ValueError(
                "database_url needs secret_key (COPILOT_SECRET_KEY): every replica must "
                "encrypt the stored API keys with the same Fernet key"
            )
        return self

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        environ = env_settings.env_vars if isinstance(env_settings, EnvSettingsSource) else {}
        found = {name.upper(): value for name, value in environ.items() if value is not None}
        aliases = _FlatAliases(settings_cls, found)
        return (init_settings, env_settings, aliases, dotenv_settings, file_secret_settings)


# ---------------------------------------------------------------------- flags
_SECTIONS = ("gns3", "console", "agent", "chat", "web", "store", "mcp", "policy")
#: Settings that are not flags: a key or a password on a command line is visible to every
#: user of the machine (the URLs that may hold one are flags, their help says to prefer
#: the environment); agents and MCP servers are JSON lists (with secrets), best kept in
#: the environment; the policy's rules are a JSON object (or a file: --policy-file).
_NOT_FLAGS = frozenset({"secret_key", "agents", "mcp_servers", "gns3__password", "policy__rules"})


#: What a flag's ``null`` becomes until the settings are built (``None`` is "not given").
_NULL = object()


def _flag_type(annotation: Any) -> tuple[Callable[[str], Any] | None, Sequence[str] | None]:
    """How argparse reads a value of this type: a converter, or choices. A setting that
    may be null takes ``null``."""
    if get_origin(annotation) is dict:  # a JSON object
        return json.loads, None
    args = [arg for arg in get_args(annotation) if arg is not type(None)] or [annotation]
    kind = args[0]
    nullable = type(None) in get_args(annotation)
    if get_origin(kind) is Literal:
        return None, [str(choice) for choice in get_args(kind)]
    convert: Callable[[str], Any] | None = None
    if kind in (int, float):
        convert = kind
    elif kind is Path:
        convert = Path
    elif get_origin(kind) in (tuple, list):
        convert = json.loads
    if nullable:
        return _or_null(convert), None
    return convert, None


def _or_null(convert: Callable[[str], Any] | None) -> Callable[[str], Any]:
    def read(text: str) -> Any:
        if text == "null":
            return _NULL
        return text if convert is None else convert(text)

    return read


def _fields() -> list[tuple[str | None, str, FieldInfo]]:
    top: list[tuple[str | None, str, FieldInfo]] = [
        (None, name, info)
        for name, info in Settings.model_fields.items()
        if name not in _SECTIONS and name not in _NOT_FLAGS
    ]
    nested: list[tuple[str | None, str, FieldInfo]] = [
        (section, name, info)
        for section in _SECTIONS
        for name, info in _section_model(section).model_fields.items()
        if _dest(section, name) not in _NOT_FLAGS
    ]
    return top + nested


def _dest(section: str | None, name: str) -> str:
    return f"{section}__{name}" if section else name


def add_setting_flags(parser: argparse.ArgumentParser) -> None:
    """A flag for every setting: ``--host``, ``--gns3-url``, ``--web-heartbeat-interval``…
    (booleans take ``true`` or ``false``; lists a JSON list)."""
    for section, name, info in _fields():
        flag = "--" + (f"{section}_{name}" if section else name).replace("_", "-")
        convert, choices = _flag_type(info.annotation)
        help_text = (info.description or "").replace("%", "%%")
        if info.annotation is bool:
            choices = ["true", "false"]
        options: dict[str, Any] = {"dest": _dest(section, name), "default": None}
        if convert is not None:
            options["type"] = convert
        if choices:
            options["choices"] = choices
        else:
            options["metavar"] = name.upper()
        parser.add_argument(flag, help=help_text or None, **options)


def settings_from_flags(args: argparse.Namespace) -> Settings:
    """The settings, with the flags given (they win over the environment)."""
    given: dict[str, Any] = {}
    for section, name, _ in _fields():
        value = getattr(args, _dest(section, name), None)
        if value is None:
            continue
        if value is _NULL:
            value = None
        if section is None:
            given[name] = value
        else:
            given.setdefault(section, {})[name] = value
    return Settings(**given)
