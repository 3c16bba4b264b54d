"""``gns3-copilot eval --gns3-url`` against the real gns3-server fixture and the scripted
OpenAI-compatible server, over real HTTP, through the real CLI (a subprocess): every task
runs in its own scratch GNS3 project through the service's GNS3 tools, is judged by the
state read back from GNS3, and its project is gone afterwards (also when the run is
stopped). On this machine VPCS cannot start (no vpcs binary), so the tasks that need a
started node are errors naming GNS3's reason, never passes."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.api.test_eval_command import capable
from tests.fakes.gns3_server import RealGns3Server
from tests.fakes.openai_server import RecordedRequest, Reply, ScriptedOpenAIServer, ToolCallScript

ROOT = Path(__file__).resolve().parents[2]
NEED_A_START = {"start", "address", "ping"}
SCRATCH = re.compile(r"^copilot-eval-([a-z-]+)-[0-9a-f]{8}$")


@pytest.fixture
def llm() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer() as server:
        yield server


def projects(gns3: RealGns3Server) -> list[str]:
    listed = httpx.get(
        f"{gns3.url}/v3/projects",
        headers={"Authorization": f"Bearer {gns3.token()}"},
        timeout=30,
    )
    listed.raise_for_status()
    return [str(p["name"]) for p in listed.json()]


def scratch(gns3: RealGns3Server) -> list[str]:
    return [name for name in projects(gns3) if name.startswith("copilot-eval-")]


def evaluate(
    llm: ScriptedOpenAIServer, gns3: RealGns3Server, out: Path, *extra: str, **env: str
) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "entrypoints", "eval", "--base-url", llm.base_url]
    command += ["--model", "tiny", "--gns3-url", gns3.url, "--json", str(out), *extra]
    return subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONPATH": str(ROOT), **env},
        cwd=ROOT,
    )


def test_a_capable_model_passes_what_gns3_can_judge_and_a_start_is_an_honest_error(
    llm: ScriptedOpenAIServer, gns3_server: RealGns3Server, tmp_path: Path
) -> None:
    seen: dict[str, list[str]] = {}  # the task's message -> the scratch projects then

    def model(request: RecordedRequest) -> Reply:
        asked = next(m["content"] for m in reversed(request.messages) if m["role"] == "user")
        seen.setdefault(asked.rsplit("</lab>\n\n", 1)[-1], scratch(gns3_server))
        return capable(request)

    llm.default = model
    before = projects(gns3_server)
    out = tmp_path / "scores.json"
    done = evaluate(llm, gns3_server, out, "--gns3-username", "admin", "--gns3-password", "admin")
    assert done.returncode == 1, done.stdout + done.stderr  # three tasks could not run
    assert "in GNS3 at" in done.stdout and "6/9 tasks passed" in done.stdout, done.stdout
    scores = json.loads(out.read_text())
    assert scores["lab"] == "gns3"
    by_task = {s["task"]: s for s in scores["tasks"]}
    for name, score in by_task.items():
        if name in NEED_A_START:
            assert not score["passed"]
            assert score["error"].startswith("the node could not start: "), score
            assert "VPCS executable" in score["error"], score  # GNS3's own reason
            assert score["tool_calls"] == 0  # the model was not asked
        else:
            assert score["passed"], score
            assert score["error"] is None
    assert by_task["build"]["tool_calls"] == 1 and by_task["link"]["tool_calls"] == 1
    # Each task the model saw ran in one scratch project of its own, named after it.
    assert len(seen) == 6
    for names in seen.values():
        assert len(names) == 1 and SCRATCH.match(names[0]), names
    assert len({names[0] for names in seen.values()}) == 6
    # And every one is gone, nothing else touched.
    assert scratch(gns3_server) == []
    assert sorted(projects(gns3_server)) == sorted(before)


def test_the_judge_reads_gns3_not_the_words(
    llm: ScriptedOpenAIServer, gns3_server: RealGns3Server, tmp_path: Path
) -> None:
    token = {"COPILOT_EVAL_GNS3_TOKEN": gns3_server.token()}
    # A model that says it is done, and does nothing.
    llm.default = Reply(text="Done! PC1 and PC2 exist, they are linked, the lab is empty.")
    out = tmp_path / "talk.json"
    tasks = ["--task", "build", "--task", "link", "--task", "empty-lab"]
    done = evaluate(llm, gns3_server, out, *tasks, **token)
    assert done.returncode == 1, done.stdout + done.stderr
    passed = {s["task"]: s["passed"] for s in json.loads(out.read_text())["tasks"]}
    assert passed == {"build": False, "link": False, "empty-lab": True}

    # One that acts, wrongly: a node misnamed, a link to a port VPCS does not have. GNS3
    # has the nodes (real ones), the judge sees the wrong name and no link.
    wrong: dict[str, Any] = {
        "nodes": [
            {"template_name": "VPCS", "name": "PC1"},
            {"template_name": "VPCS", "name": "PC3"},
        ]
    }
    bad_port = {
        "links": [{"node1": "PC1", "port1": "Ethernet1", "node2": "PC2", "port2": "Ethernet0"}]
    }

    def sloppy(request: RecordedRequest) -> Reply:
        if request.messages[-1]["role"] == "tool":
            return Reply(text="Done.")
        asked = next(m["content"] for m in reversed(request.messages) if m["role"] == "user")
        if asked.endswith("Add two VPCS PCs named PC1 and PC2."):
            return Reply(tool_calls=[ToolCallScript("create_gns3_node", wrong)])
        return Reply(tool_calls=[ToolCallScript("create_gns3_link", bad_port)])

    llm.default = sloppy
    out = tmp_path / "sloppy.json"
    done = evaluate(llm, gns3_server, out, "--task", "build", "--task", "link", **token)
    assert done.returncode == 1, done.stdout + done.stderr
    scores = {s["task"]: s for s in json.loads(out.read_text())["tasks"]}
    assert not scores["build"]["passed"] and scores["build"]["tool_calls"] == 1
    assert not scores["link"]["passed"] and scores["link"]["tool_calls"] == 1
    # The tool really ran against GNS3: its answer named the port GNS3's node lacks.
    link_results = [
        m["content"]
        for r in llm.requests
        for m in r.messages
        if m["role"] == "tool" and "Ethernet1" in str(m["content"])
    ]
    assert link_results, "the link tool's answer never reached the model"
    assert scratch(gns3_server) == []


def test_bad_credentials_stop_before_any_project(
    llm: ScriptedOpenAIServer, gns3_server: RealGns3Server, tmp_path: Path
) -> None:
    llm.default = Reply(text="never asked")
    out = tmp_path / "scores.json"
    done = evaluate(llm, gns3_server, out, "--gns3-username", "admin", "--gns3-password", "wrong")
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"GNS3 at {gns3_server.url}" in done.stderr
    assert not out.exists() and not llm.requests and scratch(gns3_server) == []


def test_a_run_stopped_mid_task_deletes_its_scratch_project(
    llm: ScriptedOpenAIServer, gns3_server: RealGns3Server, tmp_path: Path
) -> None:
    llm.default = Reply(text="Thinking...", first_token_delay=60)  # the turn hangs
    command = [sys.executable, "-m", "entrypoints", "eval", "--base-url", llm.base_url]
    command += ["--model", "tiny", "--gns3-url", gns3_server.url, "--task", "link"]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COPILOT_EVAL_GNS3_TOKEN": gns3_server.token()}
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT
    )
    try:
        deadline = time.monotonic() + 120
        while not llm.requests and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.2)
        assert llm.requests, "the model was never asked"
        during = scratch(gns3_server)
        assert len(during) == 1 and SCRATCH.match(during[0]), during
        process.send_signal(signal.SIGTERM)
        stdout, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate(timeout=10)
    assert process.returncode == 130, stdout + stderr
    assert "interrupted" in stderr
    assert scratch(gns3_server) == []


def test_help_says_which_lab_is_which(capsys: pytest.CaptureFixture[str]) -> None:
    from entrypoints.cli import main

    with pytest.raises(SystemExit):
        main(["eval", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "without --gns3-url a SIMULATED lab" in text
    assert "with --gns3-url a REAL GNS3 server" in text
    assert "--gns3-token" in text and "--gns3-username" in text
