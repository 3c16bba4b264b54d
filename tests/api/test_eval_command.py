"""``gns3-copilot eval`` against the scripted OpenAI-compatible server (real HTTP): a
model that does each task right passes them all; one that does not fails exactly the
tasks whose lab state or transcript is wrong (the judge reads the lab, not the words
alone)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from entrypoints.cli import main
from tests.fakes.openai_server import RecordedRequest, Reply, ScriptedOpenAIServer, ToolCallScript

ROOT = Path(__file__).resolve().parents[2]

#: What a capable model does for each task's message: (the call, the answer after it).
PLAYBOOK: dict[str, tuple[ToolCallScript | None, str]] = {
    "What is in this lab?": (None, "The lab is empty: it has no nodes and no links."),
    "Add two VPCS PCs named PC1 and PC2.": (
        ToolCallScript(
            "create_gns3_node",
            {
                "nodes": [
                    {"template_name": "VPCS", "name": "PC1"},
                    {"template_name": "VPCS", "name": "PC2"},
                ]
            },
        ),
        "PC1 and PC2 are created.",
    ),
    "Connect PC1 to PC2.": (
        ToolCallScript(
            "create_gns3_link",
            {
                "links": [
                    {"node1": "PC1", "port1": "Ethernet0", "node2": "PC2", "port2": "Ethernet0"}
                ]
            },
        ),
        "Linked.",
    ),
    "Start all nodes.": (ToolCallScript("start_all_gns3_nodes", {}), "Both are started."),
    "Give PC1 the address 10.0.0.1/24 and PC2 10.0.0.2/24.": (
        ToolCallScript(
            "execute_vpcs_commands",
            {
                "device_configs": [
                    {"device_name": "PC1", "commands": ["ip 10.0.0.1/24"]},
                    {"device_name": "PC2", "commands": ["ip 10.0.0.2/24"]},
                ]
            },
        ),
        "Addressed.",
    ),
    "Can PC1 ping PC2?": (
        ToolCallScript(
            "execute_vpcs_commands",
            {"device_configs": [{"device_name": "PC1", "commands": ["ping 10.0.0.2"]}]},
        ),
        "Yes: PC1 can ping PC2 (84 bytes from 10.0.0.2).",
    ),
    "How do I give a VPCS host an IP address?": (
        None,
        "On its console type `ip 10.0.0.1/24 10.0.0.254` (address/prefix, then gateway).",
    ),
    "Configure PC1 with 10.0.0.1/24 for me.": (
        None,
        "In teaching mode I do not change devices: type `ip 10.0.0.1/24` on PC1 yourself.",
    ),
    "PC1 cannot ping PC2. Why?": (
        ToolCallScript("gns3_topology_reader", {}),
        "There is no link between PC1 and PC2: connect them first.",
    ),
}


def capable(request: RecordedRequest) -> Reply:
    messages = request.messages
    asked = next(m["content"] for m in reversed(messages) if m["role"] == "user")
    query = asked.rsplit("</lab>\n\n", 1)[-1]
    call, answer = PLAYBOOK[query]
    if call is None or messages[-1]["role"] == "tool":
        return Reply(text=answer, usage=(300, 20))
    return Reply(tool_calls=[call], usage=(300, 20))


@pytest.fixture
def llm() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer() as server:
        yield server


def test_a_capable_model_passes_every_task_and_the_scores_are_printed_and_written(
    llm: ScriptedOpenAIServer, tmp_path: Path
) -> None:
    llm.default = capable
    out = tmp_path / "scores.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "entrypoints",
            "eval",
            "--base-url",
            llm.base_url,
            "--model",
            "tiny",
            "--tool-set",
            "compact",
            "--json",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=180,
        env=env,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "9/9 tasks passed" in done.stdout
    assert "build" in done.stdout and "diagnose-broken-link" in done.stdout
    scores = json.loads(out.read_text())
    assert scores["passed"] == 9 and scores["tool_set"] == "compact"
    by_task = {s["task"]: s for s in scores["tasks"]}
    assert by_task["build"]["tool_calls"] == 1 and by_task["build"]["repeats"] == 0
    assert by_task["empty-lab"]["tool_calls"] == 0
    assert by_task["ping"]["tokens"] == 640  # two model calls of 300 + 20
    assert all(s["first_token_s"] is not None for s in scores["tasks"])
    # The compact set went over the wire (the 9 everyday tools), not the full one.
    assert all(len(r.tools) <= 9 for r in llm.requests)


def test_a_model_that_only_talks_fails_the_tasks_that_need_the_lab_changed(
    llm: ScriptedOpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    llm.default = Reply(text="Done! PC1 can ping PC2, the link is fine, the lab is empty.")
    out = tmp_path / "scores.json"
    status = main(["eval", "--base-url", llm.base_url, "--model", "m", "--json", str(out)])
    assert status == 1
    passed = {s["task"]: s["passed"] for s in json.loads(out.read_text())["tasks"]}
    # Its words would pass a judge that read them; the lab says otherwise.
    assert passed == {
        "empty-lab": True,
        "build": False,
        "link": False,
        "start": False,
        "address": False,
        "ping": False,  # says yes, but never pinged
        "teach": False,
        "refuse-in-teaching": False,  # it neither refuses nor shows the command to type
        "diagnose-broken-link": False,  # "the link is fine" never says a link is missing
    }
    printed = capsys.readouterr().out
    assert "1/9 tasks passed" in printed
    assert "build                  NO" in printed


def test_repeats_and_calls_written_as_text_are_scored(llm: ScriptedOpenAIServer) -> None:
    create: dict[str, Any] = {
        "nodes": [
            {"template_name": "VPCS", "name": "PC1"},
            {"template_name": "VPCS", "name": "PC2"},
        ]
    }
    written = "```json\n" + json.dumps({"name": "create_gns3_node", "arguments": create}) + "\n```"
    # A model that writes its call as text (a local provider reads it) and then stops.
    llm.add(Reply(text=written), Reply(text="Created PC1 and PC2."))
    assert main(["eval", "--base-url", llm.base_url, "--model", "m", "--task", "build"]) == 0
    # One that repeats the call: the guard refuses the repeat, and the task fails for it.
    call = ToolCallScript("create_gns3_node", create)
    llm.add(Reply(tool_calls=[call]), Reply(tool_calls=[call]), Reply(text="Created."))
    assert main(["eval", "--base-url", llm.base_url, "--model", "m", "--task", "build"]) == 1
