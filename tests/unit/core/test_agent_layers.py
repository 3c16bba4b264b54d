"""The agent's run in layers (issue 37), each layer alone: the turn's state and its one
conversation (``open_turn``, ``AgentTurn.completed``), a reply streamed and its calls
taken (``ReplyStream``), the tools of a reply run as a step (``ToolStep``), the repeat
guard's end (``struck``), the lab as it is shown (``LabView``); and, through the runner,
that a turn has one conversation: the runner's, which the agent reads."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Sequence
from contextlib import aclosing
from datetime import UTC, datetime

import pytest

from copilot_core import (
    AbortToken,
    AgentSettings,
    BuiltinAgent,
    ChatService,
    ChatSettings,
    Conversation,
    CopilotMode,
    ModelSelection,
    ToolContext,
    ToolGate,
    TurnRunner,
)
from copilot_core._accumulator import StoppedCall
from copilot_core._agent_turn import AgentTurn, LabView, open_turn
from copilot_core._guards import TurnGuard
from copilot_core._replay import stored_arguments
from copilot_core._reply_stream import ReplyStream, waiting_note
from copilot_core._tokens import ApproximateTokenCounter
from copilot_core._tool_step import ToolStep, struck
from copilot_core.bootstrap import (
    HistoryWindows,
    InMemorySessionLeases,
    InMemoryTurnControlRelay,
    InMemoryTurnLog,
)
from copilot_core.errors import ConversationInvariantError, Gns3Error, error_code
from copilot_core.events import (
    AgentEvent,
    ContentEvent,
    StatusEvent,
    StepCompleted,
    ToolCallEvent,
    ToolEndEvent,
)
from copilot_core.ports import AgentRunConfig, FunctionCall, Message, Role, ToolCall
from copilot_core.testing import (
    FakeToolExecutor,
    FakeTopologySource,
    Hang,
    ScriptedLanguageModel,
    SequentialIds,
    StaticModelProvider,
    SteppingClock,
    text_reply,
    tool_reply,
)

from .conftest import PROJECT, World

NOW = datetime(2026, 1, 1, tzinfo=UTC)
MODE = CopilotMode.LAB_AUTOMATION_ASSISTANT


def context(abort: AbortToken | None = None) -> ToolContext:
    return ToolContext("p", "alice", "s", MODE, abort or AbortToken())


def executor() -> FakeToolExecutor:
    tools = FakeToolExecutor()
    tools.add("show", lambda args, ctx: {"shown": args.get("what", "all")})
    tools.add("add_node", lambda args, ctx: {"added": args["name"]}, mutates_topology=True)
    return tools


def turn_of(
    tools: FakeToolExecutor,
    model: ScriptedLanguageModel,
    *,
    history: Sequence[Message] = (),
    conversation: Conversation | None = None,
    text_calls: bool = False,
    abort: AbortToken | None = None,
) -> AgentTurn:
    question = Message.user("question", "show me the lab", NOW)
    config = AgentRunConfig(
        context(abort), ModelSelection(model), question=question, conversation=conversation
    )
    assert config.model is not None
    return open_turn(
        "show me the lab",
        history,
        config,
        selection=config.model,
        every_spec=tools.specs(MODE),
        tool_set="full",
        text_calls=text_calls,
        counter=ApproximateTokenCounter(),
        lab=LabView(None, 1.0),
        question=lambda: Message.user("minted", "show me the lab", NOW),
    )


async def streamed(stream: ReplyStream) -> list[AgentEvent]:
    def waiting(started: float) -> StatusEvent:
        return StatusEvent("waiting_for_model", "waiting")

    async with aclosing(stream.events([Message.user("u", "hi", NOW)], waiting)) as events:
        return [event async for event in events]


# ------------------------------------------------------------- the turn's state
def test_a_turn_reads_the_runners_conversation_and_adds_nothing_to_it() -> None:
    history = [Message.user("old", "earlier", NOW), Message.assistant("a", "Said.", NOW)]
    kept = Conversation.restore(history)
    kept.append(Message.user("question", "show me the lab", NOW))
    turn = turn_of(executor(), ScriptedLanguageModel(), history=history, conversation=kept)

    assert turn.conversation is kept
    assert [m.id for m in kept] == ["old", "a", "question"]
    assert not turn.keeps_conversation
    # counted with the agent's counter: the agent can ask it for prompts
    system = Message.system("system", "You help.")
    assert [m.id for m in kept.prompt(system, 10_000)] == ["system", "old", "a", "question"]
    turn.completed((Message.assistant("b", "Done.", NOW),))
    assert len(kept) == 3  # the runner appends the steps it saves


def test_a_turn_without_a_runner_keeps_its_own_conversation() -> None:
    history = [Message.user("old", "earlier", NOW), Message.assistant("a", "Said.", NOW)]
    turn = turn_of(executor(), ScriptedLanguageModel(), history=history)

    assert turn.keeps_conversation
    assert [m.id for m in turn.conversation] == ["old", "a", "question"]
    record = turn.completed((Message.assistant("b", "Done.", NOW),))
    assert record == StepCompleted((Message.assistant("b", "Done.", NOW),))
    assert turn.conversation.last.id == "b"


def test_a_conversation_counted_later_fits_its_prompt_into_the_budget() -> None:
    old = [Message.user(f"u{i}", "x" * 400, NOW) for i in range(5)]
    conversation = Conversation.restore(old)
    system = Message.system("system", "You help.")
    with pytest.raises(TypeError):
        conversation.prompt(system, 300)
    conversation.count_with(ApproximateTokenCounter())
    assert [m.id for m in conversation.prompt(system, 300)] == ["system", "u3", "u4"]


# ------------------------------------------------------------------ the reply
async def test_a_streamed_reply_is_its_text_and_its_titled_calls() -> None:
    tools = executor()
    model = ScriptedLanguageModel([tool_reply(("show", {"what": "nodes"}), text="Looking.")])
    turn = turn_of(tools, model)
    stream = ReplyStream(turn, AgentSettings(), SequentialIds("t").new_id)

    events = await streamed(stream)
    finished = stream.finish()

    assert events[0] == ContentEvent("Looking.")
    assert all(isinstance(event, ToolCallEvent) for event in events[1:])
    assert [(c.name, c.arguments) for c in stream.reply.calls] == [("show", {"what": "nodes"})]
    assert [event.id for event in finished if isinstance(event, ToolCallEvent)] == ["call_0"]
    assert turn.used_ids == {"call_0"}
    assert (stream.reply.input_tokens, stream.reply.output_tokens) == (20, 8)


async def test_a_reply_with_more_calls_than_run_is_closed_at_the_first_past_the_bound() -> None:
    calls = [("show", {"what": str(i)}) for i in range(6)]
    model = ScriptedLanguageModel([tool_reply(*calls)])
    turn = turn_of(executor(), model)
    stream = ReplyStream(turn, AgentSettings(max_calls_per_reply=2), SequentialIds().new_id)

    await streamed(stream)
    stream.finish()

    assert stream.accumulator.halted
    assert len(stream.reply.calls) == 3  # two run, the third answered; the rest unread


async def test_calls_written_in_the_text_are_the_replys_when_it_makes_none() -> None:
    text = 'I will look.\n<tool_call>{"name": "show", "arguments": {"what": "links"}}</tool_call>'
    turn = turn_of(executor(), ScriptedLanguageModel([text_reply(text)]), text_calls=True)
    stream = ReplyStream(turn, AgentSettings(), SequentialIds("t").new_id)

    await streamed(stream)
    stream.finish()

    assert stream.from_text
    assert [(c.name, c.arguments) for c in stream.reply.calls] == [("show", {"what": "links"})]
    assert turn.used_ids == {stream.reply.calls[0].id}


async def test_an_aborted_reply_keeps_what_was_shown_and_takes_no_call() -> None:
    abort = AbortToken()
    model = ScriptedLanguageModel([[*text_reply("Half", usage=None)[:-1], Hang()]])
    turn = turn_of(executor(), model, abort=abort)
    stream = ReplyStream(turn, AgentSettings(), SequentialIds().new_id)

    async def abort_once_shown() -> list[AgentEvent]:
        events: list[AgentEvent] = []
        async with aclosing(stream.events([], lambda started: StatusEvent("w", "w"))) as it:
            async for event in it:
                events.append(event)
                if event == ContentEvent("Half"):
                    abort.abort("stop")
        return events

    events = await asyncio.wait_for(abort_once_shown(), 10)
    assert events == [ContentEvent("Half")]
    assert stream.finish() == [] and stream.reply.calls == []
    assert stream.reply.content == "Half"


def test_the_waiting_note_counts_the_prompt_and_says_what_the_server_said() -> None:
    counter = ApproximateTokenCounter()
    prompt = [Message.user("u", "x" * 400, NOW)]
    note = waiting_note(counter, prompt, 7, executor().specs(MODE), 0.0, lambda: "busy")
    assert note.status == "waiting_for_model"
    assert note.extra is not None
    assert note.extra["prompt_tokens"] > counter.count(prompt) + 7
    assert note.extra["server_note"] == "busy" and note.message.endswith("; busy")


# ------------------------------------------------------------------ the tools
async def run_step(
    turn: AgentTurn, stream: ReplyStream, tools: FakeToolExecutor
) -> tuple[list[AgentEvent], dict[str, ToolEndEvent]]:
    step = ToolStep(
        ToolGate(tools), ids=SequentialIds("m"), clock=SteppingClock(), settings=AgentSettings()
    )
    ends: dict[str, ToolEndEvent] = {}
    calls = tuple(
        ToolCall(id=c.id, function=FunctionCall(name=c.name, arguments=stored_arguments(c)))
        for c in stream.reply.calls
    )
    assistant = Message.assistant("asst", "", NOW, calls)
    async with aclosing(step.run(turn, stream, assistant, ends)) as events:
        return [event async for event in events], ends


async def test_a_step_runs_its_calls_and_answers_a_repeat_of_a_success_itself() -> None:
    tools = executor()
    model = ScriptedLanguageModel(
        [
            tool_reply(("show", {"what": "nodes"})),
            tool_reply(("show", {"what": "nodes"}), ("show", {"what": "links"}), ids=["r", "l"]),
        ]
    )
    turn = turn_of(tools, model)
    for _ in range(2):
        stream = ReplyStream(turn, AgentSettings(), SequentialIds("t").new_id)
        await streamed(stream)
        stream.finish()
        events, ends = await run_step(turn, stream, tools)

    assert [call.arguments for call in tools.executed] == [{"what": "nodes"}, {"what": "links"}]
    assert ends["r"].status == "error" and "Not run" in str(ends["r"].output)
    assert turn.guard.repeats == 1
    step = events[-1]
    assert isinstance(step, StepCompleted)
    assert [m.role for m in step.messages] == [Role.ASSISTANT, Role.TOOL, Role.TOOL]
    assert [m.tool_call_id for m in step.messages[1:]] == ["r", "l"]
    assert turn.conversation.last is step.messages[-1]  # no runner: the agent keeps it


def test_the_turn_ends_once_the_model_has_looped_the_strikes() -> None:
    guard = TurnGuard()
    stopped = StoppedCall("c", "show", "argument too long")
    assert struck(guard, stopped, strikes=2) is None
    guard.runaways = 2
    runaway = struck(guard, stopped, strikes=2)
    assert runaway is not None and "show too long again" in runaway
    assert struck(guard, None, strikes=2) is None
    guard.repeats = 2
    repeat = struck(guard, None, strikes=2)
    assert repeat is not None and "already succeeded" in repeat


# -------------------------------------------------------------------- the lab
async def test_the_lab_is_read_again_only_after_a_successful_change_of_the_topology() -> None:
    source = FakeTopologySource({"nodes": [{"name": "PC1"}], "links": []})
    lab = LabView(source, 5.0)
    await lab.read(context())
    assert lab.topology == {"nodes": [{"name": "PC1"}], "links": []} and lab.problem is None
    specs = {spec.name: spec for spec in executor().specs(MODE)}

    await lab.refresh(context(), {"1": ToolEndEvent("show", "1", {})}, specs)
    await lab.refresh(context(), {"2": ToolEndEvent("add_node", "2", {}, "error")}, specs)
    assert source.reads == 1
    await lab.refresh(context(), {"3": ToolEndEvent("add_node", "3", {})}, specs)
    assert source.reads == 2


async def test_a_lab_that_cannot_be_read_is_a_problem_the_prompt_names() -> None:
    lab = LabView(FakeTopologySource(error=Gns3Error("GNS3 is down")), 5.0)
    await lab.read(context())
    assert (lab.topology, lab.problem) == (None, "GNS3 is down")
    nowhere = LabView(None, 5.0)
    await nowhere.read(context())
    assert nowhere.problem == "no topology source"


# ---------------------------------------------------- one conversation per turn
class ReadingAgent(BuiltinAgent):
    """The built-in agent, keeping what it was given to run with."""

    configs: list[AgentRunConfig]

    async def run(
        self, query: str, history: Sequence[Message], config: AgentRunConfig
    ) -> AsyncGenerator[AgentEvent, None]:
        self.configs.append(config)
        async with aclosing(super().run(query, history, config)) as events:
            async for event in events:
                yield event


def service_with(world: World, agent: BuiltinAgent) -> ChatService:
    selection = ModelSelection(world.model, title_model=world.title_model)
    runner = TurnRunner(
        world.store,
        InMemoryTurnLog(retention=5.0),
        HistoryWindows(world.store),
        leases=InMemorySessionLeases(),
        controls=InMemoryTurnControlRelay(),
        models=StaticModelProvider(selection),
        clock=world.clock,
        ids=world.ids,
    )
    return ChatService(
        world.store, {"copilot": agent}, runner, clock=world.clock, settings=ChatSettings()
    )


async def test_a_turn_has_one_conversation_the_runners_which_the_agent_reads(
    world: World,
) -> None:
    world.tools.add("show", lambda args, ctx: {"nodes": ["PC1"]})
    world.title_model = ScriptedLanguageModel(default=text_reply("Lab"))
    agent = ReadingAgent(world.tools, world.topology, clock=world.clock, ids=world.ids)
    agent.configs = []
    world._service = service_with(world, agent)
    world.model.add(text_reply("Hello."))
    first = await world.turn("hi")
    world.model.add(tool_reply(("show", {})), text_reply("PC1 is there."))
    await world.turn("what is there?", session_id=first[0]["session_id"])

    config = agent.configs[-1]
    conversation = config.conversation
    assert conversation is not None
    stored = await world.messages(str(first[0]["session_id"]))
    # the history, the question as saved, and each step as the runner saved it
    assert [m.id for m in conversation] == [m["id"] for m in stored]
    assert conversation[2] is config.question
    # the model's second call of the turn read the step the runner had appended
    prompt = world.model.calls[-1].messages
    assert [m.id for m in prompt[1:]] == [m.id for m in conversation[:-1]]


async def test_the_title_is_made_from_the_answer(world: World) -> None:
    world.title_model = ScriptedLanguageModel(default=text_reply("Lab"))
    world.model.add(text_reply("PC1 and PC2 are in the lab."))
    await world.turn("what is in my lab?")
    (title_call,) = world.title_model.calls
    asked = title_call.messages[-1].content
    assert asked.endswith("Assistant: PC1 and PC2 are in the lab.")


async def test_a_history_that_cannot_be_replayed_ends_the_turn_with_its_error(
    world: World,
) -> None:
    world.model.add(text_reply("Hello."))
    first = await world.turn("hi")
    session_id = str(first[0]["session_id"])
    calls = tuple(
        ToolCall(id=i, function=FunctionCall(name="show", arguments="{}")) for i in ("c1", "c2")
    )
    await world.store.append_messages(
        PROJECT,
        session_id,
        [  # the results of one message answered out of order: no valid request holds them
            Message.assistant("a2", "", NOW, calls),
            Message.tool("r2", "c2", "show", "{}", NOW),
            Message.tool("r1", "c1", "show", "{}", NOW),
            Message.assistant("a3", "Done.", NOW),
        ],
    )
    world.model.add(text_reply("Never read."))
    events = await world.turn("again", session_id=session_id)

    assert [e["type"] for e in events][-2:] == ["error", "done"]
    assert events[-2]["code"] == error_code(ConversationInvariantError("x"))
    assert world.model.remaining == 1
