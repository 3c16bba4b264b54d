"""What the MCP server needs besides the core: its own small ports and its settings.

``adapters.mcp`` never imports another adapter: the composition root hands in the
GNS3 project list, the device skills, each user's approval setting and the metrics
through these :class:`typing.Protocol` s and :class:`McpServerDependencies`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol, Self

from pydantic import ConfigDict, Field, model_validator
from pydantic.dataclasses import dataclass as settings_dataclass

from copilot_core import PromptBook, RunnerSettings, ToolGate
from copilot_core.policy import PolicyBook
from copilot_core.ports import ApprovalPolicy, Authenticator, ProjectGate, TopologySource

__all__ = [
    "APPROVAL_TIMEOUT",
    "ApprovalSettings",
    "McpServerDependencies",
    "McpServerSettings",
    "ProjectDirectory",
    "SkillCatalogue",
    "SkillDocument",
    "ToolCallObserver",
    "ToolCallRecord",
]


class ProjectDirectory(Protocol):
    """The GNS3 projects a token may see."""

    async def projects(self, token: str) -> Sequence[Mapping[str, Any]]:
        """Each with ``project_id``, ``name`` and ``status``."""
        ...


@dataclass(frozen=True, slots=True)
class SkillDocument:
    """One device skill, as a resource: ``gns3://skills/{device_type}/{topic}``."""

    device_type: str
    topic: str
    title: str
    summary: str
    content: str


#: The device skills as they are now (they can be reloaded while the service runs).
SkillCatalogue = Callable[[], Sequence[SkillDocument]]

#: A user's approval setting (stored with their LLM settings; ``changes`` without any).
ApprovalSettings = Callable[[str], Awaitable[ApprovalPolicy]]


@dataclass(frozen=True, slots=True)
class ToolCallRecord:
    """One tool call made over MCP, as logs and metrics see it."""

    tool: str
    status: str
    seconds: float
    user_id: str
    username: str
    project_id: str | None
    mode: str


class ToolCallObserver(Protocol):
    """Counts or logs MCP tool calls (the service's metrics). Must not block or raise."""

    def tool_called(self, record: ToolCallRecord) -> None: ...


#: Seconds an elicited approval may take, unless the service says (the chat's own).
APPROVAL_TIMEOUT = RunnerSettings().approval_timeout


@settings_dataclass(frozen=True, slots=True, config=ConfigDict(extra="forbid"))
class McpServerSettings:
    """How the MCP endpoint behaves: the service's ``mcp`` section
    (``COPILOT_MCP__<FIELD>``), each setting declared here once."""

    server_name: ClassVar[str] = "gns3-copilot"
    server_version: ClassVar[str] = "0.1.0"

    max_sessions_per_user: int = Field(
        default=10,
        ge=1,
        description="MCP sessions one GNS3 user may hold open at once (one more: HTTP 429).",
    )
    session_idle_timeout: float = Field(
        default=600.0,
        gt=0,
        allow_inf_nan=False,
        description="Seconds an MCP session may go without a request before it is closed.",
    )
    max_sessions: int = Field(
        default=10_000,
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


@dataclass(frozen=True, slots=True)
class McpServerDependencies:
    """The already-built collaborators the MCP endpoint uses."""

    #: The GNS3 tools behind the core's gate (mode policy, approval, time limit, abort).
    tools: ToolGate
    authenticator: Authenticator
    projects: ProjectGate
    directory: ProjectDirectory
    topology: TopologySource
    approval: ApprovalSettings
    prompts: Callable[[], PromptBook] = PromptBook
    skills: SkillCatalogue = tuple
    observers: Sequence[ToolCallObserver] = field(default_factory=tuple)
    #: The operator's policy: each caller's limits, looked up once per request and
    #: applied by the core's gate (``ToolGate.admit``: a mode above theirs is refused,
    #: an approval setting below theirs raised); this server only maps the refusal.
    policy: PolicyBook | None = None
