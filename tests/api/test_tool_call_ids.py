"""Issue 24 item 5, over HTTP with the real LLM adapter: a model whose parallel tool calls
share one id (``call_dup``) or carry none. Each call gets an id of its own before anything
runs, each change is approved and made once, and the history keeps every change with its
approval (before, the step was refused with ``conversation_invariant`` after the changes
were made, and the history kept only the user's question)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import SecretStr

from adapters.llm import LangchainLanguageModel, LLMSettings, build_chat_model
from copilot_core.ports import ChangePreview
from tests.api.conftest import RawEvent, raw_events, run_service
from tests.fakes.openai_server import Reply, ScriptedOpenAIServer, ToolCallScript

PC1 = {"device": "PC1", "commands": ["ip 10.0.0.1/24"]}
PC2 = {"device": "PC2", "commands": ["ip 10.0.0.2/24"]}


@pytest.fixture
def llm() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer(api_key="sk-ids", default=Reply(text="Both are set.")) as server:
        yield server


@pytest.mark.parametrize("given", ["call_dup", ""], ids=["shared-id", "no-id"])
async def test_parallel_changes_with_one_id_or_none_are_each_approved_made_and_stored(
    llm: ScriptedOpenAIServer, given: str
) -> None:
    llm.add(
        Reply(
            tool_calls=[
                ToolCallScript("configure_device", PC1, id=given),
                ToolCallScript("configure_device", PC2, id=given),
            ]
        )
    )
    model = LangchainLanguageModel(
        build_chat_model(
            LLMSettings(model="gpt-test", base_url=llm.base_url, api_key=SecretStr("sk-ids"))
        )
    )
    made: list[dict[str, Any]] = []
    async with run_service(language_model=model) as service:
        service.tools.add(
            "configure_device",
            lambda args, ctx: made.append(args) or {"status": "success", "device": args["device"]},
            changes=lambda args: ChangePreview(
                f"configure {args['device']}", devices={args["device"]: args["commands"]}
            ),
        )
        url = service.chat_url()
        events: list[RawEvent] = []
        async with (
            service.client() as client,
            client.stream("POST", url + "/stream", json={"message": "address PC1 and PC2"}) as s,
        ):
            session_id = s.headers["x-session-id"]
            async for event in raw_events(s):
                events.append(event)
                if event.type == "approval_required":
                    decided = await client.post(
                        f"{url}/sessions/{session_id}/approvals/{event.data['approval_id']}",
                        json={"decision": "approve"},
                    )
                    assert decided.status_code == 200, decided.text
                if event.type == "done":
                    break
            history = (await client.get(f"{url}/sessions/{session_id}/history")).json()
    kinds = [e.type for e in events]
    assert "error" not in kinds, [e.data for e in events if e.type == "error"]
    assert sorted(m["device"] for m in made) == ["PC1", "PC2"]
    asked = [e.data for e in events if e.type == "approval_required"]
    assert len({a["tool_call_id"] for a in asked}) == 2
    roles = [m["role"] for m in history["messages"]]
    assert roles == ["user", "assistant", "tool", "tool", "assistant"]
    calls = history["messages"][1]["tool_calls"]
    ids = [c["id"] for c in calls]
    assert len(set(ids)) == 2 and all(ids)
    tools = history["messages"][2:4]
    assert [t["tool_call_id"] for t in tools] == ids
    assert all(t["metadata"]["approval"]["decision"] == "approve" for t in tools)
    # The model's next request carried both calls with their own ids and both answers.
    sent = llm.requests[1].messages
    assert [c["id"] for c in sent[-3]["tool_calls"]] == ids
    assert [m["tool_call_id"] for m in sent[-2:]] == ids
