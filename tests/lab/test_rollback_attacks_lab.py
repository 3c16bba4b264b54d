"""Issue 35, cases 6 and 7, on the real router lab: a rollback undoes exactly the change's
own lines, and a verified change whose check failed is undone but for what truly conflicts.

R1 and R2 are FRR 8.4 routers, PC1 a Debian Linux host (GNS3 Docker nodes under a real
gns3-server). Each change is made through the copilot's executor as an approved call (its
restore point taken before, what it did recorded after); a colleague then edits the same
device outside the copilot, with ``docker exec`` (vtysh, iproute2); the rollback runs
through the ``restore_point`` tool. What is asserted is read on the device itself with
``docker exec`` (``vtysh -c 'show running-config'``, ``ip -o addr``, ``ls /``), never
through the product:

* a block the change added (``route-map COP permit 10`` / ``set tag 5``) where the
  colleague added ``set metric 77``: the metric stays, the tag goes;
* a line the change replaced (``ip ospf cost 50`` -> ``60``) that the colleague replaced
  again (``70``): the rollback names the conflict and ``70`` stays;
* a Linux host: the change's address goes, the colleague's ``10.77.0.1/24`` stays, and an
  interface named ``a;touch${IFS}Z`` with an address is never typed into bash (no ``/Z``);
* a verified change (``shutdown`` on R2's uplink and a line inside a route-map) whose check
  fails while a colleague deletes the route-map: the ``shutdown`` is undone and the
  result's status is not ``success``; with a line replaced again too, that line stays (a
  conflict) and the ``shutdown`` is undone all the same.

Run: ``flock /tmp/router-lab.lock .tox/routers/bin/pytest --router-lab -p no:cacheprovider
-s tests/lab/test_rollback_attacks_lab.py``.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest

from adapters.gns3 import ConsoleRunner, Gns3Client, Gns3ToolExecutor, Gns3ToolSettings
from copilot_core import (
    AbortToken,
    CopilotMode,
    ParsedToolCall,
    Session,
    ToolContext,
    ToolGate,
    ToolResult,
)
from copilot_core.ports import ApprovalDecision, Clearance, call_digest
from copilot_core.testing import InMemoryCheckpointStore
from tests.lab.lab_project import LabProject
from tests.lab.router_lab import HOST_TEMPLATE, ROUTER_TEMPLATE, RouterLab

pytestmark = [pytest.mark.timeout(1500), pytest.mark.gns3, pytest.mark.slow]

SESSION = "session-rollback"
EVIL = "a;touch${IFS}Z"
FIGURES: dict[str, float] = {}


@dataclass
class Lab:
    topo: LabProject
    executor: Gns3ToolExecutor
    store: InMemoryCheckpointStore
    calls: int = 0

    async def run(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        self.calls += 1
        call = ParsedToolCall.parse(f"call-{self.calls}", name, json.dumps(arguments))
        context = ToolContext(
            self.topo.project,
            "alice",
            SESSION,
            CopilotMode.LAB_AUTOMATION_ASSISTANT,
            AbortToken(),
            self.topo.token,
        )
        decision = ApprovalDecision(True, user_id="alice")
        if "verify" in arguments:  # a verified change: the gate runs it
            bound = decision.bound(call_digest(name, arguments))
            result = await ToolGate(self.executor).call(call, context, decision=bound)
        else:
            result = await self.executor.execute(call, context, Clearance(decision=decision))
        json.dumps(result.output)
        return result

    async def preview(self, arguments: dict[str, Any]) -> dict[str, list[str]]:
        call = ParsedToolCall.parse("preview", "restore_point", json.dumps(arguments))
        context = ToolContext(
            self.topo.project,
            "alice",
            SESSION,
            CopilotMode.LAB_AUTOMATION_ASSISTANT,
            AbortToken(),
            self.topo.token,
        )
        assessed = await self.executor.assess(call, context)
        assert assessed.preview is not None
        return {k: list(v) for k, v in assessed.preview.devices.items()}

    async def configure(self, device: str, lines: list[str], **extra: Any) -> Any:
        configs = [{"device_name": device, "config_commands": lines}]
        return await self.run(
            "execute_multiple_device_config_commands", {"device_configs": configs, **extra}
        )

    async def last_point(self) -> Any:
        points = await self.store.restore_points(self.topo.project, SESSION)
        return points[-1]

    async def rollback(self, point_id: str, **extra: Any) -> ToolResult:
        arguments = {"action": "rollback", "restore_point_id": point_id, **extra}
        return await self.run("restore_point", arguments)


def colleague(topo: LabProject, node: str, *lines: str) -> None:
    """A colleague configuring the router outside the copilot."""
    topo.vtysh(node, "configure terminal", *lines)


def running(topo: LabProject, node: str) -> str:
    return topo.vtysh(node, "show running-config")


def block(config: str, header: str) -> list[str]:
    """The lines of ``header``'s block in a running configuration (empty: no block)."""
    lines = config.splitlines()
    if header not in lines:
        return []
    inside = []
    for line in lines[lines.index(header) + 1 :]:
        if not line.startswith(" "):
            break
        inside.append(line.strip())
    return inside


def by_device(result: ToolResult) -> dict[str, dict[str, Any]]:
    return {entry["device_name"]: entry for entry in result.output["results"]}


@pytest.fixture(scope="module")
def topology(router_lab: RouterLab) -> Any:
    token = router_lab.server.token()
    project = router_lab.server.new_project("rollback-attacks", token)
    topo = LabProject(router_lab, token, project)
    ids: dict[str, str] = {}
    for template, count in ((HOST_TEMPLATE, 1), (ROUTER_TEMPLATE, 2)):
        for _ in range(count):
            made = topo.api(
                "POST",
                f"/templates/{router_lab.templates[template]}",
                json={"x": 0, "y": 0, "compute_id": "local"},
            )
            assert made.status_code == 201, made.text
            ids[made.json()["name"]] = made.json()["node_id"]
    assert sorted(ids) == ["PC1", "R1", "R2"], ids
    for a, pa, b, pb in (("PC1", 0, "R1", 0), ("R1", 1, "R2", 1)):
        link = topo.api(
            "POST",
            "/links",
            json={
                "nodes": [
                    {"node_id": ids[a], "adapter_number": pa, "port_number": 0},
                    {"node_id": ids[b], "adapter_number": pb, "port_number": 0},
                ]
            },
        )
        assert link.status_code == 201, link.text
    assert topo.api("POST", "/nodes/start").status_code in (200, 204)
    for router in ("R1", "R2"):
        topo.wait_for_vtysh(router)
    colleague(topo, "R2", "interface eth1", "ip address 10.0.12.2/30", "ip ospf cost 50")
    try:
        yield topo
    finally:
        topo.delete()
        print("\nrollback attack figures:", {k: round(v, 2) for k, v in FIGURES.items()})


@pytest.fixture
async def lab(topology: LabProject) -> AsyncIterator[Lab]:
    store = InMemoryCheckpointStore()
    now = datetime.now(UTC)
    await store.create_session(
        Session(
            thread_id=SESSION,
            user_id="alice",
            project_id=topology.project,
            created_at=now,
            updated_at=now,
        )
    )
    async with Gns3Client(topology.lab.url, timeout=120.0) as client:
        executor = Gns3ToolExecutor(
            client,
            runner=ConsoleRunner(command_timeout=20.0, wake_timeout=60.0),
            restore_points=store,
            settings=Gns3ToolSettings(verify_interval=1.0),
        )
        yield Lab(topology, executor, store)


# ====================================================================== case 6
async def test_a_block_the_change_added_keeps_the_line_a_colleague_added_inside_it(
    lab: Lab,
) -> None:
    topo = lab.topo
    changed = await lab.configure("R2", ["route-map COP permit 10", "set tag 5", "exit"])
    assert changed.output["status"] == "success", changed.output
    point = await lab.last_point()
    assert block(running(topo, "R2"), "route-map COP permit 10") == ["set tag 5"]
    colleague(topo, "R2", "route-map COP permit 10", "set metric 77")

    planned = await lab.preview({"action": "rollback", "restore_point_id": point.id})
    assert planned["R2"] == ["route-map COP permit 10", "no set tag 5", "exit"], planned
    began = time.monotonic()
    rolled = await lab.rollback(point.id)
    FIGURES["route_map_line_by_line_rollback_s"] = time.monotonic() - began
    assert rolled.output["status"] == "success", rolled.output
    r2 = by_device(rolled)["R2"]["output"]
    assert r2["state"] == "as before the change", r2
    assert "no route-map COP permit 10" not in r2["commands_sent"], r2
    # On R2 itself: the colleague's line stays, the change's is gone.
    assert block(running(topo, "R2"), "route-map COP permit 10") == ["set metric 77"]
    colleague(topo, "R2", "no route-map COP permit 10")  # tidy for the next case


async def test_a_line_the_change_replaced_and_a_colleague_replaced_again_stays(
    lab: Lab,
) -> None:
    topo = lab.topo
    assert "ip ospf cost 50" in block(running(topo, "R2"), "interface eth1")
    changed = await lab.configure("R2", ["interface eth1", "ip ospf cost 60", "exit"])
    assert changed.output["status"] == "success", changed.output
    point = await lab.last_point()
    colleague(topo, "R2", "interface eth1", "ip ospf cost 70")

    planned = await lab.preview({"action": "rollback", "restore_point_id": point.id})
    conflicts = [line for line in planned["R2"] if line.startswith("conflict: ")]
    assert len(conflicts) == 1 and "ip ospf cost 70" in conflicts[0], planned
    assert not any(line == "ip ospf cost 50" for line in planned["R2"]), planned

    refused = await lab.rollback(point.id)
    assert refused.output["status"] == "conflict", refused.output
    assert any("ip ospf cost 70" in c for c in refused.output["conflicts"]), refused.output
    assert "ip ospf cost 70" in block(running(topo, "R2"), "interface eth1")

    forced = await lab.rollback(point.id, force=True)  # confirmed: still never overwritten
    r2 = by_device(forced)["R2"]
    assert r2["status"] != "success", forced.output
    assert any("ip ospf cost 70" in d for d in r2["output"]["differences"]), r2
    inside = block(running(topo, "R2"), "interface eth1")
    assert "ip ospf cost 70" in inside and "ip ospf cost 50" not in inside, inside
    colleague(topo, "R2", "interface eth1", "ip ospf cost 50")


def _evil_interface(topo: LabProject) -> str:
    """Make an interface named ``a;touch${IFS}Z`` on PC1 (the kind the kernel has)."""
    for kind in ("dummy", "bridge", "veth"):
        extra = ["peer", "name", "evilpeer"] if kind == "veth" else []
        argv = ["ip", "link", "add", EVIL, "type", kind, *extra]
        done = topo.exec("PC1", *argv)
        if done.returncode == 0:
            return kind
    pytest.fail(f"no interface could be made on PC1: {done.stderr.decode()}")


async def test_a_hosts_rollback_touches_its_own_address_alone_and_types_no_device_word(
    lab: Lab,
) -> None:
    topo = lab.topo
    assert "Z" not in topo.docker("PC1", "ls", "/").split()
    add = {"device_name": "PC1", "commands": ["ip addr add 10.5.0.1/24 dev eth0"]}
    changed = await lab.run("execute_multiple_device_commands", {"device_configs": [add]})
    assert changed.output["status"] == "success", changed.output
    point = await lab.last_point()
    assert point.kept["devices"]["PC1"]["lines_changed"]["addresses"]["added"] == [
        ["eth0", "10.5.0.1/24"]
    ]
    # A colleague's address on eth0, and one on an interface whose name is a shell line.
    topo.docker("PC1", "ip", "addr", "add", "10.77.0.1/24", "dev", "eth0")
    kind = _evil_interface(topo)
    topo.docker("PC1", "ip", "addr", "add", "10.78.0.1/24", "dev", EVIL)
    print(f"\nan interface named {EVIL!r} ({kind}) holds 10.78.0.1/24 on PC1", flush=True)

    planned = await lab.preview({"action": "rollback", "restore_point_id": point.id})
    assert planned["PC1"] == ["ip addr del 10.5.0.1/24 dev eth0"], planned
    rolled = await lab.rollback(point.id)
    assert rolled.output["status"] == "success", rolled.output
    pc1 = by_device(rolled)["PC1"]["output"]
    assert pc1["commands_sent"] == ["ip addr del 10.5.0.1/24 dev eth0"], pc1
    addresses = topo.docker("PC1", "ip", "-o", "-4", "addr")
    assert "10.5.0.1/24" not in addresses, addresses
    assert "10.77.0.1/24" in addresses and "10.78.0.1/24" in addresses, addresses
    assert "Z" not in topo.docker("PC1", "ls", "/").split(), "a device word ran in bash"
    topo.docker("PC1", "ip", "addr", "del", "10.77.0.1/24", "dev", "eth0")


# ====================================================================== case 7
async def _verified_change_with_a_colleague(
    lab: Lab, lines: list[str], colleague_lines: list[str]
) -> ToolResult:
    """A verified change on R2 whose check never holds; while its checks wait, once what
    it did is recorded, a colleague edits R2."""
    failing = {
        "kind": "config_line",
        "node": "R2",
        "line": "ip route 10.200.0.0/16 Null0",
        "name": "a route never there",
    }
    known = len(await lab.store.restore_points(lab.topo.project, SESSION))
    task = asyncio.ensure_future(lab.configure("R2", lines, verify=[failing], verify_wait_s=15))
    deadline = time.monotonic() + 120
    while True:  # the change ran and its lines are recorded: the colleague steps in
        points = await lab.store.restore_points(lab.topo.project, SESSION)
        if len(points) > known and "lines_changed" in points[-1].kept["devices"].get("R2", {}):
            break
        assert not task.done(), task.result().output
        assert time.monotonic() < deadline, "the change was never recorded"
        await asyncio.sleep(0.2)
    await asyncio.to_thread(colleague, lab.topo, "R2", *colleague_lines)
    result: ToolResult = await task
    return result


async def test_a_verified_change_whose_block_a_colleague_deleted_is_undone_not_success(
    lab: Lab,
) -> None:
    topo = lab.topo
    colleague(topo, "R2", "route-map DEL permit 10", "set tag 6")  # there before the change
    # The change shuts R2's uplink and adds a line inside that route-map.
    lines = ["interface eth1", "shutdown", "exit", "route-map DEL permit 10", "set metric 5"]
    began = time.monotonic()
    result = await _verified_change_with_a_colleague(lab, lines, ["no route-map DEL permit 10"])
    FIGURES["verified_change_block_gone_s"] = time.monotonic() - began
    output = result.output
    verification = output["verification"]
    assert verification["status"] == "fail", verification
    assert output["status"] != "success", output
    assert output["status"] == "rolled_back", output
    assert verification["rolled_back"] is True, verification
    rollback = verification["rollback"]
    r2 = by_device(ToolResult(rollback))["R2"]["output"]
    assert r2["commands_sent"] == ["interface eth1", "no shutdown", "exit"], r2
    assert any("set metric 5" in n and "gone since" in n for n in r2["notes"]), r2
    # On R2 itself: the shutdown is undone, the route-map stays deleted.
    config = running(topo, "R2")
    assert "shutdown" not in block(config, "interface eth1"), config
    assert "route-map DEL permit 10" not in config, config


async def test_a_verified_change_with_a_true_conflict_is_undone_but_for_it_and_not_success(
    lab: Lab,
) -> None:
    topo = lab.topo
    lines = ["interface eth1", "shutdown", "ip ospf cost 60", "exit"]
    result = await _verified_change_with_a_colleague(
        lab, lines, ["interface eth1", "ip ospf cost 70"]
    )
    output = result.output
    assert output["status"] == "failed", output
    assert "stays" in output["error"], output
    assert output["verification"]["rolled_back"] is False
    rollback = output["verification"]["rollback"]
    assert rollback["status"] == "partial_success", rollback
    assert any("ip ospf cost 70" in c for c in rollback["conflicts"]), rollback
    inside = block(running(topo, "R2"), "interface eth1")
    assert "shutdown" not in inside, inside  # undone all the same
    assert "ip ospf cost 70" in inside, inside  # the colleague's value stays
    colleague(topo, "R2", "interface eth1", "ip ospf cost 50")
