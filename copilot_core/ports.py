"""The core's ports: what it needs from the outside world, in its own types.

Every port is a :class:`typing.Protocol`. Streaming members are plain ``def``
returning an ``AsyncIterator`` so that an ``async def`` generator implements them.
Opening and closing connections is not part of any port: the composition root
does that.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from copilot_core.deltas import ModelDelta
from copilot_core.events import AgentEvent, TurnEvent
from copilot_core.messages import Message
from copilot_core.session import CopilotMode, Session
from copilot_core.stats import TurnStats
from copilot_core.tools import ParsedToolCall, ToolContext, ToolResult, ToolSpec

__all__ = [
    "AgentBackend",
    "AgentCapabilities",
    "AgentInfo",
    "AgentRunConfig",
    "Authenticator",
    "CallOptions",
    "CheckpointStore",
    "Clock",
    "EventSink",
    "HistoryPage",
    "IdFactory",
    "LLMSettingsRecord",
    "LLMSettingsStore",
    "LanguageModel",
    "LanguageModelProvider",
    "ModelOverrides",
    "ModelSelection",
    "Principal",
    "ProjectGate",
    "TokenCounter",
    "ToolExecutor",
    "TopologySource",
]


# ------------------------------------------------------------------ language model
@dataclass(frozen=True, slots=True)
class CallOptions:
    """Per-call options; ``None`` means the model's configured default."""

    temperature: float | None = None
    max_tokens: int | None = None


@runtime_checkable
class LanguageModel(Protocol):
    """A chat model that streams its reply as deltas.

    The stream ends after a :class:`~copilot_core.deltas.FinishDelta` (usage may
    come before or after it). Failures are raised as
    :class:`~copilot_core.errors.LLMError` subclasses. Closing the iterator early
    (``aclose``, or cancelling the task that iterates it) must stop all work.
    """

    def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], options: CallOptions
    ) -> AsyncIterator[ModelDelta]: ...


@dataclass(frozen=True, slots=True)
class ModelOverrides:
    """A turn's overrides of the user's LLM settings (already range-checked)."""

    temperature: float | None = None
    max_tokens: int | None = None


@dataclass(frozen=True, slots=True)
class ModelSelection:
    """The models a user's settings resolve to, for one turn."""

    model: LanguageModel
    options: CallOptions = field(default_factory=CallOptions)
    title_model: LanguageModel | None = None
    context_limit: int = 32_000
    copilot_mode: CopilotMode | None = None


class LanguageModelProvider(Protocol):
    """Builds a user's language model from their stored settings."""

    async def for_user(self, user_id: str, overrides: ModelOverrides) -> ModelSelection:
        """Raises :class:`~copilot_core.errors.LLMNotConfiguredError` when there are none."""
        ...


class TokenCounter(Protocol):
    def count(self, messages: Sequence[Message]) -> int:
        """Tokens these messages take in the model's context (an estimate is fine)."""
        ...


# --------------------------------------------------------------------------- tools
class ToolExecutor(Protocol):
    """The tools of the lab; it decides which are offered in each mode."""

    def specs(self, mode: CopilotMode) -> Sequence[ToolSpec]: ...

    async def execute(self, call: ParsedToolCall, context: ToolContext) -> ToolResult:
        """Run one valid call. Bad arguments are an error *result*, not an exception;
        an exception means the tool itself broke."""
        ...


class TopologySource(Protocol):
    async def read(self, context: ToolContext) -> dict[str, Any]:
        """The project's nodes and links, as a JSON-serialisable summary."""
        ...


# --------------------------------------------------------------------------- store
@dataclass(frozen=True, slots=True)
class HistoryPage:
    """The newest messages before a cursor, oldest first; ``next_cursor`` pages back."""

    messages: list[Message]
    next_cursor: int | None


class CheckpointStore(Protocol):
    """Sessions and their append-only message logs, per project.

    Every method is scoped by ``project_id``. User scoping is the caller's duty
    (:class:`~copilot_core.service.ChatService` does it) except in
    :meth:`list_sessions`, which filters by user.
    """

    async def create_session(self, session: Session) -> Session:
        """Store a new session; returns it with its ``id`` set."""
        ...

    async def get_session(self, project_id: str, thread_id: str) -> Session | None: ...

    async def list_sessions(
        self,
        project_id: str,
        user_id: str,
        *,
        limit: int = 100,
        offset: int = 0,
        copilot_mode: CopilotMode | None = None,
    ) -> list[Session]:
        """The user's sessions: pinned first, then ``updated_at`` newest first."""
        ...

    async def append_messages(
        self, project_id: str, thread_id: str, messages: Sequence[Message]
    ) -> None:
        """Append one step's messages in one transaction: all of them or none."""
        ...

    async def history(
        self,
        project_id: str,
        thread_id: str,
        *,
        limit: int | None = None,
        before: int | None = None,
    ) -> HistoryPage:
        """The newest ``limit`` messages (all when ``None``) older than cursor ``before``."""
        ...

    async def record_turn(
        self,
        project_id: str,
        thread_id: str,
        stats: TurnStats,
        at: datetime,
        *,
        title: str | None = None,
    ) -> None:
        """Add a turn's counters by increments, set ``last_message_at``/``updated_at``
        to ``at`` and, when given, the title. One transaction."""
        ...

    async def rename_session(
        self, project_id: str, thread_id: str, title: str, at: datetime
    ) -> Session | None: ...

    async def set_pinned(self, project_id: str, thread_id: str, pinned: bool) -> Session | None: ...

    async def delete_session(self, project_id: str, thread_id: str) -> bool:
        """Delete the session and all its messages in one transaction."""
        ...

    async def delete_project_sessions(self, project_id: str) -> int:
        """Delete every session of the project; returns how many there were."""
        ...


# -------------------------------------------------------------------------- agents
@dataclass(frozen=True, slots=True)
class AgentCapabilities:
    """Spec 002's capability flags, plus whether the agent uses the user's LLM settings."""

    backend: str
    streaming: bool = True
    rag: bool = False
    mcp: bool = False
    file_tools: bool = False
    shell_tools: bool = False
    uses_llm_settings: bool = True

    def to_dict(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "rag": self.rag,
            "streaming": self.streaming,
            "mcp": self.mcp,
            "file_tools": self.file_tools,
            "shell_tools": self.shell_tools,
        }


@dataclass(frozen=True, slots=True)
class AgentInfo:
    id: str
    name: str
    description: str


@dataclass(frozen=True, slots=True)
class AgentRunConfig:
    """Everything one run of an agent needs besides the query and the history."""

    context: ToolContext
    model: ModelSelection | None = None
    generate_title: bool = False
    agent_id: str = "copilot"


class AgentBackend(Protocol):
    """Spec 002's agent interface: run a query over a history, yielding events.

    The backend yields wire events for clients and records
    (:data:`~copilot_core.events.TurnRecord`) for the chat service, which persists
    :class:`~copilot_core.events.StepCompleted` messages, counts calls and emits
    ``done``. A backend never yields ``done`` itself. It observes
    ``config.context.abort`` and, when it fires, closes what it has open and ends
    with an ``abort`` event.
    """

    def run(
        self, query: str, history: Sequence[Message], config: AgentRunConfig
    ) -> AsyncIterator[AgentEvent]: ...

    def capabilities(self) -> AgentCapabilities: ...

    def agents(self) -> Sequence[AgentInfo]: ...


# ------------------------------------------------------------------ who and where
@dataclass(frozen=True, slots=True)
class Principal:
    """An authenticated GNS3 user."""

    user_id: str
    username: str
    is_superadmin: bool = False


class Authenticator(Protocol):
    async def authenticate(self, token: str) -> Principal:
        """The user a GNS3 token belongs to; raises
        :class:`~copilot_core.errors.AuthenticationError` when GNS3 rejects it."""
        ...


class ProjectGate(Protocol):
    async def require_open(self, project_id: str, credentials: str) -> None:
        """Raises :class:`~copilot_core.errors.ProjectNotFoundError` or
        :class:`~copilot_core.errors.ProjectNotOpenedError` unless the caller can see the
        project and it is opened."""
        ...


# ---------------------------------------------------------------------- small ones
class EventSink(Protocol):
    """Receives every stamped event of every turn (observers: logs, metrics, tests)."""

    def emit(self, event: TurnEvent) -> None: ...


class Clock(Protocol):
    def now(self) -> datetime:
        """The current time, timezone-aware (UTC)."""
        ...


class IdFactory(Protocol):
    def new_id(self) -> str: ...


# ------------------------------------------------------------- LLM settings rows
@dataclass(frozen=True, slots=True)
class LLMSettingsRecord:
    """One user's stored LLM settings, as opaque to the store that keeps them.

    ``settings`` is a JSON document without any API key; ``api_key_encrypted`` is
    ciphertext made by whoever holds the encryption key (the LLM adapter), never a key
    in clear. A store only ever copies these bytes.
    """

    settings: str
    api_key_encrypted: bytes | None = None


class LLMSettingsStore(Protocol):
    """Per-user rows of LLM settings (one row per user), for any database.

    Encryption is not the store's business: it receives and returns ciphertext.
    """

    async def get(self, user_id: str) -> LLMSettingsRecord | None:
        """The user's row, or ``None`` when they have none."""
        ...

    async def put(
        self,
        user_id: str,
        settings: str,
        api_key_encrypted: bytes | None,
        at: datetime,
        *,
        keep_api_key: bool,
    ) -> bool:
        """Create or replace the user's row in one statement, stamped ``at``.

        When ``keep_api_key`` is true and ``api_key_encrypted`` is ``None``, the stored
        ciphertext stays as it is (a concurrent put cannot slip another in between);
        otherwise it is replaced (``None`` removes it). Returns whether the row holds an
        encrypted key afterwards.
        """
        ...

    async def delete(self, user_id: str) -> bool:
        """Forget the user's row; ``False`` when there was none."""
        ...
