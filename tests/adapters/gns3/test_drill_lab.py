"""``Gns3DrillLab`` over real telnet sockets: the catalog's VPCS faults (VPCS does not run on
the router lab's machine) fitted, checkpointed, injected, seen, fixed, judged and restored
exactly, against the emulated VPCS and FRR consoles; GNS3's REST answers from
``httpx.MockTransport`` (a link's ``PUT`` kept, as GNS3 keeps it).

The emulated VPCS here answers a ping as its addresses and gateways decide (``RoutedVpcs``:
the routers between the LANs are taken as healthy), so a symptom fails because the fault is
in the device's state, not because a test said so. ``ip ADDRESS/LEN`` without a gateway
leaves the VPCS without one: the premise of the catalog's ``vpcs-missing-gateway``.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import AsyncIterator
from typing import Any, ClassVar

import httpx
import pytest

from adapters.gns3 import (
    ConsoleRunner,
    Gns3Client,
    Gns3DrillLab,
    Gns3ToolExecutor,
    load_fault_catalog,
)
from adapters.gns3.tools._intent_probe import Gns3CheckProbes
from copilot_core import CopilotMode
from copilot_core._verification import MonotonicClock, verify_checks
from copilot_core.errors import DrillStepError
from copilot_core.faults import DeviceLines, Fault, LinkFilter
from copilot_core.intent import CheckStatus
from tests.adapters.gns3.conftest import make_context
from tests.adapters.gns3.test_lab_state_consoles import frr_outputs
from tests.fakes.telnet_devices import (
    EmulatedDeviceLab,
    EmulatedFrr,
    EmulatedLinux,
    EmulatedVpcs,
)

pytestmark = pytest.mark.timeout(120)

PROJECT = "3f2a9c1e-0000-4000-8000-0000000000dd"
TOKEN = "jwt-for-tests"
CATALOG = load_fault_catalog()
VPCS_FAULTS = [f for f in CATALOG if f.id.startswith("vpcs-")]


class RoutedVpcs(EmulatedVpcs):
    """A VPCS whose pings reach another PC of the lab when both ends' addresses, masks and
    gateways let the packet there and back (``router``: its LAN's router address)."""

    lab: ClassVar[dict[str, RoutedVpcs]] = {}

    def __init__(self, name: str, router: str) -> None:
        super().__init__(name, ip_delay=0.01, ping_delay=0.01)
        self.router = router
        RoutedVpcs.lab[name] = self

    def delivers(self, address: str) -> bool:
        """Whether a packet from this PC reaches the PC that has ``address``."""
        if self.ip.startswith("0.0.0.0"):
            return False
        mine = ipaddress.ip_interface(self.ip)
        target = next((p for p in self.lab.values() if p.ip.split("/")[0] == address), None)
        if target is None:
            return False
        if ipaddress.ip_address(address) in mine.network:  # on the wire: only its own LAN
            return target.router == self.router
        if self.gateway != self.router or ipaddress.ip_address(self.router) not in mine.network:
            return False
        # the routers deliver to the target's LAN, which its router's /24 is
        return ipaddress.ip_address(address) in ipaddress.ip_network(f"{target.router}/24", False)

    async def execute(self, line: str) -> None:
        words = line.split()
        if words[:1] == ["ip"] and len(words) == 2 and words[1][:1].isdigit():
            self.gateway = "0.0.0.0"
        if words[:1] == ["ping"] and len(words) >= 2:
            target = next((p for p in self.lab.values() if p.ip.split("/")[0] == words[1]), None)
            back = target is not None and target.delivers(self.ip.split("/")[0])
            self.unreachable = set() if self.delivers(words[1]) and back else {words[1]}
        await super().execute(line)


def api(lab: EmulatedDeviceLab, puts: list[dict[str, Any]]) -> httpx.MockTransport:
    def node(name: str, index: int) -> dict[str, Any]:
        vpcs = isinstance(lab[name], EmulatedVpcs)
        kind = "vpcs" if vpcs else "linux" if isinstance(lab[name], EmulatedLinux) else "frr"
        ports = (
            [{"name": "Ethernet0", "short_name": "e0", "adapter_number": 0, "port_number": 0}]
            if vpcs
            else [
                {"name": f"eth{i}", "short_name": f"eth{i}", "adapter_number": i,
                 "port_number": 0}
                for i in range(2)
            ]
        )  # fmt: skip
        return {
            "name": name, "node_id": f"id-{name}", "node_type": "vpcs" if vpcs else "qemu",
            "status": "started", "console": lab[name].port, "console_host": "127.0.0.1",
            "console_type": "telnet", "tags": [f"device_type:{kind}"],
            "ports": ports,
        }  # fmt: skip

    nodes = [node(name, i) for i, name in enumerate(lab.devices)]

    def link(link_id: str, a: str, ai: int, b: str, bi: int) -> dict[str, Any]:
        return {
            "link_id": link_id, "filters": {}, "suspend": False,
            "nodes": [{"node_id": f"id-{a}", "adapter_number": ai, "port_number": 0},
                      {"node_id": f"id-{b}", "adapter_number": bi, "port_number": 0}],
        }  # fmt: skip

    links = {
        "l1": link("l1", "PC1", 0, "R1", 0),
        "l2": link("l2", "R1", 1, "R2", 1),
        "l3": link("l3", "R2", 0, "PC2", 0),
    }

    def handle(request: httpx.Request) -> httpx.Response:
        path = request.url.path.removeprefix(f"/v3/projects/{PROJECT}")
        if path == "":
            return httpx.Response(200, json={"project_id": PROJECT, "status": "opened"})
        if path == "/nodes":
            return httpx.Response(200, json=nodes)
        if path.startswith("/nodes/id-"):
            return httpx.Response(200, json=next(n for n in nodes if path.endswith(n["node_id"])))
        if path == "/links":
            return httpx.Response(200, json=list(links.values()))
        if request.method == "PUT" and path.startswith("/links/"):
            body = json.loads(request.content)
            puts.append(body)
            links[path.split("/")[-1]].update(body)
            return httpx.Response(200, json=links[path.split("/")[-1]])
        if request.url.path == "/v3/templates":
            return httpx.Response(200, json=[])
        return httpx.Response(404, json={"message": f"unexpected {request.url.path}"})

    return httpx.MockTransport(handle)


class Drill:
    def __init__(self, lab: EmulatedDeviceLab, puts: list[dict[str, Any]]) -> None:
        http = httpx.AsyncClient(transport=api(lab, puts))
        tools = Gns3ToolExecutor(
            Gns3Client("http://127.0.0.1:3080", http=http),
            runner=ConsoleRunner(command_timeout=5.0, recovery_timeout=2.0, connect_timeout=2.0),
        )
        self.lab = Gns3DrillLab(tools.lab, settle_s=5.0, interval=0.1)
        self.probes = Gns3CheckProbes(tools.lab)
        self.context = make_context(PROJECT, TOKEN, CopilotMode.TEACHING_ASSISTANT)
        self.puts = puts


@pytest.fixture
async def drill() -> AsyncIterator[Drill]:
    RoutedVpcs.lab.clear()
    r1, r2 = EmulatedFrr("R1"), EmulatedFrr("R2")
    r1.shows.update(frr_outputs())
    r2.shows.update(frr_outputs())
    pc1, pc2 = RoutedVpcs("PC1", "10.0.1.1"), RoutedVpcs("PC2", "10.0.2.1")
    pc1.ip, pc1.gateway = "10.0.1.10/24", "10.0.1.1"
    pc2.ip, pc2.gateway = "10.0.2.10/24", "10.0.2.1"
    async with EmulatedDeviceLab(r1, r2, pc1, pc2) as devices:
        yield Drill(devices, [])


async def passes(drill: Drill, fault: Fault) -> None:
    probe = drill.probes.probe(drill.context)
    result = await verify_checks(fault.fixed_checks, probe, MonotonicClock(), wait_s=0)
    assert result.status is CheckStatus.PASS, result.to_dict()


def test_the_catalog_has_vpcs_faults_to_run_here() -> None:
    assert [f.id for f in VPCS_FAULTS] == [
        "vpcs-missing-gateway",
        "vpcs-wrong-mask",
        "vpcs-wrong-address",
    ]


async def test_every_vpcs_fault_is_injected_seen_fixed_judged_and_restored_exactly(
    drill: Drill,
) -> None:
    for fault in VPCS_FAULTS:
        shape, context = fault.lab, drill.context
        assert (await drill.lab.fit(shape, context)).fits
        await passes(drill, fault)
        checkpoint = await drill.lab.checkpoint(shape, context)
        json.dumps(checkpoint.state)  # the core stores it as JSON

        await drill.lab.apply(fault.inject, shape, context)
        seen = await drill.probes.probe(context).observe(fault.symptoms)
        assert [o.status for o in seen] == [CheckStatus.FAIL] * len(fault.symptoms), fault.id

        await drill.lab.apply(fault.fix, shape, context)
        await passes(drill, fault)
        judged = await drill.lab.judge(checkpoint, fault.constraints, shape, context)
        assert all(r.held for r in judged), [(r.constraint, r.evidence) for r in judged]
        report = await drill.lab.restore(checkpoint, shape, context)
        assert report.exact, (fault.id, report.differences)


async def test_a_fault_left_in_place_is_restored_from_the_checkpoint(drill: Drill) -> None:
    fault = next(f for f in VPCS_FAULTS if f.id == "vpcs-wrong-address")
    shape, context = fault.lab, drill.context
    checkpoint = await drill.lab.checkpoint(shape, context)
    await drill.lab.apply(fault.inject, shape, context)
    judged = await drill.lab.judge(checkpoint, fault.constraints, shape, context)
    assert all(r.held for r in judged)  # R2 untouched, no route added on R1
    report = await drill.lab.restore(checkpoint, shape, context)
    assert report.exact, report.differences
    pc2 = RoutedVpcs.lab["PC2"]
    assert (pc2.ip, pc2.gateway) == ("10.0.2.10/24", "10.0.2.1")
    await passes(drill, fault)


async def test_a_link_filter_is_set_and_the_restore_takes_it_off(drill: Drill) -> None:
    shape = VPCS_FAULTS[0].lab
    checkpoint = await drill.lab.checkpoint(shape, drill.context)
    loss = LinkFilter(kind="link_filter", link=("R1:eth1", "R2:eth1"), packet_loss=95)
    await drill.lab.apply([loss], shape, drill.context)
    assert drill.puts == [{"filters": {"packet_loss": [95]}}]
    report = await drill.lab.restore(checkpoint, shape, drill.context)
    assert report.exact, report.differences
    neutral = {"frequency_drop": [2**31 - 1]}  # GNS3 3.0 sends no empty filter set on
    assert drill.puts[1:] == [{"filters": {}}, {"filters": neutral}, {"filters": {}}]


async def test_a_line_the_platform_does_not_know_is_refused_before_anything_is_sent(
    drill: Drill,
) -> None:
    shape = VPCS_FAULTS[0].lab
    steps = [
        DeviceLines(kind="lines", node="PC2", lines=("ip 10.0.2.99/24 10.0.2.1",)),
        DeviceLines(kind="lines", node="PC1", lines=("hostname PC9",)),
    ]
    with pytest.raises(DrillStepError) as raised:
        await drill.lab.apply(steps, shape, drill.context)
    assert raised.value.step == 1
    assert "PC1" in raised.value.reason
    assert RoutedVpcs.lab["PC1"].ip == "10.0.1.10/24"  # the refused line was not sent
    assert RoutedVpcs.lab["PC2"].ip == "10.0.2.99/24"  # the step before it was


async def test_a_host_line_that_changes_nothing_is_a_failed_step() -> None:
    """iproute2 says why on the console (``RTNETLINK answers: …``), with no shell error:
    the step fails, naming the line and what the host said."""
    fault = CATALOG.get("host-missing-gateway")
    assert fault is not None
    pc1 = EmulatedLinux("PC1", ping_delay=0.01)
    pc1.routes = []  # no default route to delete
    async with EmulatedDeviceLab(
        EmulatedFrr("R1"), EmulatedFrr("R2"), pc1, EmulatedLinux("PC2")
    ) as lab:
        drill = Drill(lab, [])
        with pytest.raises(DrillStepError) as raised:
            await drill.lab.apply(fault.inject, fault.lab, drill.context)
    assert raised.value.step == 0
    assert "`ip route del default`: RTNETLINK answers: No such process" in raised.value.reason
