"""The whole product with real processes: ``gns3-copilot serve`` as a subprocess, a real
gns3-server, and the scripted OpenAI-compatible server speaking the real wire protocol.

One user works through a session the way a person would; a second GNS3 user sees none
of it. Everything talks to 127.0.0.1 only, with bounded waits.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from httpx_sse import connect_sse

from tests.fakes.copilot_service import ServedCopilot as Service
from tests.fakes.copilot_service import serve_copilot
from tests.fakes.gns3_server import RealGns3Server
from tests.fakes.openai_server import Reply, ScriptedOpenAIServer, ToolCallScript

pytestmark = [pytest.mark.timeout(300), pytest.mark.gns3]

API_KEY = "sk-e2e-very-secret-key"


@pytest.fixture(scope="module")
def llm() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer(api_key=API_KEY) as server:
        yield server


@pytest.fixture(scope="module")
def service(
    gns3_server: RealGns3Server, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Service]:
    root = tmp_path_factory.mktemp("service")
    with serve_copilot(gns3_server.url, root, env={"COPILOT_HEARTBEAT_INTERVAL": "0.2"}) as served:
        yield served


@pytest.fixture(scope="module")
def admin(gns3_server: RealGns3Server) -> str:
    return gns3_server.token()


@pytest.fixture(scope="module")
def project(gns3_server: RealGns3Server, admin: str) -> Iterator[str]:
    headers = {"Authorization": f"Bearer {admin}"}
    response = httpx.post(
        f"{gns3_server.url}/v3/projects", json={"name": f"e2e-{time.time_ns()}"}, headers=headers
    )
    assert response.status_code == 201, response.text
    project_id = str(response.json()["project_id"])
    yield project_id
    httpx.delete(f"{gns3_server.url}/v3/projects/{project_id}", headers=headers, timeout=30)


@pytest.fixture(scope="module")
def configured(service: Service, admin: str, llm: ScriptedOpenAIServer) -> str:
    """Admin's LLM settings, stored once for the module."""
    with service.api(admin) as api:
        stored = api.put(
            "/llm-config",
            json={
                "provider": "openai",
                "model": "gpt-e2e",
                "base_url": llm.base_url,
                "api_key": API_KEY,
            },
        )
        assert stored.status_code == 200, stored.text
        assert stored.json()["api_key_set"] is True
        assert API_KEY not in stored.text
    return admin


def stream(api: httpx.Client, project: str, body: dict[str, Any], **headers: str) -> list[Any]:
    """POST a turn and read its SSE stream to the end, approving every change it asks
    about (as the person at the page would, with the approval endpoint)."""
    events = []
    with connect_sse(
        api, "POST", f"/projects/{project}/chat/stream", json=body, headers=headers
    ) as source:
        assert source.response.status_code == 200, source.response.read()
        for event in source.iter_sse():
            events.append(event)
            data = json.loads(event.data)
            if data["type"] == "approval_required":
                decided = api.post(
                    f"/projects/{project}/chat/sessions/{data['session_id']}"
                    f"/approvals/{data['approval_id']}",
                    json={"decision": "approve"},
                )
                assert decided.status_code == 200, decided.text
    return events


def payloads(events: list[Any]) -> list[dict[str, Any]]:
    return [json.loads(event.data) for event in events]


def test_a_user_builds_a_lab_through_the_copilot(
    service: Service,
    configured: str,
    project: str,
    llm: ScriptedOpenAIServer,
    gns3_server: RealGns3Server,
) -> None:
    llm.add(
        Reply(tool_calls=[ToolCallScript("gns3_topology_reader", {})], usage=(300, 20)),
        Reply(
            tool_calls=[
                ToolCallScript(
                    "create_gns3_node", {"nodes": [{"template_name": "VPCS", "name": "PC1"}]}
                )
            ],
            usage=(400, 30),
        ),
        Reply(text="I created PC1, a VPCS host. Start it when you are ready.", usage=(500, 40)),
        Reply(text="Adding a VPCS host", usage=(50, 5)),  # the title
    )
    with service.api(configured) as api:
        events = payloads(stream(api, project, {"message": "Add a VPCS host called PC1"}))
        kinds = [e["type"] for e in events]
        assert kinds[-1] == "done"
        session_id = events[0]["session_id"]
        ends = [e for e in events if e["type"] == "tool_end"]
        assert [e["tool_name"] for e in ends] == ["gns3_topology_reader", "create_gns3_node"]
        assert all(e["status"] == "success" for e in ends), ends
        created = json.loads(ends[1]["tool_output"])
        assert created["results"][0]["device_name"] == "PC1"
        # Creating a node is a change: it waited for approval, with its exact preview.
        (asked,) = [e for e in events if e["type"] == "approval_required"]
        assert asked["tool_name"] == "create_gns3_node"
        assert asked["preview"]["topology"] == ["create PC1 from template VPCS"]
        assert kinds.index("approval_resolved") < kinds.index(
            "tool_end", kinds.index("tool_end") + 1
        )

        # The node is really in GNS3.
        nodes = httpx.get(
            f"{gns3_server.url}/v3/projects/{project}/nodes",
            headers={"Authorization": f"Bearer {configured}"},
        ).json()
        assert [n["name"] for n in nodes] == ["PC1"]
        # The system prompt stays the same (a cached prefix); the lab's state goes with the
        # user's latest message: empty at first, the new node after the change.
        prompts = [r.body["messages"] for r in llm.requests[-4:-1]]
        assert prompts[0][0]["content"] == prompts[2][0]["content"]
        labs = [json.dumps(messages[1:]).split("</lab>")[0] for messages in prompts]
        assert "<lab>" in labs[0] and "PC1" not in labs[0] and "PC1" in labs[2]

        history = api.get(f"/projects/{project}/chat/sessions/{session_id}/history").json()
        roles = [m["role"] for m in history["messages"]]
        assert roles == ["user", "assistant", "tool", "assistant", "tool", "assistant"]
        assert history["messages"][-1]["id"] == events[-1]["message_id"]
        assert history["messages"][4]["metadata"]["approval"]["decision"] == "approve"
        sessions = api.get(f"/projects/{project}/chat/sessions").json()
        mine = next(s for s in sessions if s["thread_id"] == session_id)
        assert mine["title"] == "Adding a VPCS host"
        assert (mine["message_count"], mine["llm_calls_count"]) == (6, 3)
        assert (mine["input_tokens"], mine["output_tokens"], mine["total_tokens"]) == (
            1200,
            90,
            1290,
        )

    # The key never reached a log or a database file in clear.
    assert API_KEY not in service.log.read_text()
    for path in service.data_dir.rglob("*"):
        if path.is_file():
            assert API_KEY.encode() not in path.read_bytes(), path


def test_sessions_are_listed_pinned_first_renamed_and_deleted(
    service: Service, configured: str, project: str, llm: ScriptedOpenAIServer
) -> None:
    llm.clear()
    with service.api(configured) as api:
        ids = []
        for word in ("first", "second"):
            llm.add(Reply(text=f"answer {word}"), Reply(text=f"Title {word}"))
            ids.append(payloads(stream(api, project, {"message": word}))[0]["session_id"])
        first, second = ids
        assert api.put(f"/projects/{project}/chat/sessions/{first}/pin").json()["pinned"] is True
        listed = [s["thread_id"] for s in api.get(f"/projects/{project}/chat/sessions").json()]
        assert listed.index(first) == 0 and listed.index(second) == 1
        renamed = api.patch(
            f"/projects/{project}/chat/sessions/{second}", json={"title": "OSPF notes"}
        )
        assert renamed.json()["title"] == "OSPF notes"
        assert (
            api.patch(f"/projects/{project}/chat/sessions/{second}", json={"title": ""}).status_code
            == 422
        )
        assert api.delete(f"/projects/{project}/chat/sessions/{second}").status_code == 204
        assert api.get(f"/projects/{project}/chat/sessions/{second}/history").status_code == 404


def test_a_slow_turn_is_aborted_mid_stream_and_keeps_its_partial_answer(
    service: Service, configured: str, project: str, llm: ScriptedOpenAIServer
) -> None:
    llm.clear()
    llm.add(Reply(text="word " * 400, chunk=5, token_delay=0.02))  # aborted: no title call
    with service.api(configured) as api:
        url = f"/projects/{project}/chat/stream"
        with connect_sse(api, "POST", url, json={"message": "talk slowly"}) as source:
            seen: list[dict[str, Any]] = []
            for event in source.iter_sse():
                seen.append(json.loads(event.data))
                if len(seen) == 3:
                    session_id = seen[0]["session_id"]
                    aborted = api.post(f"/projects/{project}/chat/sessions/{session_id}/abort")
                    assert aborted.json()["status"] == "ok"
        kinds = [e["type"] for e in seen]
        assert kinds[-2:] == ["abort", "done"]
        assert kinds.count("content") < 100  # stopped long before the 400 words
        history = api.get(f"/projects/{project}/chat/sessions/{session_id}/history").json()
        last = history["messages"][-1]
        assert last["role"] == "assistant" and last["metadata"]["aborted"] is True
        assert last["content"].startswith("word word")


def test_a_dropped_connection_reattaches_with_last_event_id_and_misses_nothing(
    service: Service, configured: str, project: str, llm: ScriptedOpenAIServer
) -> None:
    llm.clear()
    llm.add(Reply(text="token " * 60, chunk=6, token_delay=0.02), Reply(text="Resume"))
    with service.api(configured) as api:
        with connect_sse(
            api, "POST", f"/projects/{project}/chat/stream", json={"message": "resume me"}
        ) as source:
            before = []
            for event in source.iter_sse():
                if json.loads(event.data)["type"] != "heartbeat":
                    before.append(event)
                if len(before) == 5:
                    break  # the client goes away mid-turn
        session_id = json.loads(before[0].data)["session_id"]
        url = f"/projects/{project}/chat/sessions/{session_id}/stream"
        with connect_sse(api, "GET", url, headers={"Last-Event-ID": before[-1].id}) as source:
            assert source.response.status_code == 200
            after = [e for e in source.iter_sse() if json.loads(e.data)["type"] != "heartbeat"]
        seqs = [int(e.id.rsplit(":", 1)[1]) for e in before + after]
        assert seqs == list(range(1, len(seqs) + 1))  # no gap, no duplicate
        assert json.loads(after[-1].data)["type"] == "done"
        text = "".join(json.loads(e.data).get("content", "") for e in before + after)
        assert text == "token " * 60
        # The turn is over and the client has seen all of it: nothing left to send.
        seen_all = {"Last-Event-ID": after[-1].id}
        assert api.get(url, headers=seen_all).status_code == 204


def test_a_second_gns3_user_sees_nothing_of_the_first(
    service: Service, configured: str, project: str, gns3_server: RealGns3Server
) -> None:
    other = gns3_server.create_user(f"e2e-{time.time_ns() % 10**8}", "Other-password-1")
    with service.api(configured) as api:
        sessions = api.get(f"/projects/{project}/chat/sessions").json()
        assert sessions, "the first user has sessions"
        session_id = sessions[0]["thread_id"]
    with service.api(other) as api:
        assert api.get(f"/projects/{project}/chat/sessions").status_code == 404
        assert api.get(f"/projects/{project}/chat/sessions/{session_id}/history").status_code == 404
        assert api.get("/llm-config").status_code == 404  # no settings of their own
        assert (
            api.post(f"/projects/{project}/chat/stream", json={"message": "hi"}).status_code == 404
        )
    with httpx.Client(base_url=f"{service.url}/v3/copilot", timeout=10) as anonymous:
        assert anonymous.get(f"/projects/{project}/chat/sessions").status_code == 401


def test_an_approved_change_is_undone_from_the_page_and_the_undo_undone(
    service: Service,
    configured: str,
    project: str,
    llm: ScriptedOpenAIServer,
    gns3_server: RealGns3Server,
) -> None:
    llm.clear()
    llm.add(
        Reply(
            tool_calls=[
                ToolCallScript(
                    "create_gns3_node", {"nodes": [{"template_name": "VPCS", "name": "Undo1"}]}
                )
            ]
        ),
        Reply(text="Undo1 is there."),
        Reply(text="Undo test"),
    )

    def names() -> list[str]:
        nodes = httpx.get(
            f"{gns3_server.url}/v3/projects/{project}/nodes",
            headers={"Authorization": f"Bearer {configured}"},
        ).json()
        return sorted(n["name"] for n in nodes)

    with service.api(configured) as api:
        events = payloads(stream(api, project, {"message": "Add Undo1"}))
        session_id = events[0]["session_id"]
        (created,) = [e for e in events if e["type"] == "tool_end"]
        point_id = json.loads(created["tool_output"])["restore_point_id"]
        assert "Undo1" in names()
        # The tool message keeps it in its metadata, for the page's "Undo" on history.
        history = api.get(f"/projects/{project}/chat/sessions/{session_id}/history").json()
        (tool_message,) = [m for m in history["messages"] if m["role"] == "tool"]
        assert tool_message["metadata"]["restore_point_id"] == point_id
        base = f"/projects/{project}/chat/sessions/{session_id}/restore-points"
        answer = api.get(base)
        assert isinstance(answer.json(), list), (answer.status_code, answer.text)
        (listed,) = answer.json()
        assert (listed["id"], listed["tool_name"]) == (point_id, "create_gns3_node")
        assert listed["topology"] is True

        rolled = api.post(f"{base}/{point_id}/rollback", params={"use_snapshot": "false"})
        assert rolled.status_code == 200, rolled.text
        body = rolled.json()
        assert body["status"] == "success", body
        (topology,) = body["results"]
        assert topology["output"]["state"] == "as before the change"
        assert "Undo1" not in names()

        # The rollback had its own restore point: undoing it brings Undo1 back.
        again = api.post(
            f"{base}/{body['restore_point_id']}/rollback", params={"use_snapshot": "false"}
        )
        assert again.status_code == 200, again.text
        assert again.json()["status"] == "success", again.json()
        assert "Undo1" in names()
        assert len(api.get(base).json()) == 3  # the change's, the rollback's, the undo's
