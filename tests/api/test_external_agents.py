"""External agent programs through the HTTP API, in both wire protocols (spec 002)."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from adapters.subprocess_agent import AgentConfig, build_agent_backends
from adapters.web._gaia import GAIA_EVENT_TYPES
from copilot_core.testing import text_reply, tool_reply

from .conftest import Service, collect_until_done, run_service

AGENTS = Path(__file__).parents[1] / "adapters" / "subprocess_agent" / "agents"


@pytest.fixture
async def service() -> AsyncIterator[Service]:
    config = AgentConfig(
        id="lab-facts",
        name="Lab facts",
        description="A separate program speaking JSON lines",
        command=[sys.executable, str(AGENTS / "well_behaved.py")],
    )
    async with run_service(extra_agents=build_agent_backends([config])) as running:
        yield running


async def test_capabilities_and_agents_list_every_agent(service: Service) -> None:
    async with service.client() as client:
        capabilities = (await client.get("/v3/copilot/capabilities")).json()
        agents = (await client.get("/v3/copilot/agents")).json()
    assert capabilities["backend"] == "python"
    assert {a["id"] for a in capabilities["agents"]} == {"copilot", "lab-facts"}
    listed = {a["id"]: a for a in agents["agents"]}
    assert listed["lab-facts"]["name"] == "Lab facts"
    assert listed["lab-facts"]["capabilities"]["backend"] == "external"
    assert agents["default"] == "copilot"


async def test_an_external_agent_turn_streams_and_is_kept_in_the_history(service: Service) -> None:
    async with service.client() as client:
        body = {"message": "what runs?", "agent_id": "lab-facts"}
        async with client.stream("POST", f"{service.chat_url()}/stream", json=body) as response:
            assert response.status_code == 200
            events = await collect_until_done(response)
        kinds = [e.type for e in events]
        for kind in (
            "plan",
            "step",
            "thinking",
            "tool_call",
            "tool_start",
            "tool_end",
            "content",
            "answer",
        ):
            assert kind in kinds, kind
        assert kinds[-1] == "done"
        session_id = events[0].data["session_id"]
        history = (await client.get(f"{service.chat_url()}/sessions/{session_id}/history")).json()
    roles = [m["role"] for m in history["messages"]]
    assert roles == ["user", "assistant", "tool", "assistant"]
    assert history["messages"][1]["tool_calls"][0]["function"]["name"] == "list_nodes"
    assert history["messages"][-1]["content"] == "You asked: what runs? (history 0)"
    assert events[-1].data["message_id"] == history["messages"][-1]["id"]
    assert service.model.calls == []  # the built-in model was never asked


async def test_the_gaia_protocol_speaks_spec_002s_vocabulary(service: Service) -> None:
    async with service.client() as client:
        body = {"message": "what runs?", "agent_id": "lab-facts"}
        url = f"{service.chat_url()}/stream?protocol=gaia"
        async with client.stream("POST", url, json=body) as response:
            assert response.status_code == 200
            events = await collect_until_done(response)
    kinds = [e.type for e in events]
    assert set(kinds) <= GAIA_EVENT_TYPES
    assert kinds[-1] == "done"
    assert kinds.index("tool_start") < kinds.index("tool_args") < kinds.index("tool_result")
    assert kinds.index("tool_result") < kinds.index("tool_end")
    result = next(e.data for e in events if e.type == "tool_result")
    # The agent's own tool_result comes back as it sent it.
    assert (result["title"], result["summary"], result["success"]) == ("Nodes", "2 nodes", True)
    assert result["result_data"] == {"nodes": ["R1", "R2"]}
    chunks = "".join(e.data["content"] for e in events if e.type == "chunk")
    assert chunks == "You asked: what runs?"
    done = events[-1].data
    assert done["content"] == "You asked: what runs? (history 0)"
    assert done["message_id"]
    assert all(e.data["session_id"] == done["session_id"] for e in events)
    assert [e.id for e in events if e.type == "tool_result"] == [
        None
    ]  # the group's id is on tool_end


async def test_the_built_in_agent_in_the_gaia_protocol(service: Service) -> None:
    service.model.add(text_reply("Two routers."))  # no tools: chunks and done only
    async with service.client() as client:
        url = f"{service.chat_url()}/stream?protocol=gaia"
        async with client.stream("POST", url, json={"message": "hi"}) as response:
            events = await collect_until_done(response)
    assert [e.type for e in events] == ["chunk"] * 3 + ["done"]
    assert events[-1].data["content"] == "Two routers."


async def test_an_unknown_agent_or_protocol_is_refused(service: Service) -> None:
    async with service.client() as client:
        unknown = await client.post(
            f"{service.chat_url()}/stream", json={"message": "hi", "agent_id": "nope"}
        )
        assert unknown.status_code == 404
        assert "available agents: copilot, lab-facts" in unknown.json()["detail"]
        bad = await client.post(
            f"{service.chat_url()}/stream?protocol=morse", json={"message": "hi"}
        )
        assert bad.status_code == 422
        assert "protocol" in bad.json()["detail"]
    assert await service.store.list_sessions("project-open", "u-alice") == []


ANSWER_ONLY = """
import json, sys
print(json.dumps({"type": "thinking", "content": "counting nodes"}), flush=True)
print(json.dumps({"type": "answer", "content": "There are 2 nodes.", "steps": 1}), flush=True)
"""


@pytest.mark.parametrize(("protocol", "text_type"), [("copilot", "content"), ("gaia", "chunk")])
async def test_an_agent_that_does_not_stream_still_shows_its_answer(
    tmp_path: Path, protocol: str, text_type: str
) -> None:
    program = tmp_path / "answer_only.py"
    program.write_text(ANSWER_ONLY)
    config = AgentConfig(id="quiet", name="Quiet", command=[sys.executable, str(program)])
    backends = build_agent_backends([config])
    async with run_service(extra_agents=backends) as running, running.client() as client:
        url = f"{running.chat_url()}/stream?protocol={protocol}"
        body = {"message": "how many?", "agent_id": "quiet"}
        async with client.stream("POST", url, json=body) as response:
            events = await collect_until_done(response)
    texts = [e.data["content"] for e in events if e.type == text_type]
    answers = [e.data["content"] for e in events if e.type == "answer"]
    assert answers == ["There are 2 nodes."]
    if protocol == "copilot":  # spec 000 clients render content events: they get the answer
        assert texts == ["There are 2 nodes."]
    else:  # spec 002 clients render the answer event; no duplicate chunk
        assert texts == []
        assert events[-1].data["content"] == "There are 2 nodes."


async def test_a_built_in_tool_in_the_gaia_protocol(service: Service) -> None:
    service.tools.add(
        "gns3_topology_reader",
        lambda args, ctx: {"nodes": ["PC1"]},
        title=lambda args: "Read the lab's topology",
    )
    service.model.add(tool_reply(("gns3_topology_reader", {})), text_reply("One PC."))
    async with service.client() as client:
        url = f"{service.chat_url()}/stream?protocol=gaia"
        async with client.stream("POST", url, json={"message": "lab?"}) as response:
            events = await collect_until_done(response)
    result = next(e.data for e in events if e.type == "tool_result")
    assert (result["title"], result["success"]) == ("gns3_topology_reader", True)
    assert result["result_data"] == {"nodes": ["PC1"]}
    assert [e.data["args"] for e in events if e.type == "tool_args"] == [{}]
    # spec 002's detail says the call in plain words
    assert [e.data["detail"] for e in events if e.type == "tool_args"] == [
        "Read the lab's topology"
    ]
