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

The run is in layers, each one concern, as httpx's ``send`` →
``_send_handling_auth`` → … → ``_send_single_request``: :meth:`BuiltinAgent.run` keeps
the budget of model calls, the endings and the title, and loops over
:meth:`~BuiltinAgent._step`, which streams one reply
(:class:`~copilot_core._reply_stream.ReplyStream`: the stream, the accumulator, a
runaway argument, calls written in text) and then either takes it as the answer
(:meth:`~BuiltinAgent._answered`: device output no tool showed is asked for once) or
runs its tools (:class:`~copilot_core._tool_step.ToolStep`: the repeat guard, the gate
and the turn's decisions), ending the turn when the model loops
(:func:`~copilot_core._tool_step.struck`) and reading the lab again when a call changed
it (:class:`~copilot_core._agent_turn.LabView`). What lasts the turn is one
:class:`~copilot_core._agent_turn.AgentTurn`.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import AsyncGenerator, Iterator, Sequence
from contextlib import aclosing
from dataclasses import replace
from typing import Any

from copilot_core._abort import AbortToken
from copilot_core._agent_settings import AgentSettings
from copilot_core._agent_turn import AgentTurn, LabView, open_turn
from copilot_core._announced import ask_to_call, named_tools
from copilot_core._deltas import TextDelta
from copilot_core._messages import FunctionCall, Message, ToolCall
from copilot_core._prompts import TITLE_INSTRUCTION, PromptBook, clean_title, fallback_title
from copilot_core._replay import stored_arguments
from copilot_core._reply_stream import ReplyStream, waiting_note
from copilot_core._steps import Reply, text_id, with_lab
from copilot_core._streams import Aborted, abortable, race_abort
from copilot_core._tokens import ApproximateTokenCounter, CachedTokenCounter
from copilot_core._tool_step import ToolStep, struck
from copilot_core._toolgate import ToolGate
from copilot_core._tools import ParsedToolCall, ToolSpec
from copilot_core._unseen import ask_to_run, claim_dicts, unverified_note
from copilot_core.errors import LLMError, LLMNotConfiguredError, error_code
from copilot_core.events import (
    AgentEvent,
    ContentEvent,
    ErrorEvent,
    LLMCallCompleted,
    StatusEvent,
    TitleGenerated,
    ToolEndEvent,
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
        self._tool_step = ToolStep(self.tools, ids=ids, clock=clock, settings=self._settings)

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
        """The turn: its budget of model calls, one step after another until the answer
        (or an error, an abort, a limit), then the title."""
        selection = config.model
        if selection is None:
            raise LLMNotConfiguredError()
        turn = await self._open(query, history, config, selection)
        while turn.going_on:
            if turn.llm_calls >= self._settings.max_llm_calls:
                note = (
                    f"I stopped after {turn.llm_calls} model calls, the limit for one turn. "
                    "Ask me to continue if you want me to go on."
                )
                for event in self._ending(turn, "step_limit", note, {"llm_calls": turn.llm_calls}):
                    yield event
                return
            async with aclosing(self._step(turn)) as events:
                async for event in events:
                    yield event
        if turn.answer is not None and config.generate_title and not turn.abort.is_aborted():
            title = await self._title(turn.selection, query, turn.answer.content, turn.abort)
            yield TitleGenerated(title)

    async def _open(
        self,
        query: str,
        history: Sequence[Message],
        config: AgentRunConfig,
        selection: ModelSelection,
    ) -> AgentTurn:
        """The run's state, with the lab read; the model's output bound when the user's
        settings do not bound it (the context keeps ``output_reserve_tokens`` free, as
        without the bound)."""
        turn = open_turn(
            query,
            history,
            config,
            selection=selection,
            every_spec=self.tools.specs(config.context.mode),
            tool_set=self._settings.tool_set,
            text_calls=self._settings.text_tool_calls,
            counter=self._counter,
            lab=LabView(self._topology, self._settings.topology_timeout),
            question=lambda: Message.user(self._ids.new_id(), query, self._clock.now()),
        )
        turn.budget = self._message_budget(selection, turn.specs)
        if selection.options.max_tokens is None and self._settings.max_tokens is not None:
            options = replace(selection.options, max_tokens=self._settings.max_tokens)
            turn.selection = replace(selection, options=options)
        await turn.lab.read(turn.context)
        return turn

    async def _step(self, turn: AgentTurn) -> AsyncGenerator[AgentEvent, None]:
        """One step: a model call streamed, then its answer, or its tools run (the lab
        read again when they changed it)."""
        prompt, lab_cost = self._prompt(turn)
        stream = ReplyStream(turn, self._settings, self._ids.new_id)
        waiting = functools.partial(
            waiting_note,
            self._counter,
            prompt,
            lab_cost,
            turn.specs,
            server_note=turn.selection.server_note,
        )
        async with aclosing(stream.events(prompt, waiting)) as events:
            async for event in events:
                yield event
        for event in stream.finish():
            yield event
        reply = stream.reply
        turn.llm_calls += 1
        yield LLMCallCompleted(
            reply.input_tokens, reply.output_tokens, time.monotonic() - stream.started
        )
        if reply.error is not None or turn.abort.is_aborted():
            for event in self._cut_short(turn, reply):
                yield event
            return
        assistant = self._assistant(reply.content, calls=reply.calls)
        if not reply.calls:
            for event in self._answered(turn, assistant):
                yield event
            return
        ends: dict[str, ToolEndEvent] = {}
        async with aclosing(self._tool_step.run(turn, stream, assistant, ends)) as events:
            async for event in events:
                yield event
        guard = turn.guard
        note = struck(guard, stream.stopped, self._settings.strikes)
        if note is not None:
            extra = {"repeats": guard.repeats, "runaways": guard.runaways}
            for event in self._ending(turn, "guard_limit", note, extra, answer=True):
                yield event
            return
        await turn.lab.refresh(turn.context, ends, turn.tools)

    # ------------------------------------------------------------ step's parts
    def _prompt(self, turn: AgentTurn) -> tuple[list[Message], int]:
        """A model call's prompt, and what the lab's state in it costs. The system prompt
        (and the tools) first and the same in every call, so a provider's prompt cache
        keeps them; the lab's state, which changes, goes with the user's latest message.
        It names only the tools offered (issue 40)."""
        instructions = self.prompts.system(turn.context.mode, turn.specs)
        system = Message.system(text_id("system", instructions), instructions)
        lab = self.prompts.lab(turn.lab.topology, turn.lab.problem, turn.specs)
        lab_cost = self._counter.count((Message.system(text_id("lab", lab), lab),))
        prompt = turn.conversation.prompt(system, turn.budget - lab_cost)
        return with_lab(prompt, lab), lab_cost

    def _answered(self, turn: AgentTurn, assistant: Message) -> Iterator[AgentEvent]:
        """A reply without calls: the answer, unless it names a tool to use in a turn
        that made no call, or states device output no tool produced: then the model is
        told once (the tool is its to call; run the tool), and its text stays on the
        page, not as the answer; an answer that still states such output is marked
        unverified."""
        named = [] if turn.prompted or turn.used_ids else named_tools(assistant.content, turn.specs)
        if named:
            turn.prompted = True
            yield StatusEvent(
                "named_tool",
                f"the reply names {', '.join(named)} but made no call; the model was "
                "told to make the call itself",
                {"tools": named},
            )
            # Told, not stored; the reply is not sent back (a small model copies it).
            note = ask_to_call(named)
            turn.conversation.extend((Message.user(self._ids.new_id(), note, self._clock.now()),))
            return
        unseen = turn.seen.unseen(assistant.content, turn.lab.topology)
        if unseen:
            yield StatusEvent(
                "unseen_output" if not turn.asked else "unverified",
                unverified_note(unseen, asked=not turn.asked),
                {"claims": claim_dicts(unseen)},
            )
            if not turn.asked:
                turn.asked = True
                note = ask_to_run(unseen, turn.specs, turn.lab.topology, turn.query)
                # Told, not stored; the invented reply is not sent back: a small model
                # copies it (the note quotes its claims).
                turn.conversation.extend(
                    (Message.user(self._ids.new_id(), note, self._clock.now()),)
                )
                return
            marked = {"unverified": {"claims": claim_dicts(unseen)}}
            assistant = self._assistant(assistant.content, metadata=marked)
        turn.answer = assistant
        yield turn.completed((assistant,))

    def _cut_short(self, turn: AgentTurn, reply: Reply) -> Iterator[AgentEvent]:
        """The end of a reply that failed or was aborted: its text kept (flagged), the
        error said. (Aborted: the turn runner sends ``abort`` and ``done``.)"""
        turn.ended = True
        if reply.content:
            flag = {"aborted": True} if reply.error is None else {"error": True}
            yield turn.completed((self._assistant(reply.content, metadata=flag),))
        if reply.error is not None:
            yield ErrorEvent(reply.error.message, error_code(reply.error))

    def _ending(
        self,
        turn: AgentTurn,
        code: str,
        note: str,
        extra: dict[str, Any],
        *,
        answer: bool = False,
    ) -> Iterator[AgentEvent]:
        """The end of a turn at a limit: a status, the note as the closing answer's
        text, and its step (``answer``: the turn's answer, titled as one)."""
        turn.ended = True
        yield StatusEvent(code, note, extra)
        yield ContentEvent(note)
        final = self._assistant(note, metadata={code: True})
        if answer:
            turn.answer = final
        yield turn.completed((final,))

    # ---------------------------------------------------------------- side calls
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
