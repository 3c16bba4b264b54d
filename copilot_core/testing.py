"""Test doubles for the core's ports, for library users and for our own tests.

* :class:`ScriptedLanguageModel`: replies from a script, fragment by fragment.
* :class:`InMemoryCheckpointStore`: a complete store in memory.
* :class:`FakeToolExecutor`: tools as plain Python functions.
* :class:`FakeRestorePoints`: the lab's restore feature, its rollbacks scripted and recorded.
* :class:`FakeCheckProbes`: a lab's checks answered by a plain Python function.
* :class:`FakeDrillLab`: a lab in memory that a drill breaks and restores;
  :class:`InMemoryDrillResults`: the drills' store in memory.
* :class:`FakeTopologySource`, :class:`StaticModelProvider`,
  :class:`RecordingEventSink`, :class:`SteppingClock`, :class:`SequentialIds`,
  :class:`FakeWaitClock` (time that moves only when something sleeps or spends it).

The reply builders :func:`text_reply` and :func:`tool_reply` produce the deltas
a real provider streams.
"""

from __future__ import annotations

import asyncio
import copy
import inspect
import itertools
import json
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from copilot_core._approvals import Assessment, ChangePreview, ToolEffect
from copilot_core._checks import Check, Observation
from copilot_core._deltas import FinishDelta, ModelDelta, TextDelta, ToolCallDelta, UsageDelta
from copilot_core._drill_store import InMemoryDrillResults
from copilot_core._fake_drill import FakeDrillCall, FakeDrillLab
from copilot_core._fake_restore import FakeRestorePoints, FakeRollback
from copilot_core._memory_store import InMemoryCheckpointStore
from copilot_core._messages import Message
from copilot_core._session import CopilotMode
from copilot_core._tools import (
    NOT_CLEARED,
    Clearance,
    ParsedToolCall,
    ToolContext,
    ToolResult,
    ToolSpec,
    Touch,
)
from copilot_core._turns import TurnInfo
from copilot_core._verification import ProbeLimits
from copilot_core._verified_change import ChangeSteps
from copilot_core.errors import (
    LLMError,
    LLMNotConfiguredError,
)
from copilot_core.events import (
    AgentEvent,
    ApprovalNeeded,
    LLMCallCompleted,
    StepCompleted,
    TitleGenerated,
)
from copilot_core.ports import (
    CallOptions,
    ModelOverrides,
    ModelSelection,
)

__all__ = [
    "FakeCheckProbes",
    "FakeDrillCall",
    "FakeDrillLab",
    "FakeRestorePoints",
    "FakeRollback",
    "FakeTool",
    "FakeToolExecutor",
    "FakeTopologySource",
    "FakeWaitClock",
    "Hang",
    "InMemoryCheckpointStore",
    "InMemoryDrillResults",
    "ModelCall",
    "RecordingEventSink",
    "ScriptedLanguageModel",
    "SequentialIds",
    "StaticModelProvider",
    "SteppingClock",
    "text_reply",
    "tool_reply",
]


# ================================================================ language model
@dataclass(frozen=True, slots=True)
class Hang:
    """A script item that blocks for ``seconds`` (forever when ``None``) until cancelled."""

    seconds: float | None = None


ScriptItem = ModelDelta | BaseException | Hang
Reply = (
    Sequence[ScriptItem] | Callable[[Sequence[Message], Sequence[ToolSpec]], Sequence[ScriptItem]]
)


@dataclass(frozen=True, slots=True)
class ModelCall:
    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...]
    options: CallOptions


class ScriptedLanguageModel:
    """Streams scripted replies, one per call, in order.

    A reply is a list of deltas (and optionally exceptions to raise or
    :class:`Hang` pauses), or a function of the call's messages and tools that
    returns one. ``delay`` sleeps before every item; ``default`` answers once the
    script is used up (otherwise an :class:`LLMError` says so).
    """

    def __init__(
        self, replies: Iterable[Reply] = (), *, delay: float = 0.0, default: Reply | None = None
    ) -> None:
        self._replies: list[Reply] = list(replies)
        self.delay = delay
        self.default = default
        self.calls: list[ModelCall] = []
        self.closed_early = 0

    def add(self, *replies: Reply) -> None:
        self._replies.extend(replies)

    def clear(self) -> None:
        """Forget the replies not used yet."""
        self._replies.clear()

    @property
    def remaining(self) -> int:
        return len(self._replies)

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], options: CallOptions
    ) -> AsyncGenerator[ModelDelta, None]:
        self.calls.append(ModelCall(tuple(messages), tuple(tools), options))
        if self._replies:
            reply = self._replies.pop(0)
        elif self.default is not None:
            reply = self.default
        else:
            raise LLMError("the scripted model has no reply left")
        items = reply(messages, tools) if callable(reply) else reply
        finished = False
        try:
            for item in items:
                if self.delay:
                    await asyncio.sleep(self.delay)
                if isinstance(item, Hang):
                    if item.seconds is None:
                        await asyncio.Event().wait()
                    else:
                        await asyncio.sleep(item.seconds)
                elif isinstance(item, BaseException):
                    raise item
                else:
                    yield item
            finished = True
        finally:
            if not finished:
                self.closed_early += 1


def text_reply(
    text: str, *, chunk: int = 4, usage: tuple[int, int] | None = (10, 5)
) -> list[ModelDelta]:
    """A plain answer streamed ``chunk`` characters at a time, with usage and finish."""
    deltas: list[ModelDelta] = [TextDelta(text[i : i + chunk]) for i in range(0, len(text), chunk)]
    deltas.append(FinishDelta("stop"))
    if usage is not None:
        deltas.append(UsageDelta(*usage))
    return deltas


def tool_reply(
    *calls: tuple[str, dict[str, Any] | str],
    text: str = "",
    chunk: int = 7,
    ids: Sequence[str] | None = None,
    usage: tuple[int, int] | None = (20, 8),
) -> list[ModelDelta]:
    """A reply calling tools: ``(name, arguments)`` pairs; a ``str`` argument is sent
    verbatim (to script malformed JSON). Fragments of each call come in order."""
    deltas: list[ModelDelta] = [TextDelta(text)] if text else []
    for index, (name, arguments) in enumerate(calls):
        raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
        call_id = ids[index] if ids else f"call_{index}"
        deltas.append(ToolCallDelta(index, call_id, name, ""))
        deltas.extend(
            ToolCallDelta(index, None, None, raw[i : i + chunk]) for i in range(0, len(raw), chunk)
        )
    deltas.append(FinishDelta("tool_calls"))
    if usage is not None:
        deltas.append(UsageDelta(*usage))
    return deltas


class StaticModelProvider:
    """Gives every user the same selection; ``None`` means nobody has configured one."""

    def __init__(self, selection: ModelSelection | None) -> None:
        self.selection = selection
        self.overrides: list[ModelOverrides] = []

    async def for_user(self, user_id: str, overrides: ModelOverrides) -> ModelSelection:
        self.overrides.append(overrides)
        if self.selection is None:
            raise LLMNotConfiguredError()
        return self.selection


# ========================================================================= tools
Handler = Callable[[dict[str, Any], ToolContext], Any]


@dataclass(slots=True)
class FakeTool:
    spec: ToolSpec
    handler: Handler
    modes: frozenset[CopilotMode] = frozenset(CopilotMode)
    #: How a call is assessed: ``None`` (read-only), or the change it makes.
    changes: Callable[[dict[str, Any]], ChangePreview] | None = None


@dataclass(slots=True)
class FakeToolExecutor:
    """Tools backed by Python callables (sync or async); records every execution, and
    how the gate cleared it (``clearances``, in the same order)."""

    tools: dict[str, FakeTool] = field(default_factory=dict)
    executed: list[ParsedToolCall] = field(default_factory=list)
    clearances: list[Clearance] = field(default_factory=list)
    cancelled: list[str] = field(default_factory=list)

    def add(
        self,
        name: str,
        handler: Handler,
        *,
        modes: Iterable[CopilotMode] = tuple(CopilotMode),
        mutates_topology: bool = False,
        description: str = "",
        parameters: dict[str, Any] | None = None,
        changes: Callable[[dict[str, Any]], ChangePreview] | None = None,
        effect: ToolEffect | None = None,
        title: Callable[[dict[str, Any]], str | None] | None = None,
        touches: Callable[[dict[str, Any]], Sequence[Touch] | None] | None = None,
    ) -> FakeToolExecutor:
        """Add a tool; ``changes`` makes its calls changes of the lab, previewed by it;
        ``title`` names a call (``ToolSpec.title``), ``touches`` declares what it reads,
        creates or changes (``ToolSpec.touches``).

        Its declared ``effect`` is, unless given, ``read_only`` for a tool without
        ``changes`` and ``device_change`` for one with.
        """
        if effect is None:
            effect = ToolEffect.READ_ONLY if changes is None else ToolEffect.DEVICE_CHANGE
        spec = ToolSpec(
            name,
            description or f"The {name} tool.",
            parameters or {"type": "object", "properties": {}},
            mutates_topology,
            effect,
            title=title,
            touches=touches,
        )
        self.tools[name] = FakeTool(spec, handler, frozenset(modes), changes)
        return self

    def specs(self, mode: CopilotMode) -> Sequence[ToolSpec]:
        return [tool.spec for tool in self.tools.values() if mode in tool.modes]

    async def assess(self, call: ParsedToolCall, context: ToolContext) -> Assessment:
        changes = self.tools[call.name].changes
        if changes is None:
            return Assessment.read_only()
        return Assessment(True, changes(dict(call.arguments or {})))

    async def execute(
        self, call: ParsedToolCall, context: ToolContext, clearance: Clearance = NOT_CLEARED
    ) -> ToolResult:
        self.executed.append(call)
        self.clearances.append(clearance)
        tool = self.tools[call.name]
        try:
            value = tool.handler(dict(call.arguments or {}), context)
            if inspect.isawaitable(value):
                value = await value
        except asyncio.CancelledError:
            self.cancelled.append(call.id)
            raise
        return value if isinstance(value, ToolResult) else ToolResult(value)

    async def change_steps(
        self, call: ParsedToolCall, context: ToolContext, assessment: Assessment
    ) -> ChangeSteps | None:
        """No verified changes here: every call is run by ``execute``."""
        return None


#: How a fake lab answers one check for one caller (sync or async).
Answer = Callable[[Check, ToolContext], Observation | Awaitable[Observation]]


def _passes(check: Check, context: ToolContext) -> Observation:
    return Observation.passed(None)


class FakeCheckProbes:
    """A lab's :class:`~copilot_core.intent.CheckProbes` whose probes answer each check
    with ``answer(check, context)`` (every check passes unless told otherwise), under
    ``limits``; records the caller of each probe (``contexts``) and the checks of each
    round (``rounds``)."""

    def __init__(
        self,
        answer: Answer = _passes,
        *,
        limits: ProbeLimits | None = None,
    ) -> None:
        self.answer = answer
        self.limits = limits or ProbeLimits(max_checks=32, max_wait_s=300.0, interval=2.0)
        self.contexts: list[ToolContext] = []
        self.rounds: list[tuple[Check, ...]] = []

    def probe(self, context: ToolContext) -> _FakeCheckProbe:
        self.contexts.append(context)
        return _FakeCheckProbe(self, context)


@dataclass(slots=True)
class _FakeCheckProbe:
    probes: FakeCheckProbes
    context: ToolContext

    async def observe(self, checks: Sequence[Check]) -> list[Observation]:
        self.probes.rounds.append(tuple(checks))
        observed: list[Observation] = []
        for check in checks:
            value = self.probes.answer(check, self.context)
            if inspect.isawaitable(value):
                value = await value
            observed.append(value)
        return observed


class FakeTopologySource:
    """A fixed topology (a dict you may mutate between reads); counts reads."""

    def __init__(
        self, topology: dict[str, Any] | None = None, error: Exception | None = None
    ) -> None:
        self.topology = topology if topology is not None else {"nodes": [], "links": []}
        self.error = error
        self.reads = 0

    async def read(self, context: ToolContext) -> dict[str, Any]:
        self.reads += 1
        if self.error is not None:
            raise self.error
        return copy.deepcopy(self.topology)


# ================================================================== small fakes
class RecordingEventSink:
    """Keeps every event and record it is sent, with the turn it belongs to."""

    def __init__(self) -> None:
        self.seen: list[tuple[TurnInfo, AgentEvent]] = []

    def emit(self, turn: TurnInfo, event: AgentEvent) -> None:
        self.seen.append((turn, event))

    @property
    def events(self) -> list[AgentEvent]:
        return [event for _, event in self.seen]

    def types(self) -> list[str]:
        """The types of the wire events seen (records are left out)."""
        records = (StepCompleted, LLMCallCompleted, TitleGenerated, ApprovalNeeded)
        return [event.type for event in self.events if not isinstance(event, records)]


class SteppingClock:
    """A clock that starts at ``start`` and moves ``step`` forward at every reading."""

    def __init__(
        self,
        start: datetime = datetime(2026, 1, 1, tzinfo=UTC),
        step: timedelta = timedelta(milliseconds=1),
    ) -> None:
        self._now = start
        self._step = step

    def now(self) -> datetime:
        self._now += self._step
        return self._now


class SequentialIds:
    def __init__(self, prefix: str = "id") -> None:
        self._prefix = prefix
        self._counter = itertools.count(1)

    def new_id(self) -> str:
        return f"{self._prefix}-{next(self._counter)}"


class FakeWaitClock:
    """A :class:`~copilot_core.intent.WaitClock` whose time moves only when something
    sleeps on it or :meth:`spend` is called (a scripted device taking time to answer);
    ``sleeps`` records every sleep asked for."""

    def __init__(self, start: float = 1000.0) -> None:
        self.now = start
        self.sleeps: list[float] = []

    def monotonic(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += max(0.0, seconds)
        await asyncio.sleep(0)

    def spend(self, seconds: float) -> None:
        self.now += seconds
