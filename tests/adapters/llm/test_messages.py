"""Core messages <-> LangChain messages: the round trip is the identity."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_openai.chat_models.base import _convert_message_to_dict

from adapters.llm import from_langchain, message_from_langchain, to_langchain
from copilot_core import Message, Role
from copilot_core.ports import FunctionCall, ToolCall

ids = st.text(st.characters(codec="utf-8"), min_size=1, max_size=12)
texts = st.text(max_size=40)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=10),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=6,
)
metadata = st.fixed_dictionaries(
    {"created_at": st.datetimes().map(lambda d: d.isoformat())},
    optional={"aborted": st.booleans(), "extra": json_values},
)
# argument text: canonical JSON, JSON with odd spacing, broken JSON, non-objects, empty
arguments = st.one_of(
    st.dictionaries(st.text(max_size=5), json_values, max_size=3).map(json.dumps),
    st.dictionaries(st.text(max_size=5), json_values, max_size=3).map(
        lambda d: json.dumps(d, indent=1, ensure_ascii=False)
    ),
    st.just('{"node": "R1"'),
    st.just("[1, 2]"),
    st.just(""),
    texts,
)
tool_calls = st.builds(
    lambda i, n, a: ToolCall(id=i, function=FunctionCall(name=n, arguments=a)),
    ids,
    st.text(min_size=1, max_size=10),
    arguments,
)
names = st.none() | st.text(min_size=1, max_size=8)

messages = st.one_of(
    st.builds(
        Message, id=ids, role=st.just(Role.SYSTEM), content=texts, name=names, metadata=metadata
    ),
    st.builds(
        Message, id=ids, role=st.just(Role.USER), content=texts, name=names, metadata=metadata
    ),
    st.builds(
        Message,
        id=ids,
        role=st.just(Role.ASSISTANT),
        content=texts,
        name=names,
        metadata=metadata,
        tool_calls=st.none() | st.lists(tool_calls, max_size=3).map(tuple),
    ),
    st.builds(
        Message,
        id=ids,
        role=st.just(Role.TOOL),
        content=texts,
        tool_call_id=ids,
        name=st.text(min_size=1, max_size=10),
        metadata=metadata,
    ),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(messages, max_size=6))
def test_round_trip_through_langchain_is_identity(conversation: list[Message]) -> None:
    assert from_langchain(to_langchain(conversation)) == conversation


@settings(max_examples=50, deadline=None)
@given(messages)
def test_round_trip_survives_serialisation_of_the_langchain_message(message: Message) -> None:
    # LangChain messages are pydantic models: a copy through their dict keeps everything
    converted = to_langchain([message])[0]
    copy = type(converted).model_validate(converted.model_dump())
    assert message_from_langchain(copy) == message


def test_kinds_map_to_the_langchain_classes() -> None:
    call = ToolCall(id="c1", function=FunctionCall(name="get_nodes", arguments='{"a": 1}'))
    converted = to_langchain(
        [
            Message(id="s", role=Role.SYSTEM, content="sys"),
            Message(id="u", role=Role.USER, content="hi"),
            Message(id="a", role=Role.ASSISTANT, content="", tool_calls=(call,)),
            Message(id="t", role=Role.TOOL, content="{}", tool_call_id="c1", name="get_nodes"),
        ]
    )
    system, user, assistant, tool = converted
    assert isinstance(system, SystemMessage)
    assert isinstance(user, HumanMessage)
    assert isinstance(assistant, AIMessage)
    assert assistant.tool_calls == [
        {"type": "tool_call", "id": "c1", "name": "get_nodes", "args": {"a": 1}}
    ]
    assert isinstance(tool, ToolMessage)
    assert (tool.tool_call_id, tool.name, tool.id) == ("c1", "get_nodes", "t")


def test_invalid_arguments_stay_raw_on_the_wire() -> None:
    broken = ToolCall(id="c2", function=FunctionCall(name="start_node", arguments='{"node": '))
    message = Message(id="a", role=Role.ASSISTANT, content="", tool_calls=(broken,))

    (converted,) = to_langchain([message])
    wire: dict[str, Any] = _convert_message_to_dict(converted)

    assert isinstance(converted, AIMessage)
    assert converted.invalid_tool_calls[0]["args"] == '{"node": '
    assert wire["tool_calls"] == [
        {
            "id": "c2",
            "type": "function",
            "function": {"name": "start_node", "arguments": '{"node": '},
        }
    ]
    assert "metadata" not in wire


def test_metadata_is_not_sent_to_the_provider() -> None:
    message = Message(id="u", role=Role.USER, content="hi", metadata={"created_at": "2026-01-01"})
    wire = _convert_message_to_dict(to_langchain([message])[0])
    assert wire == {"role": "user", "content": "hi"}


def test_messages_from_a_provider_reply_convert() -> None:
    reply = AIMessage(
        content=[{"type": "text", "text": "R1 "}, {"type": "text", "text": "is up"}],
        id="run-1",
        tool_calls=[{"type": "tool_call", "id": "c3", "name": "ping", "args": {"host": "R2"}}],
    )
    (message,) = from_langchain([reply])
    assert message.role is Role.ASSISTANT
    assert message.content == "R1 is up"
    assert message.tool_calls == (
        ToolCall(id="c3", function=FunctionCall(name="ping", arguments='{"host": "R2"}')),
    )


def test_unknown_message_kinds_are_refused() -> None:
    from langchain_core.messages import ChatMessage

    with pytest.raises(ValueError, match="ChatMessage"):
        from_langchain([ChatMessage(role="critic", content="x")])
