"""Issue 29, item 2, over HTTP: a chat's mode is changed for its next turns by a message's
``copilot_mode``; the turns after the change run in the new mode (the tools the model is
offered say so), the session keeps it, the question where it changed carries
``metadata.mode_change``; the operator's policy bounds the choice."""

from __future__ import annotations

from typing import Any

import httpx

from copilot_core import CopilotMode
from copilot_core.policy import OperatorPolicy, PolicyBook, PolicyRule
from copilot_core.testing import text_reply
from tests.api.conftest import Service, collect_until_done, run_service

TEACHING = CopilotMode.TEACHING_ASSISTANT.value
AUTOMATION = CopilotMode.LAB_AUTOMATION_ASSISTANT.value


async def send(client: httpx.AsyncClient, service: Service, body: dict[str, Any]) -> str:
    async with client.stream("POST", service.chat_url() + "/stream", json=body) as response:
        assert response.status_code == 200, await response.aread()
        events = await collect_until_done(response)
    assert events[-1].type == "done" and not [e for e in events if e.type == "error"], events
    return str(response.headers["x-session-id"])


def offered(service: Service) -> set[str]:
    """The tools the model was offered in its latest call."""
    return {spec.name for spec in service.model.calls[-1].tools}


async def test_a_switched_chat_runs_its_next_turns_in_the_new_mode_and_shows_where() -> None:
    async with run_service() as service, service.client() as client:
        service.tools.add("read_lab", lambda args, ctx: {"nodes": []})
        service.tools.add(
            "change_lab",
            lambda args, ctx: {"status": "success"},
            modes=[CopilotMode.LAB_AUTOMATION_ASSISTANT],
        )
        service.model.default = text_reply("ok")
        session_id = await send(client, service, {"message": "one"})
        assert offered(service) == {"read_lab"}  # teaching, the default

        modes = []
        for body in (
            {"message": "two", "copilot_mode": AUTOMATION},
            {"message": "three"},  # the chat's mode now
            {"message": "four", "copilot_mode": TEACHING},
            {"message": "five", "copilot_mode": TEACHING},  # no change
        ):
            await send(client, service, body | {"session_id": session_id})
            modes.append(offered(service))
            listed = await client.get(service.chat_url() + "/sessions")
            [session] = listed.json()
            assert session["copilot_mode"] == (AUTOMATION if len(modes) < 3 else TEACHING)
        assert modes == [{"read_lab", "change_lab"}] * 2 + [{"read_lab"}] * 2

        history = await client.get(service.chat_url() + f"/sessions/{session_id}/history")
        questions = [m for m in history.json()["messages"] if m["role"] == "user"]
        changes = {q["content"]: q["metadata"].get("mode_change") for q in questions}
    assert changes == {
        "one": None,
        "two": {"from": TEACHING, "to": AUTOMATION},
        "three": None,
        "four": {"from": AUTOMATION, "to": TEACHING},
        "five": None,
    }
    assert history.json()["copilot_mode"] == TEACHING


async def test_the_operators_policy_bounds_the_switch() -> None:
    policy = PolicyBook(OperatorPolicy(users={"alice": PolicyRule(max_mode=TEACHING)}))
    async with run_service(policy=policy) as service, service.client() as client:
        service.model.default = text_reply("ok")
        session_id = await send(client, service, {"message": "one"})
        allowed = await client.get("/v3/copilot/policy")
        assert allowed.json()["modes"] == [TEACHING]
        refused = await client.post(
            service.chat_url() + "/stream",
            json={"message": "two", "session_id": session_id, "copilot_mode": AUTOMATION},
        )
        assert refused.status_code == 403, refused.text
        history = await client.get(service.chat_url() + f"/sessions/{session_id}/history")
    assert history.json()["copilot_mode"] == TEACHING
    assert [m["content"] for m in history.json()["messages"] if m["role"] == "user"] == ["one"]


async def test_a_question_asked_again_keeps_where_the_mode_changed() -> None:
    from copilot_core.errors import LLMUnavailableError

    async with run_service() as service, service.client() as client:
        service.model.default = text_reply("ok")
        session_id = await send(client, service, {"message": "one"})
        service.model.add([LLMUnavailableError("The LLM cannot be reached.")])
        body = {"message": "two", "session_id": session_id, "copilot_mode": AUTOMATION}
        async with client.stream("POST", service.chat_url() + "/stream", json=body) as failed:
            assert [e.type for e in await collect_until_done(failed)][-2:] == ["error", "done"]
        history = await client.get(service.chat_url() + f"/sessions/{session_id}/history")
        question = history.json()["messages"][-1]
        assert question["metadata"]["incomplete"]["reason"] == "error"
        # Retry: the same question in place of the failed turn, the chat already switched.
        retry = {"message": "two", "session_id": session_id, "replace_from": question["id"]}
        await send(client, service, retry)
        history = await client.get(service.chat_url() + f"/sessions/{session_id}/history")
    questions = [m for m in history.json()["messages"] if m["role"] == "user"]
    assert [q["content"] for q in questions] == ["one", "two"]
    assert questions[1]["metadata"]["mode_change"] == {"from": TEACHING, "to": AUTOMATION}
    assert "incomplete" not in questions[1]["metadata"]
    assert history.json()["copilot_mode"] == AUTOMATION
