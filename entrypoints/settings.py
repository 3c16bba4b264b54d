"""The service's settings: command-line flags, then ``COPILOT_*`` environment variables,
then defaults (see docs/configuration.md).

The service's own settings are top-level (``host``, ``port``, ``data_dir``…); every
tunable of a component is in that component's section: ``gns3``, ``console``,
``agent``, ``chat``, ``web``, ``store``, ``mcp``, ``policy``. A section's field is
``COPILOT_<SECTION>__<FIELD>`` in the environment (``COPILOT_WEB__HEARTBEAT_INTERVAL``)
and ``--<section>-<field>`` on the command line (``--web-heartbeat-interval``). The
flat names of earlier versions (``COPILOT_HEARTBEAT_INTERVAL``…) still work: they are
aliases, read after the sectioned names (:data:`FLAT_ALIASES`).

A section's type *is* its component's own settings type (:data:`SECTIONS`), declared
beside the component with each field's default, bounds and description, once: the
service hands the section whole to the component, and a library user of the same
component starts from the same values and the same checks.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, Self, get_args, get_origin

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic.fields import FieldInfo
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from adapters.gns3 import ConsoleSettings, Gns3Settings
from adapters.mcp import McpServerConfig, McpServerSettings
from adapters.sqlite import SqliteStoreSettings
from adapters.subprocess_agent import AgentConfig
from adapters.web import WebSettings
from copilot_core import AgentSettings, ChatSettings
from entrypoints._sections import PolicySection

__all__ = [
    "FLAT_ALIASES",
    "SECTIONS",
    "PolicySection",
    "Settings",
    "add_setting_flags",
    "default_data_dir",
    "section_fields",
    "settings_from_flags",
]

#: Each section and the component's settings type it is.
SECTIONS: Mapping[str, type[Any]] = {
    "gns3": Gns3Settings,
    "console": ConsoleSettings,
    "agent": AgentSettings,
    "chat": ChatSettings,
    "web": WebSettings,
    "store": SqliteStoreSettings,
    "mcp": McpServerSettings,
    "policy": PolicySection,
}


def section_fields(model: type[Any]) -> Mapping[str, FieldInfo]:
    """The fields of a section's type (a pydantic model or a pydantic dataclass)."""
    fields: Mapping[str, FieldInfo] | None = getattr(model, "__pydantic_fields__", None)
    if fields is None:
        raise TypeError(f"{model!r} is not a pydantic model or dataclass")
    return fields


def default_data_dir() -> Path:
    """``$XDG_DATA_HOME/gns3-copilot``, else ``~/.local/share/gns3-copilot``."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "gns3-copilot"


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
            annotation = section_fields(SECTIONS[section])[field].annotation
            found.setdefault(section, {})[field] = _parsed(raw, annotation)
        return found


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

    gns3: Gns3Settings = Field(default_factory=Gns3Settings)
    console: ConsoleSettings = Field(default_factory=ConsoleSettings)
    agent: AgentSettings = Field(default_factory=AgentSettings)
    chat: ChatSettings = Field(default_factory=ChatSettings)
    web: WebSettings = Field(default_factory=WebSettings)
    store: SqliteStoreSettings = Field(default_factory=SqliteStoreSettings)
    mcp: McpServerSettings = Field(default_factory=McpServerSettings)
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
        if name not in SECTIONS and name not in _NOT_FLAGS
    ]
    nested: list[tuple[str | None, str, FieldInfo]] = [
        (section, name, info)
        for section, model in SECTIONS.items()
        for name, info in section_fields(model).items()
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
