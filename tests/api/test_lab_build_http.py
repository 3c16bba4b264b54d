"""Building a shown lab plan over real HTTP on 127.0.0.1 against a real gns3-server 3.0.6
(issue 39): ``POST …/labs/build`` is the user's approval of the plan ``POST …/labs/plan``
answered (bound to its ``digest``), run as the chat's own ``build_lab`` call through a
real :class:`~copilot_core.ToolGate` as ONE verified change, recorded in the session.

Everything is real but the chat's model: the GNS3 tools, the planner and the build tool
on a real GNS3 client, restore points kept in the session's store. The server here has no
VPCS binary (its starts are refused): a plan's checks cannot hold, so a build here is
proven up to its checks — nodes and links made and seen in GNS3, the checks failing with
their evidence, the build kept (``on_fail: keep``) or rolled back to the project as it
was, read back from GNS3. Builds whose checks pass are the router lab's
(``tests/lab/test_lab_build_lab.py``).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from adapters.gns3 import ConsoleRunner, Gns3Client, Gns3LabPlanner, Gns3ToolExecutor
from adapters.gns3.labs import BUILD_TOOL, LabBuildTools
from adapters.web import WebDependencies, WebSettings, create_web_app
from adapters.web.testing import (
    InMemoryLLMConfigRepository,
    StaticAuthenticator,
    StaticProjectGate,
)
from copilot_core import Session, ToolGate
from copilot_core.bootstrap import InMemorySessionLeases
from copilot_core.labs import LabBuilds, parse_plan
from copilot_core.policy import OperatorPolicy, PolicyBook, PolicyRule
from copilot_core.ports import CopilotMode, Principal
from copilot_core.testing import (
    InMemoryCheckpointStore,
    SequentialIds,
    SteppingClock,
)
from tests.adapters.gns3.conftest import TWO_PCS_PLAN as PLAN
from tests.api.conftest import chat_without_model, serving

pytestmark = [pytest.mark.gns3, pytest.mark.timeout(300)]

TEACHER_TOKEN = "teacher-token"


@dataclass
class Service:
    api: httpx.AsyncClient
    store: InMemoryCheckpointStore
    leases: InMemorySessionLeases
    session_id: str
    project_id: str
    url: str
    builds: LabBuilds


@pytest.fixture
async def service(
    gns3_client: Gns3Client, admin_token: str, project_id: str
) -> AsyncIterator[Service]:
    """The web app around the real GNS3 tools, planner and build tool; the admin's chat
    session in the project; a user the operator's policy keeps in teaching mode."""
    clock, ids = SteppingClock(), SequentialIds()
    store, leases = InMemoryCheckpointStore(), InMemorySessionLeases()
    session_id = str(uuid.uuid4())
    now = datetime.now(UTC)
    await store.create_session(
        Session(
            thread_id=session_id, user_id="u-admin", project_id=project_id, created_at=now,
            updated_at=now, copilot_mode=CopilotMode.LAB_AUTOMATION_ASSISTANT,
        )
    )  # fmt: skip
    runner = ConsoleRunner(command_timeout=1.0)
    tools = Gns3ToolExecutor(gns3_client, runner=runner, restore_points=store)
    planner = Gns3LabPlanner(tools.lab)
    build_tools = LabBuildTools(tools.lab, planner, tools.probes)
    gate = ToolGate(build_tools, timeout=200)
    builds = LabBuilds(gate, planner, build_tools, store, leases, clock=clock, ids=ids)
    chat = chat_without_model(store, clock, ids, leases)
    policy = PolicyBook(
        OperatorPolicy(users={"teacher": PolicyRule(max_mode=CopilotMode.TEACHING_ASSISTANT)})
    )
    app = create_web_app(
        WebDependencies(
            chat=chat,
            authenticator=StaticAuthenticator(
                {
                    admin_token: Principal("u-admin", "admin"),
                    TEACHER_TOKEN: Principal("u-teacher", "teacher"),
                }
            ),
            projects=StaticProjectGate(opened={project_id}),
            llm_config=InMemoryLLMConfigRepository(),
            labs=planner,
            lab_builds=builds,
            policy=policy,
        ),
        settings=WebSettings(heartbeat_interval=None),
    )
    try:
        async with (
            serving(app) as url,
            httpx.AsyncClient(
                base_url=f"{url}/v3/copilot/projects/{project_id}",
                headers={"Authorization": f"Bearer {admin_token}"},
                timeout=240,
            ) as api,
        ):
            yield Service(api, store, leases, session_id, project_id, url, builds)
    finally:
        await runner.aclose()


async def lab_of(client: Gns3Client, token: str, project_id: str) -> dict[str, Any]:
    """The project's nodes (name, position) and links (by node name and port), from GNS3."""
    nodes = await client.nodes(token, project_id)
    names = {n["node_id"]: n["name"] for n in nodes}
    links = await client.links(token, project_id)
    return {
        "nodes": sorted((n["name"], n["x"], n["y"]) for n in nodes),
        "links": sorted(
            sorted((names[e["node_id"]], e["adapter_number"], e["port_number"]) for e in k["nodes"])
            for k in links
        ),
    }


async def shown(api: httpx.AsyncClient, plan: dict[str, Any]) -> dict[str, Any]:
    """The plan as ``…/labs/plan`` shows it (its document and digest)."""
    answer = await api.post("/labs/plan", json={"plan": plan})
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


async def history(service: Service) -> list[dict[str, Any]]:
    answer = await service.api.get(f"/chat/sessions/{service.session_id}/history")
    assert answer.status_code == 200, answer.text
    messages: list[dict[str, Any]] = answer.json()["messages"]
    return messages


BUILT = {
    "nodes": [("PCA", -150, 40), ("PCB", 150, -40)],
    "links": [[("PCA", 0, 0), ("PCB", 0, 0)]],
}
EMPTY: dict[str, Any] = {"nodes": [], "links": []}


async def test_a_shown_plan_is_built_and_kept_with_its_failing_check_and_recorded(
    service: Service, gns3_client: Gns3Client, admin_token: str
) -> None:
    plan = await shown(service.api, PLAN)
    assert plan["digest"].startswith("sha256:")

    answer = await service.api.post(
        "/labs/build",
        json={
            "plan": plan["plan"],
            "digest": plan["digest"],
            "session_id": service.session_id,
            "on_fail": "keep",
            "wait_s": 1,
        },
    )

    assert answer.status_code == 200, answer.text
    body = answer.json()
    # Built: the nodes at their places and the link, seen in GNS3 itself, and kept.
    assert await lab_of(gns3_client, admin_token, service.project_id) == BUILT
    assert body["status"] == "fail" and body["kept"] is True and body["rolled_back"] is False
    assert [n["name"] for n in body["result"]["nodes"] if n["created"]] == ["PCA", "PCB"]
    # The check that decided it, failing (the PCs cannot start here), with what was seen.
    [failed] = body["failed_checks"]
    assert failed["name"] == "PCA reaches PCB" and failed["status"] != "pass"
    assert failed.get("reason") or failed["evidence"], failed
    assert "PCA reaches PCB" in body["warning"]
    assert body["result"]["verification"]["on_fail"] == "keep"
    # The session keeps the build: the build_lab call and its answer, and its restore point.
    call, answered = (await history(service))[-2:]
    assert call["role"] == "assistant" and call["metadata"]["lab_build"]["status"] == "fail"
    [tool_call] = call["tool_calls"]
    assert tool_call["id"] == body["tool_call_id"] and tool_call["function"]["name"] == BUILD_TOOL
    assert answered["role"] == "tool" and answered["tool_call_id"] == body["tool_call_id"]
    assert answered["metadata"]["approval"]["decision"] == "approve"
    assert answered["metadata"]["approval"]["by"] == "u-admin"
    [point] = await service.store.restore_points(service.project_id, service.session_id)
    assert body["restore_point_id"] == point.id and point.tool_call_id == body["tool_call_id"]
    assert point.rolled_back is None


async def test_a_plan_whose_check_fails_is_rolled_back_to_the_project_as_it_was(
    service: Service, gns3_client: Gns3Client, admin_token: str
) -> None:
    plan = await shown(service.api, PLAN)

    answer = await service.api.post(
        "/labs/build",
        json={
            "plan": plan["plan"],
            "digest": plan["digest"],
            "session_id": service.session_id,
            "wait_s": 1,
        },
    )

    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["status"] == "fail" and body["rolled_back"] is True and body["kept"] is False
    assert body["tool_status"] == "error"
    assert [c["name"] for c in body["failed_checks"]] == ["PCA reaches PCB"]
    assert "PCA reaches PCB" in body["error"] and body["result"]["status"] == "rolled_back"
    # What the build made, named in its result; then GNS3 itself: nothing is left.
    assert [n["name"] for n in body["result"]["nodes"] if n["created"]] == ["PCA", "PCB"]
    assert body["result"]["verification"]["lab_now"] == EMPTY
    assert await lab_of(gns3_client, admin_token, service.project_id) == EMPTY
    [point] = await service.store.restore_points(service.project_id, service.session_id)
    assert point.id == body["restore_point_id"]
    assert point.rolled_back is not None and point.rolled_back.by == "verification"


async def test_a_plan_changed_since_it_was_shown_is_409_and_nothing_is_built(
    service: Service, gns3_client: Gns3Client, admin_token: str
) -> None:
    plan = await shown(service.api, PLAN)
    moved = {
        **plan["plan"],
        "nodes": [{**plan["plan"]["nodes"][0], "x": 0}, plan["plan"]["nodes"][1]],
    }

    changed = await service.api.post(
        "/labs/build",
        json={"plan": moved, "digest": plan["digest"], "session_id": service.session_id},
    )
    keep_is_no_other_plan = await service.api.post(
        "/labs/build",
        json={
            "plan": plan["plan"],
            "digest": "sha256:" + "0" * 64,
            "session_id": service.session_id,
            "on_fail": "keep",
        },
    )

    assert changed.status_code == 409, changed.text
    assert changed.json()["code"] == "plan_changed"
    assert "not the one that was shown" in changed.json()["detail"]
    assert keep_is_no_other_plan.status_code == 409
    assert await lab_of(gns3_client, admin_token, service.project_id) == EMPTY
    assert await history(service) == []
    assert await service.store.restore_points(service.project_id, service.session_id) == []


async def test_a_user_kept_in_teaching_mode_may_not_build(
    service: Service, gns3_client: Gns3Client, admin_token: str
) -> None:
    plan = await shown(service.api, PLAN)

    refused = await service.api.post(
        "/labs/build",
        json={"plan": plan["plan"], "digest": plan["digest"], "session_id": service.session_id},
        headers={"Authorization": f"Bearer {TEACHER_TOKEN}"},
    )

    assert refused.status_code == 403, refused.text
    assert refused.json()["code"] == "permission_denied"
    assert "Building a lab" in refused.json()["detail"]
    assert await lab_of(gns3_client, admin_token, service.project_id) == EMPTY
    assert await history(service) == []


async def test_a_busy_session_or_a_plan_the_server_cannot_build_is_refused(
    service: Service, gns3_client: Gns3Client, admin_token: str
) -> None:
    plan = await shown(service.api, PLAN)
    body = {"plan": plan["plan"], "digest": plan["digest"], "session_id": service.session_id}
    # What a running turn holds: the session's lease.
    claim = await service.leases.claim(service.project_id, service.session_id, "turn-1")
    try:
        busy = await service.api.post("/labs/build", json=body)
    finally:
        await service.leases.release(claim)
    nowhere = await service.api.post("/labs/build", json={**body, "session_id": str(uuid.uuid4())})
    unknown = {
        **PLAN,
        "nodes": [{**PLAN["nodes"][0], "template": "No such template"}, PLAN["nodes"][1]],
    }
    cannot = await service.api.post(
        "/labs/build",
        json={**body, "plan": unknown, "digest": service.builds.digest(parse_plan(unknown))},
    )

    assert busy.status_code == 409, busy.text
    assert busy.json()["code"] == "session_busy"
    assert nowhere.status_code == 404, nowhere.text
    assert cannot.status_code == 422, cannot.text
    assert [p["field"] for p in cannot.json()["problems"]] == ["nodes[0].template"]
    assert await lab_of(gns3_client, admin_token, service.project_id) == EMPTY
    assert await history(service) == []


async def test_the_build_is_in_the_openapi_document(service: Service) -> None:
    async with httpx.AsyncClient(timeout=30) as plain:
        document = (await plain.get(f"{service.url}/schema/openapi.json")).json()
    build = document["paths"]["/v3/copilot/projects/{project_id}/labs/build"]["post"]
    assert build["operationId"] == "buildLab"
    assert {"200", "403", "404", "409", "422", "501"} <= set(build["responses"])
    assert {"application/json", "text/event-stream"} <= set(build["responses"]["200"]["content"])
    schemas = document["components"]["schemas"]
    assert set(schemas["LabBuildBody"]["properties"]) == {
        "plan", "digest", "session_id", "on_fail", "wait_s", "base"
    }  # fmt: skip
    assert "digest" in schemas["LabPlanReply"]["required"]


async def test_a_plan_without_checks_is_built_unchecked(
    service: Service, gns3_client: Gns3Client, admin_token: str
) -> None:
    exported = {k: v for k, v in PLAN.items() if k != "checks"}  # as a saved lab file is
    plan = await shown(service.api, exported)

    answer = await service.api.post(
        "/labs/build",
        json={"plan": plan["plan"], "digest": plan["digest"], "session_id": service.session_id},
    )

    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["status"] == "unchecked" and body["kept"] is True and not body["failed_checks"]
    assert "verification" not in body["result"]
    assert await lab_of(gns3_client, admin_token, service.project_id) == BUILT
    # The PCs cannot start here: the build says so (no check decides it).
    assert body["tool_status"] == "error" and "was not started" in body["error"]
    assert body["restore_point_id"] is not None


async def test_a_build_streams_its_progress_then_its_answer(
    service: Service, gns3_client: Gns3Client, admin_token: str
) -> None:
    plan = await shown(service.api, PLAN)
    body = {
        "plan": plan["plan"],
        "digest": plan["digest"],
        "session_id": service.session_id,
        "wait_s": 1,
    }
    stream = {"Accept": "text/event-stream"}

    refused = await service.api.post(
        "/labs/build", json={**body, "digest": "sha256:" + "1" * 64}, headers=stream
    )
    events: list[dict[str, Any]] = []
    async with service.api.stream("POST", "/labs/build", json=body, headers=stream) as answer:
        assert answer.status_code == 200
        assert answer.headers["content-type"].startswith("text/event-stream")
        async for line in answer.aiter_lines():
            if line.startswith("data:"):
                events.append(json.loads(line[len("data:") :]))

    # A refusal before the build is still the request's own status, not a stream.
    assert refused.status_code == 409 and refused.json()["code"] == "plan_changed"
    *progress, last = events
    said = "".join(e["text"] for e in progress)
    assert {e["type"] for e in progress} == {"tool_progress"}
    assert said.startswith("checking 1 check(s) before the change\n")
    for step in ("creating 2 node(s)\n", "PCA: created\n", "linking 1 port pair(s)\n"):
        assert step in said
    assert "rolling the build back to the restore point\n" in said
    assert last["type"] == "lab_build"
    build = last["build"]
    assert build["status"] == "fail" and build["rolled_back"] is True
    assert [c["name"] for c in build["failed_checks"]] == ["PCA reaches PCB"]
    assert await lab_of(gns3_client, admin_token, service.project_id) == EMPTY
    call, answered = (await history(service))[-2:]
    assert answered["tool_call_id"] == build["tool_call_id"] == call["tool_calls"][0]["id"]
