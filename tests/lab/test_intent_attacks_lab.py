"""Issue 35 on the real router lab (PC1 – R1 – R2 – PC2: FRR 8.4 routers, Debian Linux
hosts as GNS3 Docker nodes), through ``gns3-copilot serve`` over HTTP and the tool source in
teaching mode; every device read afterwards with ``docker exec``, never through the product.

* Case 2: ``{"kind": "reachability", "from": "PC1", "to": "fe80::1%x;ip link set eth1
  down"}`` was stored by ``PUT …/intent`` (200) and run by ``verify_intent``, taking PC1's
  eth1 down. Now it is refused (422 naming ``checks.0.reachability.to``; ``verify_intent``'s
  arguments refused in teaching mode), nothing is stored, PC1's eth1 is still up, and a
  legitimate reachability check still passes over the same routes.
* Case 8 (standing intent): ten concurrent ``POST …/intent/run?wait_s=120`` queued on one
  console and answered after 150 … 271 s. Now one runs and the nine others get 409 at once.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from adapters.gns3 import ConsoleRunner, Gns3Client, Gns3ToolExecutor
from copilot_core import CopilotMode, ParsedToolCall, ToolStatus
from tests.adapters.gns3.conftest import make_context
from tests.fakes.copilot_service import ServedCopilot, serve_copilot
from tests.lab.lab_project import LabProject
from tests.lab.router_lab import RouterLab
from tests.lab.test_frr_lab import ADDRESSES, PCS, topology

pytestmark = [pytest.mark.timeout(1500), pytest.mark.gns3, pytest.mark.slow]

__all__ = ["topology"]  # the lab's PC1 – R1 – R2 – PC2, as test_frr_lab builds it

FIGURES: dict[str, float] = {}
ATTACK = {"kind": "reachability", "from": "PC1", "to": "fe80::1%x;ip link set eth1 down"}
PC1_PC2 = {"kind": "reachability", "from": "PC1", "to": "PC2", "name": "PC1 reaches PC2"}


# ------------------------------------------------------------------ the oracle
def link_flags(lab: LabProject, node: str, device: str) -> set[str]:
    """The flags iproute2 shows for ``device`` in ``node`` (``UP``: administratively up)."""
    shown = lab.docker(node, "ip", "-o", "link", "show", device)
    return set(shown.split("<", 1)[1].split(">", 1)[0].split(","))


# ------------------------------------------------------------------ fixtures
@pytest.fixture(scope="module")
def service(
    router_lab: RouterLab, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServedCopilot]:
    root = tmp_path_factory.mktemp("intent-attacks-service")
    env = {"COPILOT_HEARTBEAT_INTERVAL": "2", "COPILOT_GNS3_TIMEOUT": "120"}
    with serve_copilot(router_lab.url, root, env=env) as served:
        try:
            yield served
        finally:
            print("\nintent attack figures:", {k: round(v, 2) for k, v in FIGURES.items()})


@pytest.fixture(scope="module")
def lab(topology: LabProject) -> LabProject:
    """The topology addressed and routed (OSPF), and an eth1 on PC1 (a veth link, up)."""
    runner = ConsoleRunner(command_timeout=20.0, wake_timeout=90.0)

    async def configure() -> None:
        for name, (address, gateway) in PCS.items():
            done = await runner.run(
                topology.target(name),
                [f"ip addr add {address} dev eth0", f"ip route add default via {gateway}"],
            )
            assert done.error is None, done.error
        for name, lines in ADDRESSES.items():
            done = await runner.run(topology.target(name), lines, config_mode=True)
            assert done.error is None, done.error

    asyncio.run(configure())
    # (this kernel has no dummy links: a veth pair, both ends up)
    topology.docker("PC1", "ip", "link", "add", "eth1", "type", "veth", "peer", "name", "p1")
    topology.docker("PC1", "ip", "link", "set", "p1", "up")
    topology.docker("PC1", "ip", "link", "set", "eth1", "up")
    assert "UP" in link_flags(topology, "PC1", "eth1")
    return topology


def verify_in_teaching_mode(lab: LabProject, checks: list[dict[str, Any]]) -> Any:
    async def call() -> Any:
        async with Gns3Client(lab.lab.url, timeout=120.0) as client:
            tools = Gns3ToolExecutor(client, runner=ConsoleRunner(command_timeout=20.0))
            context = make_context(lab.project, lab.token, CopilotMode.TEACHING_ASSISTANT)
            arguments = json.dumps({"checks": checks, "wait_s": 0})
            return await tools.execute(
                ParsedToolCall.parse("c1", "verify_intent", arguments), context
            )

    return asyncio.run(call())


# ------------------------------------------------------------------ the tests
def test_case_2_the_scope_id_shell_line_is_refused_and_eth1_stays_up(
    lab: LabProject, service: ServedCopilot
) -> None:
    intent = f"/projects/{lab.project}/intent"
    with service.api(lab.token) as api:
        refused = api.put(intent, json={"checks": [ATTACK]})
        assert refused.status_code == 422, refused.text
        assert "checks.0.reachability.to" in refused.text, refused.text
        assert api.get(intent).json()["checks"] == []  # nothing stored
        ran = api.post(f"{intent}/run")  # nothing to run
        assert ran.status_code == 200 and ran.json()["checks"] == [], ran.text

    by_tool = verify_in_teaching_mode(lab, [ATTACK])
    assert by_tool.status is ToolStatus.ERROR, by_tool.output
    assert [f["field"] for f in by_tool.output["fields"]] == ["checks.0.reachability.to"]

    assert "UP" in link_flags(lab, "PC1", "eth1"), "PC1's eth1 went down"
    assert "UP" in link_flags(lab, "PC1", "eth0")


def test_a_legitimate_reachability_check_still_passes_over_http(
    lab: LabProject, service: ServedCopilot
) -> None:
    intent = f"/projects/{lab.project}/intent"
    with service.api(lab.token) as api:
        api.timeout = httpx.Timeout(200.0)
        stored = api.put(intent, json={"checks": [PC1_PC2]})
        assert stored.status_code == 200, stored.text
        began = time.monotonic()
        ran = api.post(f"{intent}/run", params={"wait_s": 120})  # OSPF may still converge
        FIGURES["legitimate_run_s"] = time.monotonic() - began
        assert ran.status_code == 200, ran.text
        assert ran.json()["status"] == "pass", json.dumps(ran.json(), indent=1)
        (check,) = ran.json()["checks"]
        assert check["evidence"][0]["command"].startswith("ping -c 3 -W 2 10.0.2.10")
        assert check["observed"]["replies"] >= 1
    # the oracle: PC1 really reaches PC2 (Docker runs the ping, not the product)
    assert " 0% packet loss" in lab.docker("PC1", "ping", "-c", "2", "-W", "2", "10.0.2.10")
    assert "UP" in link_flags(lab, "PC1", "eth1")


def test_case_8_ten_concurrent_runs_one_runs_and_nine_are_409_at_once(
    lab: LabProject, service: ServedCopilot
) -> None:
    intent = f"/projects/{lab.project}/intent"
    with service.api(lab.token) as api:
        # a check that never holds keeps the run going for its whole wait
        never = {"kind": "reachability", "from": "PC1", "to": "10.0.99.99", "name": "never"}
        assert api.put(intent, json={"checks": [PC1_PC2, never]}).status_code == 200

    def run(_: int) -> tuple[int, float, dict[str, Any]]:
        with service.api(lab.token) as client:
            client.timeout = httpx.Timeout(200.0)
            began = time.monotonic()
            answered = client.post(f"{intent}/run", params={"wait_s": 20})
            return answered.status_code, time.monotonic() - began, answered.json()

    with ThreadPoolExecutor(10) as pool:
        answers = list(pool.map(run, range(10)))
    statuses = sorted(status for status, _, _ in answers)
    assert statuses == [200] + [409] * 9, answers
    refused = [took for status, took, _ in answers if status == 409]
    (ran,) = [(took, body) for status, took, body in answers if status == 200]
    assert all("under way" in body["detail"] for status, _, body in answers if status == 409)
    FIGURES["concurrent_409_slowest_s"] = max(refused)
    FIGURES["concurrent_run_s"] = ran[0]
    assert max(refused) < 10, refused  # at once, not queued behind the run
    assert ran[0] < 20 + 30 + 5, ran  # wait_s plus one round
    assert [c["status"] for c in ran[1]["checks"]] == ["pass", "fail"], ran[1]
