"""The smoke of the newest allowed dependencies (``.ci/smoke-unpinned`` runs it in a venv
resolved without ``constraints.txt``; the main suite runs it with the pins): the service
as ``serve`` builds it, LLM settings stored for the scripted OpenAI-compatible server
(the real OpenAI wire protocol, on 127.0.0.1), one turn with a tool call to ``done``,
through the real provider SDK (langchain-openai, openai and its HTTP client).

An SDK release that refuses what the service hands it (openai 3.63 refused the
``httpx.Timeout`` langchain-openai passed on: every turn was a 500) fails this test.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from copilot_core.testing import FakeToolExecutor
from tests.api.conftest import OPEN, collect_until_done
from tests.api.real_app import real_app
from tests.fakes.openai_server import Reply, ScriptedOpenAIServer, ToolCallScript

API_KEY = "sk-smoke-4Fq9wX2e"


@pytest.fixture
def llm() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer(api_key=API_KEY, default=Reply(text="Lab")) as server:
        yield server


async def test_a_served_turn_calls_a_tool_through_the_openai_wire_and_ends_done(
    tmp_path: Path, llm: ScriptedOpenAIServer
) -> None:
    tools = FakeToolExecutor().add("show_ip", lambda args, context: "PC1: 10.0.0.1/24")
    async with real_app(tmp_path / "data", tools=tools) as app, app.client() as http:
        stored = await http.put(
            "/v3/copilot/llm-config",
            json={
                "provider": "openai_compatible",
                "model": "gpt-smoke",
                "base_url": llm.base_url,
                "api_key": API_KEY,
                "connect_timeout": 5,  # the connection's own wait reaches the SDK's client
            },
        )
        assert stored.status_code == 200, stored.text
        tested = await http.post("/v3/copilot/llm-config/test")
        assert tested.status_code == 200, tested.text
        llm.add(
            Reply(tool_calls=[ToolCallScript("show_ip", {"device": "PC1"})]),
            Reply(text="PC1 has 10.0.0.1/24."),
        )
        async with http.stream(
            "POST", app.chat_url(), json={"message": "What is PC1's address?"}
        ) as response:
            assert response.status_code == 200, await response.aread()
            session_id = response.headers["x-session-id"]
            events = await collect_until_done(response)
        page = await app.store.history(OPEN, session_id)
    kinds = [event.type for event in events]
    assert "error" not in kinds, [e.data for e in events if e.type == "error"]
    assert kinds[-1] == "done"
    (end,) = [e.data for e in events if e.type == "tool_end"]
    assert "10.0.0.1/24" in end["tool_output"]
    answer = "".join(e.data["content"] for e in events if e.type == "content")
    assert answer == "PC1 has 10.0.0.1/24."
    turn = [r for r in llm.requests if r.tools]
    assert len(turn) == 2 and turn[0].bearer_token == API_KEY and turn[0].stream
    assert "show_ip" in [tool["function"]["name"] for tool in turn[0].tools]
    assert [m.role.value for m in page.messages] == ["user", "assistant", "tool", "assistant"]
