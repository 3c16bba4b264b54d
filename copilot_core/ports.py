"""The core's ports: what it needs from the outside world, in its own types.

An adapter imports what it implements from here, and the vocabulary the ports speak
(messages, the deltas a model streams, tool specs, calls and results, sessions,
approvals, restore points and rollbacks) is re-exported here too, with the few helpers adapters
share (:func:`render_tool_output`: a tool's output as the text a tool message holds;
:func:`stamp_usage`: a step's usage kept in its first message; :func:`excerpt`: a
search hit's excerpt; :func:`redact_secrets`: passwords and keys masked in a message
for people, by one rule; :class:`TurnEventFeed`: a turn's events as a turn log keeps
them and its clients follow them), so that this module is all an adapter author needs
besides :mod:`copilot_core.events`, :mod:`copilot_core.errors` and
:mod:`copilot_core.rules`.

Every port is a :class:`typing.Protocol`. Streaming members are plain ``def``
returning an ``AsyncIterator`` so that an ``async def`` generator implements them.
Opening and closing connections is not part of any port: the composition root
does that.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, Protocol, runtime_checkable

from copilot_core._abort import AbortToken
from copilot_core._approvals import (
    ApprovalDecision,
    ApprovalPolicy,
    ApprovalRequest,
    Assessment,
    ChangePreview,
    DecisionOutcome,
    PreviewCommand,
    TurnControl,
    call_digest,
)
from copilot_core._conversation import Conversation
from copilot_core._deltas import FinishDelta, ModelDelta, TextDelta, ToolCallDelta, UsageDelta
from copilot_core._limits import UserLimits
from copilot_core._messages import FunctionCall, Message, Role, ToolCall
from copilot_core._prompts import Line
from copilot_core._redaction import redact_secrets
from copilot_core._restore_point import (
    ChangeDescription,
    ChangeRecord,
    ItemChanges,
    RestorePoint,
    RollbackStatus,
    RolledBack,
)
from copilot_core._restore_ports import (
    RestorePoints,
    RollbackConflict,
    RollbackOptions,
    RollbackResult,
    RolledBackItem,
    RolledBackTo,
)
from copilot_core._search import excerpt
from copilot_core._session import CopilotMode, Session
from copilot_core._stats import Usage, stamp_usage
from copilot_core._store_ports import (
    CheckpointStore,
    HistoryPage,
    IntentRun,
    IntentStore,
    RestorePointStore,
    SessionMatch,
    StandingIntentRecord,
)
from copilot_core._tokens import TokenCounter
from copilot_core._tools import (
    NOT_CLEARED,
    Clearance,
    ParsedToolCall,
    ToolContext,
    ToolEffect,
    ToolProgress,
    ToolResult,
    ToolSpec,
    ToolStatus,
    Touch,
    TouchKind,
    render_tool_output,
)
from copilot_core._turn_ports import SessionLeases, TurnControlRelay, TurnLog
from copilot_core._turnfeed import TurnEventBuffer, TurnEventFeed
from copilot_core._turns import SessionClaim, TurnInfo, TurnState
from copilot_core._verified_change import ChangeSteps
from copilot_core.events import AgentEvent

__all__ = [
    "NOT_CLEARED",
    "AbortToken",
    "AgentBackend",
    "AgentCapabilities",
    "AgentInfo",
    "AgentRunConfig",
    "ApprovalDecision",
    "ApprovalPolicy",
    "ApprovalRequest",
    "Assessment",
    "Authenticator",
    "CallOptions",
    "ChangeDescription",
    "ChangePreview",
    "ChangeRecord",
    "ChangeSteps",
    "CheckpointStore",
    "Clearance",
    "Clock",
    "CopilotMode",
    "DecisionOutcome",
    "EventSink",
    "FinishDelta",
    "FunctionCall",
    "HistoryPage",
    "IdFactory",
    "IntentRun",
    "IntentStore",
    "ItemChanges",
    "LLMSettingsRecord",
    "LLMSettingsStore",
    "LanguageModel",
    "LanguageModelProvider",
    "Line",
    "Message",
    "ModelDelta",
    "ModelOverrides",
    "ModelSelection",
    "ModelTimeouts",
    "ParsedToolCall",
    "PreviewCommand",
    "Principal",
    "ProjectGate",
    "RestorePoint",
    "RestorePointStore",
    "RestorePoints",
    "Role",
    "RollbackConflict",
    "RollbackOptions",
    "RollbackResult",
    "RollbackStatus",
    "RolledBack",
    "RolledBackItem",
    "RolledBackTo",
    "Session",
    "SessionClaim",
    "SessionLeases",
    "SessionMatch",
    "StandingIntentRecord",
    "TextDelta",
    "TokenCounter",
    "ToolCall",
    "ToolCallDelta",
    "ToolContext",
    "ToolEffect",
    "ToolExecutor",
    "ToolProgress",
    "ToolResult",
    "ToolSet",
    "ToolSpec",
    "ToolStatus",
    "TopologySource",
    "Touch",
    "TouchKind",
    "TurnControl",
    "TurnControlRelay",
    "TurnEventBuffer",
    "TurnEventFeed",
    "TurnInfo",
    "TurnLog",
    "TurnState",
    "Usage",
    "UsageDelta",
    "call_digest",
    "excerpt",
    "redact_secrets",
    "render_tool_output",
    "stamp_usage",
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

    The stream ends after a :class:`~copilot_core._deltas.FinishDelta` (usage may
    come before or after it). Failures are raised as
    :class:`~copilot_core.errors.LLMError` subclasses. Closing the iterator early
    (``aclose``, or cancelling the task that iterates it) must stop all work.
    """

    def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], options: CallOptions
    ) -> AsyncGenerator[ModelDelta, None]: ...


@dataclass(frozen=True, slots=True)
class ModelOverrides:
    """A turn's overrides of the user's LLM settings (already range-checked)."""

    temperature: float | None = None
    max_tokens: int | None = None
    #: The user's limits under the operator's policy: a provider refuses to build a
    #: model whose endpoint they do not allow (``None``: no limits).
    limits: UserLimits | None = None


@dataclass(frozen=True, slots=True)
class ModelTimeouts:
    """How long the agent waits for a model's reply (seconds): for its first token (a
    local model may read a long prompt for minutes first), then between two tokens.
    (Connecting is the adapter's business: it happens before the first token.)"""

    first_token: float = 300.0
    between_tokens: float = 60.0

    def __post_init__(self) -> None:
        if self.first_token <= 0 or self.between_tokens <= 0:
            raise ValueError("model timeouts must be positive")


#: Which tool schemas a model reads: ``full`` (every tool, its whole description) or
#: ``compact`` (short schemas for small models, the everyday tools and those the user's
#: message asks for).
ToolSet = Literal["full", "compact"]


@dataclass(frozen=True, slots=True)
class ModelSelection:
    """The models a user's settings resolve to, for one turn.

    ``timeouts``, ``tool_set`` and ``text_tool_calls`` are the user's choices; ``None``
    leaves each to the agent's settings."""

    model: LanguageModel
    options: CallOptions = field(default_factory=CallOptions)
    title_model: LanguageModel | None = None
    context_limit: int = 32_000
    copilot_mode: CopilotMode | None = None
    #: Which tool calls wait for the user's approval (the user's setting).
    approval: ApprovalPolicy = ApprovalPolicy.CHANGES
    timeouts: ModelTimeouts | None = None
    tool_set: ToolSet | None = None
    #: Whether tool calls the model writes in its text (a JSON object naming an offered
    #: tool, in a code block or ``<tool_call>`` tags) are run when it makes none.
    text_tool_calls: bool | None = None
    #: What the adapter knows of the model server that the ``waiting_for_model`` status
    #: should add, asked at each such status (e.g. that the server may still be busy
    #: with a request given up on earlier); ``None`` or an answer ``None``: nothing.
    server_note: Callable[[], str | None] | None = None


class LanguageModelProvider(Protocol):
    """Builds a user's language model from their stored settings."""

    async def for_user(self, user_id: str, overrides: ModelOverrides) -> ModelSelection:
        """Raises :class:`~copilot_core.errors.LLMNotConfiguredError` when there are none."""
        ...


# --------------------------------------------------------------------------- tools
class ToolExecutor(Protocol):
    """The tools of the lab; it decides which are offered in each mode."""

    def specs(self, mode: CopilotMode) -> Sequence[ToolSpec]: ...

    async def assess(self, call: ParsedToolCall, context: ToolContext) -> Assessment:
        """Whether a valid call would change a device or the topology, and exactly how
        (the preview the user approves). Must not change anything; bad arguments may be
        assessed as read-only (``execute`` then reports them)."""
        ...

    async def execute(
        self, call: ParsedToolCall, context: ToolContext, clearance: Clearance = NOT_CLEARED
    ) -> ToolResult:
        """Run one valid call, with how the gate cleared it (the assessment made before,
        the user's approval: an approved change is made after a restore point). Bad
        arguments are an error *result*, not an exception; an exception means the tool
        itself broke. ``NOT_CLEARED``: not assessed, not approved (a direct call)."""
        ...

    async def change_steps(
        self, call: ParsedToolCall, context: ToolContext, assessment: Assessment
    ) -> ChangeSteps | None:
        """The call as a verified change (it asks for checks that decide it), made of the
        source's steps, which the gate runs (:func:`~copilot_core.intent.verify_change`)
        instead of ``execute``; ``None``: the call is not one (a source without verified
        changes always answers ``None``). Asked once per call, before the approval:
        ``assessment`` is the call's; the steps' plan goes on its approval card. Must not
        change anything."""
        ...


class TopologySource(Protocol):
    async def read(self, context: ToolContext) -> dict[str, Any]:
        """The project's nodes and links, as a JSON-serialisable summary."""
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
    #: The user's message as the turn runner saved it (its id, its time): the one the
    #: model reads, so the stored message and the prompt's are one message. ``None``
    #: when whoever drives the agent saves nothing (the agent makes it from the query).
    question: Message | None = None
    #: The turn's one conversation, as the turn runner keeps it: the history window as
    #: replayed, the question, and each step once the runner has checked and saved it
    #: (it appends a ``StepCompleted``'s messages before the agent goes on). The agent
    #: reads it and adds only what the model is told and the store does not keep.
    #: ``None`` when whoever drives the agent keeps none: the agent keeps its own.
    conversation: Conversation | None = None


class AgentBackend(Protocol):
    """Spec 002's agent interface: run a query over a history, yielding events.

    The backend yields wire events for clients and records
    (:data:`~copilot_core.events.TurnRecord`) for the chat service, which persists
    :class:`~copilot_core.events.StepCompleted` messages, counts calls and emits
    ``abort`` and ``done``: a backend never yields either. It observes
    ``config.context.abort`` and, when it fires, saves what it has (a partial answer
    as a step), closes what it has open and stops. ``run`` is an async generator
    (``async def`` with ``yield``): closing it early must stop all its work.
    """

    def run(
        self, query: str, history: Sequence[Message], config: AgentRunConfig
    ) -> AsyncGenerator[AgentEvent, None]: ...

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
    """Observes every turn (structured logs, metrics, tests): each event and record the
    turn runner handles, in order, including its own ``abort`` and ``done``. Must not
    block or raise (an observer that raises is logged and skipped)."""

    def emit(self, turn: TurnInfo, event: AgentEvent) -> None: ...


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
