"""The service's settings: command-line flags, then ``COPILOT_*`` environment variables,
then defaults (see docs/configuration.md)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr
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
    log_level: Literal["debug", "info", "warning", "error"] = "info"
    log_format: Literal["json", "console"] = "json"
