"""What the MCP server needs besides the core: its own small ports and its settings.

``adapters.mcp`` never imports another adapter: the composition root hands in the
GNS3 project list, the device skills, each user's approval setting and the metrics
through these :class:`typing.Protocol` s and :class:`McpServerDependencies`.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from copilot_core import PromptBook, ToolGate
from copilot_core.policy import PolicyBook
from copilot_core.ports import ApprovalPolicy, Authenticator, ProjectGate, TopologySource

__all__ = [
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


@dataclass(frozen=True, slots=True)
class McpServerSettings:
    """How the MCP endpoint behaves."""

    #: Seconds an elicited approval may take before the call counts as rejected.
    approval_timeout: float = 600.0
    #: Secrets that seal the multi-round-trip state of 2026-07-28 clients (approvals
    #: asked with ``input_required``); the first seals, all unseal. Empty: a key of this
    #: process (with several replicas, give them all the same key).
    request_state_keys: tuple[bytes, ...] = ()
    server_name: str = "gns3-copilot"
    server_version: str = "0.1.0"
    #: MCP sessions (2025 protocol revisions) one GNS3 user may hold open at once; one
    #: more is refused with HTTP 429 until one of theirs is closed or expires.
    max_sessions_per_user: int = 10
    #: Seconds a session may go without any request in flight before it is closed.
    session_idle_timeout: float = 600.0
    #: Sessions of every user together (the SDK's cap: beyond it, 503). Must be above
    #: ``max_sessions_per_user``, so that no single user can reach it.
    max_sessions: int = 10_000

    def __post_init__(self) -> None:
        if self.max_sessions_per_user < 1:
            raise ValueError("max_sessions_per_user must be at least 1")
        if not (math.isfinite(self.session_idle_timeout) and self.session_idle_timeout > 0):
            raise ValueError("session_idle_timeout must be a positive number of seconds")
        if self.max_sessions <= self.max_sessions_per_user:
            raise ValueError(
                "max_sessions must be above max_sessions_per_user: one user must never "
                "fill the endpoint for everyone else"
            )


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
    #: The operator's policy: a connection's mode may not be above the caller's highest
    #: (403), and their approval setting is raised to the least allowed.
    policy: PolicyBook | None = None
