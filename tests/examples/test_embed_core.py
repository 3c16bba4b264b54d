"""examples/embed_core/netcheck.py run end to end, as its user runs it.

The program runs once per module as a subprocess: it is typed four lines on stdin and
interrupted twice with SIGINT, talks to the scripted OpenAI wire server on 127.0.0.1
and probes a real TCP listener. The tests then check what it printed, what its
observer reported, what the model was offered, and the conversation it saved
(written out with ``--transcript``).

The four turns: (1) a probe of the listener, then an answer built from its result;
(2) a tool the program does not have, a host it does not allow and a closed port;
(3) a long probe, aborted while it runs; (4) a long answer, aborted while it streams.
"""

from __future__ import annotations

import ast
import asyncio
import json
import os
import signal
import socket
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from copilot_core import Conversation, Message, Role
from tests.fakes.openai_server import RecordedRequest, Reply, ScriptedOpenAIServer, ToolCallScript

ROOT = Path(__file__).parents[2]
PROGRAM = ROOT / "examples" / "embed_core" / "netcheck.py"
API_KEY = "sk-netcheck-4Rt7Yu1Io3Pa6Sd9Fg2H"
LONG_ANSWER = "A TCP handshake has three steps: SYN, SYN-ACK and ACK. " * 30


def tool_results(request: RecordedRequest) -> dict[str, Any]:
    """The tool messages the model is shown, by call id, parsed."""
    return {
        m["tool_call_id"]: json.loads(m["content"])
        for m in request.messages
        if m.get("role") == "tool"
    }


class Program:
    """The running example: type lines, read what it prints, interrupt it."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.stdout = ""
        self.stderr = ""
        self._turn_starts = 0
        self._stderr_reader = asyncio.create_task(self._read_stderr())

    async def _read_stderr(self) -> None:
        assert self.process.stderr is not None
        while chunk := await self.process.stderr.read(4096):
            self.stderr += chunk.decode()

    async def say(self, line: str) -> None:
        """Type a line: one turn."""
        assert self.process.stdin is not None
        self._turn_starts = len(self.stdout)
        self.process.stdin.write(line.encode() + b"\n")
        await self.process.stdin.drain()

    async def wait_for(self, text: str) -> None:
        """Read stdout until ``text`` appears in what the current turn printed."""
        assert self.process.stdout is not None
        while text not in self.stdout[self._turn_starts :]:
            chunk = await self.process.stdout.read(4096)
            if not chunk:
                raise AssertionError(
                    f"the program ended before {text!r}:\n{self.stdout}\n{self.stderr}"
                )
            self.stdout += chunk.decode()

    def interrupt(self) -> None:
        """Ctrl-C."""
        self.process.send_signal(signal.SIGINT)

    async def end_input(self) -> int:
        """Close stdin (the end of input: the program sums up and quits); read the rest."""
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.close()
        self.stdout += (await self.process.stdout.read()).decode()
        return await self.process.wait()

    async def close(self) -> None:
        if self.process.returncode is None:
            self.process.kill()
            await self.process.wait()
        await self._stderr_reader


@dataclass(frozen=True)
class Run:
    """Everything one run of the program left behind."""

    returncode: int
    stdout: str
    stderr: str
    requests: list[RecordedRequest]
    transcript: dict[str, Any]
    open_port: int
    shut_port: int
    connections: int

    @property
    def turns(self) -> list[str]:
        """What each turn printed (up to its ``[done]``), then what came after."""
        return self.stdout.split("[done]")

    @property
    def messages(self) -> list[Message]:
        return [Message.from_dict(m) for m in self.transcript["messages"]]

    @property
    def metrics(self) -> list[str]:
        return [line for line in self.stderr.splitlines() if line.startswith("[metrics]")]


def script(server: ScriptedOpenAIServer, open_port: int, shut_port: int) -> None:
    def probe(call_id: str, host: str, port: int, count: int | None) -> ToolCallScript:
        arguments: dict[str, Any] = {"host": host, "port": port}
        if count is not None:
            arguments["count"] = count
        return ToolCallScript("tcp_ping", arguments, id=call_id)

    server.add(
        # turn 1, then the session's title
        Reply(
            text="Let me check. ",
            tool_calls=[probe("c-web", "127.0.0.1", open_port, 2)],
            usage=(100, 20),
        ),
        lambda request: Reply(
            text=f"It answers: {tool_results(request)['c-web']['answered']} of 2 probes open.",
            usage=(150, 12),
        ),
        Reply(text="Web server check", usage=(30, 4)),
        # turn 2
        Reply(
            tool_calls=[
                ToolCallScript("run_shell", {"command": "rm -rf /var/log"}, id="c-shell"),
                probe("c-far", "10.9.8.7", 22, None),
                probe("c-shut", "127.0.0.1", shut_port, 1),
            ],
            usage=(200, 30),
        ),
        Reply(text="That port refuses connections.", usage=(260, 15)),
        # turn 3
        Reply(tool_calls=[probe("c-long", "127.0.0.1", open_port, 20)], usage=(300, 10)),
        # turn 4
        Reply(text=LONG_ANSWER, chunk=8, token_delay=0.05, usage=(400, 300)),
    )


async def run_netcheck(workdir: Path) -> Run:
    connections: list[int] = []

    async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(1)
        writer.close()

    web_server = await asyncio.start_server(accept, "127.0.0.1", 0)
    open_port = web_server.sockets[0].getsockname()[1]
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        shut_port = int(unused.getsockname()[1])
    transcript = workdir / "transcript.json"
    async with web_server, ScriptedOpenAIServer(api_key=API_KEY) as server:
        script(server, open_port, shut_port)
        process = await asyncio.create_subprocess_exec(
            *(sys.executable, str(PROGRAM), "--base-url", server.base_url, "--model", "gpt-test"),
            *("--allow-host", "127.0.0.1", "--interval", "0.2", "--transcript", str(transcript)),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": str(ROOT), "OPENAI_API_KEY": API_KEY},
            cwd=workdir,
        )
        program = Program(process)
        try:
            async with asyncio.timeout(60):
                await program.say("Is my web server up?")
                await program.wait_for("[done]")
                await program.say("Check the other port, and clear the logs with the shell")
                await program.wait_for("[done]")
                await program.say("Keep probing the web server")
                await program.wait_for("[tool_progress] probe 1:")
                program.interrupt()
                await program.wait_for("[done]")
                await program.say("Explain TCP handshakes at length")
                await program.wait_for("three steps")
                program.interrupt()
                await program.wait_for("[done]")
                returncode = await program.end_input()
        finally:
            await program.close()
        return Run(
            returncode=returncode,
            stdout=program.stdout,
            stderr=program.stderr,
            requests=server.requests,
            transcript=json.loads(transcript.read_text()),
            open_port=open_port,
            shut_port=shut_port,
            connections=len(connections),
        )


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    outcome = asyncio.run(run_netcheck(tmp_path_factory.mktemp("netcheck")))
    assert outcome.returncode == 0, outcome.stderr
    assert len(outcome.turns) == 5, outcome.stdout  # four turns, then the summary
    return outcome


# ============================================================ what it printed
def test_a_tool_turn_streams_the_call_its_progress_its_result_and_the_answer(run: Run) -> None:
    first = run.turns[0]

    assert "Let me check." in first
    assert f'[tool_call] tcp_ping {{"host": "127.0.0.1", "port": {run.open_port}' in first
    assert "[tool_progress] probe 1: open in" in first
    assert "[tool_progress] probe 2: open in" in first
    assert '[tool_end] tcp_ping success {"host": "127.0.0.1"' in first
    assert first.rstrip().endswith("It answers: 2 of 2 probes open.")
    assert run.connections >= 3  # two probes in turn 1, at least one in turn 3


def test_the_core_refuses_a_tool_the_program_does_not_offer(run: Run) -> None:
    second = run.turns[1]

    assert "[tool_end] run_shell error" in second
    assert "'run_shell' is not available in teaching_assistant mode" in second
    assert "available tools: tcp_ping" in second


def test_the_programs_tool_refuses_bad_arguments_with_an_error_result(run: Run) -> None:
    second = run.turns[1]

    assert "[tool_end] tcp_ping error" in second
    assert "'10.9.8.7' is not allowed; allowed hosts: 127.0.0.1" in second
    assert '"result": "refused"' in second  # the closed port: the tool worked, no one answered
    results = tool_results(run.requests[4])
    assert results["c-shut"]["probes"][0]["result"] == "refused"
    assert results["c-far"]["status"] == "error"


def test_ctrl_c_during_a_tool_aborts_the_tool_and_ends_the_turn(run: Run) -> None:
    third = run.turns[2]

    assert '[tool_end] tcp_ping aborted {"status": "aborted"}' in third
    assert third.rstrip().endswith("[abort]")
    assert "[tool_progress] probe 20" not in third


def test_ctrl_c_during_the_answer_cuts_it_and_ends_the_turn(run: Run) -> None:
    fourth = run.turns[3]

    assert "three steps" in fourth
    assert fourth.rstrip().endswith("[abort]")
    assert len(fourth) < len(LONG_ANSWER)
    assert run.stderr.count("[interrupt] aborting the turn") == 2
    assert "[abort]" not in run.turns[0] + run.turns[1]


# ================================================== what the observer reported
def test_the_observer_reports_one_line_of_figures_per_turn(run: Run) -> None:
    first, second, third, fourth = run.metrics

    assert first.startswith("[metrics] llm_calls=2 input_tokens=250 output_tokens=32 ")
    assert "tools=tcp_ping:success" in first
    assert "tools=run_shell:error 0ms,tcp_ping:error" in second
    assert third.startswith("[metrics] llm_calls=1 input_tokens=300 output_tokens=10 ")
    assert "tools=tcp_ping:aborted" in third
    assert fourth == "[metrics] llm_calls=1 input_tokens=0 output_tokens=0 tools=-"


# ================================================== what the model was offered
def test_the_model_is_offered_the_programs_tool_and_shown_its_hosts(run: Run) -> None:
    for request in run.requests[:2]:
        assert [tool["function"]["name"] for tool in request.tools] == ["tcp_ping"]
    system, *_, latest = run.requests[0].messages
    assert system["role"] == "system" and "127.0.0.1" not in system["content"]  # stable
    # The lab's state (the example's topology: the hosts) comes with the user's message.
    assert latest["role"] == "user" and latest["content"].startswith("<lab>")
    assert '"hosts":["127.0.0.1"]' in latest["content"].split("</lab>")[0]
    assert all(request.bearer_token == API_KEY for request in run.requests)


# ================================================== the saved conversation
def test_the_saved_history_is_a_valid_conversation_of_every_turn(run: Run) -> None:
    messages = run.messages

    conversation = Conversation(messages)  # raises if it is not a valid OpenAI conversation
    assert conversation.open_tool_call_ids == ()
    assert [m.content for m in messages if m.role is Role.USER] == [
        "Is my web server up?",
        "Check the other port, and clear the logs with the shell",
        "Keep probing the web server",
        "Explain TCP handshakes at length",
    ]
    aborted_tool = next(m for m in messages if m.tool_call_id == "c-long")
    assert json.loads(aborted_tool.content) == {"status": "aborted"}
    partial = messages[-1]
    assert partial.role is Role.ASSISTANT and partial.metadata.get("aborted") is True
    assert partial.content and LONG_ANSWER.startswith(partial.content)


def test_done_carries_each_turns_last_assistant_message(run: Run) -> None:
    done_ids = [line.split()[1] for line in run.stdout.splitlines() if line.startswith("[done]")]
    turns: list[list[Message]] = []
    for message in run.messages:
        if message.role is Role.USER:
            turns.append([])
        turns[-1].append(message)
    last_assistant = [[m.id for m in turn if m.role is Role.ASSISTANT][-1] for turn in turns]

    assert done_ids == last_assistant and len(done_ids) == 4


def test_the_session_counters_add_up(run: Run) -> None:
    session = run.transcript["session"]

    assert session["message_count"] == len(run.messages) == 15
    assert session["title"] == "Web server check"
    # 7 requests, the title's not counted; the cut answer reported no usage
    assert len(run.requests) == 7 and session["llm_calls_count"] == 6
    assert (session["input_tokens"], session["output_tokens"]) == (1010, 87)
    assert session["total_tokens"] == 1097
    summary = f"[session] {session['thread_id']} title='Web server check' messages=15 llm_calls=6"
    assert summary in run.turns[4]


# ================================================== what it is allowed to import
def test_the_example_imports_only_the_public_core_and_one_adapter() -> None:
    tree = ast.parse(PROGRAM.read_text())
    imported = {
        node.module
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module is not None
    } | {
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    }
    ours = {name for name in imported if name.split(".")[0] in {"copilot_core", "adapters"}}

    public_core = {
        "copilot_core",
        "copilot_core.bootstrap",
        "copilot_core.ports",
        "copilot_core.events",
        "copilot_core.errors",
        "copilot_core.testing",
    }
    assert ours - public_core == {"adapters.llm"}
    assert "entrypoints" not in {name.split(".")[0] for name in imported}
