"""No device output without a device (issue 40, case 4), over HTTP with the real LLM
adapter and the scripted OpenAI-compatible server.

Asked "can PC1 ping PC2?", a 1.5B model made no call and wrote a ping transcript and
"PC1 can ping PC2"; that was the turn's answer. Now such an answer is caught before it is
final: the model is asked once to run the tool. When it does, its answer from the result
is final and unmarked; when it invents again, the final answer is marked unverified in
the stream (a ``status`` ``unverified``) and in the stored history
(``metadata.unverified``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.api.conftest import RawEvent, one_turn
from tests.fakes.openai_server import RecordedRequest, Reply, ScriptedOpenAIServer, ToolCallScript

KEY = "sk-unseen"
QUESTION = "can PC1 ping PC2?"
INVENTED = (
    "Let me ping PC2 from PC1:\n\n```\nPC1> ping 10.0.0.2\n"
    "84 bytes from 10.0.0.2 icmp_seq=1 ttl=64 time=0.512 ms\n"
    "84 bytes from 10.0.0.2 icmp_seq=2 ttl=64 time=0.401 ms\n"
    "84 bytes from 10.0.0.2 icmp_seq=3 ttl=64 time=0.388 ms\n"
    "84 bytes from 10.0.0.2 icmp_seq=4 ttl=64 time=0.420 ms\n```\n\n"
    "PC1 can ping PC2 successfully."
)
PING = {"device": "PC1", "command": "ping 10.0.0.2"}
REPLIES = "84 bytes from 10.0.0.2 icmp_seq=1 ttl=64 time=0.612 ms\n" * 4


@pytest.fixture
def llm() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer(api_key=KEY) as server:
        yield server


async def ask(llm: ScriptedOpenAIServer) -> tuple[list[RawEvent], list[dict[str, Any]], list[Any]]:
    """One turn asking QUESTION: its events, its stored history, the commands run."""
    ran: list[Any] = []
    events, messages = await one_turn(
        llm.base_url,
        KEY,
        QUESTION,
        {
            "run_vpcs_command": (
                lambda args, ctx: ran.append(args) or {"output": REPLIES},
                "Run commands on VPCS hosts: ip, show ip, ping.",
            ),
            "get_topology": (lambda args, ctx: {"nodes": []}, ""),
        },
    )
    return events, messages, ran


def statuses(events: list[RawEvent]) -> list[dict[str, Any]]:
    return [e.data for e in events if e.type == "status"]


def asked_once(llm: ScriptedOpenAIServer, events: list[RawEvent]) -> None:
    """The invented answer was caught and the model told, in the conversation it reads."""
    (caught, *_) = [s for s in statuses(events) if s["status"] == "unseen_output"]
    assert "84 bytes from 10.0.0.2" in caught["message"]
    assert {"kind": "reachability", "text": "PC1 can ping PC2 successfully."} in caught["claims"]
    told = llm.requests[1].messages
    # The question, then the note; the invented reply is not sent back (a small model
    # copies it): the note quotes its claims, and names the tool to call and the test.
    assert [m["role"] for m in told[-2:]] == ["user", "user"]
    assert told[-2]["content"] == QUESTION
    assert not any("icmp_seq=4" in str(m.get("content")) for m in told)
    assert "not from the user" in told[-1]["content"]
    assert "Call run_vpcs_command now to run a ping from PC1 to 10.0.0.2" in told[-1]["content"]
    assert "get_topology" not in told[-1]["content"]  # it does not ping


async def test_an_invented_ping_is_caught_and_the_answer_from_the_tool_is_not_marked(
    llm: ScriptedOpenAIServer,
) -> None:
    llm.add(
        Reply(text=INVENTED),
        Reply(tool_calls=[ToolCallScript("run_vpcs_command", PING)]),
        Reply(text="PC1 can ping PC2: 4 of 4 replies, e.g. 84 bytes from 10.0.0.2 icmp_seq=1."),
    )
    events, messages, ran = await ask(llm)
    asked_once(llm, events)
    assert ran == [PING]
    assert [s["status"] for s in statuses(events)].count("unseen_output") == 1
    assert "unverified" not in [s["status"] for s in statuses(events)]
    final = messages[-1]
    assert final["role"] == "assistant" and final["content"].startswith("PC1 can ping PC2: 4")
    assert "unverified" not in final["metadata"]
    # The invented reply was not the answer: the turn stored the call, its result, the answer.
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "assistant"]
    assert len(llm.requests) == 3


async def test_an_answer_invented_again_is_marked_unverified_in_the_stream_and_history(
    llm: ScriptedOpenAIServer,
) -> None:
    again = "Yes. PC1 can ping PC2: 84 bytes from 10.0.0.2 icmp_seq=1 ttl=64 time=0.5 ms."
    llm.add(Reply(text=INVENTED), Reply(text=again))
    events, messages, ran = await ask(llm)
    asked_once(llm, events)
    assert ran == []
    assert len(llm.requests) == 2  # asked once, not in a loop
    (marked,) = [s for s in statuses(events) if s["status"] == "unverified"]
    assert "unverified" in marked["message"]
    assert [claim["kind"] for claim in marked["claims"]] == ["ping"]
    assert "84 bytes from 10.0.0.2" in marked["claims"][0]["text"]
    done = [e.data for e in events if e.type == "done"][-1]
    final = messages[-1]
    assert final["id"] == done["message_id"]
    assert final["role"] == "assistant" and final["content"] == again
    assert final["metadata"]["unverified"]["claims"] == marked["claims"]


#: What the 1.5B model answered, before and after the note (bench, row 6).
SAID = "Yes, PC1 can ping PC2."


def copying_model(request: RecordedRequest) -> Reply:
    """A model as the 1.5B one behaved: with its invented answer in the conversation it
    says it again; told which tool to call, it calls it; given the result, it answers
    from it; asked the question alone, it invents."""
    messages = request.messages
    if messages[-1]["role"] == "tool":
        return Reply(text="PC1 can ping PC2: 4 of 4 replies from 10.0.0.2.")
    if any(m["role"] == "assistant" and m.get("content") == SAID for m in messages):
        return Reply(text=SAID)
    if "Call run_vpcs_command" in messages[-1]["content"]:
        return Reply(tool_calls=[ToolCallScript("run_vpcs_command", PING)])
    return Reply(text=SAID)


async def test_a_model_that_copies_its_invented_answer_runs_the_ping_once_told(
    llm: ScriptedOpenAIServer,
) -> None:
    llm.add(copying_model, copying_model, copying_model)
    events, messages, ran = await ask(llm)
    assert ran == [PING]
    assert "unverified" not in [s["status"] for s in statuses(events)]
    assert messages[-1]["content"] == "PC1 can ping PC2: 4 of 4 replies from 10.0.0.2."
    assert "unverified" not in messages[-1]["metadata"]
    note = llm.requests[1].messages[-1]["content"]
    assert "“Yes, PC1 can ping PC2.”" in note  # the claim, quoted in the note
    assert "a ping from PC1 to PC2" in note  # no address claimed: the lab's name


async def test_a_claim_without_ends_is_asked_for_the_ping_the_user_asked_about(
    llm: ScriptedOpenAIServer,
) -> None:
    # The 1.5B model's answer on the real lab (bench, 2026-12-07): no transcript, no
    # device, no address, only the verdict. The note names the test from the question.
    llm.add(
        Reply(text="The output shows that the ping command was successful."),
        Reply(tool_calls=[ToolCallScript("run_vpcs_command", PING)]),
        Reply(text="PC1 can ping PC2: 4 of 4 replies from 10.0.0.2."),
    )
    _events, _messages, ran = await ask(llm)
    told = llm.requests[1].messages[-1]["content"]
    assert "not from the user" in told
    assert "Call run_vpcs_command now to run a ping from PC1 to PC2" in told
    assert ran == [PING]
