"""The example agent in examples/ run as a real external agent against a GNS3-shaped
REST server on 127.0.0.1 (a fake outer edge: the test is about the agent program)."""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

from adapters.subprocess_agent import AgentConfig, SubprocessAgentBackend
from copilot_core import AbortToken, Conversation, CopilotMode, ToolContext
from copilot_core.events import AnswerEvent, StepCompleted, ToolEndEvent
from copilot_core.ports import AgentRunConfig
from copilot_core.testing import SequentialIds, SteppingClock

EXAMPLE = Path(__file__).parents[3] / "examples" / "gns3_lab_agent"
TOPOLOGY = json.loads((EXAMPLE / "sample_topology.json").read_text())
PROJECT = "0f6b6f3e-1111-4c1e-9a57-2b9b0c1d2e3f"
TOKEN = "jwt-for-the-lab"


class _Gns3Like(BaseHTTPRequestHandler):
    seen_tokens: ClassVar[list[str | None]] = []

    def do_GET(self) -> None:
        auth = self.headers.get("Authorization")
        self.seen_tokens.append(auth)
        if auth != f"Bearer {TOKEN}":
            self._send(401, {"message": "Could not validate credentials"})
            return
        prefix = f"/v3/projects/{PROJECT}/"
        kind = self.path.removeprefix(prefix)
        if not self.path.startswith(prefix) or kind not in TOPOLOGY:
            self._send(404, {"message": "not found"})
            return
        self._send(200, TOPOLOGY[kind])

    def _send(self, status: int, body: object) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        return


@pytest.fixture
def gns3_url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Gns3Like)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _Gns3Like.seen_tokens = []
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def lab_agent(gns3_url: str, pass_token: bool = True) -> SubprocessAgentBackend:
    config = AgentConfig(
        id="lab-reader",
        name="Lab reader",
        description="Answers from the lab's topology without an LLM.",
        command=[sys.executable, str(EXAMPLE / "lab_agent.py")],
        pass_token=pass_token,
        time_limit=30,
    )
    return SubprocessAgentBackend(
        config, gns3_url=gns3_url, clock=SteppingClock(), ids=SequentialIds()
    )


async def ask(backend: SubprocessAgentBackend, query: str) -> tuple[str, list[StepCompleted]]:
    context = ToolContext(
        project_id=PROJECT,
        user_id="alice",
        session_id="s",
        mode=CopilotMode.TEACHING_ASSISTANT,
        abort=AbortToken(),
        credentials=TOKEN,
    )
    events = [e async for e in backend.run(query, [], AgentRunConfig(context=context))]
    answer = next(e.content for e in events if isinstance(e, AnswerEvent))
    return answer, [e for e in events if isinstance(e, StepCompleted)]


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("Which nodes are stopped?", "1 of 3 nodes are not started: R2."),
        (
            "what is connected to R1?",
            "Links of R1 (2):\n- R1 f0/0 ↔ R2 f0/0\n- R1 f0/1 ↔ PC1 Ethernet0 (suspended)",
        ),
        ("which are running", "2 of 3 nodes are started: PC1, R1."),
    ],
)
async def test_the_example_agent_answers_from_the_gns3_topology(
    gns3_url: str, question: str, expected: str
) -> None:
    answer, steps = await ask(lab_agent(gns3_url), question)
    assert answer == expected
    messages = [m for step in steps for m in step.messages]
    assert Conversation(messages).is_complete
    assert json.loads(messages[1].content)["summary"].startswith("3 nodes, 2 links")
    assert messages[-1].content == expected
    assert _Gns3Like.seen_tokens == [f"Bearer {TOKEN}"] * 2


async def test_without_the_token_the_example_agent_explains_what_is_missing(
    gns3_url: str,
) -> None:
    backend = lab_agent(gns3_url, pass_token=False)
    context = ToolContext(
        project_id=PROJECT,
        user_id="alice",
        session_id="s",
        mode=CopilotMode.TEACHING_ASSISTANT,
        abort=AbortToken(),
        credentials=TOKEN,
    )
    events = [e async for e in backend.run("summary", [], AgentRunConfig(context=context))]
    ended = next(e for e in events if isinstance(e, ToolEndEvent))
    assert ended.status == "error"
    answer = next(e.content for e in events if isinstance(e, AnswerEvent))
    assert "GNS3 answered 401" in answer and "pass_token: true" in answer
    assert _Gns3Like.seen_tokens == [None]
