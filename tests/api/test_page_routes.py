"""The routes the page's second pass needs, over real HTTP: edit/regenerate, search,
export, tool outputs rendered, the endpoint's models, the topology and its events."""

from __future__ import annotations

import json

from adapters.web.testing import StaticGns3Directory, StaticModelCatalog
from copilot_core.testing import text_reply
from tests.api.conftest import OPEN, Service, run_service


async def _ask(service: Service, message: str, **extra: object) -> dict[str, object]:
    async with service.client() as client:
        response = await client.post(
            service.chat_url() + "/stream", json={"message": message, "stream": False, **extra}
        )
    assert response.status_code == 200, response.text
    body: dict[str, object] = response.json()
    return body


async def test_replace_from_drops_the_last_question_and_answers_again(service: Service) -> None:
    service.model.add(text_reply("first"), text_reply("second"))
    first = await _ask(service, "question one")
    session = first["session_id"]
    async with service.client() as client:
        history = (await client.get(service.chat_url() + f"/sessions/{session}/history")).json()
    question = history["messages"][0]["id"]
    again = await _ask(service, "question one, edited", session_id=session, replace_from=question)
    assert again["content"] == "second"
    async with service.client() as client:
        history = (await client.get(service.chat_url() + f"/sessions/{session}/history")).json()
        without_session = await client.post(
            service.chat_url() + "/stream", json={"message": "x", "replace_from": question}
        )
        not_last = await client.post(
            service.chat_url() + "/stream",
            json={"message": "x", "session_id": session, "replace_from": question},
        )
    assert [m["content"] for m in history["messages"]] == ["question one, edited", "second"]
    assert history["message_count"] == 2
    assert without_session.status_code == 422 and "session_id" in without_session.text
    assert not_last.status_code == 422 and "last question" in not_last.json()["detail"]


async def test_search_finds_titles_and_text_of_the_callers_sessions_only(service: Service) -> None:
    service.model.add(text_reply("OSPF area 7 is fine"))
    asked = await _ask(service, "check ospf please")
    async with service.client() as client:
        found = await client.get(service.chat_url() + "/search", params={"q": "AREA 7"})
        none = await client.get(service.chat_url() + "/search", params={"q": "bgp"})
        blank = await client.get(service.chat_url() + "/search", params={"q": "   "})
    async with service.client("token-bob") as bob:
        theirs = await bob.get(service.chat_url() + "/search", params={"q": "ospf"})
    assert found.status_code == 200
    [match] = found.json()
    assert match["session"]["thread_id"] == asked["session_id"]
    assert "area 7" in match["snippet"] and match["message_id"]
    assert none.json() == [] and theirs.json() == []
    assert blank.status_code == 422


async def test_export_is_a_markdown_lab_report_or_the_session_as_json(service: Service) -> None:
    service.model.add(text_reply("Two routers, **both up**."))
    asked = await _ask(service, "What is in my lab?")
    url = service.chat_url() + f"/sessions/{asked['session_id']}/export"
    async with service.client() as client:
        report = await client.get(url)
        dump = await client.get(url, params={"format": "json"})
        bad = await client.get(url, params={"format": "pdf"})
    assert report.status_code == 200
    assert report.headers["content-type"].startswith("text/markdown")
    assert "attachment" in report.headers["content-disposition"]
    assert "## 1. Question\n\n> What is in my lab?" in report.text
    assert "### Answer\n\nTwo routers, **both up**." in report.text
    body = dump.json()
    assert body["session"]["thread_id"] == asked["session_id"]
    assert [m["role"] for m in body["messages"]] == ["user", "assistant"]
    assert bad.status_code == 422


async def test_a_listed_session_counts_its_questions_apart_from_its_messages(
    service: Service,
) -> None:
    service.model.add(text_reply("one"), text_reply("two"))
    asked = await _ask(service, "first question")
    await _ask(service, "second question", session_id=asked["session_id"])
    async with service.client() as client:
        [listed] = (await client.get(service.chat_url() + "/sessions")).json()
    assert (listed["question_count"], listed["message_count"]) == (2, 4)


async def test_export_is_named_after_the_title_and_names_the_project() -> None:
    directory = StaticGns3Directory(
        projects=[{"project_id": OPEN, "name": "ccna-lab", "status": "opened"}]
    )
    async with run_service(directory=directory) as service:
        service.model.add(text_reply("Both adjacencies are Full."))
        asked = await _ask(service, "Is OSPF up?")
        session_url = service.chat_url() + f"/sessions/{asked['session_id']}"
        async with service.client() as client:
            renamed = await client.patch(session_url, json={"title": "OSPF lab: check / R1"})
            report = await client.get(session_url + "/export")
            dump = await client.get(session_url + "/export", params={"format": "json"})
            await client.patch(session_url, json={"title": "   ★ ★"})
            no_letters = await client.get(session_url + "/export")
    assert renamed.status_code == 200, renamed.text
    disposition = report.headers["content-disposition"]
    assert disposition == 'attachment; filename="ospf-lab-check-r1.md"'
    assert dump.headers["content-disposition"] == 'attachment; filename="ospf-lab-check-r1.json"'
    assert f"- Project: ccna-lab (`{OPEN}`)" in report.text
    fallback = f'attachment; filename="copilot-session-{asked["session_id"]}.md"'
    assert no_letters.headers["content-disposition"] == fallback


async def test_an_export_without_a_gns3_directory_shows_the_project_id(service: Service) -> None:
    service.model.add(text_reply("Fine."))
    asked = await _ask(service, "Is OSPF up?")
    async with service.client() as client:
        report = await client.get(service.chat_url() + f"/sessions/{asked['session_id']}/export")
    assert report.status_code == 200
    assert f"- Project: `{OPEN}`" in report.text


async def test_tool_outputs_are_rendered_per_device_with_the_reason_of_a_failure(
    service: Service,
) -> None:
    console = {
        "status": "partial_success",
        "results": [
            {"device_name": "R1", "status": "success", "output": [
                {"command": "show ip int br", "output": "Gi0/0 10.0.0.1 up",
                 "parsed": [{"intf": "Gi0/0", "status": "up"}]}]},
            {"device_name": "PC1", "status": "failed", "error": "PC1 is not started",
             "output": None},
            {"device_name": "PC2", "status": "success", "prompt": "PC2>", "output": [
                {"command": "ping 10.0.0.1", "output": "84 bytes from 10.0.0.1"}]},
        ],
    }  # fmt: skip
    items = [
        {"tool_name": "execute_multiple_device_commands", "output": json.dumps(console)},
        {
            "tool_name": "x",
            "output": '{"status": "error", "error": "<b>boom</b>"}',
            "status": "error",
        },
    ]
    async with service.client() as client:
        rendered = await client.post("/v3/copilot/render/tools", json={"items": items})
        too_many = await client.post("/v3/copilot/render/tools", json={"items": items * 9})
    first, second = rendered.json()["items"]
    assert '<h5 class="tv-cmd">R1# show ip int br</h5>' in first["html"]
    assert '<h5 class="tv-cmd">PC2&gt; ping 10.0.0.1</h5>' in first["html"]  # its own prompt
    assert '<span class="tok-m">10.0.0.1</span>' in first["html"]
    assert "<th>intf</th>" in first["html"] and first["reason"] == "PC1: PC1 is not started"
    assert second["reason"] == "<b>boom</b>" and "<b>" not in second["html"]
    assert too_many.status_code == 422


async def test_the_models_of_the_endpoint_are_listed_with_the_defaults() -> None:
    catalog = StaticModelCatalog({"u-alice": ["gpt-b", "gpt-a"]})
    async with run_service() as service, service.client() as client:
        unavailable = (await client.get("/v3/copilot/llm-config/models")).json()
    assert unavailable["available"] is False and "not available" in unavailable["reason"]
    async with run_service(model_catalog=catalog) as service:
        async with service.client() as client:
            listed = (await client.get("/v3/copilot/llm-config/models")).json()
        async with service.client("token-bob") as bob:
            none = (await bob.get("/v3/copilot/llm-config/models")).json()
    assert listed == {
        "available": True,
        "models": ["gpt-b", "gpt-a"],
        "reason": None,
        "defaults": {"temperature": None, "context_limit": 32000},
    }
    assert none["available"] is False and "No LLM is configured" in none["reason"]


async def test_the_topology_is_shaped_for_drawing_and_gns3_changes_are_relayed() -> None:
    pc, sw = "11111111-1111-4111-8111-111111111111", "22222222-2222-4222-8222-222222222222"
    port = {"name": "Ethernet0", "short_name": "e0", "adapter_number": 0, "port_number": 0}
    directory = StaticGns3Directory(
        projects=[{"project_id": OPEN, "name": "Lab", "status": "opened"}],
        topologies={
            OPEN: {
                "nodes": [
                    {"node_id": pc, "name": "PC1", "node_type": "vpcs", "status": "started",
                     "symbol": ":/symbols/affinity/square/blue/client.svg", "x": -50, "y": 10,
                     "console": 5000, "console_type": "telnet", "console_host": "10.1.1.1",
                     "ports": [port]},
                    {"node_id": sw, "name": "SW1", "node_type": "ethernet_switch",
                     "status": "started", "symbol": ":/symbols/ethernet_switch.svg",
                     "x": 50, "y": 10, "console_type": "none", "ports": [port]},
                ],
                "links": [{"link_id": "l1", "capturing": True, "nodes": [
                    {"node_id": pc, "adapter_number": 0, "port_number": 0},
                    {"node_id": sw, "adapter_number": 0, "port_number": 0}]}],
            }
        },
        events={OPEN: [{"action": "ping", "event": {}},
                       {"action": "node.updated", "event": {"node_id": pc}},
                       {"action": "compute.updated", "event": {}}]},
    )  # fmt: skip
    async with run_service(directory=directory) as service, service.client() as client:
        topology = (await client.get(f"/v3/copilot/projects/{OPEN}/topology")).json()
        events = await client.get(f"/v3/copilot/projects/{OPEN}/topology/events")
    first, second = topology["nodes"]
    assert (first["name"], first["kind"], first["console"]) == (
        "PC1",
        "computer",
        "telnet://10.1.1.1:5000",
    )
    assert first["web_ui"].endswith(f"/controller/1/project/{OPEN}/nodes/{pc}")
    assert (second["kind"], second["console"], second["web_ui"]) == ("switch", None, None)
    assert first["ports"][0]["in_use"] is True
    assert topology["links"] == [
        {"link_id": "l1", "capturing": True, "suspended": False,
         "ends": [{"node_id": pc, "node": "PC1", "port": "e0"},
                  {"node_id": sw, "node": "SW1", "port": "e0"}]}
    ]  # fmt: skip
    assert topology["web_ui"].endswith(f"/controller/127.0.0.1/3080/project/{OPEN}")
    data = [json.loads(line[5:]) for line in events.text.splitlines() if line.startswith("data:")]
    assert data == [
        {"type": "ready"},
        {"type": "heartbeat"},
        {"type": "topology", "action": "node.updated", "id": pc},
    ]
    assert events.headers["content-type"].startswith("text/event-stream")


async def test_projects_are_created_and_a_closed_one_is_opened_from_the_page() -> None:
    closed = "0c105ed0-0000-4000-8000-00000000c105"
    directory = StaticGns3Directory(
        projects=[{"project_id": closed, "name": "Closed lab", "status": "closed"}]
    )
    async with run_service(directory=directory) as service, service.client() as client:
        created = await client.post("/v3/copilot/projects", json={"name": "ccna-lab-1"})
        taken = await client.post("/v3/copilot/projects", json={"name": "ccna-lab-1"})
        blank = await client.post("/v3/copilot/projects", json={"name": "   "})
        opened = await client.post(f"/v3/copilot/projects/{closed.upper()}/open")
        unknown = await client.post(
            "/v3/copilot/projects/7d3f0c7e-1111-4222-8333-944455556666/open"
        )
        not_an_id = await client.post("/v3/copilot/projects/lab/open")
        listed = (await client.get("/v3/copilot/projects")).json()
    assert created.status_code == 201, created.text
    assert created.json()["name"] == "ccna-lab-1" and created.json()["status"] == "opened"
    assert taken.status_code == 409 and "already exists" in taken.json()["detail"]
    assert blank.status_code == 422
    assert opened.status_code == 200, opened.text
    assert opened.json() == {"id": closed, "name": "Closed lab", "status": "opened"}
    assert unknown.status_code == 404 and not_an_id.status_code == 422
    assert sorted((p["name"], p["status"]) for p in listed) == [
        ("Closed lab", "opened"),
        ("ccna-lab-1", "opened"),
    ]
