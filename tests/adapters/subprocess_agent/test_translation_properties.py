"""Whatever a program prints, in whatever order, however it ends: the recorded history
is a valid OpenAI conversation and every started tool is ended."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from adapters.subprocess_agent import EventTranslator, Outcome
from copilot_core import Conversation
from copilot_core.events import (
    AgentEvent,
    LLMCallCompleted,
    StepCompleted,
    TitleGenerated,
    ToolCallEvent,
    ToolEndEvent,
    ToolStartEvent,
    event_to_record,
)
from copilot_core.testing import SequentialIds, SteppingClock

_text = st.text(max_size=12)
_value = st.one_of(st.none(), st.booleans(), st.integers(), _text, st.lists(_text, max_size=3))
_tool_event = st.fixed_dictionaries(
    {"type": st.sampled_from(["tool_start", "tool_end", "tool_result", "tool_args"])},
    optional={"tool": _text, "args": _value, "success": st.booleans()},
)
_event = st.one_of(
    _tool_event,
    _tool_event,
    _tool_event,
    st.fixed_dictionaries(
        {"type": st.sampled_from(["tool_start", "tool_end", "tool_result", "tool_args"])},
        optional={
            "tool": _value,
            "args": st.one_of(_value, st.dictionaries(_text, _value, max_size=2)),
            "success": _value,
            "summary": _value,
        },
    ),
    st.fixed_dictionaries(
        {"type": st.sampled_from(["chunk", "answer", "thinking", "agent_error", "done", "x"])},
        optional={"content": _value},
    ),
    st.fixed_dictionaries(
        {"type": st.sampled_from(["step", "plan", "status"])},
        optional={"step": _value, "steps": _value, "status": _value, "current_step": _value},
    ),
)
_line = st.one_of(
    _event.map(lambda event: json.dumps(event).encode()),
    st.binary(max_size=20),
    st.just(b"[1]"),
)


@given(st.lists(_line, max_size=40), st.sampled_from(["ok", "aborted", "error"]))
def test_any_output_gives_a_valid_history_and_closed_tools(
    lines: list[bytes], outcome: Outcome
) -> None:
    translator = EventTranslator("lab", "Lab", SteppingClock(), SequentialIds())
    events: list[AgentEvent] = []
    for line in lines:
        events += translator.line(line)
    events += translator.finish(outcome)

    messages = [m for e in events if isinstance(e, StepCompleted) for m in e.messages]
    conversation = Conversation(messages)  # raises if any append breaks the invariant
    assert conversation.is_complete
    started = [e.tool_call_id for e in events if isinstance(e, ToolStartEvent)]
    ended = [e.tool_call_id for e in events if isinstance(e, ToolEndEvent)]
    complete = [e.id for e in events if isinstance(e, ToolCallEvent) and e.complete]
    assert started == ended == complete
    assert len(set(started)) == len(started)
    answered = [m.tool_call_id for m in messages if m.tool_call_id]
    assert answered == ended
    for event in events:
        if not isinstance(event, StepCompleted | LLMCallCompleted | TitleGenerated):
            json.dumps(event_to_record(event))  # plain JSON data, for any turn log
