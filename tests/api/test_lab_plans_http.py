"""Lab plans over real HTTP on 127.0.0.1 against a real gns3-server 3.0.6 (issue 39):
``POST …/labs/plan`` resolves a plan document or a description (the resolved plan, or 422
with every problem by its field), ``GET …/labs/current`` exports the project's lab as a
plan document or its YAML file, and both are in the OpenAPI document.

The web app is the real one around the real :class:`~adapters.gns3.Gns3LabPlanner` on a
real GNS3 client; the caller's token is a real GNS3 token (the planner acts with it).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import yaml
from litestar import Litestar

from adapters.gns3 import ConsoleRunner, Gns3Client, Gns3LabPlanner, Gns3ToolExecutor
from adapters.web import WebDependencies, WebSettings, create_web_app
from adapters.web.testing import (
    InMemoryLLMConfigRepository,
    StaticAuthenticator,
    StaticProjectGate,
)
from copilot_core.labs import HostIntent, LabIntent, parse_plan, plan_from_intent
from copilot_core.ports import Principal
from copilot_core.testing import (
    InMemoryCheckpointStore,
    SequentialIds,
    SteppingClock,
)
from tests.api.conftest import chat_without_model, serving
from tests.fakes.gns3_server import RealGns3Server

pytestmark = [pytest.mark.gns3, pytest.mark.timeout(300)]

PAIR = LabIntent(
    routers=("R1", "R2"),
    links=(("R1", "R2"),),
    hosts=(HostIntent(name="H1", behind="R1"), HostIntent(name="H2", behind="R2")),
    host_platform="vpcs",  # type: ignore[arg-type]  # the wire's value
)


def _app_on(client: Gns3Client, token: str, project_id: str) -> Litestar:
    store = InMemoryCheckpointStore()
    chat = chat_without_model(store, SteppingClock(), SequentialIds())
    planner = Gns3LabPlanner(Gns3ToolExecutor(client, runner=ConsoleRunner()).lab)
    return create_web_app(
        WebDependencies(
            chat=chat,
            authenticator=StaticAuthenticator({token: Principal("u-admin", "admin")}),
            projects=StaticProjectGate(opened={project_id}),
            llm_config=InMemoryLLMConfigRepository(),
            labs=planner,
        ),
        settings=WebSettings(heartbeat_interval=None),
    )


@pytest.fixture
async def api(
    gns3_server: RealGns3Server, gns3_client: Gns3Client, admin_token: str, project_id: str
) -> AsyncIterator[httpx.AsyncClient]:
    async with (
        serving(_app_on(gns3_client, admin_token, project_id)) as url,
        httpx.AsyncClient(
            base_url=f"{url}/v3/copilot/projects/{project_id}",
            headers={"Authorization": f"Bearer {admin_token}"},
            timeout=60,
        ) as client,
    ):
        yield client


@pytest.fixture(scope="module")
def frr_template(gns3_server: RealGns3Server) -> str:
    """An FRR Docker template (stored without Docker; only its nodes need it)."""
    name = f"FRR 8.4 http {uuid.uuid4().hex[:6]}"
    answer = httpx.post(
        f"{gns3_server.url}/v3/templates",
        json={
            "name": name,
            "template_type": "docker",
            "image": "frr-lab:8.4-2",
            "adapters": 4,
            "console_type": "telnet",
            "compute_id": "local",
        },
        headers={"Authorization": f"Bearer {gns3_server.token()}"},
        timeout=30,
    )
    assert answer.status_code == 201, answer.text
    return name


async def test_a_description_is_answered_as_the_resolved_plan(
    api: httpx.AsyncClient, frr_template: str
) -> None:
    answer = await api.post("/labs/plan", json={"lab_intent": PAIR.model_dump(mode="json")})

    assert answer.status_code == 200, answer.text
    body = answer.json()
    plan = parse_plan(body["plan"])
    assert plan.model_copy(update={"nodes": ()}) == plan_from_intent(PAIR).model_copy(
        update={"nodes": ()}
    )
    chosen = {n.name: n.template for n in plan.nodes}
    # the server's FRR template (this module's, or another test's of the same session)
    assert chosen["R1"] == chosen["R2"] and str(chosen["R1"]).startswith("FRR 8.4")
    assert chosen["H1"] == chosen["H2"] == "VPCS"
    assert body["ports"]["R1:eth0"] == [0, 0] and body["ports"]["H2:eth0"] == [0, 0]
    assert set(body["templates"]) == {"R1", "R2", "H1", "H2"}
    assert body.get("change") is None


async def test_a_plan_that_cannot_be_built_is_422_with_every_problem(
    api: httpx.AsyncClient, frr_template: str
) -> None:
    document = {
        "nodes": [
            {"name": "R1", "platform": "frr", "template": frr_template},
            {"name": "PC1", "platform": "vpcs", "template": frr_template},
        ],
        "links": ["R1:eth7-PC1:e0"],
        "config": {"R1": ["router ospf", "reload"]},
    }
    wrong_intent = {"lab_intent": {"routers": ["R1", "R2"], "links": [["R1", "R1"]]}}

    answer = await api.post("/labs/plan", json={"plan": document})
    laid_out = await api.post("/labs/plan", json=wrong_intent)
    neither = await api.post("/labs/plan", json={"relative": True})
    not_a_mapping = await api.post("/labs/plan", json={"lab_intent": [None, None]})
    loose = {  # read as strictly as every body: 0 is no boolean
        "nodes": [{"name": "R1", "platform": "frr"}],
        "checks": [{"kind": "config_line", "node": "R1", "line": "router ospf", "present": 0}],
    }
    mistyped = await api.post("/labs/plan", json={"plan": loose})

    assert answer.status_code == 422, answer.text
    body = answer.json()
    assert body["code"] == "invalid_plan"
    assert [p["field"] for p in body["problems"]] == [
        "nodes[1].template",
        "links[0]",
        "config.R1[1]",
    ]
    assert "R1 has no port eth7" in body["detail"]
    assert laid_out.status_code == 422
    assert {p["field"] for p in laid_out.json()["problems"]} == {"links[0]", "links"}
    assert neither.status_code == 422
    assert "either plan" in neither.json()["detail"]
    assert not_a_mapping.status_code == 422, not_a_mapping.text
    assert mistyped.status_code == 422, mistyped.text
    assert mistyped.json()["problems"] == [
        {"field": "checks[0].present", "message": "should be of JSON type boolean"}
    ]


async def test_the_lab_exports_as_json_and_yaml_and_plans_relative_to_it(
    api: httpx.AsyncClient, gns3_client: Gns3Client, admin_token: str, project_id: str
) -> None:
    vpcs = next(t for t in await gns3_client.templates(admin_token) if t["template_type"] == "vpcs")
    node = await gns3_client.create_node_from_template(
        admin_token, project_id, str(vpcs["template_id"]), x=10, y=20
    )
    await gns3_client.update_node(admin_token, project_id, str(node["node_id"]), name="PC1")

    as_json = await api.get("/labs/current")
    as_yaml = await api.get("/labs/current", params={"format": "yaml"})
    relative = await api.post(
        "/labs/plan",
        json={
            "plan": {
                "nodes": [
                    {"name": "PC1", "platform": "vpcs", "template": "VPCS", "x": 10, "y": 20},
                    {"name": "PC2", "platform": "vpcs"},
                ],
                "links": ["PC1:e0-PC2:e0"],
            },
            "relative": True,
        },
    )

    assert as_json.status_code == 200, as_json.text
    assert as_json.json() == {
        "nodes": [{"name": "PC1", "platform": "vpcs", "template": "VPCS", "x": 10, "y": 20}]
    }
    assert as_yaml.status_code == 200
    assert as_yaml.headers["content-type"].startswith("application/yaml")
    assert parse_plan(yaml.safe_load(as_yaml.text)) == parse_plan(as_json.json())
    assert relative.status_code == 200, relative.text
    change: dict[str, Any] = relative.json()["change"]
    assert change["add_nodes"] == ["PC2"] and change["add_links"] == ["PC1:e0-PC2:e0"]
    assert change["remove_nodes"] == [] and not change["empty"]


async def test_an_empty_project_has_no_lab_to_export(api: httpx.AsyncClient) -> None:
    answer = await api.get("/labs/current")
    assert answer.status_code == 404
    assert "no lab to export" in answer.json()["detail"]


async def test_the_routes_are_in_the_openapi_document(api: httpx.AsyncClient) -> None:
    root = str(api.base_url).split("/v3/copilot")[0]
    async with httpx.AsyncClient(timeout=30) as plain:
        document = (await plain.get(f"{root}/schema/openapi.json")).json()
    plan = document["paths"]["/v3/copilot/projects/{project_id}/labs/plan"]["post"]
    current = document["paths"]["/v3/copilot/projects/{project_id}/labs/current"]["get"]
    assert plan["operationId"] == "planLab" and current["operationId"] == "getCurrentLab"
    body = document["components"]["schemas"]["LabPlanRequest"]
    assert set(body["properties"]) == {"plan", "lab_intent", "relative"}
    assert {"200", "422", "501"} <= set(plan["responses"])
    assert "application/yaml" in current["responses"]["200"]["content"]
    assert "problems" in document["components"]["schemas"]["ErrorBody"]["properties"]
