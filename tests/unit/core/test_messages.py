from __future__ import annotations

from datetime import UTC, datetime

import pydantic
import pytest

from copilot_core import Message, Role
from copilot_core.ports import FunctionCall, ToolCall

NOW = datetime(2026, 3, 8, 1, 33, 17, 848519, tzinfo=UTC)


def test_user_message_to_dict_is_the_openai_shape_with_created_at() -> None:
    message = Message.user("m1", "What can you do?", NOW)
    assert message.to_dict() == {
        "id": "m1",
        "role": "user",
        "content": "What can you do?",
        "metadata": {"created_at": "2026-03-08T01:33:17.848519+00:00"},
    }


def test_assistant_tool_calls_and_tool_answer_round_trip_exactly() -> None:
    call = ToolCall(id="call_1", function=FunctionCall(name="gns3_topology_reader", arguments="{}"))
    assistant = Message.assistant("m2", "", NOW, (call,))
    tool = Message.tool("m3", "call_1", "gns3_topology_reader", '{"nodes": []}', NOW)
    assert assistant.to_dict()["tool_calls"] == [
        {
            "id": "call_1",
            "type": "function",
            "function": {"name": "gns3_topology_reader", "arguments": "{}"},
        }
    ]
    assert tool.to_dict()["tool_call_id"] == "call_1"
    assert tool.to_dict()["name"] == "gns3_topology_reader"
    for message in (assistant, tool):
        assert Message.from_dict(message.to_dict()) == message


def test_from_dict_turns_an_arguments_object_into_json_text() -> None:
    data = {
        "id": "m2",
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c", "type": "function", "function": {"name": "t", "arguments": {"a": [1]}}}
        ],
        "metadata": {},
    }
    message = Message.from_dict(data)
    assert message.content == ""
    assert message.tool_calls is not None
    assert message.tool_calls[0].function.arguments == '{"a": [1]}'


def test_optional_fields_are_left_out_when_unset() -> None:
    data = Message(id="s", role=Role.SYSTEM, content="x").to_dict()
    assert set(data) == {"id", "role", "content", "metadata"}


@pytest.mark.parametrize(
    "bad",
    [
        {"id": "x", "role": "robot", "content": ""},
        {"role": "user", "content": "no id"},
        {"id": "x", "role": "user", "content": "", "surprise": 1},
    ],
)
def test_from_dict_rejects_what_is_not_a_message(bad: dict[str, object]) -> None:
    with pytest.raises(pydantic.ValidationError):
        Message.from_dict(bad)


def test_messages_are_immutable() -> None:
    message = Message.user("m1", "hi", NOW)
    with pytest.raises(pydantic.ValidationError):
        message.content = "changed"  # type: ignore[misc]
