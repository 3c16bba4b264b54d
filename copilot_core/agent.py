"""The built-in agent: LLM call → tools → LLM call …, as spec 000's graph, without a graph.

One run answers one user message. It streams the model's text and tool calls as
they come, runs the calls of one message concurrently (only the tools the mode
allows), appends their results in call order, and repeats until the model
answers without tools, the step budget is spent, the user aborts, or something
fails. Every finished step is yielded as a :class:`StepCompleted` record so that
the chat service persists it; the conversation is valid after every record.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from copilot_core.abort import AbortToken
from copilot_core.accumulator import ToolCallAccumulator
from copilot_core.context import (
    ApproximateTokenCounter,
    CachedTokenCounter,
    ConversationUnits,
    drop_orphan_tool_messages,
)
from copilot_core.deltas import FinishDelta, TextDelta, ToolCallDelta, UsageDelta
from copilot_core.errors import CopilotError, LLMError, LLMNotConfiguredError
from copilot_core.events import (
    AbortEvent,
    AgentEvent,
    ContentEvent,
    ErrorEvent,
    LLMCallCompleted,
    StatusEvent,
    StepCompleted,
    TitleGenerated,
    ToolCallEvent,
    ToolEndEvent,
    ToolProgressEvent,
    ToolStartEvent,
)
from copilot_core.messages import FunctionCall, Message, ToolCall
from copilot_core.ports import (
    AgentCapabilities,
    AgentInfo,
    AgentRunConfig,
    CallOptions,
    Clock,
    IdFactory,
    ModelSelection,
    TokenCounter,
    ToolExecutor,
    TopologySource,
)
from copilot_core.prompts import TITLE_INSTRUCTION, PromptBook, clean_title, fallback_title
from copilot_core.streams import Aborted, abortable, closing, race_abort
from copilot_core.tools import (
    ParsedToolCall,
    ToolContext,
    ToolProgress,
    ToolResult,
    ToolSpec,
    ToolStatus,
    render_tool_output,
)

__all__ = ["AgentSettings", "BuiltinAgent", "error_code"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class AgentSettings:
    """Limits of one run; every wait is bounded."""

    max_llm_calls: int = 20
    tool_timeout: float = 300.0
    topology_timeout: float = 15.0
    title_timeout: float = 20.0
    output_reserve_tokens: int = 2048
    stream_buffer: int = 256
    #: Progress of running tools reaches clients at most this often per call (seconds).
    progress_interval: float = 0.25


@dataclass(slots=True)
class _Reply:
    """What one LLM call produced."""

    text: list[str] = field(default_factory=list)
    calls: list[ParsedToolCall] = field(default_factory=list)
    input_tokens: int = 0
    output_tokens: int = 0
    finish_reason: str | None = None
    error: CopilotError | None = None

    @property
    def content(self) -> str:
        return "".join(self.text)


class BuiltinAgent:
    """The in-process copilot agent (an :class:`~copilot_core.ports.AgentBackend`)."""

    agent_id = "copilot"

    def __init__(
        self,
        tools: ToolExecutor,
        topology: TopologySource | None,
        *,
        clock: Clock,
        ids: IdFactory,
        token_counter: TokenCounter | None = None,
        prompts: PromptBook | None = None,
        settings: AgentSettings | None = None,
    ) -> None:
        self._tools = tools
        self._topology = topology
        self._clock = clock
        self._ids = ids
        self._counter = CachedTokenCounter(token_counter or ApproximateTokenCounter())
        self.prompts = prompts or PromptBook()
        self._settings = settings or AgentSettings()
        self._orphans: set[asyncio.Task[Any]] = set()

    # -------------------------------------------------------------- AgentBackend
    def capabilities(self) -> AgentCapabilities:
        return AgentCapabilities(backend="python", streaming=True, uses_llm_settings=True)

    def agents(self) -> Sequence[AgentInfo]:
        return (
            AgentInfo(
                id=self.agent_id,
                name="GNS3 Copilot",
                description="Reads, builds and diagnoses the GNS3 lab with its tools.",
            ),
        )

    async def run(
        self, query: str, history: Sequence[Message], config: AgentRunConfig
    ) -> AsyncIterator[AgentEvent]:
        selection = config.model
        if selection is None:
            raise LLMNotConfiguredError()
        ctx = config.context
        abort = ctx.abort
        specs = list(self._tools.specs(ctx.mode))
        allowed = {spec.name: spec for spec in specs}
        conversation = ConversationUnits(drop_orphan_tool_messages(history), self._counter)
        conversation.extend((Message.user(self._ids.new_id(), query, self._clock.now()),))
        budget = self._message_budget(selection, specs)
        topology, problem = await self._read_topology(ctx)
        calls_made = 0
        answered = False
        abort_sent = False

        while not abort.is_aborted():
            if calls_made >= self._settings.max_llm_calls:
                note = (
                    f"I stopped after {calls_made} model calls, the limit for one turn. "
                    "Ask me to continue if you want me to go on."
                )
                yield StatusEvent("step_limit", note, {"llm_calls": calls_made})
                yield ContentEvent(note)
                yield StepCompleted((self._assistant(note, metadata={"step_limit": True}),))
                return

            system = Message.system("system", self.prompts.render(ctx.mode, topology, problem))
            prompt = conversation.prompt(system, budget)
            # The model's reply, streamed. Inline rather than in a helper generator: each
            # token would otherwise pass through one more generator on its way out.
            reply = _Reply()
            accumulator = ToolCallAccumulator(self._ids.new_id)
            deltas = abortable(
                selection.model.stream(prompt, specs, selection.options),
                abort,
                self._settings.stream_buffer,
            )
            try:
                async with closing(deltas):
                    async for delta in deltas:
                        if isinstance(delta, TextDelta):
                            if delta.text:
                                reply.text.append(delta.text)
                                yield ContentEvent(delta.text)
                        else:
                            for fragment in _absorb(delta, reply, accumulator):
                                yield fragment
            except CopilotError as exc:
                reply.error = exc
            if reply.error is None and not abort.is_aborted():
                # (A half-written call cut by an abort is dropped: never complete, never run.)
                for complete in accumulator.finish(reply.finish_reason):
                    yield complete
                reply.calls = accumulator.calls() if accumulator.has_calls else []
            calls_made += 1
            yield LLMCallCompleted(reply.input_tokens, reply.output_tokens)

            if reply.error is not None or abort.is_aborted():
                if reply.error is None:
                    # Tell the client at once; saving the partial answer comes after
                    # (``done`` still follows the save).
                    yield AbortEvent()
                    abort_sent = True
                if reply.content:
                    flag = {"aborted": True} if reply.error is None else {"error": True}
                    yield StepCompleted((self._assistant(reply.content, metadata=flag),))
                if reply.error is not None:
                    yield ErrorEvent(reply.error.message, error_code(reply.error))
                    return
                break

            assistant = self._assistant(reply.content, calls=reply.calls)
            if not reply.calls:
                yield StepCompleted((assistant,))
                answered = True
                break

            results: dict[str, ToolResult] = {}
            async with closing(self._run_tools(reply.calls, allowed, ctx, results)) as events:
                async for event in events:
                    yield event
            tool_messages = [
                Message.tool(
                    self._ids.new_id(),
                    call.id,
                    call.name,
                    render_tool_output(results[call.id].output),
                    self._clock.now(),
                )
                for call in reply.calls
            ]
            if abort.is_aborted():
                yield AbortEvent()  # before the save, as above
                abort_sent = True
            yield StepCompleted((assistant, *tool_messages))
            conversation.extend((assistant, *tool_messages))
            if any(
                allowed[call.name].mutates_topology
                and results[call.id].status is ToolStatus.SUCCESS
                for call in reply.calls
                if call.name in allowed
            ):
                topology, problem = await self._read_topology(ctx)

        if abort.is_aborted():
            if not abort_sent:
                yield AbortEvent()
            return
        if answered and config.generate_title:
            yield TitleGenerated(
                await self._title(selection, query, conversation.last.content, abort)
            )

    # --------------------------------------------------------------------- tools
    async def _run_tools(
        self,
        calls: list[ParsedToolCall],
        allowed: dict[str, ToolSpec],
        ctx: ToolContext,
        results: dict[str, ToolResult],
    ) -> AsyncGenerator[AgentEvent, None]:
        progress = _ProgressRelay(self._settings.progress_interval)
        running: dict[asyncio.Task[ToolResult], ParsedToolCall] = {}
        for call in calls:
            yield ToolStartEvent(call.name, call.id)
            refusal = self._refusal(call, allowed, ctx)
            if refusal is not None:
                results[call.id] = refusal
                yield _tool_end(call, refusal)
            else:
                call_ctx = replace(ctx, progress=progress.reporter(call))
                running[asyncio.create_task(self._execute(call, call_ctx))] = call
        if not running:
            return

        abort_wait: asyncio.Future[Any] = asyncio.ensure_future(ctx.abort.wait())
        pending: set[asyncio.Task[ToolResult]] = set(running)
        order = {call.id: n for n, call in enumerate(calls)}
        try:
            while pending:
                await asyncio.wait(
                    {*pending, abort_wait, progress.ready()}, return_when=asyncio.FIRST_COMPLETED
                )
                for event in progress.drain():
                    yield event
                done = sorted((t for t in pending if t.done()), key=lambda t: order[running[t].id])
                pending.difference_update(done)
                for task in done:
                    call = running[task]
                    results[call.id] = task.result()
                    for event in progress.drain(call.id):
                        yield event
                    yield _tool_end(call, results[call.id])
                if ctx.abort.is_aborted():
                    for task in sorted(pending, key=lambda t: order[running[t].id]):
                        task.cancel()
                        # Cancelled, not awaited: it closes its connections on its own time.
                        self._orphans.add(task)
                        task.add_done_callback(self._orphans.discard)
                        call = running[task]
                        results[call.id] = ToolResult.aborted()
                        yield _tool_end(call, results[call.id])
                    return
        finally:
            progress.close()
            abort_wait.cancel()
            for task in pending:
                if not task.done():
                    task.cancel()

    def _refusal(
        self, call: ParsedToolCall, allowed: dict[str, ToolSpec], ctx: ToolContext
    ) -> ToolResult | None:
        if call.name not in allowed:
            names = ", ".join(sorted(allowed)) or "none"
            return ToolResult.error(
                f"Tool {call.name!r} is not available in {ctx.mode.value} mode; "
                f"available tools: {names}."
            )
        if not call.is_valid:
            return ToolResult.error(
                f"The call of {call.name!r} was malformed ({call.error}); it was not run. "
                "Call it again with a JSON object as arguments.",
                arguments=call.raw_arguments[:2000],
            )
        return None

    async def _execute(self, call: ParsedToolCall, ctx: ToolContext) -> ToolResult:
        try:
            async with asyncio.timeout(self._settings.tool_timeout):
                return await self._tools.execute(call, ctx)
        except TimeoutError:
            return ToolResult.error(
                f"{call.name} did not finish within {self._settings.tool_timeout:g} s."
            )
        except CopilotError as exc:
            return ToolResult.error(exc.message)
        except Exception:
            log.exception("tool %s failed", call.name)
            return ToolResult.error(
                f"{call.name} failed with an internal error; see the server log."
            )

    # ---------------------------------------------------------------- side calls
    async def _read_topology(self, ctx: ToolContext) -> tuple[dict[str, Any] | None, str | None]:
        if self._topology is None:
            return None, "no topology source"
        try:
            topology = await race_abort(
                self._topology.read(ctx), ctx.abort, self._settings.topology_timeout
            )
        except Aborted:
            return None, "aborted"
        except TimeoutError:
            return None, f"GNS3 did not answer within {self._settings.topology_timeout:g} s"
        except CopilotError as exc:
            return None, exc.message
        return topology, None

    async def _title(
        self, selection: ModelSelection, query: str, answer: str, abort: AbortToken
    ) -> str:
        """A short title from a separate call; never streamed, never counted."""
        model = selection.title_model or selection.model
        prompt = [
            Message.system("title-system", TITLE_INSTRUCTION),
            Message.user(
                "title-user", f"User: {query[:1000]}\nAssistant: {answer[:1000]}", self._clock.now()
            ),
        ]

        async def collect() -> str:
            parts: list[str] = []
            async with closing(
                abortable(model.stream(prompt, (), CallOptions(max_tokens=32)), abort)
            ) as deltas:
                async for delta in deltas:
                    if isinstance(delta, TextDelta):
                        parts.append(delta.text)
            return "".join(parts)

        started = time.monotonic()
        try:
            title = clean_title(await race_abort(collect(), abort, self._settings.title_timeout))
        except (Aborted, TimeoutError, LLMError) as exc:
            log.info("title generation failed after %.1fs: %s", time.monotonic() - started, exc)
            title = ""
        return title or fallback_title(query)

    # ------------------------------------------------------------------- helpers
    def _assistant(
        self,
        content: str,
        *,
        calls: list[ParsedToolCall] | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> Message:
        tool_calls = tuple(
            ToolCall(id=c.id, function=FunctionCall(name=c.name, arguments=c.raw_arguments))
            for c in calls or ()
        )
        return Message.assistant(
            self._ids.new_id(), content, self._clock.now(), tool_calls or None, **(metadata or {})
        )

    def _message_budget(self, selection: ModelSelection, specs: list[ToolSpec]) -> int:
        reserve = selection.options.max_tokens or self._settings.output_reserve_tokens
        tool_chars = sum(len(spec.description) + len(str(spec.parameters)) for spec in specs)
        return max(selection.context_limit - reserve - tool_chars // 4, 1)


def _absorb(
    delta: ToolCallDelta | UsageDelta | FinishDelta, reply: _Reply, accumulator: ToolCallAccumulator
) -> list[ToolCallEvent]:
    """Take in a non-text delta of the model's reply; the events it causes."""
    if isinstance(delta, ToolCallDelta):
        return accumulator.add(delta)
    if isinstance(delta, UsageDelta):
        reply.input_tokens += delta.input_tokens
        reply.output_tokens += delta.output_tokens
    else:
        reply.finish_reason = delta.reason
    return []


class _ProgressRelay:
    """Collects what running tools report and hands it out coalesced: per call and
    device, at most one ``tool_progress`` event every ``interval`` seconds."""

    def __init__(self, interval: float) -> None:
        self._interval = interval
        self._loop = asyncio.get_running_loop()
        self._buffer: dict[tuple[str, str | None], list[str]] = {}
        self._names: dict[str, str] = {}
        self._wake: asyncio.Future[None] = self._loop.create_future()
        self._timer: asyncio.TimerHandle | None = None
        self._last = 0.0
        self._closed = False

    def reporter(self, call: ParsedToolCall) -> Callable[[ToolProgress], None]:
        self._names[call.id] = call.name

        def report(progress: ToolProgress) -> None:
            if self._closed or not progress.text:
                return
            self._buffer.setdefault((call.id, progress.device), []).append(progress.text)
            if self._timer is None and not self._wake.done():
                delay = max(0.0, self._last + self._interval - self._loop.time())
                self._timer = self._loop.call_later(delay, self._ring)

        return report

    def _ring(self) -> None:
        self._timer = None
        if not self._wake.done():
            self._wake.set_result(None)

    def ready(self) -> asyncio.Future[None]:
        """Completes when buffered progress is due."""
        return self._wake

    def drain(self, call_id: str | None = None) -> list[ToolProgressEvent]:
        """The due events (all calls), or everything buffered for ``call_id``."""
        if call_id is None:
            if not self._wake.done():
                return []
            self._wake = self._loop.create_future()
            self._last = self._loop.time()
            keys = list(self._buffer)
        else:
            keys = [key for key in self._buffer if key[0] == call_id]
        events = []
        for key in keys:
            text = "".join(self._buffer.pop(key))
            events.append(ToolProgressEvent(self._names[key[0]], key[0], text, key[1]))
        return events

    def close(self) -> None:
        self._closed = True
        if self._timer is not None:
            self._timer.cancel()
        self._buffer.clear()


def _tool_end(call: ParsedToolCall, result: ToolResult) -> ToolEndEvent:
    return ToolEndEvent(call.name, call.id, render_tool_output(result.output), result.status.value)


def error_code(error: CopilotError) -> str:
    """A stable machine-readable name: ``LLMRateLimitedError`` gives ``llm_rate_limited``."""
    name = type(error).__name__.removesuffix("Error")
    return _WORD_BOUNDARY.sub("_", name).lower()


_WORD_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
