"""``gns3-copilot eval --suite faults`` against the real gns3-server fixture (no router lab:
no FRR or Linux host template there): the refusals before any case, a project that does
not fit (the drill's fit check says what it lacks; the project is kept), and a scratch lab
GNS3 cannot build (the cases are errors naming why, the scratch project is deleted). The
model is never asked. The runs on real routers are ``tests/lab/test_eval_faults_lab.py``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from entrypoints.cli import main
from tests.fakes.gns3_server import RealGns3Server
from tests.fakes.openai_server import Reply, ScriptedOpenAIServer

pytestmark = [pytest.mark.gns3]


@pytest.fixture
def llm() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer() as server:
        server.default = Reply(text="never asked")
        yield server


def projects(gns3: RealGns3Server, token: str) -> list[str]:
    listed = httpx.get(
        f"{gns3.url}/v3/projects", headers={"Authorization": f"Bearer {token}"}, timeout=30
    )
    listed.raise_for_status()
    return sorted(str(p["project_id"]) for p in listed.json())


def evaluate(llm: ScriptedOpenAIServer, *extra: str) -> int:
    return main(
        ["eval", "--suite", "faults", "--base-url", llm.base_url, "--model", "tiny", *extra]
    )


def test_the_suite_needs_a_real_gns3_and_known_faults(
    llm: ScriptedOpenAIServer,
    gns3_server: RealGns3Server,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert evaluate(llm) == 2
    assert "--suite faults needs a real GNS3 (--gns3-url)" in capsys.readouterr().err
    monkeypatch.setenv("COPILOT_EVAL_GNS3_TOKEN", gns3_server.token())
    assert evaluate(llm, "--gns3-url", gns3_server.url, "--fault", "no-such-fault") == 2
    assert "no fault 'no-such-fault' in the catalog" in capsys.readouterr().err
    bad = ["--gns3-url", gns3_server.url, "--fault", "host-missing-gateway", "--template", "frr"]
    assert evaluate(llm, *bad) == 2
    assert "--template 'frr': give PLATFORM=NAME" in capsys.readouterr().err
    assert not llm.requests


def test_a_project_that_does_not_fit_is_refused_saying_what_it_lacks_and_kept(
    llm: ScriptedOpenAIServer,
    gns3_server: RealGns3Server,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    token = gns3_server.token()
    monkeypatch.setenv("COPILOT_EVAL_GNS3_TOKEN", token)
    project = gns3_server.new_project("eval-faults-empty", token)
    before = projects(gns3_server, token)
    out = tmp_path / "faults.json"
    argv = ["--gns3-url", gns3_server.url, "--project", project, "--topic", "static_routing"]
    assert evaluate(llm, *argv, "--out", str(out)) == 2
    err = capsys.readouterr().err
    assert f"project {project} does not fit two FRR routers" in err, err
    assert "no FRR node named R1" in err and "no case can run" in err, err
    assert not out.exists() and not llm.requests
    assert projects(gns3_server, token) == before  # the project given is kept


def test_a_scratch_lab_gns3_cannot_build_is_an_error_of_its_cases_and_is_deleted(
    llm: ScriptedOpenAIServer,
    gns3_server: RealGns3Server,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    token = gns3_server.token()
    monkeypatch.setenv("COPILOT_EVAL_GNS3_TOKEN", token)
    before = projects(gns3_server, token)
    out = tmp_path / "faults.json"
    argv = ["--gns3-url", gns3_server.url, "--fault", "static-missing-route"]
    argv += ["--template", "frr=No such template", "--out", str(out)]
    assert evaluate(llm, *argv) == 1
    printed = capsys.readouterr().out
    data = json.loads(out.read_text())
    assert data["project"] == "scratch"
    assert [r["fault"] for r in data["runs"]] == ["static-missing-route", "healthy-static-pair"]
    for run in data["runs"]:
        assert run["error"].startswith("the lab failed: GNS3 cannot build two FRR routers"), run
        assert "No such template" in run["error"], run
        assert not run["diagnosed"] and run["restored"] is None
    assert data["summary"]["errors"] == 2 and data["summary"]["root_cause_f1"] is None
    (lab,) = data["labs"]
    assert lab["project"] == "scratch" and lab["error"].startswith("GNS3 cannot build")
    assert "ready_s" not in lab  # never built
    assert "0/2 case runs passed; 2 could not run" in printed
    assert not llm.requests
    assert projects(gns3_server, token) == before  # the scratch project is gone
