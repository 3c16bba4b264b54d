"""A turn aborted at any point leaves a valid conversation and consistent counters."""

from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import event as note
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from copilot_core import SessionKey, TurnHandle
from copilot_core.events import TurnEvent
from copilot_core.testing import text_reply, tool_reply

from .turn_world import PROJECT, USER, TurnWorld


async def replay(turn: TurnHandle) -> list[TurnEvent]:
    return [event async for event in turn.subscribe()]


async def slow_tool(args: dict[str, Any], ctx: object) -> dict[str, Any]:
    await asyncio.sleep(0.002)
    return {"done": args}


class AbortMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.world = TurnWorld()
        self.world.model.delay = 0.0005  # so that an abort can land inside the stream
        self.world.tools.add("slow", slow_tool).add("quick", lambda a, c: "quick")
        self.llm_calls = 0

    def teardown(self) -> None:
        self.world.close()

    @rule(
        abort_after=st.integers(0, 60),
        tools=st.lists(st.sampled_from(["slow", "quick"]), min_size=1, max_size=3),
        steps=st.integers(1, 3),
    )
    def turn_aborted_after_some_events(
        self, abort_after: int, tools: list[str], steps: int
    ) -> None:
        world = self.world
        first = world.session_id is None
        for _ in range(steps):
            world.model.add(tool_reply(*[(name, {"step": 1}) for name in tools], text="Checking. "))
        world.model.add(text_reply("All good: the lab works as it should."))
        turn = world.run(world.service.start_turn(world.request("check the lab")))
        world.session_id = turn.session_id

        async def watch(turn: TurnHandle) -> None:
            if abort_after == 0:
                await world.service.abort(SessionKey(PROJECT, turn.session_id, USER))
            async for event in turn.subscribe():
                if event.seq == abort_after:
                    await world.service.abort(SessionKey(PROJECT, turn.session_id, USER))

        world.run(watch(turn))
        result = world.run(turn.wait())
        events = [e.type for e in world.run(replay(turn))]
        note("aborted" if result.aborted else "ran to the end")
        if result.aborted:
            note(f"aborted after {result.stats.llm_calls} LLM calls, {len(events)} events")
        assert events[-1] == "done"
        assert events.count("done") == 1
        if result.aborted:
            assert events[-2] == "abort"
        self.llm_calls += result.stats.llm_calls
        # Replies the aborted turn did not use must not leak into the next turn.
        world.model.clear()
        if first and world.session().title == "":
            raise AssertionError("every session gets a title, aborted or not")

    @invariant()
    def conversation_is_valid_and_counters_consistent(self) -> None:
        if self.world.session_id is None:
            return
        session = self.world.assert_consistent()
        assert session.llm_calls_count == self.llm_calls


AbortMachine.TestCase.settings = settings(max_examples=40, stateful_step_count=6)
TestAbort = AbortMachine.TestCase
