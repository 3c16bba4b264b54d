"""The agent loop guards itself (issue 30): identical repeats, runaway arguments, one
approval per distinct change, and tool calls whose ids a model repeats or omits."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any, cast

from copilot_core import AgentSettings, Conversation, Message, SessionKey
from copilot_core._agent_settings import ToolArgumentLimit
from copilot_core.errors import CopilotError
from copilot_core.events import ApprovalRequiredEvent
from copilot_core.ports import (
    ApprovalPolicy,
    CallOptions,
    ChangePreview,
    FinishDelta,
    ModelSelection,
)
from copilot_core.ports import ToolCallDelta as Fragment
from copilot_core.testing import ScriptedLanguageModel, text_reply, tool_reply

from .conftest import World


def outputs(events: list[dict[str, Any]]) -> list[Any]:
    return [e["output"] for e in events if e["type"] == "tool_end"]


async def history(world: World, events: list[dict[str, Any]]) -> list[Message]:
    return [Message.from_dict(m) for m in await world.messages(str(events[0]["session_id"]))]


def create_node(world: World) -> list[dict[str, Any]]:
    made: list[dict[str, Any]] = []

    def create(args: dict[str, Any], ctx: object) -> dict[str, Any]:
        if args in made:
            raise CopilotError(f"A node named {args['name']} already exists.")
        made.append(args)
        return {"created": args["name"]}

    world.tools.add("create_gns3_node", create, mutates_topology=True)
    return made


async def test_an_identical_call_after_a_success_is_not_run_again_and_the_model_is_told(
    world: World,
) -> None:
    made = create_node(world)
    pc1 = {"name": "PC1", "template": "VPCS"}
    world.model.add(
        tool_reply(("create_gns3_node", pc1)),
        tool_reply(("create_gns3_node", {"template": "VPCS", "name": "PC1"})),  # keys reordered
        text_reply("PC1 is there."),
        text_reply("Title"),
    )
    events = await world.turn("add PC1")
    assert made == [pc1]  # once
    first, second = outputs(events)
    assert first == {"created": "PC1"}
    assert second["status"] == "error"
    assert "already succeeded in this turn" in second["error"]
    # The model read that answer, and went on to answer the user.
    told = world.model.calls[2].messages[-1]
    assert told.role.value == "tool" and "Not run" in told.content
    assert events[-1]["type"] == "done"
    assert [e for e in events if e["type"] == "status"] == []


async def test_a_second_repeat_ends_the_turn_with_a_clear_answer(world: World) -> None:
    starts: list[int] = []
    world.tools.add("start_all_gns3_nodes", lambda args, ctx: starts.append(1) or "success")
    world.model.default = tool_reply(("start_all_gns3_nodes", {}))  # the model loops
    world.title_model = ScriptedLanguageModel(default=text_reply("Start"))
    events = await world.turn("start all nodes")
    assert starts == [1]
    assert len(world.model.calls) == 3  # one run, two repeats, then the turn ended
    (status,) = [e for e in events if e["type"] == "status"]
    assert status["status"] == "guard_limit" and status["extra"]["repeats"] == 2
    answer = "".join(str(e["content"]) for e in events if e["type"] == "content")
    assert answer.startswith("I stopped this turn") and "already succeeded" in answer
    saved = await history(world, events)
    assert Conversation(saved).is_complete
    assert saved[-1].content == answer and saved[-1].metadata["guard_limit"] is True
    assert events[-1]["message_id"] == saved[-1].id


async def test_an_identical_call_after_a_failure_is_run_again(world: World) -> None:
    attempts: list[int] = []

    def flaky(args: dict[str, Any], ctx: object) -> str:
        attempts.append(1)
        if len(attempts) == 1:
            raise CopilotError("PC1 is not started yet.")
        return "10.0.0.1/24"

    world.tools.add("show_ip", flaky)
    world.model.add(
        tool_reply(("show_ip", {"node": "PC1"})),
        tool_reply(("show_ip", {"node": "PC1"})),
        text_reply("10.0.0.1/24"),
        text_reply("T"),
    )
    events = await world.turn("PC1's address?")
    assert len(attempts) == 2
    assert outputs(events)[1] == "10.0.0.1/24"


async def test_the_same_call_twice_in_one_message_runs_once(world: World) -> None:
    made = create_node(world)
    pc1 = {"name": "PC1", "template": "VPCS"}
    world.model.add(
        tool_reply(("create_gns3_node", pc1), ("create_gns3_node", pc1)),
        text_reply("done"),
        text_reply("T"),
    )
    events = await world.turn("add PC1")
    assert made == [pc1]
    (refused,) = [o for o in outputs(events) if isinstance(o, dict) and "error" in o]
    assert "already made in this message" in refused["error"]
    assert Conversation(await history(world, events)).is_complete


def runaway_commands(world: World, count: int) -> list[int]:
    """A model whose ``commands`` list grows by repetition, as a small model's did; what
    it returns counts the fragments the agent read from it."""
    sent: list[int] = []

    def fragments() -> Iterator[Any]:
        yield Fragment(0, "call_run", "run_commands", '{"node": "PC1", "commands": [')
        for n in range(count):
            sent.append(n)
            yield Fragment(0, None, None, ("," if n else "") + '"ping 10.0.0.2 -c 40"')
        yield Fragment(0, None, None, "]}")
        yield FinishDelta("tool_calls")

    # The scripted model iterates a reply lazily: a generator shows how far it was read.
    world.model.add(lambda messages, tools: cast(Any, fragments()))
    return sent


async def test_a_runaway_argument_is_stopped_while_streaming(world: World) -> None:
    ran: list[Any] = []
    world.tools.add("run_commands", lambda args, ctx: ran.append(args) or "ok")
    world.agent_settings = AgentSettings(argument_chars=100_000, argument_items=20)
    sent = runaway_commands(world, count=5000)
    world.model.add(text_reply("Let me ask for less."), text_reply("T"))
    events = await world.turn("can PC1 ping PC2?")
    assert ran == []
    # The stream was closed at the 21st item (plus what the agent's read-ahead buffer
    # of 256 fragments had taken), not read to its 5,000th.
    assert len(sent) < 21 + 256 + 2
    assert world.model.closed_early == 1
    calls = [e for e in events if e["type"] == "tool_call"]
    assert calls[-1]["complete"] is True
    (end,) = [e for e in events if e["type"] == "tool_end"]
    assert end["status"] == "error"
    assert "stopped while being written" in end["output"]["error"]
    assert "20 items" in end["output"]["error"]
    saved = await history(world, events)
    assert Conversation(saved).is_complete
    assert saved[1].tool_calls is not None
    assert saved[1].tool_calls[0].function.arguments == "{}"  # the cut text is not kept
    assert saved[-1].content == "Let me ask for less."


async def test_a_tools_own_limit_applies_to_its_calls_only(world: World) -> None:
    ran: list[str] = []
    world.tools.add("short", lambda args, ctx: ran.append("short") or "ok")
    world.tools.add("long", lambda args, ctx: ran.append("long") or "ok")
    world.agent_settings = AgentSettings(
        tool_argument_limits={"short": ToolArgumentLimit(max_chars=50)}
    )
    text = "x" * 200
    world.model.add(tool_reply(("long", {"text": text})), tool_reply(("short", {"text": text})))
    world.model.add(text_reply("ok"), text_reply("T"))
    events = await world.turn("go")
    assert ran == ["long"]
    assert "50 characters" in outputs(events)[1]["error"]


async def test_a_second_runaway_ends_the_turn(world: World) -> None:
    world.tools.add("run_commands", lambda args, ctx: "ok")
    world.agent_settings = AgentSettings(argument_items=10)
    runaway_commands(world, count=100)
    runaway_commands(world, count=100)
    world.model.add(text_reply("never read"))
    world.title_model = ScriptedLanguageModel(default=text_reply("T"))
    events = await world.turn("ping")
    answer = "".join(str(e["content"]) for e in events if e["type"] == "content")
    assert answer.startswith("I stopped this turn") and "too long" in answer
    assert world.model.remaining == 1
    assert Conversation(await history(world, events)).is_complete


async def test_an_approval_given_in_this_turn_is_not_asked_again_for_the_same_call(
    world: World,
) -> None:
    attempts: list[dict[str, Any]] = []

    def set_ip(args: dict[str, Any], ctx: object) -> str:
        attempts.append(args)
        if len(attempts) == 1:
            raise CopilotError("PC1 did not answer; try again.")
        return "ok"

    world.tools.add(
        "set_ip", set_ip, changes=lambda args: ChangePreview("configure", devices={"PC1": ["ip"]})
    )
    world.selection = ModelSelection(
        world.model, approval=ApprovalPolicy.CHANGES, title_model=ScriptedLanguageModel(
            default=text_reply("T")
        )
    )  # fmt: skip
    pc1 = {"device": "PC1", "ip": "10.0.0.1/24"}
    pc2 = {"device": "PC2", "ip": "10.0.0.2/24"}
    world.model.add(
        tool_reply(("set_ip", pc1)),
        tool_reply(("set_ip", pc1)),  # the same change again: approved already
        tool_reply(("set_ip", pc2)),  # another change: asked
        text_reply("Both set."),
    )
    turn = await world.service.start_turn(world.request("address PC1 and PC2"))
    asked: list[ApprovalRequiredEvent] = []
    async with asyncio.timeout(10):
        async for stamped in turn.subscribe():
            if isinstance(stamped.event, ApprovalRequiredEvent):
                asked.append(stamped.event)
                await world.service.decide(
                    SessionKey("project-1", turn.session_id, "alice"),
                    stamped.event.approval_id,
                    approve=True,
                )
    assert [a.arguments for a in asked] == [pc1, pc2]
    assert attempts == [pc1, pc1, pc2]
    _, page = await world.service.history(
        SessionKey("project-1", turn.session_id, "alice"), limit=100
    )
    tools = [m for m in page.messages if m.role.value == "tool"]
    assert all(m.metadata["approval"]["decision"] == "approve" for m in tools)


async def test_parallel_calls_that_share_an_id_or_have_none_get_distinct_ids(
    world: World,
) -> None:
    ran: list[str] = []
    world.tools.add("show", lambda args, ctx: ran.append(args["node"]) or args["node"])
    world.model.add(
        tool_reply(
            ("show", {"node": "PC1"}), ("show", {"node": "PC2"}), ids=["call_dup", "call_dup"]
        ),
        tool_reply(("show", {"node": "PC3"}), ("show", {"node": "PC4"}), ids=["", ""]),
        text_reply("four nodes"),
        text_reply("T"),
    )
    events = await world.turn("show all")
    assert sorted(ran) == ["PC1", "PC2", "PC3", "PC4"]
    saved = await history(world, events)
    assert Conversation(saved).is_complete
    ids = [call.id for m in saved for call in m.tool_calls or ()]
    assert len(set(ids)) == 4 and "call_dup" in ids and "" not in ids
    answered = {m.tool_call_id: m.content for m in saved if m.role.value == "tool"}
    assert sorted(answered.values()) == ["PC1", "PC2", "PC3", "PC4"]
    started = [e["tool_call_id"] for e in events if e["type"] == "tool_start"]
    assert sorted(started) == sorted(ids)
    complete = [e for e in events if e["type"] == "tool_call" and e["complete"]]
    assert [json.loads(str(c["arguments"]))["node"] for c in complete] == [
        "PC1",
        "PC2",
        "PC3",
        "PC4",
    ]


async def test_every_call_has_a_default_max_tokens_unless_the_user_set_one(world: World) -> None:
    world.model.add(text_reply("ok"), text_reply("T"))
    await world.turn("hi")
    assert world.model.calls[0].options.max_tokens == 4096
    world.selection = ModelSelection(world.model, options=CallOptions(max_tokens=300))
    world._service = None
    world.model.add(text_reply("ok"), text_reply("T"))
    await world.turn("hi")
    assert world.model.calls[2].options.max_tokens == 300
