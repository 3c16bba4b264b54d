"""Response bodies, typed, so that the OpenAPI document has a schema for every route.

They are the web API's wire format, owned here (msgspec structs, which Litestar both
describes and encodes): each is built from core objects by a ``from_...`` constructor,
so the API changes only when this module does. Optional fields of a message are left
out when unset, as in the OpenAI shape.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from enum import Enum
from typing import Any, Literal, TypeVar

import msgspec

from copilot_core import CopilotMode, Message, Session, TurnResult
from copilot_core.policy import UserLimits
from copilot_core.ports import (
    AgentBackend,
    AgentCapabilities,
    AgentInfo,
    ApprovalPolicy,
    HistoryPage,
    Principal,
    SessionMatch,
)

E = TypeVar("E", bound=Enum)

__all__ = [
    "AbortReply",
    "AgentBody",
    "AgentSummary",
    "AgentsBody",
    "CapabilitiesBody",
    "CapabilitiesFlags",
    "ChatMessage",
    "DecisionReply",
    "FunctionCall",
    "Health",
    "HistoryBody",
    "LLMDefaults",
    "LLMTestReply",
    "LinkBody",
    "LinkEnd",
    "LoginReply",
    "McpServerBody",
    "ModelList",
    "NodeBody",
    "PolicyBody",
    "PortBody",
    "ProjectBody",
    "PublicLLMConfig",
    "Readiness",
    "RenderedMarkdown",
    "RenderedTool",
    "RenderedTools",
    "SessionBody",
    "SessionExport",
    "SessionMatchBody",
    "SkillsReloaded",
    "ToolCall",
    "TopologyBody",
    "TurnReply",
    "TurnStatsBody",
    "UserBody",
]


class Health(msgspec.Struct, kw_only=True):
    status: Literal["ok"] = "ok"


class Readiness(msgspec.Struct, kw_only=True):
    """``/readyz``: every check's outcome (``ok`` or ``failed: <why>``)."""

    status: Literal["ready", "not_ready", "starting"]
    checks: dict[str, str]


class FunctionCall(msgspec.Struct, kw_only=True):
    name: str
    #: The arguments as the model wrote them (a JSON object, as text).
    arguments: str


class ToolCall(msgspec.Struct, kw_only=True):
    id: str
    type: Literal["function"]
    function: FunctionCall


class ChatMessage(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One message in the OpenAI shape; optional fields are left out when unset."""

    id: str
    role: Literal["system", "user", "assistant", "tool"]
    content: str
    #: ``created_at`` (ISO 8601), and flags such as ``aborted`` or ``error``.
    metadata: dict[str, Any]
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None
    name: str | None = None

    @classmethod
    def from_message(cls, message: Message) -> ChatMessage:
        return msgspec.convert(message.to_dict(), cls)


class TurnStatsBody(msgspec.Struct, kw_only=True):
    messages: int
    llm_calls: int
    input_tokens: int
    output_tokens: int
    total_tokens: int


class TurnReply(msgspec.Struct, kw_only=True):
    """A turn's reply with ``"stream": false``, sent once the turn is saved."""

    session_id: str
    message_id: str | None
    content: str
    messages: list[ChatMessage]
    stats: TurnStatsBody
    aborted: bool
    error: str | None

    @classmethod
    def from_result(cls, result: TurnResult) -> TurnReply:
        stats = result.stats
        return cls(
            session_id=result.session_id,
            message_id=result.message_id,
            content=result.content,
            messages=[ChatMessage.from_message(message) for message in result.messages],
            stats=TurnStatsBody(
                messages=stats.messages,
                llm_calls=stats.llm_calls,
                input_tokens=stats.input_tokens,
                output_tokens=stats.output_tokens,
                total_tokens=stats.total_tokens,
            ),
            aborted=result.aborted,
            error=result.error,
        )


class SessionBody(msgspec.Struct, kw_only=True):
    """A session (spec 000's session object); ``thread_id`` is the session id."""

    id: int | None
    thread_id: str
    user_id: str
    project_id: str
    title: str
    copilot_mode: CopilotMode
    pinned: bool
    message_count: int
    #: The questions asked (user messages); ``message_count`` counts every message.
    question_count: int
    llm_calls_count: int
    input_tokens: int
    output_tokens: int
    total_tokens: int
    #: ISO 8601 timestamps.
    last_message_at: str | None
    created_at: str
    updated_at: str
    metadata: dict[str, Any]
    stats: dict[str, Any]

    @classmethod
    def from_session(cls, session: Session) -> SessionBody:
        return msgspec.convert(session.to_dict(), cls)


class HistoryBody(msgspec.Struct, kw_only=True):
    """A page of a session's history, oldest first, with the session's counters."""

    thread_id: str
    title: str
    copilot_mode: CopilotMode
    pinned: bool
    messages: list[ChatMessage]
    #: Send back as ``cursor`` for older messages; ``null`` when there are none.
    next_cursor: int | None
    created_at: str
    updated_at: str
    llm_calls: int
    message_count: int
    input_tokens: int
    output_tokens: int
    total_tokens: int

    @classmethod
    def from_page(cls, session: Session, page: HistoryPage) -> HistoryBody:
        return cls(
            thread_id=session.thread_id,
            title=session.title,
            copilot_mode=session.copilot_mode,
            pinned=session.pinned,
            messages=[ChatMessage.from_message(message) for message in page.messages],
            next_cursor=page.next_cursor,
            created_at=session.created_at.isoformat(),
            updated_at=session.updated_at.isoformat(),
            llm_calls=session.llm_calls_count,
            message_count=session.message_count,
            input_tokens=session.input_tokens,
            output_tokens=session.output_tokens,
            total_tokens=session.total_tokens,
        )


class AbortReply(msgspec.Struct, kw_only=True):
    status: Literal["ok"]
    session_id: str
    #: ``false`` when no turn was running.
    aborted: bool


class DecisionReply(msgspec.Struct, kw_only=True):
    status: Literal["ok"]
    approval_id: str
    decision: Literal["approve", "reject"]


class CapabilitiesFlags(msgspec.Struct, kw_only=True):
    """Spec 002's capability flags of one agent."""

    backend: str
    rag: bool
    streaming: bool
    mcp: bool
    file_tools: bool
    shell_tools: bool

    @classmethod
    def from_capabilities(cls, capabilities: AgentCapabilities) -> CapabilitiesFlags:
        return cls(
            backend=capabilities.backend,
            rag=capabilities.rag,
            streaming=capabilities.streaming,
            mcp=capabilities.mcp,
            file_tools=capabilities.file_tools,
            shell_tools=capabilities.shell_tools,
        )


class AgentSummary(msgspec.Struct, kw_only=True):
    id: str
    name: str
    description: str


class McpServerBody(msgspec.Struct, kw_only=True):
    """An MCP server the built-in agent uses as a tool source (no secret in it)."""

    name: str
    transport: str
    #: The program's name or the URL without credentials or query.
    where: str
    modes: list[str]
    #: ``connecting``, ``up`` or ``down``.
    state: str
    available: bool
    #: Its tools as the model sees them: ``<server>__<tool>``.
    tools: list[str]
    problem: str | None = None


class CapabilitiesBody(CapabilitiesFlags, kw_only=True):
    """The default agent's capabilities, every agent a turn may use, and the MCP servers
    the built-in agent uses as tool sources (empty when none are configured)."""

    agents: list[AgentSummary]
    mcp_servers: list[McpServerBody] = msgspec.field(default_factory=list)
    #: The mode a new chat runs in when neither the request nor the user's settings
    #: name one (the page's "Default" says which it is).
    default_copilot_mode: str = "teaching_assistant"

    @classmethod
    def of(
        cls,
        capabilities: AgentCapabilities,
        agents: list[AgentBody],
        mcp_servers: Sequence[Mapping[str, Any]] = (),
        default_copilot_mode: str = "teaching_assistant",
    ) -> CapabilitiesBody:
        flags = CapabilitiesFlags.from_capabilities(capabilities)
        return cls(
            **msgspec.structs.asdict(flags),
            default_copilot_mode=default_copilot_mode,
            agents=[AgentSummary(id=a.id, name=a.name, description=a.description) for a in agents],
            mcp_servers=[msgspec.convert(dict(server), McpServerBody) for server in mcp_servers],
        )


class AgentBody(msgspec.Struct, kw_only=True):
    id: str
    name: str
    description: str
    default: bool
    uses_llm_settings: bool
    capabilities: CapabilitiesFlags

    @classmethod
    def of(cls, info: AgentInfo, backend: AgentBackend, default: str) -> AgentBody:
        capabilities = backend.capabilities()
        return cls(
            id=info.id,
            name=info.name,
            description=info.description,
            default=info.id == default,
            uses_llm_settings=capabilities.uses_llm_settings,
            capabilities=CapabilitiesFlags.from_capabilities(capabilities),
        )


class AgentsBody(msgspec.Struct, kw_only=True):
    default: str
    agents: list[AgentBody]


def _member(kind: type[E], value: object) -> E | None:
    return None if value is None else kind(value)


class PolicyBody(msgspec.Struct, kw_only=True):
    """What the operator's policy allows the caller (``GET /policy``)."""

    max_mode: CopilotMode
    modes: list[CopilotMode]
    min_approval: ApprovalPolicy
    approvals: list[ApprovalPolicy]
    #: Lists an LLM endpoint must be on (one per rule that applies); ``None``: any.
    llm_endpoints: list[list[str]] | None
    deny_private_llm_endpoints: bool

    @classmethod
    def of(cls, limits: UserLimits) -> PolicyBody:
        return cls(
            max_mode=limits.max_mode,
            modes=list(limits.modes),
            min_approval=limits.min_approval,
            approvals=list(limits.approvals),
            llm_endpoints=None
            if limits.llm_endpoints is None
            else [list(entries) for entries in limits.llm_endpoints],
            deny_private_llm_endpoints=limits.deny_private_llm_endpoints,
        )


class PublicLLMConfig(msgspec.Struct, kw_only=True):
    """The caller's LLM settings as shown to them: never the key, only whether one is set."""

    provider: str
    model: str
    api_key_set: bool
    base_url: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    context_limit: int | None = None
    title_model: str | None = None
    copilot_mode: CopilotMode | None = None
    approval: ApprovalPolicy | None = None
    connect_timeout: float | None = None
    first_token_timeout: float | None = None
    token_timeout: float | None = None
    tool_set: Literal["full", "compact"] | None = None
    text_tool_calls: bool | None = None

    @classmethod
    def from_public(cls, view: Mapping[str, Any]) -> PublicLLMConfig:
        """From a repository's public view (any key but these is dropped, the key first)."""
        return cls(
            provider=str(view["provider"]),
            model=str(view["model"]),
            api_key_set=bool(view.get("api_key_set", False)),
            base_url=view.get("base_url"),
            temperature=view.get("temperature"),
            max_tokens=view.get("max_tokens"),
            context_limit=view.get("context_limit"),
            title_model=view.get("title_model"),
            copilot_mode=_member(CopilotMode, view.get("copilot_mode")),
            approval=_member(ApprovalPolicy, view.get("approval")),
            connect_timeout=view.get("connect_timeout"),
            first_token_timeout=view.get("first_token_timeout"),
            token_timeout=view.get("token_timeout"),
            tool_set=view.get("tool_set"),
            text_tool_calls=view.get("text_tool_calls"),
        )


class LLMTestReply(msgspec.Struct, kw_only=True):
    status: Literal["ok"]
    latency_ms: float
    #: The model's answer (at most 200 characters).
    reply: str


class SkillsReloaded(msgspec.Struct, kw_only=True):
    status: Literal["ok"]
    skills: int
    forbidden_commands: int
    #: Files that could not be read, and why.
    problems: list[str]
    #: The prompts in use: ``built-in`` or the overriding files' names.
    prompts: list[str]

    @classmethod
    def from_summary(cls, summary: Mapping[str, Any]) -> SkillsReloaded:
        return cls(
            status="ok",
            skills=int(summary.get("skills", 0)),
            forbidden_commands=int(summary.get("forbidden_commands", 0)),
            problems=[str(problem) for problem in summary.get("problems", ())],
            prompts=[str(prompt) for prompt in summary.get("prompts", ("built-in",))],
        )


class UserBody(msgspec.Struct, kw_only=True):
    user_id: str
    username: str
    is_superadmin: bool

    @classmethod
    def from_principal(cls, principal: Principal) -> UserBody:
        return cls(
            user_id=principal.user_id,
            username=principal.username,
            is_superadmin=principal.is_superadmin,
        )


class LoginReply(msgspec.Struct, kw_only=True):
    #: A GNS3 token: send it as ``Authorization: Bearer`` to every other route.
    access_token: str
    token_type: Literal["bearer"]
    user: UserBody


class ProjectBody(msgspec.Struct, kw_only=True):
    id: str
    name: str
    #: GNS3's status: ``opened``, ``closed``…
    status: str


class RenderedMarkdown(msgspec.Struct, kw_only=True):
    #: Sanitised HTML.
    html: str


class SessionMatchBody(msgspec.Struct, kw_only=True):
    """A session found by a search: the session, where the text was found
    (``message_id``; ``null``: in the title) and the words around it."""

    session: SessionBody
    snippet: str
    message_id: str | None

    @classmethod
    def from_match(cls, match: SessionMatch) -> SessionMatchBody:
        return cls(
            session=SessionBody.from_session(match.session),
            snippet=match.snippet,
            message_id=match.message_id,
        )


class SessionExport(msgspec.Struct, kw_only=True):
    """A whole session: its metadata and every message, oldest first."""

    session: SessionBody
    messages: list[ChatMessage]

    @classmethod
    def of(cls, session: Session, messages: list[Message]) -> SessionExport:
        return cls(
            session=SessionBody.from_session(session),
            messages=[ChatMessage.from_message(message) for message in messages],
        )


class LLMDefaults(msgspec.Struct, kw_only=True):
    """What applies to a setting left empty (``temperature`` ``null``: the provider's own)."""

    temperature: float | None
    context_limit: int


class ModelList(msgspec.Struct, kw_only=True):
    """The models the caller's endpoint lists; ``available`` false with the reason when
    it cannot list them (nothing configured, a rejected key, no such listing)."""

    available: bool
    models: list[str]
    reason: str | None
    defaults: LLMDefaults


class RenderedTool(msgspec.Struct, kw_only=True):
    #: Sanitised HTML: the output per device, tables, highlighted device text.
    html: str
    #: Why the call failed, for a person; ``null`` when it did not fail.
    reason: str | None


class RenderedTools(msgspec.Struct, kw_only=True):
    items: list[RenderedTool]


class PortBody(msgspec.Struct, kw_only=True):
    name: str
    short_name: str
    adapter_number: int
    port_number: int
    in_use: bool


class NodeBody(msgspec.Struct, kw_only=True):
    node_id: str
    name: str
    node_type: str
    #: What to draw: router, switch, hub, computer, server, firewall, cloud, nat or other.
    kind: str
    status: str
    x: int
    y: int
    width: int
    height: int
    #: ``telnet://host:port`` (or the console's type); ``null`` when it has none.
    console: str | None
    ports: list[PortBody]
    #: The node in GNS3's web UI (its web console), ``null`` when unknown.
    web_ui: str | None


class LinkEnd(msgspec.Struct, kw_only=True):
    node_id: str
    node: str
    #: The port's short name (``e0``, ``Gi0/0``).
    port: str


class LinkBody(msgspec.Struct, kw_only=True):
    link_id: str
    ends: list[LinkEnd]
    capturing: bool
    suspended: bool


class TopologyBody(msgspec.Struct, kw_only=True):
    """A project as drawn on the page: nodes at GNS3's positions, links between ports."""

    project_id: str
    name: str
    status: str
    #: The project in GNS3's web UI; ``null`` when unknown.
    web_ui: str | None
    nodes: list[NodeBody]
    links: list[LinkBody]
