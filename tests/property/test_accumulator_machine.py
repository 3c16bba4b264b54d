"""For any chunking and interleaving of any set of tool calls, the accumulator gives
back exactly the calls that were streamed; arguments only grow; one complete event each."""

from __future__ import annotations

import json
from dataclasses import dataclass

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from copilot_core._accumulator import ToolCallAccumulator
from copilot_core.events import ToolCallEvent
from copilot_core.ports import ToolCallDelta

json_objects = st.dictionaries(
    st.text(max_size=8),
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=12),
        lambda inner: (
            st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
        ),
        max_leaves=6,
    ),
    max_size=4,
)
argument_texts = json_objects.map(json.dumps) | st.text(max_size=30)  # valid or not


@dataclass
class Streamed:
    index: int
    id: str
    name: str
    arguments: str
    sent: int = 0  # characters of arguments sent so far
    started: bool = False

    @property
    def remaining(self) -> bool:
        return not self.started or self.sent < len(self.arguments)


class AccumulatorMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.fresh()

    def fresh(self) -> None:
        self.acc = ToolCallAccumulator()
        self.calls: dict[int, Streamed] = {}
        self.events: list[ToolCallEvent] = []

    @rule(
        index=st.integers(min_value=0, max_value=6),
        name=st.sampled_from(["show", "create_gns3_node", "packet_capture"]),
        arguments=argument_texts,
    )
    def declare_call(self, index: int, name: str, arguments: str) -> None:
        if index not in self.calls:
            self.calls[index] = Streamed(index, f"call_{index}_{len(self.events)}", name, arguments)

    @precondition(lambda self: any(c.remaining for c in self.calls.values()))
    @rule(data=st.data())
    def send_fragment(self, data: st.DataObject) -> None:
        call = data.draw(st.sampled_from([c for c in self.calls.values() if c.remaining]))
        size = data.draw(
            st.integers(min_value=0, max_value=max(len(call.arguments) - call.sent, 0))
        )
        piece = call.arguments[call.sent : call.sent + size]
        call.sent += size
        first = not call.started
        call.started = True
        self.events += self.acc.add(
            ToolCallDelta(
                call.index, call.id if first else None, call.name if first else None, piece
            )
        )

    @precondition(lambda self: not any(c.remaining for c in self.calls.values()))
    @rule(reason=st.sampled_from(["tool_calls", "stop", "length"]))
    def finish_and_start_a_fresh_turn(self, reason: str) -> None:
        complete = self.acc.finish(reason)
        self.events += complete
        by_index = sorted(self.calls.values(), key=lambda c: c.index)
        assert [e.id for e in complete] == [c.id for c in by_index]
        for event in self.events:
            assert event.complete == (event in complete)
        parsed = self.acc.calls()
        assert [(p.id, p.name, p.raw_arguments) for p in parsed] == [
            (c.id, c.name, c.arguments) for c in by_index
        ]
        for p, c in zip(parsed, by_index, strict=True):
            try:
                expected = json.loads(c.arguments) if c.arguments.strip() else {}
            except ValueError:
                expected = None
            if isinstance(expected, dict):
                assert p.arguments == expected and p.error is None
            else:
                assert p.arguments is None and p.error
        self.fresh()

    @invariant()
    def arguments_only_grow_and_start_empty(self) -> None:
        latest: dict[str, str] = {}
        for event in self.events:
            if event.id not in latest:
                assert event.arguments == ""
            else:
                assert event.arguments.startswith(latest[event.id])
            latest[event.id] = event.arguments
        for call in self.calls.values():
            if call.started:
                assert latest[call.id] == call.arguments[: call.sent]


TestAccumulator = AccumulatorMachine.TestCase
