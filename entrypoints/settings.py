"""The service's settings: command-line flags, then ``COPILOT_*`` environment variables,
then defaults (see docs/configuration.md)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal, Self

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from adapters.subprocess_agent import AgentConfig

__all__ = ["Settings", "default_data_dir"]


def default_data_dir() -> Path:
    """``$XDG_DATA_HOME/gns3-copilot``, else ``~/.local/share/gns3-copilot``."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "gns3-copilot"


class Settings(BaseSettings):
    """Every setting of ``gns3-copilot serve``; each is also ``COPILOT_<NAME>``."""

    model_config = SettingsConfigDict(env_prefix="COPILOT_", extra="forbid", frozen=True)

    host: str = Field(default="127.0.0.1", description="Interface to listen on.")
    port: int = Field(default=8080, ge=0, le=65535, description="TCP port (0: any free port).")
    gns3_url: str = Field(
        default="http://127.0.0.1:3080",
        pattern=r"^https?://\S+$",
        description="Base URL of the GNS3 server (its v3 API).",
    )
    gns3_timeout: float = Field(default=10.0, gt=0, description="Seconds per GNS3 request.")
    data_dir: Path = Field(
        default_factory=default_data_dir,
        description="Per-user data directory (LLM settings database, skills).",
    )
    secret_key: SecretStr | None = Field(
        default=None,
        description="Fernet key that encrypts stored API keys; generated into data_dir if unset.",
    )
    heartbeat_interval: float = Field(
        default=15.0, ge=0, description="Seconds of quiet before an SSE heartbeat; 0 disables."
    )
    abort_on_disconnect: bool = Field(
        default=False, description="Abort a turn when its streaming client disconnects."
    )
    shutdown_grace: float = Field(
        default=10.0, ge=0, description="Seconds running turns get to save on shutdown."
    )
    auth_cache_ttl: float = Field(
        default=30.0, ge=0, description="Seconds a validated GNS3 token is remembered."
    )
    max_message_chars: int = Field(default=32_000, ge=1, le=32_000)
    finished_turn_retention: float = Field(
        default=60.0, ge=0, description="Seconds a finished turn can still be re-attached."
    )
    approval_timeout: float = Field(
        default=600.0,
        gt=0,
        description="Seconds a tool call waits for the user's approval before it counts as "
        "rejected.",
    )
    readiness_timeout: float = Field(default=3.0, gt=0)
    cors_origins: tuple[str, ...] = Field(
        default=(),
        description='Browser origins allowed cross-site (JSON list, e.g. ["https://ui.lab"]).',
    )
    skills_dir: Path | None = Field(
        default=None,
        description=(
            "Extra skills directory (device skills, forbidden_commands.txt, prompts/*.md) "
            "read besides the built-in one; reloaded by POST /v3/copilot/reload/skills."
        ),
    )
    command_timeout: float = Field(
        default=30.0, gt=0, description="Seconds one console command may take."
    )
    agents: tuple[AgentConfig, ...] = Field(
        default=(),
        description="External agent programs (spec 002), as a JSON list of agent objects.",
    )
    gns3_username: str | None = Field(
        default=None,
        description=(
            "A GNS3 account (a superadmin, to see every project) the service uses to follow "
            "projects being closed or deleted; unset: their copilot data is left alone."
        ),
    )
    gns3_password: SecretStr | None = Field(default=None, description="Its password.")
    deleted_projects: Literal["delete", "archive"] = Field(
        default="delete",
        description=(
            "What happens to the conversations of a project deleted in GNS3: deleted, or "
            "moved to data_dir/archive."
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
            "data_dir. Needs secret_key."
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
            "are followed, re-attached and aborted from any replica; unset: in memory."
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

    @field_validator("redis_url", mode="before")
    @classmethod
    def _redis_url(cls, value: Any) -> Any:
        text = value.get_secret_value() if isinstance(value, SecretStr) else value
        if text is None or text == "":
            return None  # COPILOT_REDIS_URL= (empty): in memory
        if not isinstance(text, str) or not text.startswith(("redis://", "rediss://", "unix://")):
            raise ValueError("must be a redis://, rediss:// or unix:// URL")  # never echoed
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
