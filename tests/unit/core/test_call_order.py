"""The calls of one reply run in order when one needs another (issue 40, item 2).

Every ordering here is proved by events and the order of records, never by timing: a
handler that must overlap another waits (bounded) on an event the other sets; one that
must not sees whether the other finished.
"""

from __future__ import annotations

import asyncio
from typing import Any

from copilot_core import CopilotMode, ToolContext, ToolGate
from copilot_core._abort import AbortToken
from copilot_core._callorder import plan
from copilot_core._tools import ParsedToolCall, ToolResult, ToolSpec, Touch, TouchKind
from copilot_core.events import ToolEndEvent
from copilot_core.ports import ToolEffect
from copilot_core.testing import FakeToolExecutor, text_reply, tool_reply

from .conftest import World

JSON = dict[str, Any]
BOUND = 5.0  # seconds: every wait on an event is bounded


def _creates(args: JSON) -> list[Touch]:
    return [Touch(str(args["name"]).lower(), TouchKind.CREATE, str(args["name"]))]


def _link_ends(args: JSON) -> list[Touch]:
    return [Touch(str(args[end]).lower(), TouchKind.READ, str(args[end])) for end in ("a", "b")]


def _reads_device(args: JSON) -> list[Touch]:
    return [Touch(str(args["device"]).lower(), TouchKind.READ, str(args["device"]))]


class Lab:
    """A lab of named nodes and links; records what happened, in order."""

    def __init__(self) -> None:
        self.nodes: set[str] = set()
        self.links: list[tuple[str, str]] = []
        self.log: list[str] = []
        self.pc2_creating = asyncio.Event()
        self.fail: set[str] = set()

    async def create(self, args: JSON, ctx: object) -> JSON | ToolResult:
        name = str(args["name"])
        self.log.append(f"create {name} starts")
        if name == "PC2":
            self.pc2_creating.set()
        else:  # PC1 finishes only once PC2's create runs too: the creates overlap
            await asyncio.wait_for(self.pc2_creating.wait(), BOUND)
        for _ in range(3):
            await asyncio.sleep(0)  # a real create awaits GNS3: others may run meanwhile
        if name in self.fail:
            self.log.append(f"create {name} fails")
            return ToolResult.error(f"Template not found for {name}")
        self.nodes.add(name)
        self.log.append(f"create {name} ends")
        return {"created": name}

    def link(self, args: JSON, ctx: object) -> JSON:
        self.log.append("link starts")
        missing = [str(args[end]) for end in ("a", "b") if args[end] not in self.nodes]
        if missing:
            return {"error": f"No node named {missing[0]!r}"}
        self.links.append((str(args["a"]), str(args["b"])))
        return {"linked": [args["a"], args["b"]]}

    def tools(self, fake: FakeToolExecutor) -> FakeToolExecutor:
        return fake.add(
            "create_node", self.create, effect=ToolEffect.TOPOLOGY_CHANGE, touches=_creates
        ).add("create_link", self.link, effect=ToolEffect.TOPOLOGY_CHANGE, touches=_link_ends)


def _ends(events: list[dict[str, object]]) -> dict[str, dict[str, object]]:
    return {str(e["tool_call_id"]): e for e in events if e["type"] == "tool_end"}


async def test_create_two_nodes_and_link_them_in_one_reply_makes_both_and_the_link(
    world: World,
) -> None:
    lab = Lab()
    lab.tools(world.tools)
    world.model.add(
        tool_reply(
            ("create_node", {"name": "PC1"}),
            ("create_node", {"name": "PC2"}),
            ("create_link", {"a": "PC1", "b": "PC2"}),
        ),
        text_reply("Done."),
        text_reply("t"),
    )
    events = await world.turn("create PC1 and PC2 and link them")
    assert lab.links == [("PC1", "PC2")], lab.log
    assert lab.nodes == {"PC1", "PC2"}
    # the creates overlapped (PC1's waited for PC2's to start); the link came after both
    assert lab.log.index("create PC2 starts") < lab.log.index("create PC1 ends")
    assert lab.log.index("link starts") > max(
        lab.log.index("create PC1 ends"), lab.log.index("create PC2 ends")
    )
    assert _ends(events)["call_2"]["status"] == "success"


async def test_a_link_whose_node_was_not_created_is_not_run_and_says_why(world: World) -> None:
    lab = Lab()
    lab.fail.add("PC1")
    lab.tools(world.tools)
    world.model.add(
        tool_reply(
            ("create_node", {"name": "PC1"}),
            ("create_node", {"name": "PC2"}),
            ("create_link", {"a": "PC1", "b": "PC2"}),
        ),
        text_reply("PC1 failed."),
        text_reply("t"),
    )
    events = await world.turn("create PC1 and PC2 and link them")
    assert "link starts" not in lab.log  # never run
    link = _ends(events)["call_2"]
    assert link["status"] == "error"
    error = str(link["output"]["error"])  # type: ignore[index]
    assert error.startswith("Not run: it needs PC1, which create_node (call 1) failed to create")
    assert _ends(events)["call_1"]["status"] == "success"  # PC2 was made all the same
    history = await world.messages(str(events[0]["session_id"]))
    tool_texts = [str(m["content"]) for m in history if m["role"] == "tool"]
    assert "failed to create" in tool_texts[2]  # the model reads why


async def test_two_independent_show_commands_run_at_the_same_time(world: World) -> None:
    started = {"R1": asyncio.Event(), "R2": asyncio.Event()}
    other = {"R1": "R2", "R2": "R1"}

    async def show(args: JSON, ctx: object) -> str:
        device = str(args["device"])
        started[device].set()
        await asyncio.wait_for(started[other[device]].wait(), BOUND)  # both run at once
        return f"{device}: ok"

    world.tools.add("show", show, touches=_reads_device)
    world.model.add(
        tool_reply(("show", {"device": "R1"}), ("show", {"device": "R2"})),
        text_reply("Both fine."),
        text_reply("t"),
    )
    events = await world.turn("show R1 and R2")
    assert [e["output"] for e in _ends(events).values()] == ["R1: ok", "R2: ok"]


async def test_undeclared_changes_run_one_after_another_and_undeclared_reads_overlap(
    world: World,
) -> None:
    log: list[str] = []
    read_started = asyncio.Event()

    async def change(args: JSON, ctx: object) -> str:
        name = str(args["n"])
        log.append(f"{name} starts")
        if name == "first":  # a read-only call of the reply runs meanwhile
            await asyncio.wait_for(read_started.wait(), BOUND)
        for _ in range(3):
            await asyncio.sleep(0)
        log.append(f"{name} ends")
        return name

    def read(args: JSON, ctx: object) -> str:
        read_started.set()
        log.append("read")
        return "read"

    world.tools.add("change", change, effect=ToolEffect.DEVICE_CHANGE)
    world.tools.add("peek", read)  # read-only, undeclared
    world.model.add(
        tool_reply(("change", {"n": "first"}), ("peek", {}), ("change", {"n": "second"})),
        text_reply("ok"),
        text_reply("t"),
    )
    await world.turn("change twice")
    assert log.index("first ends") < log.index("second starts"), log
    assert log.index("read") < log.index("first ends"), log


def _spec(name: str, effect: ToolEffect | None, touches: Any = None) -> ToolSpec:
    return ToolSpec(name, name, effect=effect, touches=touches)


def _call(n: int, name: str, args: JSON) -> ParsedToolCall:
    return ParsedToolCall(f"c{n}", name, "", args)


def test_the_plan_waits_only_for_earlier_writers_of_what_a_call_touches() -> None:
    config = _spec(
        "config",
        ToolEffect.DEVICE_CHANGE,
        lambda a: [Touch(a["device"], TouchKind.CHANGE)],
    )
    show = _spec("show", ToolEffect.READ_ONLY, lambda a: [Touch(a["device"], TouchKind.READ)])
    everything = _spec("start_all", ToolEffect.NODE_STATE)  # declares nothing
    broken = _spec("broken", ToolEffect.DEVICE_CHANGE, lambda a: 1 / 0)  # declaration fails
    offered = {s.name: s for s in (config, show, everything, broken)}
    calls = [
        _call(0, "show", {"device": "R1"}),
        _call(1, "config", {"device": "R1"}),
        _call(2, "config", {"device": "R2"}),
        _call(3, "show", {"device": "R1"}),
        _call(4, "start_all", {}),
        _call(5, "show", {"device": "R2"}),
        _call(6, "broken", {}),
    ]
    needs = plan(calls, offered, {c.id for c in calls})
    waits = {cid: [n.call.id for n in found] for cid, found in needs.items()}
    assert waits == {
        "c0": [],
        "c1": [],  # a read before it is not waited for
        "c2": [],  # another device
        "c3": ["c1"],  # R1 after its configuration
        "c4": ["c1", "c2"],  # an undeclared change: after every change
        "c5": ["c2", "c4"],  # R2 after its configuration and the undeclared change
        "c6": ["c1", "c2", "c4"],  # a failing declaration counts as undeclared
    }


async def test_a_call_that_fails_after_a_failed_change_it_needed_is_told_which() -> None:
    fake = FakeToolExecutor()
    fake.add(
        "start",
        lambda a, c: ToolResult.error("start failed"),
        effect=ToolEffect.NODE_STATE,
        touches=lambda a: [Touch("pc1", TouchKind.CHANGE, "PC1")],
    )
    fake.add(
        "ping",
        lambda a, c: ToolResult.error("no console"),
        touches=lambda a: [Touch("pc1", TouchKind.READ, "PC1")],
    )
    ctx = ToolContext("p", "u", "s", CopilotMode.LAB_AUTOMATION_ASSISTANT, AbortToken())
    calls = [_call(0, "start", {}), _call(1, "ping", {})]
    ends = [e async for e in ToolGate(fake).run(calls, ctx) if isinstance(e, ToolEndEvent)]
    ping = next(e for e in ends if e.tool_call_id == "c1")
    assert ping.output["error"] == "no console"  # it ran: PC1 exists, its start failed
    assert "start (call 1), which changes PC1, did not succeed" in ping.output["depends_on"]
