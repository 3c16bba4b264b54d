"""What the MCP server needs besides the core: its own small ports and its settings.

``adapters.mcp`` never imports another adapter: the composition root hands in the
GNS3 project list, the device skills, each user's approval setting and the metrics
through these :class:`typing.Protocol` s and :class:`McpServerDependencies`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from copilot_core import PromptBook, ToolGate
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
