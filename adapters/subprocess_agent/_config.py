"""How an external agent program is declared: one :class:`AgentConfig` per agent."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from copilot_core.ports import AgentCapabilities, AgentInfo
from copilot_core.rules import AGENT_ID_PATTERN

__all__ = [
    "DEFAULT_ARGUMENTS",
    "AgentCapabilityFlags",
    "AgentConfig",
    "HistoryLimits",
    "is_secret_name",
]

#: Spec 002's command line: ``--json-events --query TEXT --history JSON``.
DEFAULT_ARGUMENTS: tuple[str, ...] = (
    "--json-events",
    "--query",
    "{query}",
    "--history",
    "{history}",
)

#: The id of the built-in agent; an external agent cannot take it.
BUILTIN_AGENT_ID = "copilot"

_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSW|CREDENTIAL|JWT|AUTH|COOKIE", re.I)
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def is_secret_name(name: str) -> bool:
    """Whether an environment variable's name says it holds a secret (``*_KEY``, ``*TOKEN*``…)."""
    return _SECRET_NAME.search(name) is not None


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class HistoryLimits(_Frozen):
    """How much of the conversation the program receives (spec 002: 2 pairs, 500 chars)."""

    max_pairs: Annotated[int, Field(ge=0, le=50)] = 2
    max_chars: Annotated[int, Field(ge=1, le=20_000)] = 500


class AgentCapabilityFlags(_Frozen):
    """Spec 002's capability flags as the agent's configuration declares them."""

    backend: str = "external"
    streaming: bool = True
    rag: bool = False
    mcp: bool = False
    file_tools: bool = False
    shell_tools: bool = False


class AgentConfig(_Frozen):
    """One external agent program, as settings declare it.

    ``arguments`` is the argument template appended to ``command``: ``{query}`` and
    ``{history}`` (the recent history as JSON) are substituted anywhere inside an
    argument, in one pass, so a query containing ``{history}`` stays as it is.
    """

    id: Annotated[str, Field(pattern=AGENT_ID_PATTERN)]
    name: Annotated[str, Field(min_length=1, max_length=100)]
    description: str = ""
    command: Annotated[list[str], Field(min_length=1)]
    arguments: list[str] = Field(default_factory=lambda: list(DEFAULT_ARGUMENTS))
    capabilities: AgentCapabilityFlags = Field(default_factory=AgentCapabilityFlags)
    #: Seconds one turn may take, from start to exit; then the program is stopped.
    time_limit: Annotated[float, Field(gt=0, le=86_400)] = 300.0
    history: HistoryLimits = Field(default_factory=HistoryLimits)
    #: Pass the caller's GNS3 JWT as ``GNS3_TOKEN`` (only for programs you trust).
    pass_token: bool = False
    #: Names of further variables copied from the service's environment (never secrets).
    env_allow: list[str] = Field(default_factory=list)
    #: Constant, non-secret variables set for the program.
    env: dict[str, str] = Field(default_factory=dict)
    #: Working directory of the program (default: the service's).
    cwd: str | None = None
    #: Seconds between SIGTERM and SIGKILL when the program must be stopped.
    kill_grace: Annotated[float, Field(gt=0, le=60)] = 3.0
    #: Longest stdout line accepted; longer lines are skipped with a warning.
    max_line_bytes: Annotated[int, Field(ge=1024, le=64 * 1024 * 1024)] = 1024 * 1024
    #: Total stdout bytes one turn may print; past it the program is stopped.
    max_output_bytes: Annotated[int, Field(ge=1024, le=1024 * 1024 * 1024)] = 4 * 1024 * 1024
    #: How much of the end of stderr is kept for the error message of a failed run.
    stderr_tail_chars: Annotated[int, Field(ge=0, le=64 * 1024)] = 2000

    @field_validator("id")
    @classmethod
    def _not_builtin(cls, value: str) -> str:
        if value == BUILTIN_AGENT_ID:
            raise ValueError(f"{BUILTIN_AGENT_ID!r} is the built-in agent's id")
        return value

    @field_validator("env_allow")
    @classmethod
    def _no_secret_allowed(cls, names: list[str]) -> list[str]:
        for name in names:
            if not _ENV_NAME.match(name):
                raise ValueError(f"{name!r} is not an environment variable name")
            if is_secret_name(name):
                raise ValueError(
                    f"{name!r} looks like a secret and cannot be passed to an agent; "
                    "use pass_token for the GNS3 token"
                )
        return names

    @field_validator("env")
    @classmethod
    def _no_secret_constants(cls, values: dict[str, str]) -> dict[str, str]:
        for name in values:
            if not _ENV_NAME.match(name):
                raise ValueError(f"{name!r} is not an environment variable name")
            if is_secret_name(name):
                raise ValueError(f"{name!r} looks like a secret; do not put secrets in settings")
        return values

    @model_validator(mode="after")
    def _query_is_passed(self) -> AgentConfig:
        if not any("{query}" in argument for argument in self.arguments):
            raise ValueError("arguments must contain the {query} placeholder")
        return self

    # ------------------------------------------------------------------- views
    def info(self) -> AgentInfo:
        return AgentInfo(id=self.id, name=self.name, description=self.description)

    def agent_capabilities(self) -> AgentCapabilities:
        flags = self.capabilities
        return AgentCapabilities(
            backend=flags.backend,
            streaming=flags.streaming,
            rag=flags.rag,
            mcp=flags.mcp,
            file_tools=flags.file_tools,
            shell_tools=flags.shell_tools,
            uses_llm_settings=False,
        )
