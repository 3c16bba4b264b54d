"""Issue 27's cases on the real lab, through the HTTP API: ``gns3-copilot serve`` as a
subprocess over a real gns3-server 3.0.6 (its dynamips Ethernet switch: a built-in node
that runs here; VPCS nodes are made and linked but cannot be started: no uBridge) and the
scripted OpenAI-compatible server. A colleague works in GNS3 itself meanwhile (GNS3's own
API, as its UI does).

* an undo deletes only what the change made: the colleague's node survives;
* what is in the way of an undo stops it (409, nothing touched); confirmed, it lists and
  deletes the extra link;
* a deleted switch comes back as it was: its id, its VLANs, its label, its links on the
  same ports;
* rollbacks are one at a time (one 200, one 409), and a turn posted during one gets 409;
* the rollback is in the history and the lab report after a reload.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest

from tests.e2e.test_service_end_to_end import payloads, stream
from tests.fakes.copilot_service import ServedCopilot as Service
from tests.fakes.copilot_service import serve_copilot
from tests.fakes.gns3_server import RealGns3Server
from tests.fakes.openai_server import Reply, ScriptedOpenAIServer, ToolCallScript

pytestmark = [pytest.mark.timeout(300), pytest.mark.gns3]

API_KEY = "sk-e2e-undo-key"


@pytest.fixture(scope="module")
def llm() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer(api_key=API_KEY) as server:
        yield server


@pytest.fixture(scope="module")
def service(
    gns3_server: RealGns3Server, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Service]:
    with serve_copilot(gns3_server.url, tmp_path_factory.mktemp("undo")) as served:
        yield served


@pytest.fixture(scope="module")
def admin(gns3_server: RealGns3Server, service: Service, llm: ScriptedOpenAIServer) -> str:
    token = gns3_server.token()
    with service.api(token) as api:
        stored = api.put(
            "/llm-config",
            json={"provider": "openai", "model": "gpt-e2e", "base_url": llm.base_url,
                  "api_key": API_KEY},
        )  # fmt: skip
        assert stored.status_code == 200, stored.text
    return token


class Gns3:
    """GNS3's own API, as the colleague (and the checks) use it."""

    def __init__(self, server: RealGns3Server, token: str, project: str) -> None:
        self.http = httpx.Client(
            base_url=f"{server.url}/v3/projects/{project}",
            headers={"Authorization": f"Bearer {token}"},
            timeout=30,
        )
        templates = httpx.get(
            f"{server.url}/v3/templates", headers={"Authorization": f"Bearer {token}"}
        ).json()
        self.templates = {t["name"]: t["template_id"] for t in templates}

    def node(self, template: str, name: str, x: int = 0) -> dict[str, Any]:
        made = self.http.post(
            f"/templates/{self.templates[template]}", json={"x": x, "y": 0, "compute_id": "local"}
        )
        assert made.status_code == 201, made.text
        renamed = self.http.put(f"/nodes/{made.json()['node_id']}", json={"name": name})
        assert renamed.status_code == 200, renamed.text
        return dict(renamed.json())

    def link(self, one: str, port1: int, other: str, port2: int) -> dict[str, Any]:
        body = {
            "nodes": [
                {"node_id": one, "adapter_number": 0, "port_number": port1},
                {"node_id": other, "adapter_number": 0, "port_number": port2},
            ]
        }
        made = self.http.post("/links", json=body)
        assert made.status_code == 201, made.text
        return dict(made.json())

    def nodes(self) -> dict[str, dict[str, Any]]:
        return {n["name"]: n for n in self.http.get("/nodes").json()}

    def links(self) -> set[frozenset[tuple[str, int]]]:
        names = {n["node_id"]: n["name"] for n in self.nodes().values()}
        return {
            frozenset((names[e["node_id"]], e["port_number"]) for e in link["nodes"])
            for link in self.http.get("/links").json()
        }


@pytest.fixture
def lab(gns3_server: RealGns3Server, admin: str) -> Iterator[tuple[str, Gns3]]:
    headers = {"Authorization": f"Bearer {admin}"}
    made = httpx.post(
        f"{gns3_server.url}/v3/projects", json={"name": f"undo-{time.time_ns()}"}, headers=headers
    )
    assert made.status_code == 201, made.text
    project = str(made.json()["project_id"])
    gns3 = Gns3(gns3_server, admin, project)
    yield project, gns3
    gns3.http.close()
    httpx.delete(f"{gns3_server.url}/v3/projects/{project}", headers=headers, timeout=30)


def a_change(
    api: httpx.Client, llm: ScriptedOpenAIServer, project: str, tool: str, args: dict[str, Any]
) -> tuple[str, str]:
    """One approved change made by the copilot: (session id, its restore point id)."""
    llm.clear()
    llm.add(Reply(tool_calls=[ToolCallScript(tool, args)]), Reply(text="Done."), Reply(text="T"))
    body = {"message": f"please {tool}", "copilot_mode": "lab_automation_assistant"}
    events = payloads(stream(api, project, body))
    (end,) = [e for e in events if e["type"] == "tool_end"]
    assert end["status"] == "success", end
    return events[0]["session_id"], json.loads(end["tool_output"])["restore_point_id"]


def points_url(project: str, session: str) -> str:
    return f"/projects/{project}/chat/sessions/{session}/restore-points"


def test_an_undo_deletes_what_the_change_made_and_leaves_a_colleagues_node(
    service: Service, admin: str, llm: ScriptedOpenAIServer, lab: tuple[str, Gns3]
) -> None:
    project, gns3 = lab
    with service.api(admin) as api:
        create = {"nodes": [{"template_name": "VPCS", "name": "PC7"}]}
        session, point = a_change(api, llm, project, "create_gns3_node", create)
        gns3.node("VPCS", "OTHERS1", x=200)  # the colleague, in GNS3 itself
        (listed,) = api.get(points_url(project, session)).json()
        assert listed["change"] == {"nodes_created": ["PC7"]}
        preview = api.get(f"{points_url(project, session)}/{point}/preview").json()
        assert preview["topology"] == ["delete node PC7 (made by the change)"]
        rolled = api.post(f"{points_url(project, session)}/{point}/rollback")
        assert rolled.status_code == 200, rolled.text
        assert rolled.json()["status"] == "success", rolled.json()
        (topology,) = [r for r in rolled.json()["results"] if r["device_name"] == "topology"]
        assert topology["output"]["actions"] == ["delete node PC7 (made by the change)"]
        assert sorted(gns3.nodes()) == ["OTHERS1"]
        # The point says it was rolled back, and the history holds the rollback.
        (listed,) = [p for p in api.get(points_url(project, session)).json() if p["id"] == point]
        assert listed["rolled_back"]["status"] == "success"
        history = api.get(f"/projects/{project}/chat/sessions/{session}/history").json()
        undo = history["messages"][-2]
        assert undo["metadata"]["rollback"]["restore_point_id"] == point
        report = api.get(f"/projects/{project}/chat/sessions/{session}/export").text
        assert "Undone by" in report and "rolled back restore point" in report


def test_a_conflicting_undo_touches_nothing_and_confirmed_it_says_what_else_it_deletes(
    service: Service, admin: str, llm: ScriptedOpenAIServer, lab: tuple[str, Gns3]
) -> None:
    project, gns3 = lab
    with service.api(admin) as api:
        create = {"nodes": [{"template_name": "VPCS", "name": "PC7"}]}
        session, point = a_change(api, llm, project, "create_gns3_node", create)
        others = gns3.node("VPCS", "OTHERS1", x=200)
        gns3.link(others["node_id"], 0, gns3.nodes()["PC7"]["node_id"], 0)
        url = f"{points_url(project, session)}/{point}"
        refused = api.post(f"{url}/rollback")
        assert refused.status_code == 409, refused.text
        assert "PC7 (made by the change) was linked since" in refused.json()["detail"]
        assert sorted(gns3.nodes()) == ["OTHERS1", "PC7"]  # nothing was touched
        assert len(gns3.links()) == 1
        forced = api.get(f"{url}/preview", params={"force": "true"}).json()
        assert (
            "delete link OTHERS1 Ethernet0 <-> PC7 Ethernet0 (made since by someone else)"
            in (forced["topology"])
        )
        rolled = api.post(f"{url}/rollback", params={"force": "true"})
        assert rolled.status_code == 200, rolled.text
        assert sorted(gns3.nodes()) == ["OTHERS1"] and gns3.links() == set()


@pytest.fixture
def switched(lab: tuple[str, Gns3]) -> tuple[str, Gns3, dict[str, Any]]:
    """SW1, a dynamips Ethernet switch with access VLAN 10 on ports 0 and 1, PC1 and PC2
    on those ports."""
    project, gns3 = lab
    switch = gns3.node("Ethernet switch", "SW1")
    mapping = switch["properties"]["ports_mapping"]
    for port in mapping[:2]:
        port["vlan"] = 10
    updated = gns3.http.put(
        f"/nodes/{switch['node_id']}", json={"properties": {"ports_mapping": mapping}}
    )
    assert updated.status_code == 200, updated.text
    for port, name in enumerate(("PC1", "PC2")):
        pc = gns3.node("VPCS", name, x=100 * (port + 1))
        gns3.link(switch["node_id"], port, pc["node_id"], 0)
    return project, gns3, gns3.nodes()["SW1"]


def test_a_deleted_switch_comes_back_with_its_vlans_and_links(
    service: Service,
    admin: str,
    llm: ScriptedOpenAIServer,
    switched: tuple[str, Gns3, dict[str, Any]],
) -> None:
    project, gns3, before = switched
    links_before = gns3.links()
    with service.api(admin) as api:
        session, point = a_change(api, llm, project, "delete_gns3_node", {"node_names": ["SW1"]})
        assert "SW1" not in gns3.nodes()
        preview = api.get(f"{points_url(project, session)}/{point}/preview").json()
        assert preview["topology"] == [
            "create node SW1 again (ethernet_switch) as it was: its properties, ports, label, "
            "symbol and position",
            "link PC1 Ethernet0 <-> SW1 Ethernet0 again",
            "link PC2 Ethernet0 <-> SW1 Ethernet1 again",
        ]
        started = time.perf_counter()
        rolled = api.post(f"{points_url(project, session)}/{point}/rollback")
        print(f"rollback of SW1 and its two links: {time.perf_counter() - started:.3f} s")
        assert rolled.status_code == 200, rolled.text
        assert rolled.json()["status"] == "success", rolled.json()
    after = gns3.nodes()["SW1"]
    assert after["node_id"] == before["node_id"]
    vlans = [p["vlan"] for p in after["properties"]["ports_mapping"]]
    assert vlans == [10, 10, 1, 1, 1, 1, 1, 1]
    assert after["properties"]["ports_mapping"] == before["properties"]["ports_mapping"]
    for key in ("label", "symbol", "x", "y", "z", "console_type", "status"):
        assert after[key] == before[key], key
    assert gns3.links() == links_before


def test_two_rollbacks_at_once_one_runs_and_the_other_gets_409(
    service: Service,
    admin: str,
    llm: ScriptedOpenAIServer,
    switched: tuple[str, Gns3, dict[str, Any]],
) -> None:
    project, gns3, _ = switched
    with service.api(admin) as api:
        session, point = a_change(api, llm, project, "delete_gns3_node", {"node_names": ["SW1"]})
    url = f"{points_url(project, session)}/{point}/rollback"
    answers: list[httpx.Response] = []
    start = threading.Barrier(2)

    def roll() -> None:
        with service.api(admin) as api:
            start.wait(timeout=30)
            answers.append(api.post(url))

    threads = [threading.Thread(target=roll) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    codes = sorted(a.status_code for a in answers)
    assert codes == [200, 409], [a.text for a in answers]
    (busy,) = [a for a in answers if a.status_code == 409]
    assert "rollback" in busy.json()["detail"]
    assert sorted(gns3.nodes()) == ["PC1", "PC2", "SW1"]  # no second switch, no stray node
    assert len(gns3.links()) == 2


class SlowLinks:
    """A reverse proxy in front of GNS3 that holds each link creation ``delay`` seconds
    while ``slow`` is set: a rollback that makes links again then runs long enough for a
    turn to be posted during it."""

    def __init__(self, upstream: str, delay: float = 1.5) -> None:
        self.slow = threading.Event()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def forward(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                if proxy.slow.is_set() and self.command == "POST" and self.path.endswith("/links"):
                    time.sleep(delay)
                headers = {k: v for k, v in self.headers.items() if k.lower() != "host"}
                answer = httpx.request(
                    self.command, upstream + self.path, content=body, headers=headers, timeout=60
                )
                self.send_response(answer.status_code)
                for key, value in answer.headers.items():
                    if key.lower() not in ("transfer-encoding", "content-length", "connection"):
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(answer.content)))
                self.end_headers()
                self.wfile.write(answer.content)

            do_GET = do_POST = do_PUT = do_DELETE = forward

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> SlowLinks:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_a_turn_posted_while_a_rollback_runs_gets_409(
    gns3_server: RealGns3Server,
    admin: str,
    llm: ScriptedOpenAIServer,
    switched: tuple[str, Gns3, dict[str, Any]],
    tmp_path: Any,
) -> None:
    project, gns3, _ = switched
    with SlowLinks(gns3_server.url) as proxy, serve_copilot(proxy.url, tmp_path) as slow:
        with slow.api(admin) as api:
            stored = api.put(
                "/llm-config",
                json={"provider": "openai", "model": "gpt-e2e", "base_url": llm.base_url,
                      "api_key": API_KEY},
            )  # fmt: skip
            assert stored.status_code == 200, stored.text
            session, point = a_change(
                api, llm, project, "delete_gns3_node", {"node_names": ["SW1"]}
            )
        llm.clear()
        llm.add(Reply(text="hello"))
        proxy.slow.set()
        rolled: list[httpx.Response] = []

        def roll() -> None:
            with slow.api(admin) as api:
                rolled.append(api.post(f"{points_url(project, session)}/{point}/rollback"))

        thread = threading.Thread(target=roll)
        thread.start()
        with slow.api(admin) as api:
            deadline = time.monotonic() + 30
            while "SW1" not in gns3.nodes():  # the rollback runs: SW1 is made, its links wait
                assert time.monotonic() < deadline and thread.is_alive(), rolled
                time.sleep(0.02)
            turn = api.post(
                f"/projects/{project}/chat/stream",
                json={"message": "hi", "session_id": session, "stream": False},
            )
        thread.join(timeout=120)
    assert turn.status_code == 409, turn.text
    assert "rollback" in turn.json()["detail"]
    assert rolled[0].status_code == 200, rolled[0].text
    assert rolled[0].json()["status"] == "success", rolled[0].json()


def test_a_rename_is_undone_and_a_colleagues_move_of_that_node_stays(
    service: Service, admin: str, llm: ScriptedOpenAIServer, lab: tuple[str, Gns3]
) -> None:
    project, gns3 = lab
    pc = gns3.node("VPCS", "PC1")
    with service.api(admin) as api:
        rename = {"nodes": [{"node_name": "PC1", "new_name": "PC9"}]}
        session, point = a_change(api, llm, project, "update_gns3_node_name", rename)
        moved = gns3.http.put(f"/nodes/{pc['node_id']}", json={"x": 300, "y": 120})
        assert moved.status_code == 200, moved.text  # the colleague moves it meanwhile
        (listed,) = api.get(points_url(project, session)).json()
        assert listed["change"] == {"nodes_changed": {"PC9": ["label", "name"]}}
        rolled = api.post(f"{points_url(project, session)}/{point}/rollback")
        assert rolled.status_code == 200, rolled.text
        assert rolled.json()["status"] == "success", rolled.json()
        node = gns3.nodes()["PC1"]
        assert (node["node_id"], node["x"], node["y"]) == (pc["node_id"], 300, 120)

        # A second rename by the copilot, then one by the colleague: undoing the copilot's
        # would overwrite the colleague's, so it is refused and nothing changes.
        session, point = a_change(api, llm, project, "update_gns3_node_name", {
            "nodes": [{"node_name": "PC1", "new_name": "PC8"}]})  # fmt: skip
        renamed = gns3.http.put(f"/nodes/{pc['node_id']}", json={"name": "LAB-PC"})
        assert renamed.status_code == 200, renamed.text
        refused = api.post(f"{points_url(project, session)}/{point}/rollback")
        assert refused.status_code == 409, refused.text
        assert "name was changed since" in refused.json()["detail"]
        assert "LAB-PC" in gns3.nodes()
