"""The built-in agent's settings: :class:`AgentSettings`, the limits of one run.

Each field is declared here once, with its default, its bounds and what it means: the
service's ``agent`` section *is* an :class:`AgentSettings` (``COPILOT_AGENT__<FIELD>``),
handed whole to the :class:`~copilot_core.BuiltinAgent`, to its
:class:`~copilot_core.ToolGate` and to the model provider. The fields are what an
operator writes (``argument_chars``, ``first_token_timeout``…); the values the run reads
are built from them (:attr:`AgentSettings.argument_limits`, :attr:`~AgentSettings.
model_timeouts`, :attr:`~AgentSettings.tool_call_coalescing`).
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import ConfigDict, Field
from pydantic.dataclasses import dataclass

from copilot_core._accumulator import Coalescing
from copilot_core._guards import ArgumentLimit, ArgumentLimits
from copilot_core._toolgate import MAX_RESULT_CHARS, TOOL_TIMEOUT, CallBounds, ToolGate
from copilot_core.ports import ModelTimeouts, ToolExecutor, ToolSet

__all__ = ["AgentSettings", "ToolArgumentLimit"]

_ARGUMENTS = ArgumentLimit()
_MODEL = ModelTimeouts()
#: Settings refuse unknown fields: a typo is an error, not a silent default.
_CONFIG = ConfigDict(extra="forbid")


@dataclass(frozen=True, slots=True, config=_CONFIG)
class ToolArgumentLimit:
    """One tool's argument limit (an absent bound is the agent's ``argument_chars`` or
    ``argument_items``)."""

    max_chars: int | None = Field(default=None, ge=2)
    max_items: int | None = Field(default=None, ge=1)


@dataclass(frozen=True, slots=True, config=_CONFIG)
class AgentSettings:
    """Limits of one run; every wait is bounded."""

    #: Fragments of a reply read ahead of the run.
    stream_buffer: ClassVar[int] = 256
    #: The turn ends when the model repeats a call that succeeded (or writes a call past
    #: its limit) this many times; before that it is told and may go on.
    strikes: ClassVar[int] = 2
    #: Tool calls a model writes in its text are run when it makes none (for users whose
    #: settings do not say).
    text_tool_calls: ClassVar[bool] = False
    #: A ``tool_call`` event also waits for the arguments to grow by this share.
    tool_call_growth: ClassVar[float] = 0.25

    max_llm_calls: int = Field(
        default=20, ge=1, description="The step budget: model calls per turn."
    )
    max_calls_per_reply: int = Field(
        default=8,
        ge=1,
        description="Tool calls of one model reply that are run; the rest are answered, "
        "not run, telling the model to make them in its next reply.",
    )
    tool_timeout: float = Field(
        default=TOOL_TIMEOUT, gt=0, description="Seconds one tool call may take."
    )
    topology_timeout: float = Field(
        default=15.0, gt=0, description="Seconds to read the lab's topology."
    )
    title_timeout: float = Field(
        default=20.0, gt=0, description="Seconds to write a session's title."
    )
    output_reserve_tokens: int = Field(
        default=2048, ge=0, description="Tokens of the context kept free for the answer."
    )
    progress_interval: float = Field(
        default=0.25,
        gt=0,
        description="Seconds between progress events of one running tool.",
    )
    max_result_chars: int = Field(
        default=MAX_RESULT_CHARS,
        ge=1000,
        description="Characters of one tool result the model reads; a longer one is cut.",
    )
    max_tokens: int | None = Field(
        default=4096,
        gt=0,
        description="The longest answer of one model call (tokens) for users whose LLM "
        "settings set none; null leaves it to the model.",
    )
    argument_chars: int = Field(
        default=_ARGUMENTS.max_chars,
        ge=2,
        description="Characters one tool call's arguments may have; a call that grows past "
        "it is stopped while the model writes it.",
    )
    argument_items: int = Field(
        default=_ARGUMENTS.max_items,
        ge=1,
        description="Items any list in one tool call's arguments may have (stopped the same way).",
    )
    tool_argument_limits: dict[str, ToolArgumentLimit] = Field(
        default_factory=dict,
        description='Limits of particular tools, as a JSON object: {"tool": {"max_chars": '
        'N, "max_items": M}}; the others have argument_chars and argument_items.',
    )
    connect_timeout: float = Field(
        default=10.0,
        gt=0,
        description="Seconds to connect to a model's server, for users whose LLM settings "
        "set none (connect_timeout there).",
    )
    first_token_timeout: float = Field(
        default=_MODEL.first_token,
        gt=0,
        description="Seconds a model may take to its first token (a local model reading a "
        "long prompt may need minutes), for users whose LLM settings set none.",
    )
    token_timeout: float = Field(
        default=_MODEL.between_tokens,
        gt=0,
        description="Seconds a model may pause between two tokens, for users whose LLM "
        "settings set none.",
    )
    waiting_interval: float = Field(
        default=5.0,
        gt=0,
        description="Seconds between waiting_for_model status events while a model has "
        "not answered yet.",
    )
    tool_set: ToolSet = Field(
        default="compact",
        description="The tool schemas models read, for users whose LLM settings do not "
        "say, whatever the provider: compact (the everyday tools and those the message "
        "cues, short schemas), or full (every tool with its whole description).",
    )
    tool_call_interval: float = Field(
        default=0.1,
        ge=0,
        description="Seconds between two tool_call events of a call being written (each "
        "also waits for the arguments to grow by a quarter); 0 sends every fragment.",
    )

    @property
    def argument_limits(self) -> ArgumentLimits:
        """How big one call's arguments may grow, per tool (a call past its limit is
        stopped while the model writes it)."""
        chars, items = self.argument_chars, self.argument_items
        return ArgumentLimits(
            ArgumentLimit(chars, items),
            {
                name: ArgumentLimit(limit.max_chars or chars, limit.max_items or items)
                for name, limit in self.tool_argument_limits.items()
            },
        )

    @property
    def tool_call_coalescing(self) -> Coalescing:
        """How often a call being written is reported (``tool_call`` events)."""
        interval = self.tool_call_interval
        return Coalescing(interval, self.tool_call_growth if interval else 0.0)

    @property
    def model_timeouts(self) -> ModelTimeouts:
        """How long a model may take to its first token and between tokens, for users
        whose LLM settings set none (``ModelSelection.timeouts``)."""
        return ModelTimeouts(self.first_token_timeout, self.token_timeout)

    @property
    def bounds(self) -> CallBounds:
        """How long one call into the lab may run and how long its result may be: the
        gate's (:meth:`gate`), and those of the core's own calls into the lab (a
        standing intent's run, a rollback)."""
        return CallBounds(self.tool_timeout, self.max_result_chars)

    def gate(self, tools: ToolExecutor) -> ToolGate:
        """The gate ``tools`` are called through with these limits (``tool_timeout``,
        ``progress_interval``, ``max_result_chars``): the agent's, and every other
        caller's that must keep to a tool call's bounds."""
        return ToolGate(
            tools,
            timeout=self.tool_timeout,
            progress_interval=self.progress_interval,
            max_result_chars=self.max_result_chars,
        )
