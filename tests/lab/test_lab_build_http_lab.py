"""A lab plan built over HTTP on the real router lab (issue 39): ``gns3-copilot serve`` (a
subprocess, its real container) against the router lab's gns3-server.

The user's session is made by one chat turn (a scripted OpenAI-wire model answers it);
then, with no model involved: ``POST …/labs/plan`` shows the triangle of three FRR routers
with a Linux host behind each (its digest), and ``POST …/labs/build`` approves it, streamed
(``Accept: text/event-stream``): its progress, then its answer, ``pass``. What proves it is
what the devices say through Docker: every host pings every other, every router has two
OSPF neighbours Full. The user's undo of the build (the restore point its answer names,
``…/restore-points/{id}/rollback``) leaves GNS3 with no node and no link. The scratch
project is always deleted. Figures are printed (``-s``).

A plan that fails its checks is proven on these routers through the gate
(``test_lab_build_lab``: the wrong mask, rolled back, the check named) and over HTTP
against the real gns3-server (``tests/api/test_lab_build_http.py``: ``fail``, rolled
back, the project empty): not a third time here, where it cost 85 s of the lab.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from httpx_sse import connect_sse

from tests.fakes.copilot_service import ServedCopilot
from tests.fakes.openai_server import Reply, ScriptedOpenAIServer
from tests.lab.conftest import API_KEY
from tests.lab.lab_project import LabProject
from tests.lab.router_lab import RouterLab
from tests.lab.test_lab_build_lab import HOSTS, lab_now, triangle

pytestmark = [pytest.mark.timeout(1500), pytest.mark.gns3, pytest.mark.slow]

FIGURES: dict[str, float] = {}


@pytest.fixture
def scratch(router_lab: RouterLab) -> Iterator[LabProject]:
    token = router_lab.server.token()
    project = LabProject(router_lab, token, router_lab.server.new_project("build-http", token))
    try:
        yield project
    finally:
        project.delete()


@pytest.fixture
def api(
    service: ServedCopilot, llm: ScriptedOpenAIServer, scratch: LabProject
) -> Iterator[httpx.Client]:
    with service.api(scratch.token) as client:
        client.timeout = httpx.Timeout(400.0)  # a build and its checks take minutes
        stored = client.put(
            "/llm-config",
            json={"provider": "openai", "model": "gpt-lab", "base_url": llm.base_url,
                  "api_key": API_KEY, "copilot_mode": "lab_automation_assistant",
                  "approval": "changes"},
        )  # fmt: skip
        assert stored.status_code == 200, stored.text
        yield client


def a_session(api: httpx.Client, llm: ScriptedOpenAIServer, project: str) -> str:
    """The user's chat session (one turn the scripted model answers)."""
    llm.clear()
    llm.add(Reply(text="Ready to build."), Reply(text="Lab build"))
    url = f"/projects/{project}/chat/stream"
    with connect_sse(api, "POST", url, json={"message": "build me a lab"}) as source:
        assert source.response.status_code == 200, source.response.read()
        session = source.response.headers["X-Session-Id"]
        kinds = [json.loads(e.data)["type"] for e in source.iter_sse()]
    assert kinds[-1] == "done" and "error" not in kinds, kinds
    return session


def shown(api: httpx.Client, project: str, plan: dict[str, Any]) -> dict[str, Any]:
    answer = api.post(f"/projects/{project}/labs/plan", json={"plan": plan})
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


def test_a_shown_plan_is_built_over_http_proven_and_undone(
    api: httpx.Client, llm: ScriptedOpenAIServer, scratch: LabProject
) -> None:
    project = scratch.project
    session = a_session(api, llm, project)
    plan = shown(api, project, triangle())
    body = {"plan": plan["plan"], "digest": plan["digest"], "session_id": session, "wait_s": 120}

    # The build, streamed: its progress, then its answer.
    began = time.monotonic()
    events: list[dict[str, Any]] = []
    url = f"/projects/{project}/labs/build"
    with connect_sse(api, "POST", url, json=body) as source:
        assert source.response.status_code == 200, source.response.read()
        events.extend(json.loads(e.data) for e in source.iter_sse())
    FIGURES["triangle_build_over_http_s"] = time.monotonic() - began
    *progress, last = events
    said = "".join(e["text"] for e in progress)
    for step in ("creating 6 node(s)", "R1: configured", "H3: configured",
                 "checking 15 check(s) after the change"):  # fmt: skip
        assert step in said, said[-3000:]
    assert last["type"] == "lab_build", last
    build = last["build"]
    assert build["status"] == "pass", json.dumps(build["result"].get("verification"))[:4000]
    assert build["kept"] is True and build["failed_checks"] == []
    FIGURES["checks_to_pass_s"] = build["result"]["verification"]["after"]["waited_s"]

    # The devices themselves: every host pings every other, OSPF Full everywhere.
    for source_host in HOSTS:
        for target, address in HOSTS.items():
            if target != source_host:
                ping = scratch.docker(source_host, "ping", "-c", "2", "-W", "2", address,
                                      check=False)  # fmt: skip
                assert " 0% packet loss" in ping, (source_host, target, ping)
    for router in ("R1", "R2", "R3"):
        neighbours = scratch.vtysh(router, "show ip ospf neighbor")
        assert neighbours.count("Full/") == 2, (router, neighbours)

    # The build is in the session; the user's undo of it empties the project.
    history = api.get(f"/projects/{project}/chat/sessions/{session}/history").json()
    assert history["messages"][-1]["tool_call_id"] == build["tool_call_id"]
    point = build["restore_point_id"]
    began = time.monotonic()
    undone = api.post(
        f"/projects/{project}/chat/sessions/{session}/restore-points/{point}/rollback"
    )
    FIGURES["undo_over_http_s"] = time.monotonic() - began
    assert undone.status_code == 200, undone.text
    assert undone.json()["tool_status"] == "success", undone.text
    assert lab_now(scratch) == ([], 0)

    print("\nlab build over HTTP figures:", {k: round(v, 1) for k, v in FIGURES.items()})
