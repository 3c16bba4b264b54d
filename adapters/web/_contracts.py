"""What the web adapter needs besides the core: its own small ports and its settings.

The core has ports for the chat itself; the HTTP service also serves the caller's
LLM settings, reloads skills and reports readiness. Those collaborators are
described here as :class:`typing.Protocol`s so that ``adapters.web`` never imports
another adapter: the composition root (``entrypoints``) hands concrete objects in
through :class:`WebDependencies`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

from pydantic import ConfigDict, Field
from pydantic.dataclasses import dataclass as settings_dataclass

from copilot_core import ChatService
from copilot_core.drills import Drills
from copilot_core.intent import StandingIntent
from copilot_core.labs import LabBuilds, LabPlanner
from copilot_core.policy import EndpointCheck, ModelSettingsStore, PolicyBook
from copilot_core.ports import (
    Authenticator,
    LanguageModelProvider,
    ProjectGate,
)
from copilot_core.rollback import Rollback

__all__ = [
    "Gns3Directory",
    "LLMConfigRepository",
    "LlmEndpointCheck",
    "ModelCatalog",
    "ReadinessCheck",
    "SkillsReloader",
    "WebDependencies",
    "WebSettings",
]


class LLMConfigRepository(ModelSettingsStore, Protocol):
    """A user's LLM settings, with the API key write-only (stored encrypted): the core's
    :class:`~copilot_core.policy.ModelSettingsStore`, which the web adapter also asks to
    forget them. The web adapter strips any ``api_key`` it finds in the public view anyway.
    """

    async def delete(self, user_id: str) -> bool:
        """Forget the user's settings; ``False`` when there were none."""
        ...


class Gns3Directory(Protocol):
    """What the web page needs from GNS3 besides authentication: signing in with a
    username and password, and the caller's projects."""

    async def login(self, username: str, password: str) -> str:
        """A GNS3 access token for these credentials (AuthenticationError otherwise).

        Neither the password nor the token may be logged or stored.
        """
        ...

    async def projects(self, token: str) -> Sequence[Mapping[str, Any]]:
        """The projects this token may see, each with ``project_id``, ``name``, ``status``."""
        ...

    async def create_project(self, token: str, name: str) -> Mapping[str, Any]:
        """A new project (GNS3 opens it): ``project_id``, ``name``, ``status``.
        ConflictError when the name is taken; InvalidRequestError when GNS3 refuses it."""
        ...

    async def open_project(self, token: str, project_id: str) -> Mapping[str, Any]:
        """Open a closed project (an opened one stays open); the project as GNS3 gives it.
        ProjectNotFoundError when there is no such project."""
        ...

    async def topology(self, token: str, project_id: str) -> Mapping[str, Any]:
        """The project as GNS3 describes it, for drawing: ``project``, ``nodes`` and
        ``links`` (GNS3's own JSON objects; a console host GNS3 gives as ``0.0.0.0`` is
        replaced by a host a browser can reach) and ``web_ui`` (the root of GNS3's web UI
        for this project, or ``None``)."""
        ...

    def notifications(self, token: str, project_id: str) -> AsyncIterator[Mapping[str, Any]]:
        """GNS3's notification stream of the project (``{"action", "event"}`` objects:
        ``node.updated``, ``link.created``, ``ping``…), until the caller closes it."""
        ...


class ModelCatalog(Protocol):
    """The models a user's LLM endpoint offers, asked with their stored settings (the key
    never leaves the service)."""

    async def list_models(self, user_id: str) -> Sequence[str]:
        """The model names the endpoint lists. Raises ``LLMNotConfiguredError`` when the
        user has no settings, an ``LLMError`` (with a reason for a person) when the
        endpoint cannot list them."""
        ...

    def defaults(self) -> Mapping[str, float | int | None]:
        """What applies when a setting is left empty: ``temperature`` (``None``: the
        provider's own) and ``context_limit``."""
        ...


#: The endpoint rule the core's ModelSettings applies (see EndpointCheck).
LlmEndpointCheck = EndpointCheck

#: Reloads skills, prompts and forbidden commands; returns a JSON-able summary.
SkillsReloader = Callable[[], Awaitable[Mapping[str, Any]]]

#: One readiness probe (the store is open, GNS3 answers…): raises when not ready.
ReadinessCheck = Callable[[], Awaitable[object]]


@settings_dataclass(frozen=True, slots=True, config=ConfigDict(extra="forbid"))
class WebSettings:
    """How the HTTP service behaves: the service's ``web`` section
    (``COPILOT_WEB__<FIELD>``), each setting declared here once."""

    title: ClassVar[str] = "gns3-copilot"
    version: ClassVar[str] = "0.1.0"
    debug: ClassVar[bool] = False

    heartbeat_interval: float | None = Field(
        default=15.0,
        ge=0,
        description="Seconds of quiet before an SSE heartbeat; 0 disables.",
    )
    abort_on_disconnect: bool = Field(
        default=False,
        description="Abort a turn when its streaming client disconnects.",
    )
    auth_cache_ttl: float = Field(
        default=30.0, ge=0, description="Seconds a validated token is remembered."
    )
    auth_cache_size: int = Field(default=1024, ge=1, description="Tokens remembered at most.")
    readiness_timeout: float = Field(
        default=3.0, gt=0, description="Seconds each /readyz check may take."
    )
    llm_test_timeout: float = Field(
        default=20.0,
        gt=0,
        description="Seconds POST /llm-config/test waits for the model.",
    )
    cors_origins: tuple[str, ...] = Field(
        default=(),
        description='Browser origins allowed cross-site (JSON list, e.g. ["https://ui.lab"]).',
    )

    @property
    def heartbeat(self) -> float | None:
        """The SSE streams' heartbeat: ``None`` (none) for 0."""
        return self.heartbeat_interval or None


@dataclass(frozen=True, slots=True)
class WebDependencies:
    """The already-built collaborators the routes use."""

    chat: ChatService
    authenticator: Authenticator
    projects: ProjectGate
    llm_config: LLMConfigRepository
    reload_skills: SkillsReloader | None = None
    readiness: Mapping[str, ReadinessCheck] = field(default_factory=dict)
    #: Builds a user's model from their stored settings (for "test connection").
    models: LanguageModelProvider | None = None
    #: Signs users in and lists their projects for the web page (``/auth/login``,
    #: ``/projects``); without it those routes answer 501.
    directory: Gns3Directory | None = None
    #: The MCP servers the built-in agent uses as tool sources, as ``/capabilities``
    #: lists them (``mcp_servers``: name, transport, where, modes, state, tools).
    mcp_servers: Callable[[], Sequence[Mapping[str, Any]]] | None = None
    #: Lists the models of a user's endpoint (``/llm-config/models``); without it that
    #: route says listing is not available.
    model_catalog: ModelCatalog | None = None
    #: The sessions' restore points and their rollback (``…/restore-points``); without
    #: it those routes answer 501.
    rollback: Rollback | None = None
    #: Each user's standing intent per project (``…/intent``); without it those routes
    #: answer 501.
    intent: StandingIntent | None = None
    #: Troubleshooting drills on the projects' labs (``…/drills``); without it those
    #: routes answer 501.
    drills: Drills | None = None
    #: Lab plans resolved against the project's GNS3 server, and its lab exported as a
    #: plan (``…/labs``); without it those routes answer 501.
    labs: LabPlanner | None = None
    #: Plans built on the user's approval (``…/labs/build``); without it that route
    #: answers 501.
    lab_builds: LabBuilds | None = None
    #: The operator's policy: each caller's highest mode, least approval setting and
    #: allowed LLM endpoints (looked up once per request); without it, no limits.
    policy: PolicyBook | None = None
    #: Refuses an LLM endpoint (a provider and its ``base_url``) the caller's limits do
    #: not allow (``PUT /llm-config``, listing models); ``None``: any.
    llm_endpoints: LlmEndpointCheck | None = None
