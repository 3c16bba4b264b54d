"""``verify_intent`` over real telnet sockets: the emulated IOS, EOS, Junos, FRR and VPCS
consoles answer the commands the service compiles (their show output written in each
platform's format, FRR's the real captured output), ntc-templates and the FRR parsers
read it, and each check kind passes, fails or errors. GNS3's REST answers come from
``httpx.MockTransport``."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest

from adapters.gns3 import ConsoleRunner, Gns3Client, Gns3ToolExecutor, Gns3ToolSettings
from adapters.gns3.lab._registry import CallScope
from adapters.gns3.tools._intent import VerifyIntent, run_checks
from copilot_core import CopilotMode, ParsedToolCall, ToolResult, ToolStatus
from copilot_core.intent import WaitClock
from copilot_core.ports import ToolProgress
from copilot_core.testing import FakeWaitClock
from tests.adapters.gns3.conftest import make_context
from tests.adapters.gns3.intent_outputs import EOS, IOS, JUNOS
from tests.fakes.telnet_devices import (
    EmulatedAristaSwitch,
    EmulatedCiscoRouter,
    EmulatedDeviceLab,
    EmulatedFrr,
    EmulatedJunos,
    EmulatedVpcs,
)

pytestmark = pytest.mark.timeout(120)

PROJECT = "3f2a9c1e-0000-4000-8000-0000000000aa"
TOKEN = "jwt-for-tests"
FRR_DATA = Path(__file__).parent / "data" / "frr"
KINDS = {
    "R1": "cisco_ios",
    "leaf1": "arista_eos",
    "vmx": "juniper_junos",
    "FRR1": "frr",
    "PC1": "vpcs",
    "PC2": "vpcs",
}


def frr_outputs() -> dict[str, str]:
    outputs = {}
    for path in FRR_DATA.glob("*.txt"):
        command, _, rest = path.read_text(encoding="utf-8").partition("\n")
        outputs[command.strip()] = rest
    return outputs


def nodes_api(lab: EmulatedDeviceLab, stopped: tuple[str, ...] = ()) -> httpx.MockTransport:
    nodes = [
        {
            "name": device.name,
            "node_id": f"node-{index}",
            "node_type": "vpcs" if isinstance(device, EmulatedVpcs) else "qemu",
            "status": "stopped" if device.name in stopped else "started",
            "console": device.port,
            "console_host": "127.0.0.1",
            "console_type": "telnet",
            "tags": [f"device_type:{KINDS[device.name]}"],
            "ports": [],
        }
        for index, device in enumerate(lab.devices.values())
    ]

    def handle(request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if path == f"/v3/projects/{PROJECT}":
            return httpx.Response(200, json={"project_id": PROJECT, "status": "opened"})
        if path == f"/v3/projects/{PROJECT}/nodes":
            return httpx.Response(200, json=nodes)
        if path == f"/v3/projects/{PROJECT}/links":
            return httpx.Response(200, json=[])
        if path == "/v3/templates":
            return httpx.Response(200, json=[])
        return httpx.Response(404, json={"message": f"unexpected {path}"})

    return httpx.MockTransport(handle)


@asynccontextmanager
async def emulated_lab() -> AsyncIterator[EmulatedDeviceLab]:
    """The six emulated consoles the checks run on (also what ``bench_intent_checks`` times)."""
    r1 = EmulatedCiscoRouter("R1")
    leaf = EmulatedAristaSwitch("leaf1")
    vmx = EmulatedJunos("vmx")
    frr = EmulatedFrr("FRR1")
    pc1, pc2 = EmulatedVpcs("PC1", ping_delay=0.02), EmulatedVpcs("PC2")
    r1.shows.update(IOS)
    leaf.shows.update(EOS)
    vmx.shows.update(JUNOS)
    frr.shows.update(frr_outputs())
    pc2.ip = "10.0.2.10/24"
    pc1.unreachable.add("10.0.9.9")
    async with EmulatedDeviceLab(r1, leaf, vmx, frr, pc1, pc2) as devices:
        yield devices


@pytest.fixture
async def lab() -> AsyncIterator[EmulatedDeviceLab]:
    async with emulated_lab() as devices:
        yield devices


def executor(lab: EmulatedDeviceLab, **settings: Any) -> Gns3ToolExecutor:
    http = httpx.AsyncClient(transport=nodes_api(lab, settings.pop("stopped", ())))
    return Gns3ToolExecutor(
        Gns3Client("http://127.0.0.1:3080", http=http),
        runner=ConsoleRunner(command_timeout=5.0, recovery_timeout=2.0),
        settings=Gns3ToolSettings(**settings),
    )


async def verify(
    tools: Gns3ToolExecutor,
    checks: list[dict[str, Any]],
    wait_s: float = 0,
    progress: list[ToolProgress] | None = None,
    mode: CopilotMode = CopilotMode.TEACHING_ASSISTANT,
) -> ToolResult:
    context = make_context(PROJECT, TOKEN, mode)
    if progress is not None:
        context = replace(context, progress=progress.append)
    arguments = json.dumps({"checks": checks, "wait_s": wait_s})
    result = await tools.execute(ParsedToolCall.parse("c1", "verify_intent", arguments), context)
    json.dumps(result.output)
    return result


PASS, FAIL, ERROR = "pass", "fail", "error"

CASES: list[tuple[str, dict[str, Any], str, dict[str, Any]]] = [
    # Cisco IOS
    ("ios", {"kind": "ospf_neighbor", "node": "R1", "neighbor": "2.2.2.2"}, PASS,
     {"state": "full", "interface": "GigabitEthernet0/1"}),
    ("ios", {"kind": "ospf_neighbor", "node": "R1", "neighbor": "10.0.13.3"}, FAIL,
     {"state": "init"}),
    ("ios", {"kind": "bgp_session", "node": "R1", "peer": "10.0.12.2"}, PASS,
     {"state": "established"}),
    ("ios", {"kind": "bgp_session", "node": "R1", "peer": "10.0.13.3"}, FAIL, {"state": "idle"}),
    ("ios", {"kind": "route", "node": "R1", "prefix": "10.0.2.0/24", "protocol": "ospf",
             "via": "Gi0/1"}, PASS, {"code": "O"}),
    ("ios", {"kind": "route", "node": "R1", "prefix": "10.0.3.0/24"}, FAIL, {"present": False}),
    ("ios", {"kind": "interface", "node": "R1", "interface": "Gi0/0"}, PASS, {"state": "up"}),
    ("ios", {"kind": "interface", "node": "R1", "interface": "GigabitEthernet0/1"}, FAIL,
     {"admin": "administratively down"}),
    ("ios", {"kind": "interface", "node": "R1", "interface": "Gi0/7"}, ERROR, {}),
    ("ios", {"kind": "config_line", "node": "R1", "line": "hostname R1"}, PASS,
     {"present": True}),
    ("ios", {"kind": "config_line", "node": "R1", "line": "ip routing"}, FAIL,
     {"present": False}),
    ("ios", {"kind": "reachability", "from": "R1", "to": "PC2"}, PASS,
     {"to": "10.0.2.10", "replies": 3}),
    ("ios", {"kind": "reachability", "from": "R1", "to": "10.0.2.10", "expect": "unreachable"},
     FAIL, {"reachable": True}),
    # Arista EOS
    ("eos", {"kind": "ospf_neighbor", "node": "leaf1", "neighbor": "2.2.2.2"}, PASS,
     {"state": "full"}),
    ("eos", {"kind": "ospf_neighbor", "node": "leaf1", "neighbor": "3.3.3.3"}, FAIL,
     {"state": "init"}),
    ("eos", {"kind": "bgp_session", "node": "leaf1", "peer": "10.0.12.2"}, PASS,
     {"state": "established"}),
    ("eos", {"kind": "bgp_session", "node": "leaf1", "peer": "10.0.13.3"}, FAIL,
     {"state": "active"}),
    ("eos", {"kind": "route", "node": "leaf1", "prefix": "10.0.2.0/24", "via": "10.0.12.2"},
     PASS, {"via": ["10.0.12.2"]}),
    ("eos", {"kind": "route", "node": "leaf1", "prefix": "10.0.2.0/24", "protocol": "bgp"},
     FAIL, {"code": "O"}),
    ("eos", {"kind": "interface", "node": "leaf1", "interface": "Ethernet1"}, PASS,
     {"state": "up"}),
    ("eos", {"kind": "interface", "node": "leaf1", "interface": "Et2"}, FAIL, {"state": "down"}),
    ("eos", {"kind": "config_line", "node": "leaf1", "line": "hostname leaf1"}, PASS,
     {"present": True}),
    ("eos", {"kind": "reachability", "from": "leaf1", "to": "10.0.2.10"}, PASS,
     {"replies": 3}),
    # Juniper Junos
    ("junos", {"kind": "ospf_neighbor", "node": "vmx", "neighbor": "10.0.12.2"}, PASS,
     {"state": "full", "neighbor_id": "2.2.2.2"}),
    ("junos", {"kind": "ospf_neighbor", "node": "vmx", "neighbor": "3.3.3.3"}, FAIL,
     {"state": "init"}),
    ("junos", {"kind": "bgp_session", "node": "vmx", "peer": "10.0.12.2"}, PASS,
     {"state": "established"}),
    ("junos", {"kind": "bgp_session", "node": "vmx", "peer": "10.0.13.3"}, FAIL,
     {"state": "active"}),
    ("junos", {"kind": "route", "node": "vmx", "prefix": "10.0.2.0/24"}, ERROR, {}),
    ("junos", {"kind": "interface", "node": "vmx", "interface": "ge-0/0/1"}, PASS,
     {"state": "up"}),
    ("junos", {"kind": "interface", "node": "vmx", "interface": "ge-0/0/2"}, FAIL,
     {"link": "down"}),
    ("junos", {"kind": "config_line", "node": "vmx", "line": "set version 21.1R1.11"}, PASS,
     {"present": True}),
    ("junos", {"kind": "config_line", "node": "vmx", "line": "set system host-name x"}, FAIL,
     {"present": False}),
    ("junos", {"kind": "reachability", "from": "vmx", "to": "10.0.2.10", "count": 2}, PASS,
     {"replies": 2}),
    # FRR (its real captured output) and VPCS
    ("frr", {"kind": "ospf_neighbor", "node": "FRR1", "neighbor": "2.2.2.2"}, PASS,
     {"state": "full"}),
    ("frr", {"kind": "bgp_session", "node": "FRR1", "peer": "10.0.12.2"}, PASS,
     {"state": "established"}),
    ("frr", {"kind": "route", "node": "FRR1", "prefix": "10.0.2.0/24", "via": "10.0.12.2"},
     PASS, {"code": "O"}),
    ("frr", {"kind": "interface", "node": "FRR1", "interface": "eth1"}, PASS, {"state": "up"}),
    ("frr", {"kind": "config_line", "node": "FRR1", "line": "ospf router-id 1.1.1.1"}, PASS,
     {"present": True}),
    ("frr", {"kind": "reachability", "from": "FRR1", "to": "10.0.2.10"}, ERROR, {}),
    ("vpcs", {"kind": "reachability", "from": "PC1", "to": "PC2"}, PASS,
     {"to": "10.0.2.10", "replies": 3}),
    ("vpcs", {"kind": "reachability", "from": "PC1", "to": "10.0.9.9"}, FAIL, {"replies": 0}),
    ("vpcs", {"kind": "reachability", "from": "PC1", "to": "10.0.9.9", "expect": "unreachable"},
     PASS, {"reachable": False}),
    ("vpcs", {"kind": "interface", "node": "PC1", "interface": "e0"}, ERROR, {}),
    ("vpcs", {"kind": "reachability", "from": "PC1", "to": "PC9"}, ERROR, {}),
]  # fmt: skip


@pytest.mark.parametrize(("platform", "check", "status", "observed"), CASES)
async def test_each_kind_passes_fails_or_errors_on_each_platform(
    lab: EmulatedDeviceLab,
    platform: str,
    check: dict[str, Any],
    status: str,
    observed: dict[str, Any],
) -> None:
    result = await verify(executor(lab), [check])

    assert result.status is ToolStatus.SUCCESS
    (verdict,) = result.output["checks"]
    assert result.output["status"] == status
    assert verdict["status"] == status, verdict
    assert {key: verdict["observed"][key] for key in observed} == observed, verdict
    assert verdict["attempts"] == 1
    if status == ERROR:
        assert verdict["reason"]
    else:
        (evidence,) = verdict["evidence"]
        assert evidence["node"] == check.get("node", check.get("from"))
        assert evidence["command"]
        absent_line = check["kind"] == "config_line" and not verdict["observed"]["present"]
        assert evidence["lines"] or absent_line, verdict  # an absent line has none to quote


async def test_the_commands_sent_are_the_compiled_ones_and_one_console_run_per_node(
    lab: EmulatedDeviceLab,
) -> None:
    r1 = lab["R1"]
    before = r1.connections
    result = await verify(
        executor(lab),
        [
            {"kind": "ospf_neighbor", "node": "R1", "neighbor": "2.2.2.2"},
            {"kind": "route", "node": "R1", "prefix": "10.0.2.0/24"},
            {"kind": "config_line", "node": "R1", "line": "hostname R1"},
        ],
    )
    assert result.output["status"] == PASS
    assert r1.connections == before + 1
    assert r1.received[-5:] == [
        "enable",  # show running-config needs the privileged level
        "show ip ospf neighbor",
        "show ip route",
        "show running-config",
        "disable",
    ]


class SteppingWaitClock(FakeWaitClock):
    """The verification's waiting time, moved only by its own sleeps; ``on_sleep`` runs
    as each sleep starts (told how many came before): a device that changes meanwhile."""

    def __init__(self, on_sleep: Callable[[int], None] | None = None) -> None:
        super().__init__()
        self.on_sleep = on_sleep

    async def sleep(self, seconds: float) -> None:
        if self.on_sleep is not None:
            self.on_sleep(len(self.sleeps))
        await super().sleep(seconds)


async def verify_on(
    tools: Gns3ToolExecutor, checks: list[dict[str, Any]], wait_s: float, clock: WaitClock
) -> tuple[dict[str, Any], list[str]]:
    """``verify_intent``'s own run of the checks (its arguments validated as the tool's),
    waiting on ``clock``: its output and the progress it reported."""
    progress: list[ToolProgress] = []
    context = replace(
        make_context(PROJECT, TOKEN, CopilotMode.TEACHING_ASSISTANT), progress=progress.append
    )
    args = VerifyIntent.model_validate({"checks": checks, "wait_s": wait_s}, context=tools.settings)
    result = await run_checks(
        tools.lab, CallScope(context, TOKEN), list(args.checks), args.wait_s, clock
    )
    return result.to_dict(), [p.text for p in progress]


async def test_a_check_that_does_not_hold_is_retried_until_it_does(
    lab: EmulatedDeviceLab,
) -> None:
    r1 = lab["R1"]
    r1.shows["show ip ospf neighbor"] = IOS["show ip ospf neighbor"].replace("FULL/DR", "INIT/DR")

    def heal(sleeps_before: int) -> None:
        if sleeps_before == 0:  # the neighbour comes up while the first wait runs
            r1.shows["show ip ospf neighbor"] = IOS["show ip ospf neighbor"]

    clock = SteppingWaitClock(heal)
    output, progress = await verify_on(
        executor(lab, verify_interval=0.3),
        [{"kind": "ospf_neighbor", "node": "R1", "neighbor": "2.2.2.2"}],
        20,
        clock,
    )
    (verdict,) = output["checks"]
    assert verdict["status"] == PASS
    assert verdict["attempts"] == 2  # not holding, one interval's wait, holding
    assert clock.sleeps == [0.3]
    assert verdict["waited_s"] == 0.3
    waiting = [text for text in progress if "not holding yet" in text]
    assert len(waiting) == 1, progress
    assert "R1 OSPF neighbour 2.2.2.2 full" in waiting[0]


async def test_a_check_that_never_holds_fails_at_the_bound_with_its_evidence(
    lab: EmulatedDeviceLab,
) -> None:
    clock = SteppingWaitClock()
    output, _ = await verify_on(
        executor(lab, verify_interval=0.5),
        [{"kind": "ospf_neighbor", "node": "R1", "neighbor": "3.3.3.3", "name": "R1-R3 Full"}],
        2,
        clock,
    )
    (verdict,) = output["checks"]
    assert (verdict["name"], verdict["status"]) == ("R1-R3 Full", FAIL)
    assert verdict["attempts"] == 5  # at 0, 0.5, 1, 1.5 and 2 s
    assert clock.sleeps == [0.5] * 4  # and no wait past the 2 s bound
    assert verdict["waited_s"] == 2
    assert "INIT/DROTHER" in verdict["evidence"][0]["lines"][0]
    assert "init, not full" in verdict["reason"]
    assert "(still so after 2 s)" in verdict["reason"]


async def test_a_stopped_node_is_an_error_after_the_wait_never_a_pass(
    lab: EmulatedDeviceLab,
) -> None:
    result = await verify(
        executor(lab, stopped=("R1",), verify_interval=0.2),
        [{"kind": "interface", "node": "R1", "interface": "Gi0/0"}],
        0.5,
    )
    (verdict,) = result.output["checks"]
    assert verdict["status"] == ERROR
    assert "stopped" in verdict["reason"]
    assert verdict["attempts"] >= 2


async def test_verify_intent_is_offered_in_every_mode_as_read_only(
    lab: EmulatedDeviceLab,
) -> None:
    tools = executor(lab)
    for mode in CopilotMode:
        (spec,) = [s for s in tools.specs(mode) if s.name == "verify_intent"]
        assert spec.effect is not None and spec.effect.value == "read_only"
        item = spec.parameters["properties"]["checks"]["items"]
        assert "discriminator" not in json.dumps(spec.parameters)
        assert len(item["oneOf"]) == 6


async def test_bad_checks_are_refused_naming_the_field_and_nothing_is_sent(
    lab: EmulatedDeviceLab,
) -> None:
    result = await verify(
        executor(lab), [{"kind": "route", "node": "R1", "prefix": "not-a-prefix"}]
    )
    assert result.status is ToolStatus.ERROR
    assert "prefix" in result.output["error"]
    result = await verify(executor(lab), [{"kind": "telepathy", "node": "R1"}])
    assert result.status is ToolStatus.ERROR
    assert all(not device.received for device in lab.devices.values())
