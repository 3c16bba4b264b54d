"""A call the model wrote in its text asks under approval ``never``, and its
``approval_required`` event says ``from_text: true`` on the wire (issue 35, item 3)."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from copilot_core.ports import ApprovalPolicy, ChangePreview
from copilot_core.testing import text_reply, tool_reply
from tests.api.conftest import RawEvent, Service, raw_events

CALL = {"device": "PC1", "commands": ["ip 10.0.0.1/24"]}


async def approvals(service: Service, reply: Any) -> list[dict[str, Any]]:
    """Stream one turn whose model writes ``reply``; reject every approval asked; the
    ``approval_required`` events' data."""
    service.model.add(reply, text_reply("ok"))
    url = service.chat_url()
    asked: list[dict[str, Any]] = []
    async with (
        service.client() as client,
        client.stream("POST", url + "/stream", json={"message": "address PC1"}) as stream,
    ):
        session_id = stream.headers["x-session-id"]
        events: list[RawEvent] = []
        async for event in raw_events(stream):
            events.append(event)
            if event.type == "approval_required":
                asked.append(event.data)
                decided = await client.post(
                    f"{url}/sessions/{session_id}/approvals/{event.data['approval_id']}",
                    json={"decision": "reject"},
                )
                assert decided.status_code == 200, decided.text
            if event.type == "done":
                break
    assert events[-1].type == "done", [e.type for e in events]
    return asked


async def test_a_text_call_asks_under_never_and_says_from_text(service: Service) -> None:
    ran: list[dict[str, Any]] = []
    service.tools.add(
        "configure",
        lambda args, ctx: ran.append(args),
        changes=lambda args: ChangePreview("configure PC1", devices={"PC1": args["commands"]}),
    )
    assert service.models.selection is not None
    service.models.selection = replace(
        service.models.selection, approval=ApprovalPolicy.NEVER, text_tool_calls=True
    )
    text = f"<tool_call>{json.dumps({'name': 'configure', 'arguments': CALL})}</tool_call>"
    (asked,) = await approvals(service, text_reply(text))
    assert asked["from_text"] is True and asked["arguments"] == CALL
    assert ran == []  # rejected

    service.models.selection = replace(service.models.selection, approval=ApprovalPolicy.CHANGES)
    (asked,) = await approvals(service, tool_reply(("configure", CALL)))
    assert asked["from_text"] is False  # a call the model made
