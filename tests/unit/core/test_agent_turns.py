"""The built-in agent's behaviour, driven through ChatService with the core's fakes."""

from __future__ import annotations

import asyncio
import itertools
import json

import pytest

from copilot_core import (
    AgentSettings,
    Conversation,
    CopilotMode,
    Message,
    PromptBook,
    SessionKey,
    ToolContext,
    ToolResult,
)
from copilot_core.errors import LLMRateLimitedError
from copilot_core.ports import TextDelta, UsageDelta
from copilot_core.testing import Hang, text_reply, tool_reply
from tests.fakes.loop_clock import stepping_loop_clock

from .conftest import ALICE, PROJECT, World, replay


def types(events: list[dict[str, object]]) -> list[object]:
    return [e["type"] for e in events]


async def test_a_text_answer_streams_then_done_carries_the_saved_message_id(world: World) -> None:
    world.model.add(text_reply("Hello! How can I help?"), text_reply("Greeting"))
    events = await world.turn("hi")
    assert types(events)[-1] == "done"
    assert (
        "".join(str(e["content"]) for e in events if e["type"] == "content")
        == "Hello! How can I help?"
    )
    session_id = str(events[0]["session_id"])
    assert all(e["session_id"] == session_id for e in events)
    history = await world.messages(session_id)
    assert [m["role"] for m in history] == ["user", "assistant"]
    assert events[-1]["message_id"] == history[-1]["id"]
    assert history[-1]["content"] == "Hello! How can I help?"


async def test_tool_calls_stream_as_growing_events_then_run_and_are_answered(world: World) -> None:
    world.tools.add("gns3_topology_reader", lambda args, ctx: {"nodes": ["PC1", "PC2"]})
    world.model.add(
        tool_reply(("gns3_topology_reader", {"detail": "full"}), chunk=3),
        text_reply("Two PCs."),
        text_reply("Lab"),
    )
    events = await world.turn("what is in my lab?")
    calls = [e for e in events if e["type"] == "tool_call"]
    arguments = [str(c["arguments"]) for c in calls]
    assert arguments[0] == ""
    assert all(b.startswith(a) for a, b in itertools.pairwise(arguments))
    assert [c["complete"] for c in calls].count(True) == 1
    assert json.loads(arguments[-1]) == {"detail": "full"}
    order = types(events)
    assert order.index("tool_start") > max(i for i, t in enumerate(order) if t == "tool_call")
    end = next(e for e in events if e["type"] == "tool_end")
    assert end["output"] == {"nodes": ["PC1", "PC2"]}
    history = await world.messages(str(events[0]["session_id"]))
    assert [m["role"] for m in history] == ["user", "assistant", "tool", "assistant"]
    assert history[2]["tool_call_id"] == history[1]["tool_calls"][0]["id"]  # type: ignore[index]
    assert world.tools.executed[0].arguments == {"detail": "full"}


async def test_calls_of_one_message_run_concurrently_and_results_keep_call_order(
    world: World,
) -> None:
    slow_started = asyncio.Event()
    fast_done = asyncio.Event()

    async def slow(args: dict[str, object], ctx: object) -> str:
        slow_started.set()
        await asyncio.wait_for(fast_done.wait(), 5)  # finishes only after the fast one
        return "slow"

    async def fast(args: dict[str, object], ctx: object) -> str:
        await asyncio.wait_for(slow_started.wait(), 5)  # starts only while slow runs
        fast_done.set()
        return "fast"

    world.tools.add("slow", slow).add("fast", fast)
    world.model.add(tool_reply(("slow", {}), ("fast", {})), text_reply("done"), text_reply("t"))
    events = await world.turn("go")
    ends = [e["output"] for e in events if e["type"] == "tool_end"]
    assert ends == ["fast", "slow"]  # streamed as they finish
    history = await world.messages(str(events[0]["session_id"]))
    assert [m["content"] for m in history if m["role"] == "tool"] == ["slow", "fast"]


async def test_a_tool_the_mode_does_not_allow_gets_an_error_and_never_runs(world: World) -> None:
    world.tools.add("read", lambda a, c: "ok")
    world.tools.add(
        "configure", lambda a, c: "changed!", modes=[CopilotMode.LAB_AUTOMATION_ASSISTANT]
    )
    world.model.add(
        tool_reply(("configure", {"cmd": "shutdown"})), text_reply("sorry"), text_reply("t")
    )
    events = await world.turn("shut it", copilot_mode=CopilotMode.TEACHING_ASSISTANT)
    offered = [spec.name for spec in world.model.calls[0].tools]
    assert offered == ["read"]
    assert world.tools.executed == []
    end = next(e for e in events if e["type"] == "tool_end")
    assert end["status"] == "error"
    assert "not available in teaching_assistant mode" in str(end["output"])
    conversation = Conversation(
        Message.from_dict(m) for m in await world.messages(str(events[0]["session_id"]))
    )
    assert conversation.is_complete


async def test_malformed_arguments_are_answered_with_an_error_and_the_turn_goes_on(
    world: World,
) -> None:
    world.tools.add("read", lambda a, c: "ok")
    world.model.add(tool_reply(("read", '{"node": ')), text_reply("let me retry"), text_reply("t"))
    events = await world.turn("x")
    assert world.tools.executed == []
    end = next(e for e in events if e["type"] == "tool_end")
    assert "malformed" in str(end["output"]) and end["status"] == "error"
    assert types(events)[-1] == "done"
    assert len(world.model.calls) == 3  # the model got the error and answered; then the title


async def test_a_tool_that_raises_or_overruns_becomes_an_error_result(world: World) -> None:
    world.agent_settings = AgentSettings(tool_timeout=0.05)

    def broken(args: dict[str, object], ctx: object) -> object:
        raise RuntimeError("boom")

    async def stuck(args: dict[str, object], ctx: object) -> object:
        await asyncio.sleep(10)
        return None

    world.tools.add("broken", broken).add("stuck", stuck)
    world.model.add(tool_reply(("broken", {}), ("stuck", {})), text_reply("ok"), text_reply("t"))
    events = await world.turn("x")
    outputs = {str(e["tool_name"]): e["output"] for e in events if e["type"] == "tool_end"}
    assert "internal error" in outputs["broken"]["error"]
    assert "did not finish within 0.05 s" in outputs["stuck"]["error"]


async def test_the_step_budget_ends_a_looping_turn_with_a_valid_conversation(world: World) -> None:
    world.agent_settings = AgentSettings(max_llm_calls=3)
    world.tools.add("read", lambda a, c: "ok")
    pages = itertools.count()  # a new call each time (an identical one is a repeat)
    world.model.default = lambda messages, tools: tool_reply(("read", {"page": next(pages)}))
    events = await world.turn("loop forever")
    assert len(world.model.calls) == 3
    status = next(e for e in events if e["type"] == "status")
    assert status["status"] == "step_limit"
    history = [Message.from_dict(m) for m in await world.messages(str(events[0]["session_id"]))]
    assert Conversation(history).is_complete
    assert history[-1].metadata.get("step_limit") is True
    assert events[-1]["message_id"] == history[-1].id
    session = (await world.service.list_sessions(PROJECT, ALICE))[0]
    assert session.llm_calls_count == 3
    assert session.message_count == len(history)


async def test_title_comes_from_a_separate_call_that_is_neither_streamed_nor_counted(
    world: World,
) -> None:
    world.model.add(
        text_reply("Answer", usage=(10, 2)), text_reply('"OSPF lab help"\n', usage=(500, 500))
    )
    events = await world.turn("help me with OSPF")
    assert "OSPF lab help" not in "".join(str(e.get("content", "")) for e in events)
    session = (await world.service.list_sessions(PROJECT, ALICE))[0]
    assert session.title == "OSPF lab help"
    assert (session.llm_calls_count, session.input_tokens, session.output_tokens) == (1, 10, 2)
    assert world.model.calls[1].tools == ()  # no tools offered to the title call
    # The second turn does not ask for a title again.
    world.model.add(text_reply("more"))
    await world.turn("and more", session_id=session.thread_id)
    assert len(world.model.calls) == 3


async def test_a_failed_title_call_falls_back_to_the_first_30_characters(world: World) -> None:
    world.model.add(text_reply("Answer"), [LLMRateLimitedError("slow down")])
    await world.turn("Why does PC1 not reach PC2 through Switch1?")
    session = (await world.service.list_sessions(PROJECT, ALICE))[0]
    assert session.title == "Why does PC1 not reach PC2 thr"


async def test_topology_comes_with_the_users_message_and_is_refreshed_after_a_change(
    world: World,
) -> None:
    world.topology.topology = {"nodes": ["R1"]}

    def create(args: dict[str, object], ctx: object) -> str:
        world.topology.topology = {"nodes": ["R1", "PC9"]}
        return "created"

    world.tools.add("create_node", create, mutates_topology=True).add("read", lambda a, c: "ok")
    world.model.add(
        tool_reply(("read", {})),
        tool_reply(("create_node", {})),
        text_reply("done"),
        text_reply("t"),
    )
    await world.turn("add PC9")
    labs = [call.messages[1].content for call in world.model.calls[:3]]
    assert all(lab.startswith("<lab>") and lab.endswith("add PC9") for lab in labs)
    assert '"R1"' in labs[0] and "PC9" not in labs[0].removesuffix("add PC9")
    assert "PC9" not in labs[1].removesuffix("add PC9")  # a read-only tool: no re-read
    assert "PC9" in labs[2].removesuffix("add PC9")
    assert world.topology.reads == 2
    # The system prompt (the cached prefix, with the tools) did not change with the lab.
    assert len({call.messages[0].content for call in world.model.calls[:3]}) == 1
    assert "R1" not in world.model.calls[0].messages[0].content


async def test_an_unreadable_topology_does_not_stop_the_turn(world: World) -> None:
    from copilot_core.errors import Gns3Error

    world.topology.error = Gns3Error("GNS3 is down")
    world.model.add(text_reply("I cannot see the lab"), text_reply("t"))
    events = await world.turn("x")
    assert types(events)[-1] == "done"
    assert "unavailable (GNS3 is down)" in world.model.calls[0].messages[-1].content


async def test_long_histories_are_trimmed_to_the_context_limit(world: World) -> None:
    world.context_limit = 2048 + 600  # the reserve for the answer plus a little room
    session_id = None
    for i in range(12):
        world.model.add(text_reply(f"answer {i} " + "x" * 400))
        if i == 0:
            world.model.add(text_reply("t"))
        kwargs = {"session_id": session_id} if session_id else {}
        events = await world.turn(f"question {i}", **kwargs)
        session_id = str(events[0]["session_id"])
    last_prompt = world.model.calls[-1].messages
    assert last_prompt[0].role.value == "system"
    assert last_prompt[-1].content.endswith("</lab>\n\nquestion 11")
    assert len(last_prompt) < 2 + 2 * 11  # older turns were dropped
    assert all(not m.content.endswith("question 0") for m in last_prompt)


async def test_abort_while_the_model_streams_keeps_the_partial_answer(world: World) -> None:
    first_words = asyncio.Event()
    world.model.add([TextDelta("Partial "), TextDelta("answer"), Hang(), TextDelta(" never")])
    turn = await world.service.start_turn(world.request("explain"))

    async def abort_after_text() -> None:
        async for event in turn.subscribe():
            if event.type == "content" and event.event.content == "answer":  # type: ignore[union-attr]
                first_words.set()
                await world.service.abort(SessionKey(PROJECT, turn.session_id, ALICE))

    await asyncio.wait_for(abort_after_text(), 5)
    result = await asyncio.wait_for(turn.wait(), 5)
    assert first_words.is_set()
    assert result.aborted
    wire = [e.type for e in await replay(turn)]
    assert wire[-2:] == ["abort", "done"]
    history = [Message.from_dict(m) for m in await world.messages(turn.session_id)]
    assert history[-1].content == "Partial answer"
    assert history[-1].metadata["aborted"] is True
    assert world.model.closed_early == 1  # the provider stream was closed, not drained
    assert (await replay(turn))[-1].event.message_id == history[-1].id  # type: ignore[union-attr]


async def test_abort_while_tools_run_cancels_them_and_answers_every_open_call(world: World) -> None:
    running = asyncio.Event()

    async def forever(args: dict[str, object], ctx: object) -> str:
        running.set()
        await asyncio.sleep(3600)
        return "never"

    world.tools.add("quick", lambda a, c: "quick result").add("forever", forever)
    world.model.add(tool_reply(("quick", {}), ("forever", {})))
    turn = await world.service.start_turn(world.request("go"))
    await asyncio.wait_for(running.wait(), 5)
    with stepping_loop_clock() as clock:  # time stands still: the abort alone ends the turn
        assert await world.service.abort(SessionKey(PROJECT, turn.session_id, ALICE)) is True
        assert await clock.until(lambda: turn.finished), "the turn waited for time to pass"
    result = await turn.wait()
    assert result.aborted
    await asyncio.sleep(0)
    assert len(world.tools.cancelled) == 1
    history = [Message.from_dict(m) for m in await world.messages(turn.session_id)]
    tools = [m for m in history if m.role.value == "tool"]
    assert [json.loads(m.content) if m.name == "forever" else m.content for m in tools] == [
        "quick result",
        {"status": "aborted"},
    ]
    assert Conversation(history).is_complete
    ends = [e.event for e in await replay(turn) if e.type == "tool_end"]
    assert [e.status for e in ends] == ["success", "aborted"]  # type: ignore[union-attr]


async def test_an_llm_failure_mid_stream_is_an_error_event_and_the_turn_is_saved(
    world: World,
) -> None:
    world.model.add([TextDelta("Half an "), LLMRateLimitedError("Rate limited; retry in 3 s", 3.0)])
    events = await world.turn("x")
    error = next(e for e in events if e["type"] == "error")
    assert error["code"] == "llm_rate_limited"
    assert "retry in 3 s" in str(error["error"])
    assert types(events)[-1] == "done"
    history = await world.messages(str(events[0]["session_id"]))
    assert history[-1]["content"] == "Half an "
    assert history[-1]["metadata"]["error"] is True  # type: ignore[index]
    session = (await world.service.list_sessions(PROJECT, ALICE))[0]
    assert session.message_count == 2 and session.llm_calls_count == 1


async def test_usage_is_summed_over_every_call_of_the_turn(world: World) -> None:
    world.tools.add("read", lambda a, c: "ok")
    world.model.add(
        tool_reply(("read", {}), usage=(100, 10)),
        [TextDelta("fine"), UsageDelta(150, 20)],
        text_reply("t", usage=(999, 999)),
    )
    await world.turn("x")
    session = (await world.service.list_sessions(PROJECT, ALICE))[0]
    assert (session.input_tokens, session.output_tokens, session.total_tokens) == (250, 30, 280)
    assert session.llm_calls_count == 2


@pytest.mark.parametrize("mode", list(CopilotMode))
async def test_the_system_prompt_says_which_mode_is_active(world: World, mode: CopilotMode) -> None:
    world.model.add(text_reply("ok"), text_reply("t"))
    await world.turn("x", copilot_mode=mode)
    prompt = world.model.calls[0].messages[0].content
    assert ("teaching assistant" in prompt) is (mode is CopilotMode.TEACHING_ASSISTANT)
    assert ("lab automation assistant" in prompt) is (mode is CopilotMode.LAB_AUTOMATION_ASSISTANT)


async def test_tool_results_may_be_any_json_value(world: World) -> None:
    world.tools.add("read", lambda a, c: ToolResult([1, "二", None]))
    world.model.add(tool_reply(("read", {})), text_reply("ok"), text_reply("t"))
    events = await world.turn("x")
    end = next(e for e in events if e["type"] == "tool_end")
    assert end["output"] == [1, "二", None]


async def test_a_running_tool_reports_progress_coalesced_before_its_end(world: World) -> None:
    world.agent_settings = AgentSettings(progress_interval=0.05)

    async def ping(args: dict[str, object], ctx: ToolContext) -> dict[str, str]:
        for n in range(1, 6):
            ctx.report_progress(f"reply {n}\n", device="PC1")
            await asyncio.sleep(0.02)
        ctx.report_progress("")  # nothing to say: no event
        return {"output": "".join(f"reply {n}\n" for n in range(1, 6))}

    world.tools.add("execute_multiple_device_commands", ping)
    world.model.add(
        tool_reply(("execute_multiple_device_commands", {})), text_reply("Done."), text_reply("T")
    )
    events = await world.turn("ping")
    progress = [e for e in events if e["type"] == "tool_progress"]
    # Five reports 20 ms apart, forwarded at most every 50 ms: fewer events, no text lost.
    assert 1 < len(progress) < 5
    assert "".join(str(e["text"]) for e in progress) == "".join(f"reply {n}\n" for n in range(1, 6))
    assert {e["device"] for e in progress} == {"PC1"}
    order = types(events)
    assert order.index("tool_start") < order.index("tool_progress")
    assert max(i for i, t in enumerate(order) if t == "tool_progress") < order.index("tool_end")


async def test_a_tool_result_too_long_for_the_model_is_cut_and_says_so(world: World) -> None:
    world.agent_settings = AgentSettings(max_result_chars=1000)
    world.tools.add("show_run", lambda args, ctx: "interface Gi0/0\n" * 500)
    world.model.add(tool_reply(("show_run", {})), text_reply("ok"), text_reply("T"))
    events = await world.turn("show me the config")
    end = next(e for e in events if e["type"] == "tool_end")
    output = end["output"]
    assert output["truncated"] is True  # type: ignore[index]
    assert len(output["output"]) == 1000  # type: ignore[index]
    assert "8000 characters long" in output["note"]  # type: ignore[index]
    sent = world.model.calls[1].messages[-1].content
    assert len(sent) < 1500 and "only the first 1000 are kept" in sent


async def test_the_stored_message_is_the_users_own_without_the_lab(world: World) -> None:
    world.topology.topology = {"nodes": [{"name": "PC1", "device_type": "vpcs"}], "links": []}
    world.model.add(text_reply("ok"), text_reply("t"))
    events = await world.turn("what is PC1?")
    history = await world.messages(str(events[0]["session_id"]))
    assert history[0]["content"] == "what is PC1?"
    assert "PC1" in world.model.calls[0].messages[-1].content.split("</lab>")[0]


async def test_an_empty_lab_says_plainly_that_it_is_empty(world: World) -> None:
    world.topology.topology = {"project": {"name": "empty"}, "nodes": [], "links": []}
    world.model.add(text_reply("It is empty."), text_reply("t"))
    await world.turn("what is in this lab?")
    lab = world.model.calls[0].messages[-1].content
    assert "The lab is empty: it has no nodes and no links." in lab


async def test_only_the_guides_of_the_platforms_in_the_lab_are_given_in_every_mode(
    world: World,
) -> None:
    world.topology.topology = {
        "nodes": [
            {"name": "PC1", "device_type": "vpcs"},
            {"name": "PC2", "device_type": "vpcs"},
            {"name": "R1", "device_type": "frr"},
        ],
        "links": [],
    }
    guides = {"vpcs": "VPCS: ip 10.0.0.1/24 10.0.0.254", "cisco_ios": "IOS: show ip int brief"}
    world.prompts = PromptBook(platforms=guides)
    for mode in CopilotMode:
        world.model.add(text_reply("ok"), text_reply("t"))
        first = len(world.model.calls)
        await world.turn("how do I address PC1?", copilot_mode=mode)
        lab = world.model.calls[first].messages[-1].content
        assert "Guide for the vpcs nodes (PC1, PC2)" in lab and guides["vpcs"] in lab
        assert "IOS: show ip int brief" not in lab  # no IOS node in this lab
        assert "The lab is empty" not in lab
        assert "vpcs" not in world.model.calls[first].messages[0].content
