"""``gns3-copilot eval --suite faults --fix`` on the real router lab, with a scripted model
over the real OpenAI wire protocol, scored exactly.

The lab is the catalog's OSPF pair (PC1 - R1 - R2 - PC2, FRR 8.4 and Linux hosts) built in a
project of the router lab's gns3-server and configured from the shape's healthy lines; the
command runs in it with ``--project`` (never deleted, put back after every case). Three
faults and the lab's healthy case; the scripted model diagnoses from what the devices say:
it reads R1's interfaces and PC1's addresses and routes with the service's own console tool
(teaching mode), then answers

- R1's eth0 down: the right diagnosis (R1, eth0, ``interface_down``), and in the repair turn
  (lab-automation mode) ``no shutdown`` on R1's eth0;
- PC1 with no default route: a wrong one (PC1's eth0, ``wrong_address``: the right device,
  the wrong fault type), and no repair;
- PC1's address with a /16: no JSON block at all (malformed), no repair;
- nothing wrong: ``healthy``, no repair.

So the model's scores depend on each fault really being in the lab when it looks (the
drill's injection, through ``Gns3DrillLab``), and the JSON must hold exactly: per case the
verdict, root-cause F1, localisation, the repair's grade (fixed-checks met, constraints
held), tool calls and tokens; the summary's means; every lab put back exactly (and the
devices, read by Docker, as they were); the project still there. No request the model got
names a case (its id or title).

Without ``--project``, the same lab is built from the catalog's shape in a scratch project
(``plan_from_shape``, ``Gns3LabPlanner``, ``Gns3LabBuilder``: issue 39), found healthy, the
fault diagnosed there, and the project deleted afterwards; and a run stopped (SIGTERM) while
the model is asked ends the drill and deletes the project too. Each case's seconds (inject,
diagnose, repair, grade, restore) are printed (``-s``).
"""

from __future__ import annotations

import asyncio
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

from adapters.gns3 import (
    ConsoleRunner,
    Gns3Client,
    Gns3DrillLab,
    Gns3ToolExecutor,
    baseline_lines,
    load_fault_catalog,
)
from copilot_core import CopilotMode
from copilot_core.faults import DeviceLines
from entrypoints.cli import main
from tests.adapters.gns3.conftest import make_context
from tests.fakes.openai_server import RecordedRequest, Reply, ScriptedOpenAIServer, ToolCallScript
from tests.lab.lab_project import LabProject
from tests.lab.router_lab import HOST_TEMPLATE, ROUTER_TEMPLATE, RouterLab
from tests.lab.test_fault_catalog_lab import build

pytestmark = [pytest.mark.timeout(1800), pytest.mark.gns3, pytest.mark.slow]

CATALOG = load_fault_catalog()
CASES = ("frr-lan-interface-shut", "host-missing-gateway", "host-wrong-mask")
SHAPE = next(f for f in CATALOG if f.id == CASES[0]).lab

RIGHT = {"device": "R1", "interface": "eth0", "fault_type": "interface_down"}
WRONG = {"device": "PC1", "interface": "eth0", "fault_type": "wrong_address"}


def block(verdict: str, *causes: dict[str, Any]) -> str:
    data = {"verdict": verdict, "causes": list(causes)}
    return f"My diagnosis:\n\n```json\n{json.dumps(data)}\n```"


def read_lab() -> ToolCallScript:
    configs = [
        {"device_name": "R1", "commands": ["show interface brief"]},
        {"device_name": "PC1", "commands": ["ip -4 -o addr show", "ip -4 route show"]},
    ]
    return ToolCallScript("execute_multiple_device_commands", {"device_configs": configs})


def text_of(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        content = " ".join(str(part.get("text", "")) for part in content)
    return str(content or "").replace("\\n", "\n")


def diagnoser(request: RecordedRequest) -> Reply:
    """The scripted model (see the module): it decides from the devices' answers."""
    messages = request.messages
    last = messages[-1]
    asked = next(text_of(m) for m in reversed(messages) if m["role"] == "user")
    if "Troubleshooting exercise." in asked:
        if last["role"] == "user":
            return Reply(text="Let me read R1 and PC1.", tool_calls=[read_lab()])
        seen = text_of(last)
        if re.search(r"eth0\s+down", seen):
            return Reply(text="R1's LAN interface is down.\n\n" + block("faulty", RIGHT))
        if "10.0.1.10/16" in seen:
            return Reply(text="PC1's address looks odd; I am not sure what to conclude.")
        if "default via 10.0.1.1" not in seen:
            return Reply(text="PC1 is misaddressed.\n\n" + block("faulty", WRONG))
        return Reply(text="Everything answers as it should.\n\n" + block("healthy"))
    # The repair turn, in the same session: the model's own diagnosis is in its history.
    said = " ".join(text_of(m) for m in messages if m["role"] == "assistant")
    if last["role"] == "user" and "interface_down" in said:
        lines = {"device_name": "R1", "config_commands": ["interface eth0", "no shutdown"]}
        call = ToolCallScript(
            "execute_multiple_device_config_commands", {"device_configs": [lines]}
        )
        return Reply(text="I bring R1's eth0 back up.", tool_calls=[call])
    if last["role"] == "tool":
        return Reply(text="R1's eth0 is up again.")
    return Reply(text="I leave the lab as it is.")


async def configure(router_lab: RouterLab, project: LabProject) -> None:
    """The shape's healthy lab: its lines sent through the drill's own port."""
    async with Gns3Client(router_lab.url, timeout=120.0) as client:
        tools = Gns3ToolExecutor(
            client, runner=ConsoleRunner(command_timeout=30.0, wake_timeout=60.0)
        )
        context = make_context(project.project, project.token, CopilotMode.TEACHING_ASSISTANT)
        steps = [
            DeviceLines(kind="lines", node=node, lines=tuple(lines))
            for node, lines in baseline_lines(SHAPE).items()
        ]
        await Gns3DrillLab(tools.lab).apply(steps, SHAPE, context)


@pytest.fixture
def ospf_pair(router_lab: RouterLab) -> Iterator[LabProject]:
    project = build(router_lab, SHAPE, "eval-faults")
    try:
        asyncio.run(configure(router_lab, project))
        yield project
    finally:
        project.delete()


def figures(data: dict[str, Any]) -> None:
    """Each lab's and each case's seconds (printed with ``-s``)."""
    for lab in data["labs"]:
        print(f"{lab['lab']} ({lab['project']}): ready {lab.get('ready_s')} s, healthy after "
              f"{lab.get('healthy_s')} s", flush=True)  # fmt: skip
    for r in data["runs"]:
        fix = r["fix"] or {}
        print(
            f"{r['fault']}: inject {r['inject_s']} s, diagnose {r['diagnose_s']} s, repair "
            f"{fix.get('seconds')} s, grade {fix.get('grade_s')} s, restore {r['restore_s']} s, "
            f"total {r['total_s']} s",
            flush=True,
        )


def devices(project: LabProject) -> dict[str, str]:
    """What the devices say, read by Docker (never through the product)."""
    return {
        "R1": project.vtysh("R1", "show running-config", "show interface brief"),
        "R2": project.vtysh("R2", "show running-config"),
        "PC1": project.docker("PC1", "sh", "-c", "ip -4 -o addr show; ip -4 route show"),
        "PC2": project.docker("PC2", "sh", "-c", "ip -4 -o addr show; ip -4 route show"),
    }


def test_the_faults_suite_scores_a_scripted_model_exactly(
    router_lab: RouterLab,
    ospf_pair: LabProject,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("COPILOT_EVAL_GNS3_TOKEN", ospf_pair.token)
    before = devices(ospf_pair)
    out = tmp_path / "faults.json"
    with ScriptedOpenAIServer() as llm:
        llm.default = diagnoser
        argv = ["eval", "--suite", "faults", "--base-url", llm.base_url, "--model", "tiny"]
        argv += ["--gns3-url", router_lab.url, "--project", ospf_pair.project, "--fix"]
        argv += ["--max-llm-calls", "4", "--out", str(out)]
        for case in CASES:
            argv += ["--fault", case]
        status = main(argv)
        requests = list(llm.requests)
    printed = capsys.readouterr()
    print(printed.out, printed.err)
    assert status == 1, printed  # two cases are not perfect
    data = json.loads(out.read_text())
    figures(data)
    runs = {r["fault"]: r for r in data["runs"]}
    assert list(runs) == [*CASES, "healthy-ospf-pair"]  # catalog order, the healthy one too
    for run in runs.values():
        assert run["error"] is None and run["turn_error"] is None, run
        assert run["diagnosed"] and run["restored"] is True and run["differences"] == [], run

    def scores(name: str) -> tuple[Any, ...]:
        r = runs[name]
        fix = r["fix"]
        return (
            r["verdict"], r["root_cause_f1"], r["precision"], r["recall"], r["localisation"],
            r["malformed"], r["tool_calls"], r["tokens"],
            fix["score"], fix["fixed"], fix["checks_met"], fix["checks"],
            fix["constraints_held"], fix["constraints"], fix["tool_calls"], fix["tokens"],
        )  # fmt: skip

    # Each model request is scripted with usage (10, 5): 15 tokens a request.
    assert scores("frr-lan-interface-shut") == (
        True, 1.0, 1.0, 1.0, 1.0, None, 1, 30, 1.0, True, 2, 2, 3, 3, 1, 30,
    )  # fmt: skip
    # The right device named with the wrong fault type: F1 0, the device found (the truth
    # names no interface); not repaired: PC1 still cannot reach PC2, nothing else changed.
    assert scores("host-missing-gateway") == (
        True, 0.0, 0.0, 0.0, 1.0, None, 1, 30, 0.75, False, 0, 1, 3, 3, 0, 15,
    )  # fmt: skip
    assert scores("host-wrong-mask") == (
        False, 0.0, 0.0, 0.0, 0.0, "no fenced JSON block", 1, 30,
        0.6667, False, 0, 1, 2, 2, 0, 15,
    )  # fmt: skip
    # The healthy lab called healthy; its "repair" changes nothing (every node's
    # configuration and the topology unchanged: 5 constraints).
    assert scores("healthy-ospf-pair") == (
        True, 1.0, 1.0, 1.0, 1.0, None, 1, 30, 1.0, True, 4, 4, 5, 5, 0, 15,
    )  # fmt: skip
    assert runs["frr-lan-interface-shut"]["diagnosis"] == {"verdict": "faulty", "causes": [RIGHT]}
    assert runs["host-missing-gateway"]["diagnosis"] == {"verdict": "faulty", "causes": [WRONG]}
    assert runs["healthy-ospf-pair"]["diagnosis"] == {"verdict": "healthy", "causes": []}

    summary = data["summary"]
    assert (summary["runs"], summary["diagnosed"], summary["errors"]) == (4, 4, 0)
    assert (summary["malformed"], summary["perfect"], summary["passed"]) == (1, 2, 2)
    assert summary["root_cause_f1"] == 0.5 and summary["localisation"] == 0.75
    assert summary["verdict_accuracy"] == 0.75
    assert (summary["healthy_right"], summary["healthy_runs"]) == (1, 1)
    assert (summary["detected"], summary["faulty_runs"]) == (2, 3)
    assert (summary["fixed"], summary["fixes"], summary["fix_score"]) == (2, 4, 0.8542)
    assert (summary["checks_met"], summary["checks"]) == (6, 8)
    assert (summary["constraints_held"], summary["constraints"]) == (13, 13)
    assert (summary["restored"], summary["restores"]) == (4, 4)
    assert data["project"] == ospf_pair.project and data["fix"] is True
    assert [(lab["project"], lab["unhealthy"]) for lab in data["labs"]] == [
        (ospf_pair.project, None)
    ]
    assert "root-cause F1 0.50, localisation 0.75" in printed.out
    assert "2/4 case runs passed; 0 could not run; labs restored exactly 4/4" in printed.out

    # The model was asked 4 diagnoses (2 requests each) and 4 repairs (1, the first 2).
    assert len(requests) == 13
    # Nothing of a case reached the model but the question and what the devices said.
    sent = json.dumps([r.body for r in requests])
    for fault in CATALOG:
        assert fault.id not in sent and fault.title not in sent, fault.id
    # The lab is as it was, and the project is still there.
    assert devices(ospf_pair) == before
    assert ospf_pair.api("GET", "").status_code == 200


def scratch_projects(router_lab: RouterLab, token: str) -> list[str]:
    listed = httpx.get(
        f"{router_lab.url}/v3/projects", headers={"Authorization": f"Bearer {token}"}, timeout=30
    )
    listed.raise_for_status()
    return [str(p["name"]) for p in listed.json() if p["name"].startswith("copilot-eval-faults-")]


def test_without_a_project_the_lab_is_built_in_a_scratch_project_then_deleted(
    router_lab: RouterLab,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The OSPF pair built from the catalog's shape by the lab builder (issue 39) in a
    scratch project, healthy before the case, the fault diagnosed right there, the project
    gone afterwards."""
    token = router_lab.server.token()
    monkeypatch.setenv("COPILOT_EVAL_GNS3_TOKEN", token)
    during: list[list[str]] = []

    def model(request: RecordedRequest) -> Reply:
        if not during:
            during.append(scratch_projects(router_lab, token))
        return diagnoser(request)

    out = tmp_path / "scratch.json"
    with ScriptedOpenAIServer() as llm:
        llm.default = model
        argv = ["eval", "--suite", "faults", "--base-url", llm.base_url, "--model", "tiny"]
        argv += ["--gns3-url", router_lab.url, "--fault", CASES[0], "--no-healthy"]
        argv += ["--template", f"frr={ROUTER_TEMPLATE}", "--template", f"linux={HOST_TEMPLATE}"]
        argv += ["--out", str(out)]
        status = main(argv)
    printed = capsys.readouterr()
    print(printed.out, printed.err)
    assert status == 0, printed
    data = json.loads(out.read_text())
    figures(data)
    assert data["project"] == "scratch"
    (lab,) = data["labs"]
    assert lab["project"] == "scratch" and lab["unhealthy"] is None and "error" not in lab
    (run,) = data["runs"]
    assert (run["fault"], run["error"], run["restored"]) == (CASES[0], None, True), run
    assert (run["root_cause_f1"], run["localisation"], run["tool_calls"]) == (1.0, 1.0, 1)
    assert "building: " in printed.out
    # The case ran in one scratch project of its own, deleted afterwards.
    assert len(during) == 1 and len(during[0]) == 1, during
    assert scratch_projects(router_lab, token) == []


def test_a_run_stopped_mid_case_puts_the_lab_back_and_deletes_its_scratch_project(
    router_lab: RouterLab,
) -> None:
    """SIGTERM while the model is asked (the fault in the lab): the command ends the drill
    and deletes its scratch project before it exits (130)."""
    token = router_lab.server.token()
    root = Path(__file__).resolve().parents[2]
    with ScriptedOpenAIServer() as llm:
        llm.default = Reply(text="Thinking...", first_token_delay=120)  # the turn hangs
        command = [sys.executable, "-m", "entrypoints", "eval", "--suite", "faults"]
        command += ["--base-url", llm.base_url, "--model", "tiny", "--gns3-url", router_lab.url]
        command += ["--fault", CASES[1], "--no-healthy", "--template", f"frr={ROUTER_TEMPLATE}"]
        command += ["--template", f"linux={HOST_TEMPLATE}"]
        env = {**os.environ, "PYTHONPATH": str(root), "COPILOT_EVAL_GNS3_TOKEN": token}
        process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=root
        )
        try:
            deadline = time.monotonic() + 600
            while not llm.requests and time.monotonic() < deadline and process.poll() is None:
                time.sleep(0.5)
            assert llm.requests, "the model was never asked"
            during = scratch_projects(router_lab, token)
            assert len(during) == 1, during
            process.send_signal(signal.SIGTERM)
            stdout, stderr = process.communicate(timeout=300)
        finally:
            if process.poll() is None:
                process.kill()
                process.communicate(timeout=10)
    print(stdout, stderr)
    assert process.returncode == 130, stdout + stderr
    assert "interrupted" in stderr
    assert scratch_projects(router_lab, token) == []
