"""``Gns3LabBuilder``'s configuration over real telnet sockets: devices configured in
parallel, never more than ``build_consoles`` at once, an FRR router only once zebra
answers, and the progress of each device.

The consoles are the emulated FRR routers and Linux host of the console tests; GNS3's REST
answers from ``httpx.MockTransport`` (nodes made from templates, renamed, linked,
started, as a server keeps them). A router blocks on its first address line until a second
router is at the same point (a barrier): a build that configured one device at a time would
never get past it (the line times out and the device is reported not configured), and one
that configured more than ``build_consoles`` at once is seen doing so.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from adapters.gns3 import ConsoleRunner, Gns3Client, Gns3ToolExecutor, Gns3ToolSettings
from adapters.gns3.labs import Gns3LabBuilder
from copilot_core.labs import LabPlan, ResolvedNode, ResolvedPlan, ResolvedPort
from tests.adapters.gns3.conftest import make_context
from tests.fakes.telnet_devices import EmulatedDeviceLab, EmulatedFrr, EmulatedLinux

pytestmark = pytest.mark.timeout(120)

PROJECT = "3f2a9c1e-0000-4000-8000-0000000000b1"
ROUTER, HOST = "tpl-frr", "tpl-host"


class Barrier:
    """Address lines in flight across routers: the most seen at once, and a release
    once two are in flight together."""

    def __init__(self) -> None:
        self.in_flight = 0
        self.most = 0
        self.two = asyncio.Event()


class GatedFrr(EmulatedFrr):
    """An FRR router whose first ``ip address`` line waits for another router's, and
    whose zebra is not running for its first ``down`` probes."""

    def __init__(self, name: str, barrier: Barrier, down: int = 0) -> None:
        super().__init__(name, docker=True)
        self.barrier = barrier
        self.down = down
        self.probes_seen = 0
        self.gated = False

    async def execute(self, line: str) -> None:
        words = line.split()
        if words == ["show", "interface", "brief"] and self.mode == "vtysh":
            self.probes_seen += 1
            if self.down:
                self.down -= 1
                self.write("% zebra is not running\r\n")
            else:
                self.write("Interface       Status  VRF             Addresses\r\n")
            return
        if words[:2] == ["ip", "address"] and self.mode.startswith("config") and not self.gated:
            self.gated = True
            barrier = self.barrier
            barrier.in_flight += 1
            barrier.most = max(barrier.most, barrier.in_flight)
            if barrier.in_flight >= 2:
                barrier.two.set()
            try:
                await asyncio.wait_for(barrier.two.wait(), 10)
            except TimeoutError:
                self.write("% Invalid input: no other router came\r\n")
                barrier.in_flight -= 1
                return
            await asyncio.sleep(0.05)  # others may arrive while this one works
            barrier.in_flight -= 1
        await super().execute(line)


def api(devices: EmulatedDeviceLab, created: list[dict[str, Any]]) -> httpx.MockTransport:
    """GNS3's REST: nodes made from the two templates (each given the console of the
    next emulated device of its kind, in order), renamed, linked and started."""
    consoles = {
        ROUTER: iter([d for d in devices.devices.values() if isinstance(d, EmulatedFrr)]),
        HOST: iter([d for d in devices.devices.values() if isinstance(d, EmulatedLinux)]),
    }
    nodes: dict[str, dict[str, Any]] = {}
    links: list[dict[str, Any]] = []
    ids = itertools.count(1)
    templates = [
        {"template_id": ROUTER, "name": "FRR 8.4", "template_type": "docker"},
        {"template_id": HOST, "name": "Linux host", "template_type": "docker"},
    ]

    def handle(request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if path == "/v3/templates":
            return httpx.Response(200, json=templates)
        path = path.removeprefix(f"/v3/projects/{PROJECT}")
        body = json.loads(request.content) if request.content else {}
        if path == "":
            return httpx.Response(200, json={"project_id": PROJECT, "status": "opened"})
        if path == "/nodes" and request.method == "GET":
            return httpx.Response(200, json=list(nodes.values()))
        if path == "/links" and request.method == "GET":
            return httpx.Response(200, json=links)
        if path.startswith("/templates/") and request.method == "POST":
            template = path.rsplit("/", 1)[1]
            device = next(consoles[template])
            node_id = f"n{next(ids)}"
            kind = "frr" if template == ROUTER else "linux"
            nodes[node_id] = {
                "node_id": node_id, "name": f"auto{node_id}", "node_type": "docker",
                "status": "stopped", "console": device.port, "console_host": "127.0.0.1",
                "console_type": "telnet", "tags": [f"device_type:{kind}"],
                "x": body["x"], "y": body["y"],
                "ports": [{"name": f"eth{i}", "short_name": f"eth{i}", "adapter_number": i,
                           "port_number": 0} for i in range(2)],
            }  # fmt: skip
            created.append(nodes[node_id])
            return httpx.Response(201, json=nodes[node_id])
        if path.startswith("/nodes/n"):
            node = nodes[path.split("/")[2]]
            if path.endswith("/start"):
                node["status"] = "started"
                return httpx.Response(204)
            if request.method == "PUT":
                node.update(body)
            return httpx.Response(200, json=node)
        if path == "/links" and request.method == "POST":
            link = {"link_id": f"l{len(links) + 1}", "nodes": body["nodes"], "filters": {}}
            links.append(link)
            return httpx.Response(201, json=link)
        return httpx.Response(404, json={"message": f"unexpected {request.method} {path}"})

    return httpx.MockTransport(handle)


def plan() -> ResolvedPlan:
    routers = [f"R{i}" for i in range(1, 5)]
    config: dict[str, list[str]] = {
        r: ["interface eth0", f"ip address 10.0.{i}.1/24", "exit", "ip route 10.9.0.0/16 Null0"]
        for i, r in enumerate(routers, 1)
    }
    config["H1"] = ["ip addr add 10.0.1.10/24 dev eth0", "ip route add default via 10.0.1.1"]
    lab = LabPlan.model_validate(
        {
            "nodes": [
                *({"name": r, "platform": "frr", "x": 10 * i} for i, r in enumerate(routers)),
                {"name": "H1", "platform": "linux", "x": -50, "y": 50},
            ],
            "links": ["R1:eth0-H1:eth0", "R1:eth1-R2:eth1"],
            "config": config,
        }
    )
    ports = (
        ResolvedPort("R1:eth0", 0, 0),
        ResolvedPort("H1:eth0", 0, 0),
        ResolvedPort("R1:eth1", 1, 0),
        ResolvedPort("R2:eth1", 1, 0),
    )
    nodes = tuple(ResolvedNode(n.name, ROUTER if n.platform == "frr" else HOST) for n in lab.nodes)
    return ResolvedPlan(lab, nodes, ports)


@pytest.fixture
async def devices() -> AsyncIterator[tuple[EmulatedDeviceLab, Barrier]]:
    barrier = Barrier()
    routers = [GatedFrr(f"R{i}", barrier, down=2 if i == 1 else 0) for i in range(1, 5)]
    async with EmulatedDeviceLab(*routers, EmulatedLinux("H1")) as lab:
        yield lab, barrier


async def build(lab: EmulatedDeviceLab, consoles: int) -> tuple[Any, list[str], list[Any]]:
    created: list[dict[str, Any]] = []
    http = httpx.AsyncClient(transport=api(lab, created))
    runner = ConsoleRunner(command_timeout=15.0, recovery_timeout=2.0, connect_timeout=2.0)
    settings = Gns3ToolSettings(build_consoles=consoles, poll_interval=0.05, max_console_wait=20)
    tools = Gns3ToolExecutor(
        Gns3Client("http://127.0.0.1:3080", http=http), runner=runner, settings=settings
    )
    said: list[str] = []

    async def progress(text: str) -> None:
        said.append(text)

    try:
        report = await Gns3LabBuilder(tools.lab).build(
            plan(), make_context(PROJECT, "jwt"), progress
        )
    finally:
        await runner.aclose()
        await http.aclose()
    return report, said, created


async def test_devices_are_configured_in_parallel_never_more_than_the_bound(
    devices: tuple[EmulatedDeviceLab, Barrier],
) -> None:
    lab, barrier = devices
    report, said, created = await build(lab, consoles=2)

    assert report.ok, report.problems
    assert [(d.name, d.configured) for d in report.devices] == [
        ("R1", True), ("R2", True), ("R3", True), ("R4", True), ("H1", True)
    ]  # fmt: skip
    assert barrier.most == 2  # two at once (the barrier let them through), never three
    # Every node made from its template at its place, under its plan name.
    assert [(n["name"], n["x"], n["status"]) for n in created] == [
        ("R1", 0, "started"), ("R2", 10, "started"), ("R3", 20, "started"),
        ("R4", 30, "started"), ("H1", -50, "started"),
    ]  # fmt: skip
    for i in range(1, 5):
        router = lab[f"R{i}"]
        assert isinstance(router, EmulatedFrr)
        assert router.tree.find("interface eth0") == [f"ip address 10.0.{i}.1/24"]
        assert "ip route 10.9.0.0/16 Null0" in router.globals
    host = lab["H1"]
    assert "ip addr add 10.0.1.10/24 dev eth0" in host.received
    # R1's zebra was not running for two probes: its lines came after the third.
    r1 = lab["R1"]
    assert isinstance(r1, GatedFrr) and r1.probes_seen == 3
    probes = [i for i, line in enumerate(r1.received) if line == "show interface brief"]
    assert probes[-1] < r1.received.index("interface eth0")
    # Progress: each stage, and each device as it goes.
    assert said[:2] == ["creating 5 node(s)\n", "R1: created\n"]
    assert "configuring 5 device(s), 2 at a time\n" in said
    for name in ("R1", "R2", "R3", "R4", "H1"):
        assert f"{name}: waiting for its console\n" in said
        assert any(s.startswith(f"{name}: configured (") for s in said), said


async def test_one_console_at_a_time_cannot_pass_a_step_two_devices_must_take_together(
    devices: tuple[EmulatedDeviceLab, Barrier],
) -> None:
    lab, barrier = devices
    report, _, _ = await build(lab, consoles=1)

    assert barrier.most == 1
    assert not report.ok
    # Each router alone at the barrier: its address line is refused, and so reported.
    assert [(d.name, d.configured) for d in report.devices] == [
        ("R1", False), ("R2", False), ("R3", False), ("R4", False), ("H1", True)
    ]  # fmt: skip
    for device in report.devices[:4]:
        assert (device.error or "").startswith("`ip address 10.0."), device
        assert f"{device.name} was not configured: {device.error}" in report.problems
