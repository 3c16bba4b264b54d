"""The built-in agent: LLM call → tools → LLM call …, as spec 000's graph, without a graph.

One run answers one user message. It streams the model's text and tool calls as they
come, runs the calls of one message through the
:class:`~copilot_core._toolgate.ToolGate` (concurrently unless one needs another;
the gate applies the mode's policy, limits and abort), appends their results in call
order, and repeats until the model answers without tools, the step budget is spent,
the user aborts, or something fails. Every finished step is yielded as a
:class:`StepCompleted` record that the turn runner validates and persists; when the
user aborts, the run saves its partial answer and simply stops (the runner sends
``abort`` and ``done``).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import AsyncGenerator, Callable, Sequence
from contextlib import aclosing
from dataclasses import replace
from typing import Any

from copilot_core._abort import AbortToken
from copilot_core._accumulator import StoppedCall, ToolCallAccumulator
from copilot_core._agent_settings import AgentSettings
from copilot_core._compact import compact_tools
from copilot_core._conversation import Conversation
from copilot_core._deltas import TextDelta
from copilot_core._guards import TurnGuard
from copilot_core._messages import FunctionCall, Message, Role, ToolCall
from copilot_core._prompts import TITLE_INSTRUCTION, PromptBook, clean_title, fallback_title
from copilot_core._replay import replayable, stored_arguments, unrun
from copilot_core._steps import (
    Reply,
    absorb,
    guarded,
    stopped_call,
    text_id,
    timed_out,
    titled,
    with_lab,
)
from copilot_core._streams import (
    Aborted,
    StreamTimeout,
    abortable,
    abortable_batches,
    race_abort,
)
from copilot_core._textcalls import ToolOutputs
from copilot_core._textreply import calls_in_text
from copilot_core._tokens import ApproximateTokenCounter, CachedTokenCounter
from copilot_core._toolgate import ToolGate, TurnDecisions
from copilot_core._tools import (
    ParsedToolCall,
    ToolContext,
    ToolResult,
    ToolSpec,
    ToolStatus,
    render_tool_output,
)
from copilot_core._unseen import Seen, ask_to_run, claim_dicts, unverified_note
from copilot_core.errors import (
    CopilotError,
    LLMError,
    LLMNotConfiguredError,
    error_code,
)
from copilot_core.events import (
    AgentEvent,
    ContentEvent,
    ErrorEvent,
    LLMCallCompleted,
    StatusEvent,
    StepCompleted,
    TitleGenerated,
    ToolEndEvent,
    ToolStartEvent,
)
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

__all__ = ["AgentSettings", "BuiltinAgent"]

log = logging.getLogger(__name__)


class BuiltinAgent:
    """The in-process copilot agent (an :class:`~copilot_core.ports.AgentBackend`)."""

    agent_id = "copilot"

    def __init__(
        self,
        tools: ToolGate | ToolExecutor,
        topology: TopologySource | None,
        *,
        clock: Clock,
        ids: IdFactory,
        token_counter: TokenCounter | None = None,
        prompts: PromptBook | None = None,
        settings: AgentSettings | None = None,
    ) -> None:
        self._settings = settings or AgentSettings()
        #: Where the agent's tool calls go (an executor is wrapped in a gate of its own).
        self.tools = tools if isinstance(tools, ToolGate) else self._settings.gate(tools)
        self._topology = topology
        self._clock = clock
        self._ids = ids
        self._counter = CachedTokenCounter(token_counter or ApproximateTokenCounter())
        self.prompts = prompts or PromptBook()

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
    ) -> AsyncGenerator[AgentEvent, None]:
        selection = config.model
        if selection is None:
            raise LLMNotConfiguredError()
        ctx = config.context
        abort = ctx.abort
        guard = TurnGuard()
        decided = TurnDecisions()  # the user decides once per distinct call in a turn
        used_ids: set[str] = set()  # tool-call ids of this turn: each call has its own
        every_spec = self.tools.specs(ctx.mode)
        by_name = {spec.name: spec for spec in every_spec}
        specs = (
            compact_tools(every_spec, query)
            if (selection.tool_set or self._settings.tool_set) == "compact"
            else list(every_spec)
        )
        read_text_calls = (
            selection.text_tool_calls
            if selection.text_tool_calls is not None
            else self._settings.text_tool_calls
        )
        conversation = Conversation.restore(replayable(history), counter=self._counter)
        # What every tool returned in this conversation: a call read from the model's
        # text that is there is quoted, not made (see ``calls_in_text``).
        outputs = ToolOutputs([m.content for m in history if m.role is Role.TOOL])
        told = False  # the model was told, in this turn, that a call it quoted was not run
        seen = Seen(history)  # what the tools showed: an answer stating more is unverified
        asked = False  # the model was asked, in this turn, to run a tool for output it stated
        # The question as the runner saved it: one message, one id (stored and read).
        conversation.append(
            config.question or Message.user(self._ids.new_id(), query, self._clock.now())
        )
        budget = self._message_budget(selection, specs)
        if selection.options.max_tokens is None and self._settings.max_tokens is not None:
            # (The context keeps output_reserve_tokens free, as without the bound.)
            selection = replace(
                selection, options=replace(selection.options, max_tokens=self._settings.max_tokens)
            )
        timeouts = selection.timeouts or self._settings.model_timeouts
        topology, problem = await self._read_topology(ctx)
        calls_made = 0
        answered = False

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

            # The system prompt (and the tools) first and the same in every call, so a
            # provider's prompt cache keeps them; the lab's state, which changes, goes
            # with the user's latest message. It names only the tools offered (issue 40).
            instructions = self.prompts.system(ctx.mode, specs)
            system = Message.system(text_id("system", instructions), instructions)
            lab = self.prompts.lab(topology, problem, specs)
            lab_cost = self._counter.count((Message.system(text_id("lab", lab), lab),))
            prompt = with_lab(conversation.prompt(system, budget - lab_cost), lab)
            # The model's reply, streamed. Inline rather than in a helper generator: each
            # token would otherwise pass through one more generator on its way out.
            reply = Reply()
            quoted: dict[str, ToolResult] = {}  # calls read from text, found in tool output
            from_text = False  # the reply's calls were read from its text
            accumulator = ToolCallAccumulator(
                self._ids.new_id,
                limits=self._settings.argument_limits,
                coalescing=self._settings.tool_call_coalescing,
                taken=used_ids,
                max_calls=self._settings.max_calls_per_reply,
            )
            started = time.monotonic()
            batches = abortable_batches(
                selection.model.stream(prompt, specs, selection.options),
                abort,
                self._settings.stream_buffer,
                first_timeout=timeouts.first_token,
                idle_timeout=timeouts.between_tokens,
                tick=self._settings.waiting_interval,
            )
            try:
                async with aclosing(batches):
                    async for batch in batches:
                        if not batch:  # the model has not answered yet
                            yield self._waiting(
                                prompt, lab_cost, specs, started, selection.server_note
                            )
                            continue
                        for delta in batch:
                            if abort.is_aborted():
                                break  # (nothing the user did not see goes in the reply)
                            if isinstance(delta, TextDelta):
                                if delta.text:
                                    reply.text.append(delta.text)
                                    yield ContentEvent(delta.text)
                            else:
                                for fragment in absorb(delta, reply, accumulator):
                                    yield fragment
                                if accumulator.halted:
                                    break  # a runaway call, or more calls than run: stop now
                        if accumulator.halted:
                            break
            except CopilotError as exc:
                reply.error = exc
            except StreamTimeout as exc:
                reply.error = timed_out(exc)
            if reply.error is None and not abort.is_aborted():
                # (A half-written call cut by an abort is dropped: never complete, never run.)
                for complete in accumulator.finish(reply.finish_reason):
                    yield titled(complete, by_name, reply.titles)
                reply.calls = accumulator.calls() if accumulator.has_calls else []
                if accumulator.stopped is not None:
                    reply.calls = [stopped_call(call, accumulator.stopped) for call in reply.calls]
                elif not reply.calls and read_text_calls and reply.content:
                    for event in calls_in_text(
                        reply,
                        by_name,
                        used_ids,
                        outputs,
                        quoted,
                        told,
                        self._settings.argument_limits,
                        self._ids.new_id,
                    ):
                        yield event
                    from_text = bool(reply.calls)
                    told = told or bool(quoted)
                used_ids.update(call.id for call in reply.calls)
            calls_made += 1
            yield LLMCallCompleted(
                reply.input_tokens, reply.output_tokens, time.monotonic() - started
            )

            if reply.error is not None or abort.is_aborted():
                if reply.content:
                    flag = {"aborted": True} if reply.error is None else {"error": True}
                    yield StepCompleted((self._assistant(reply.content, metadata=flag),))
                if reply.error is not None:
                    yield ErrorEvent(reply.error.message, error_code(reply.error))
                return  # aborted: the turn runner sends ``abort`` and ``done``

            assistant = self._assistant(reply.content, calls=reply.calls)
            if not reply.calls:
                # Device output no tool produced: the model is asked once to run the tool
                # (its text stays on the page, not as the answer); then it is marked.
                unseen = seen.unseen(reply.content, topology)
                if unseen:
                    yield StatusEvent(
                        "unseen_output" if not asked else "unverified",
                        unverified_note(unseen, asked=not asked),
                        {"claims": claim_dicts(unseen)},
                    )
                if unseen and not asked:
                    asked = True
                    nudge = Message.user(self._ids.new_id(), ask_to_run(unseen), self._clock.now())
                    conversation.extend((assistant, nudge))
                    continue
                if unseen:
                    marked = {"unverified": {"claims": claim_dicts(unseen)}}
                    assistant = self._assistant(reply.content, metadata=marked)
                yield StepCompleted((assistant,))
                answered = True
                break

            ends: dict[str, ToolEndEvent] = {}
            answered_here = (  # (calls past the bound, or cut off, are answered, not run)
                unrun(reply.calls, reply.finish_reason, self._settings.max_calls_per_reply)
                | quoted
                | guarded(reply.calls, accumulator.stopped, guard)
            )
            for call in reply.calls:
                if call.id in answered_here:
                    yield ToolStartEvent(call.name, call.id)
                    result = answered_here[call.id]
                    ends[call.id] = ToolEndEvent(
                        call.name, call.id, result.output, result.status.value, 0.0, result.metadata
                    )
                    yield ends[call.id]
            to_run = [call for call in reply.calls if call.id not in answered_here]
            if to_run:
                tools = self.tools.run(to_run, ctx, from_text=from_text, decided=decided)
                async with aclosing(tools) as events:
                    async for event in events:
                        if isinstance(event, ToolEndEvent):
                            ends[event.tool_call_id] = event
                        yield event
            for call in to_run:
                if ends[call.id].status == ToolStatus.SUCCESS.value:
                    guard.succeeded(call)
            step = (
                assistant,
                *(
                    Message.tool(
                        self._ids.new_id(),
                        call.id,
                        call.name,
                        render_tool_output(ends[call.id].output),
                        self._clock.now(),
                        **(ends[call.id].metadata or {}),
                        **({"title": reply.titles[call.id]} if call.id in reply.titles else {}),
                    )
                    for call in reply.calls
                ),
            )
            yield StepCompleted(step)
            conversation.extend(step)
            seen.add(step)
            for message in step[1:]:
                outputs.add(message.content)
            if accumulator.stopped is not None:
                guard.runaways += 1
            struck = self._struck(guard, accumulator.stopped)
            if struck is not None:
                yield StatusEvent(
                    "guard_limit", struck, {"repeats": guard.repeats, "runaways": guard.runaways}
                )
                yield ContentEvent(struck)
                final = self._assistant(struck, metadata={"guard_limit": True})
                yield StepCompleted((final,))
                conversation.append(final)
                answered = True
                break
            if any(
                by_name[call.name].mutates_topology and ends[call.id].status == "success"
                for call in reply.calls
                if call.name in by_name
            ):
                topology, problem = await self._read_topology(ctx)

        if answered and config.generate_title and not abort.is_aborted():
            yield TitleGenerated(
                await self._title(selection, query, conversation.last.content, abort)
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
            async with aclosing(
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
    def _waiting(
        self,
        prompt: list[Message],
        lab_cost: int,
        specs: Sequence[ToolSpec],
        started: float,
        server_note: Callable[[], str | None] | None = None,
    ) -> StatusEvent:
        """The note that the model is still reading its prompt (its size, an estimate),
        and what the adapter knows of its server (``server_note``: e.g. still busy with
        a request given up on). (The user's message is counted as stored, without the
        lab's state: the counts are cached by message id; ``lab_cost`` is the lab's.)"""
        tools = json.dumps([spec.to_openai() for spec in specs], ensure_ascii=False)
        tokens = (
            self._counter.count(prompt)
            + lab_cost
            + self._counter.count((Message.system(text_id("tools", tools), tools),))
        )
        waited = time.monotonic() - started
        message = f"waiting for the model: {tokens} prompt tokens ({waited:.0f} s)"
        extra: dict[str, Any] = {"prompt_tokens": tokens, "waited": round(waited, 1)}
        note = server_note() if server_note is not None else None
        if note:
            message += f"; {note}"
            extra["server_note"] = note
        return StatusEvent("waiting_for_model", message, extra)

    def _struck(self, guard: TurnGuard, stopped: StoppedCall | None) -> str | None:
        """The closing answer when the model has looped too often in this turn."""
        if guard.runaways >= self._settings.strikes and stopped is not None:
            return (
                f"I stopped this turn: I wrote the call of {stopped.name} too long again "
                f"({stopped.reason}). Nothing was run for it. Ask again with a smaller "
                "request (fewer devices or commands)."
            )
        if guard.repeats >= self._settings.strikes:
            return (
                "I stopped this turn: I kept asking for a call that had already succeeded "
                "with the same arguments, and it was not run again. What was done is "
                "above; tell me what to do next."
            )
        return None

    def _assistant(
        self,
        content: str,
        *,
        calls: list[ParsedToolCall] | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> Message:
        tool_calls = tuple(
            ToolCall(id=c.id, function=FunctionCall(name=c.name, arguments=stored_arguments(c)))
            for c in calls or ()
        )
        return Message.assistant(
            self._ids.new_id(), content, self._clock.now(), tool_calls or None, **(metadata or {})
        )

    def _message_budget(self, selection: ModelSelection, specs: list[ToolSpec]) -> int:
        reserve = selection.options.max_tokens or self._settings.output_reserve_tokens
        tool_chars = sum(len(spec.description) + len(str(spec.parameters)) for spec in specs)
        return max(selection.context_limit - reserve - tool_chars // 4, 1)
