"""The sections of the service's settings, one per component (``gns3``, ``console``,
``agent``, ``chat``, ``web``, ``store``, ``mcp``, ``policy``): each field's bounds and
description here, its default taken from the component that owns it (its constructor or
its settings class), so that the service and a library user of the component start from
the same values. :mod:`entrypoints.settings` puts them together."""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, Self

import yaml
from pydantic import BaseModel, ConfigDict, Field, SecretStr, model_validator

from adapters.gns3 import ConsoleRunner, Gns3ToolSettings
from adapters.llm import LLMTimeouts
from adapters.mcp import McpServerSettings
from adapters.sqlite import SqliteCheckpointStore
from adapters.web import BASE_URL_PATTERN, WebSettings
from copilot_core import AgentSettings, ChatSettings, RunnerSettings
from copilot_core.policy import OperatorPolicy
from copilot_core.rules import MAX_MESSAGE_CHARS

__all__ = [
    "AgentSection",
    "ArgumentLimitSetting",
    "ChatSection",
    "ConsoleSection",
    "Gns3Section",
    "McpSection",
    "PolicySection",
    "StoreSection",
    "WebSection",
]

_AGENT = AgentSettings()
_CHAT = ChatSettings()
_RUNNER = RunnerSettings()
_TOOLS = Gns3ToolSettings()
_WEB = WebSettings()
_MCP = McpServerSettings()
_LLM_TIMEOUTS = LLMTimeouts()


def _default(component: Callable[..., object], name: str) -> Any:
    """The default a component's constructor gives ``name``."""
    return inspect.signature(component).parameters[name].default


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Gns3Section(_Section):
    """The GNS3 server, and the bounds of the lab tools."""

    url: str = Field(
        default="http://127.0.0.1:3080",
        pattern=BASE_URL_PATTERN,
        description="Base URL of the GNS3 server (its v3 API): http(s)://host[:port], no "
        "credentials.",
    )
    timeout: float = Field(default=10.0, gt=0, description="Seconds per GNS3 request.")
    public_url: str | None = Field(
        default=None,
        pattern=BASE_URL_PATTERN,
        description="GNS3's address as people's browsers reach it (the web page's console "
        "addresses and links to GNS3's web UI); unset: url.",
    )
    username: str | None = Field(
        default=None,
        description=(
            "A GNS3 account (a superadmin, to see every project) the service uses to follow "
            "projects being closed or deleted; unset: their copilot data is left alone."
        ),
    )
    password: SecretStr | None = Field(default=None, description="Its password.")
    deleted_projects: Literal["delete", "archive"] = Field(
        default="delete",
        description=(
            "What happens to the conversations of a project deleted in GNS3: deleted, or "
            "moved to data_dir/archive."
        ),
    )
    start_timeout: float = Field(
        default=_TOOLS.start_timeout, gt=0, description="Seconds a node may take to start."
    )
    max_console_wait: float = Field(
        default=_TOOLS.max_console_wait,
        gt=0,
        description="The longest wait_for_console may wait for a console's prompt (seconds).",
    )
    poll_interval: float = Field(
        default=_TOOLS.poll_interval, gt=0, description="Seconds between status polls."
    )
    action_settle: float = Field(
        default=_TOOLS.action_settle,
        gt=0,
        description="Seconds a stop or suspend is given to show in the node's status.",
    )
    start_grace: float = Field(
        default=_TOOLS.start_grace,
        gt=0,
        description="Seconds a started node may still read stopped before the start failed.",
    )
    max_command_timeout: float = Field(
        default=_TOOLS.max_command_timeout,
        gt=0,
        description="The longest timeout a console command of a tool call may ask for.",
    )
    call_budget: float = Field(
        default=_TOOLS.call_budget,
        gt=0,
        description="Seconds one console tool call may take (keep it under agent.tool_timeout).",
    )
    capture_default_seconds: float = Field(
        default=_TOOLS.capture_default_seconds, gt=0, description="A capture's default length."
    )
    capture_max_seconds: float = Field(
        default=_TOOLS.capture_max_seconds, gt=0, description="A capture's longest length."
    )
    capture_max_bytes: int = Field(
        default=_TOOLS.capture_max_bytes, ge=1024, description="The largest capture read."
    )
    max_batch: int = Field(
        default=_TOOLS.max_batch, ge=1, description="Devices one batch tool call may touch."
    )
    max_commands: int = Field(
        default=_TOOLS.max_commands, ge=1, description="Commands one tool call may send."
    )
    max_verify_wait: float = Field(
        default=_TOOLS.max_verify_wait,
        ge=0,
        description="The longest wait_s verify_intent may ask for (seconds).",
    )
    verify_interval: float = Field(
        default=_TOOLS.verify_interval,
        gt=0,
        description="Seconds between two rounds of checks that do not hold yet.",
    )
    max_change_verify_wait: float = Field(
        default=_TOOLS.max_change_verify_wait,
        ge=0,
        description="The longest verify_wait_s a changing call may ask for (seconds; a "
        "verified change may wait twice, after the change and after a rollback).",
    )


class ConsoleSection(_Section):
    """The device consoles (telnet)."""

    command_timeout: float = Field(
        default=_default(ConsoleRunner, "command_timeout"),
        gt=0,
        description="Seconds one console command may take.",
    )
    connect_timeout: float = Field(
        default=_default(ConsoleRunner, "connect_timeout"),
        gt=0,
        description="Seconds to open a console.",
    )
    max_output_chars: int = Field(
        default=_default(ConsoleRunner, "max_output_chars"),
        ge=100,
        description="Output kept of one command (characters).",
    )
    drain_quiet: float = Field(
        default=_default(ConsoleRunner, "drain_quiet"),
        gt=0,
        description="Seconds of silence that end a command's output.",
    )
    recovery_timeout: float = Field(
        default=_default(ConsoleRunner, "recovery_timeout"),
        gt=0,
        description="Seconds to bring a console back to its prompt.",
    )
    wake_timeout: float = Field(
        default=_default(ConsoleRunner, "wake_timeout"),
        gt=0,
        description="Seconds to wake a console that does not answer at once.",
    )


class ArgumentLimitSetting(BaseModel):
    """One tool's argument limit (an absent bound is the section's)."""

    model_config = ConfigDict(extra="forbid")

    max_chars: int | None = Field(default=None, ge=2)
    max_items: int | None = Field(default=None, ge=1)


class AgentSection(_Section):
    """The built-in agent's limits (external agents have theirs in ``agents``)."""

    max_llm_calls: int = Field(
        default=_AGENT.max_llm_calls, ge=1, description="The step budget: model calls per turn."
    )
    max_calls_per_reply: int = Field(
        default=_AGENT.max_calls_per_reply,
        ge=1,
        description="Tool calls of one model reply that are run; the rest are answered, "
        "not run, telling the model to make them in its next reply.",
    )
    tool_timeout: float = Field(
        default=_AGENT.tool_timeout, gt=0, description="Seconds one tool call may take."
    )
    topology_timeout: float = Field(
        default=_AGENT.topology_timeout, gt=0, description="Seconds to read the lab's topology."
    )
    title_timeout: float = Field(
        default=_AGENT.title_timeout, gt=0, description="Seconds to write a session's title."
    )
    output_reserve_tokens: int = Field(
        default=_AGENT.output_reserve_tokens,
        ge=0,
        description="Tokens of the context kept free for the answer.",
    )
    progress_interval: float = Field(
        default=_AGENT.progress_interval,
        gt=0,
        description="Seconds between progress events of one running tool.",
    )
    max_result_chars: int = Field(
        default=_AGENT.max_result_chars,
        ge=1000,
        description="Characters of one tool result the model reads; a longer one is cut.",
    )
    max_tokens: int | None = Field(
        default=_AGENT.max_tokens,
        gt=0,
        description="The longest answer of one model call (tokens) for users whose LLM "
        "settings set none; null leaves it to the model.",
    )
    argument_chars: int = Field(
        default=_AGENT.argument_limits.default.max_chars,
        ge=2,
        description="Characters one tool call's arguments may have; a call that grows past "
        "it is stopped while the model writes it.",
    )
    argument_items: int = Field(
        default=_AGENT.argument_limits.default.max_items,
        ge=1,
        description="Items any list in one tool call's arguments may have (stopped the same way).",
    )
    tool_argument_limits: dict[str, ArgumentLimitSetting] = Field(
        default_factory=dict,
        description='Limits of particular tools, as a JSON object: {"tool": {"max_chars": '
        'N, "max_items": M}}; the others have argument_chars and argument_items.',
    )
    connect_timeout: float = Field(
        default=_LLM_TIMEOUTS.connect,
        gt=0,
        description="Seconds to connect to a model's server, for users whose LLM settings "
        "set none (connect_timeout there).",
    )
    first_token_timeout: float = Field(
        default=_AGENT.model_timeouts.first_token,
        gt=0,
        description="Seconds a model may take to its first token (a local model reading a "
        "long prompt may need minutes), for users whose LLM settings set none.",
    )
    token_timeout: float = Field(
        default=_AGENT.model_timeouts.between_tokens,
        gt=0,
        description="Seconds a model may pause between two tokens, for users whose LLM "
        "settings set none.",
    )
    waiting_interval: float = Field(
        default=_AGENT.waiting_interval,
        gt=0,
        description="Seconds between waiting_for_model status events while a model has "
        "not answered yet.",
    )
    tool_set: Literal["full", "compact"] = Field(
        default=_AGENT.tool_set,
        description="The tool schemas models read, for users whose LLM settings do not "
        "say, whatever the provider: compact (the everyday tools and those the message "
        "cues, short schemas), or full (every tool with its whole description).",
    )
    tool_call_interval: float = Field(
        default=_AGENT.tool_call_coalescing.interval,
        ge=0,
        description="Seconds between two tool_call events of a call being written (each "
        "also waits for the arguments to grow by a quarter); 0 sends every fragment.",
    )


class ChatSection(_Section):
    """Chat limits and the turns' bounds."""

    max_message_chars: int = Field(
        default=_CHAT.max_message_chars,
        ge=1,
        le=MAX_MESSAGE_CHARS,
        description="Longest accepted user message (the core's ceiling is the maximum).",
    )
    max_page: int = Field(
        default=_CHAT.max_page, ge=1, description="Most sessions or messages one page holds."
    )
    finished_turn_retention: float = Field(
        default=_CHAT.finished_turn_retention,
        ge=0,
        description="Seconds a finished turn can still be re-attached.",
    )
    approval_timeout: float = Field(
        default=_RUNNER.approval_timeout,
        gt=0,
        description="Seconds a tool call waits for the user's approval before it counts "
        "as rejected.",
    )
    draft_interval: float = Field(
        default=_RUNNER.draft_interval,
        gt=0,
        description="Seconds between saves of an answer being streamed.",
    )
    draft_chars: int = Field(
        default=_RUNNER.draft_chars,
        ge=1,
        description="…or characters streamed since the last save, whichever comes first.",
    )
    save_timeout: float = Field(
        default=_RUNNER.save_timeout, gt=0, description="Seconds a turn's final save may take."
    )
    history_chars_per_token: int | None = Field(
        default=_CHAT.history_chars_per_token,
        ge=1,
        description="A turn reads the newest history that fits this many characters per "
        "token of the model's context; null reads it all.",
    )
    history_page: int = Field(
        default=_CHAT.history_page, ge=1, description="Messages read per page of history."
    )
    history_cache_sessions: int = Field(
        default=_CHAT.history_cache_sessions,
        ge=0,
        description="Sessions whose history window stays in memory (0: none).",
    )


class WebSection(_Section):
    """The HTTP API."""

    heartbeat_interval: float = Field(
        default=_WEB.heartbeat_interval or 0,
        ge=0,
        description="Seconds of quiet before an SSE heartbeat; 0 disables.",
    )
    abort_on_disconnect: bool = Field(
        default=_WEB.abort_on_disconnect,
        description="Abort a turn when its streaming client disconnects.",
    )
    auth_cache_ttl: float = Field(
        default=_WEB.auth_cache_ttl, ge=0, description="Seconds a validated token is remembered."
    )
    auth_cache_size: int = Field(
        default=_WEB.auth_cache_size, ge=1, description="Tokens remembered at most."
    )
    readiness_timeout: float = Field(
        default=_WEB.readiness_timeout, gt=0, description="Seconds each /readyz check may take."
    )
    llm_test_timeout: float = Field(
        default=_WEB.llm_test_timeout,
        gt=0,
        description="Seconds POST /llm-config/test waits for the model.",
    )
    cors_origins: tuple[str, ...] = Field(
        default=_WEB.cors_origins,
        description='Browser origins allowed cross-site (JSON list, e.g. ["https://ui.lab"]).',
    )


class StoreSection(_Section):
    """The per-project SQLite databases."""

    max_open: int = Field(
        default=_default(SqliteCheckpointStore, "max_open"),
        ge=1,
        description="Databases kept open at once (least recently used ones close).",
    )
    busy_timeout: float = Field(
        default=_default(SqliteCheckpointStore, "busy_timeout"),
        gt=0,
        description="Seconds a write waits for another writer.",
    )
    synchronous: Literal["NORMAL", "FULL"] = Field(
        default=_default(SqliteCheckpointStore, "synchronous"),
        description="SQLite's synchronous mode: FULL survives a power loss at some speed.",
    )
    idle_timeout: float | None = Field(
        default=_default(SqliteCheckpointStore, "idle_timeout"),
        gt=0,
        description="Seconds after which a project's database no one uses is closed "
        "(it reopens on next use); null: kept open.",
    )


class McpSection(_Section):
    """The copilot's own MCP endpoint (``/v3/copilot/mcp``)."""

    max_sessions_per_user: int = Field(
        default=_MCP.max_sessions_per_user,
        ge=1,
        description="MCP sessions one GNS3 user may hold open at once (one more: HTTP 429).",
    )
    session_idle_timeout: float = Field(
        default=_MCP.session_idle_timeout,
        gt=0,
        description="Seconds an MCP session may go without a request before it is closed.",
    )
    max_sessions: int = Field(
        default=_MCP.max_sessions,
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


class PolicySection(_Section):
    """The operator's policy (docs/configuration.md): per GNS3 user or group, the highest
    copilot mode, the least approval setting and the LLM endpoints allowed."""

    file: Path | None = Field(
        default=None,
        description="A YAML or JSON file with the policy (default, groups, users); read "
        "at start-up.",
    )
    rules: OperatorPolicy | None = Field(
        default=None,
        description="The policy itself, as JSON (instead of file).",
    )
    deny_private_llm_endpoints: bool = Field(
        default=False,
        description="Refuse LLM base_urls on loopback, private, link-local and other "
        "non-public addresses unless a rule's llm_endpoints names them.",
    )
    groups_cache_ttl: float = Field(
        default=30.0, ge=0, description="Seconds a user's GNS3 groups are remembered."
    )

    @model_validator(mode="after")
    def _one_source(self) -> Self:
        if self.file is not None and self.rules is not None:
            raise ValueError("give the policy as file or as rules, not both")
        if self.file is not None:
            self.operator_policy()  # a file that cannot be read stops the start-up
        return self

    def operator_policy(self) -> OperatorPolicy | None:
        """The policy (read from ``file`` when one is given); ``None``: there is none."""
        policy = self.rules
        if self.file is not None:
            policy = _policy_file(self.file)
        if policy is None and not self.deny_private_llm_endpoints:
            return None
        policy = policy or OperatorPolicy()
        if self.deny_private_llm_endpoints:
            policy = policy.model_copy(update={"deny_private_llm_endpoints": True})
        return policy


def _policy_file(path: Path) -> OperatorPolicy:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"cannot read the policy file {str(path)!r}: {exc.strerror}") from None
    try:
        data = json.loads(text) if path.suffix.lower() == ".json" else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as exc:
        raise ValueError(f"the policy file {str(path)!r} is not valid YAML/JSON: {exc}") from None
    try:
        return OperatorPolicy.model_validate(data or {})
    except ValueError as exc:
        raise ValueError(f"the policy file {str(path)!r}: {exc}") from None
