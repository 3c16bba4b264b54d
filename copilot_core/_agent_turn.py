"""What one run of the built-in agent keeps from step to step, and the lab as it is shown.

:class:`AgentTurn` is the state the agent's layers share (the run, its steps, the reply
stream, the tool step): the turn's tools, its one conversation, the guards and memories
that last a turn (repeats, decisions, call ids, what the tools showed), its counters
and how it ended. :func:`open_turn` opens it; :class:`LabView` is the lab's state as
the model is shown it, read at the start and again after a call changed the topology.

The conversation is the runner's when it gives one (``AgentRunConfig.conversation``):
the runner appends each step once it has checked and saved it, before the agent goes
on, so the agent only reads it. An agent driven without a runner keeps its own, and
appends its steps itself in :meth:`AgentTurn.completed`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from copilot_core._abort import AbortToken
from copilot_core._compact import compact_tools
from copilot_core._conversation import Conversation
from copilot_core._guards import TurnGuard
from copilot_core._messages import Message, Role
from copilot_core._replay import replayable
from copilot_core._streams import Aborted, race_abort
from copilot_core._textcalls import ToolOutputs
from copilot_core._tokens import TokenCounter
from copilot_core._toolgate import TurnDecisions
from copilot_core._tools import ToolContext, ToolSpec, ToolStatus
from copilot_core._unseen import Seen
from copilot_core.errors import CopilotError
from copilot_core.events import StepCompleted, ToolEndEvent
from copilot_core.ports import AgentRunConfig, ModelSelection, ToolSet, TopologySource

__all__ = ["AgentTurn", "LabView", "open_turn"]


class LabView:
    """The lab's state as the model is shown it (or why there is none)."""

    __slots__ = ("_source", "_timeout", "problem", "topology")

    def __init__(self, source: TopologySource | None, timeout: float) -> None:
        self._source = source
        self._timeout = timeout
        self.topology: dict[str, Any] | None = None
        self.problem: str | None = "not read yet"

    async def read(self, ctx: ToolContext) -> None:
        """Read the lab; a failure is the ``problem`` the prompt names, never raised."""
        self.topology, self.problem = None, None
        if self._source is None:
            self.problem = "no topology source"
            return
        try:
            self.topology = await race_abort(self._source.read(ctx), ctx.abort, self._timeout)
        except Aborted:
            self.problem = "aborted"
        except TimeoutError:
            self.problem = f"GNS3 did not answer within {self._timeout:g} s"
        except CopilotError as exc:
            self.problem = exc.message

    async def refresh(
        self, ctx: ToolContext, ends: Mapping[str, ToolEndEvent], tools: Mapping[str, ToolSpec]
    ) -> None:
        """Read the lab again when a call of the step changed the topology and succeeded."""
        if any(
            end.status == ToolStatus.SUCCESS.value
            and end.tool_name in tools
            and tools[end.tool_name].mutates_topology
            for end in ends.values()
        ):
            await self.read(ctx)


@dataclass(eq=False, slots=True)
class AgentTurn:
    """The state of one run of the agent (see the module's docstring)."""

    context: ToolContext
    selection: ModelSelection
    #: Every tool of the turn's mode, by name; ``specs``: those offered to the model.
    tools: dict[str, ToolSpec]
    specs: list[ToolSpec]
    conversation: Conversation
    #: Whether the agent appends its steps itself (no runner does it).
    keeps_conversation: bool
    lab: LabView
    #: What every tool returned in this conversation: a call read from the model's text
    #: that is there is quoted, not made (see ``calls_in_text``).
    outputs: ToolOutputs
    #: What the tools showed: an answer stating more is unverified.
    seen: Seen
    #: Whether calls the model writes in its text are taken when it makes none.
    text_calls: bool
    #: The tokens the conversation may take in a prompt (the lab's state included).
    budget: int = 0
    #: The user's message this run answers.
    query: str = ""
    guard: TurnGuard = field(default_factory=TurnGuard)
    #: The user decides once per distinct call in a turn.
    decided: TurnDecisions = field(default_factory=TurnDecisions)
    #: Tool-call ids of this turn: each call has its own.
    used_ids: set[str] = field(default_factory=set)
    #: The model was told, in this turn, that a call it quoted was not run.
    told: bool = False
    #: The model was asked, in this turn, to run a tool for output it stated.
    asked: bool = False
    #: The model was told, in this turn, that a tool its reply named was not called.
    prompted: bool = False
    llm_calls: int = 0
    #: The turn's final answer, once given (the title is made from it).
    answer: Message | None = None
    #: The run ended without an answer (an error, or a limit).
    ended: bool = False

    @property
    def abort(self) -> AbortToken:
        return self.context.abort

    @property
    def going_on(self) -> bool:
        """Whether the run takes another step."""
        return self.answer is None and not self.ended and not self.context.abort.is_aborted()

    def completed(self, messages: tuple[Message, ...]) -> StepCompleted:
        """The record of a finished step (kept in the conversation here only when the
        agent keeps it: a runner appends the step it saves)."""
        if self.keeps_conversation:
            self.conversation.extend(messages)
        return StepCompleted(messages)


def open_turn(
    query: str,
    history: Sequence[Message],
    config: AgentRunConfig,
    *,
    selection: ModelSelection,
    every_spec: Sequence[ToolSpec],
    tool_set: ToolSet,
    text_calls: bool,
    counter: TokenCounter,
    lab: LabView,
    question: Callable[[], Message],
) -> AgentTurn:
    """The state of a run: the runner's conversation (counted with ``counter``), or the
    agent's own from ``history`` and the question (the runner's as saved, or a new one)."""
    conversation = config.conversation
    if conversation is not None:
        conversation.count_with(counter)
    else:
        conversation = Conversation.restore(replayable(history), counter=counter)
        conversation.append(config.question or question())
    return AgentTurn(
        context=config.context,
        selection=selection,
        tools={spec.name: spec for spec in every_spec},
        specs=(
            compact_tools(every_spec, query)
            if (selection.tool_set or tool_set) == "compact"
            else list(every_spec)
        ),
        conversation=conversation,
        keeps_conversation=config.conversation is None,
        lab=lab,
        outputs=ToolOutputs([m.content for m in history if m.role is Role.TOOL]),
        seen=Seen(history),
        text_calls=selection.text_tool_calls
        if selection.text_tool_calls is not None
        else text_calls,
        query=query,
    )
