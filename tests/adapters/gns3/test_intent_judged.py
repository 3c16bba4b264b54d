"""Nothing compiled reaches a device unjudged, and no value reaches a line untyped (issue
35, case 2), over real telnet sockets to the emulated Linux host and Junos router:

* ``verify_intent``'s arguments refuse a target, node or interface outside the closed
  alphabet (an IPv6 "address" whose scope id is a shell line, a Junos interface with a
  ``| save``), in teaching mode, before anything is sent;
* a line that a check's template or a capture's read compiles and that the platform's
  grammar calls a change is never sent: the check is an ``error`` saying so, the capture's
  part is unread with that reason, and the device received nothing of it;
* every line the compilers make for legitimate values is read-only by the grammar (a
  grammar that refused one would silently break a check kind: this says which);
* words read from a device are formatted into a line only when they are plain addresses.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from pydantic import ValidationError

from adapters.gns3 import ConsoleRunner, Gns3Client, Gns3ToolExecutor, Gns3ToolSettings
from adapters.gns3.console._lock import ConsolePriority, current_priority
from adapters.gns3.lab._registry import CallScope
from adapters.gns3.model import _intent_compile, _lab_state_reading
from adapters.gns3.model._grammar import judge
from adapters.gns3.model._intent_compile import Plan, compile_check
from adapters.gns3.model._intent_plans import targets
from adapters.gns3.model._lab_state_reading import Read, reads_for
from adapters.gns3.model._platforms import DeviceKind
from adapters.gns3.tools._lab_capture import capture_lab_state
from copilot_core import CopilotMode, ParsedToolCall, ToolResult, ToolStatus
from copilot_core.intent import StandingIntent, checks_adapter
from copilot_core.testing import InMemoryCheckpointStore, SteppingClock
from tests.adapters.gns3.conftest import make_context
from tests.adapters.gns3.intent_outputs import JUNOS
from tests.fakes.telnet_devices import EmulatedDeviceLab, EmulatedJunos, EmulatedLinux

pytestmark = pytest.mark.timeout(120)

PROJECT = "3f2a9c1e-0000-4000-8000-0000000000cc"
TOKEN = "jwt-for-tests"
KINDS = {"H1": "linux", "H2": "linux", "vmx": "juniper_junos"}
ATTACK = {"kind": "reachability", "from": "H1", "to": "fe80::1%x;ip link set eth1 down"}
JUNOS_SAVE = {"kind": "interface", "node": "vmx", "interface": "ge-0/0/0 | save /var/tmp/x"}


def nodes_api(lab: EmulatedDeviceLab) -> httpx.MockTransport:
    nodes = [
        {
            "name": device.name,
            "node_id": f"node-{index}",
            "node_type": "docker" if KINDS[device.name] == "linux" else "qemu",
            "status": "started",
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


@pytest.fixture
async def lab() -> AsyncIterator[EmulatedDeviceLab]:
    h1, h2 = EmulatedLinux("H1", ping_delay=0.01), EmulatedLinux("H2", ping_delay=0.01)
    h1.addresses.append(("eth1", "10.0.1.10/24"))
    h2.addresses[1:] = [("eth0", "10.0.0.6/24")]
    vmx = EmulatedJunos("vmx")
    vmx.shows.update(JUNOS)
    async with EmulatedDeviceLab(h1, h2, vmx) as devices:
        yield devices


def executor(lab: EmulatedDeviceLab) -> Gns3ToolExecutor:
    return Gns3ToolExecutor(
        Gns3Client("http://127.0.0.1:3080", http=httpx.AsyncClient(transport=nodes_api(lab))),
        runner=ConsoleRunner(command_timeout=5.0, recovery_timeout=2.0, connect_timeout=2.0),
        settings=Gns3ToolSettings(),
    )


async def verify(tools: Gns3ToolExecutor, checks: list[dict[str, Any]]) -> ToolResult:
    context = make_context(PROJECT, TOKEN, CopilotMode.TEACHING_ASSISTANT)
    arguments = json.dumps({"checks": checks, "wait_s": 0})
    return await tools.execute(ParsedToolCall.parse("c1", "verify_intent", arguments), context)


def sent(lab: EmulatedDeviceLab, name: str) -> list[str]:
    return list(lab.devices[name].received)


# ------------------------------------------------------------------ typed values
@pytest.mark.parametrize(
    ("check", "field"),
    [
        (ATTACK, ("reachability", "to")),
        ({**ATTACK, "to": "10.0.2.10 repeat 100000"}, ("reachability", "to")),  # IOS
        ({**ATTACK, "to": "10.0.2.10 count 100000"}, ("reachability", "to")),  # Junos
        ({**ATTACK, "to": "fe80::1%eth0 -f"}, ("reachability", "to")),
        ({**ATTACK, "to": "-f"}, ("reachability", "to")),
        ({**ATTACK, "to": "10.0.0.1", "from": "H1\nid"}, ("reachability", "from")),
        (JUNOS_SAVE, ("interface", "interface")),
        ({**JUNOS_SAVE, "interface": 'ge-0/0/0"'}, ("interface", "interface")),
        ({"kind": "route", "node": "R1", "prefix": "10.0.2.0/24", "via": "a;b"}, ("route", "via")),
        ({"kind": "bgp_session", "node": "R 1", "peer": "R2"}, ("bgp_session", "node")),
    ],
)
def test_a_value_outside_the_closed_alphabet_is_refused_at_its_model(
    check: dict[str, Any], field: tuple[str, str]
) -> None:
    with pytest.raises(ValidationError) as refused:
        checks_adapter.validate_python([check])
    (error,) = refused.value.errors()
    assert error["loc"] == (0, *field), error


@pytest.mark.parametrize(
    ("value", "plain"),
    [
        ("10.0.2.10", True),
        ("2001:db8::1", True),
        ("fe80::1%eth0", True),
        ("fe80::1%x;ip", False),
        ("10.0.2.10%eth0", False),  # IPv4 has no scope id
        ("10.0.2.0/24", False),
    ],
)
def test_a_target_is_an_address_only_when_it_is_a_plain_one(value: str, plain: bool) -> None:
    assert targets(value, {}) == ([value] if plain else [])


def test_words_read_from_a_device_are_formatted_only_when_they_are_plain_addresses() -> None:
    resolved = {"R2": ["10.0.12.2", "10.0.0.1;reboot", "fe80::2%a b", "10.0.2.1"]}
    assert targets("R2", resolved) == ["10.0.12.2", "10.0.2.1"]


async def test_verify_intent_refuses_the_attack_in_teaching_mode_and_sends_nothing(
    lab: EmulatedDeviceLab,
) -> None:
    for checks, field in (
        ([ATTACK], "checks.0.reachability.to"),
        ([JUNOS_SAVE], "checks.0.interface.interface"),
    ):
        result = await verify(executor(lab), checks)
        assert result.status is ToolStatus.ERROR, result.output
        assert [f["field"] for f in result.output["fields"]] == [field], result.output
        assert "Nothing was done" in result.output["error"]
    assert sent(lab, "H1") == [] and sent(lab, "vmx") == []  # no console was even opened
    assert all(device.connections == 0 for device in lab.devices.values())


# ------------------------------------------------------------------ judged before sent
async def test_a_compiled_check_line_the_grammar_calls_a_change_is_never_sent(
    lab: EmulatedDeviceLab, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A future template that went wrong (here: a ping with a shell command after it) is
    stopped where the lines go to the console, whatever compiled it."""
    bad = "ping -c {count} -W 2 {to}; ip link set eth1 down"
    monkeypatch.setitem(_intent_compile._PING, DeviceKind.LINUX, bad)
    result = await verify(
        executor(lab),
        [
            {"kind": "reachability", "from": "H1", "to": "10.0.0.6", "name": "H1-H2"},
            {"kind": "interface", "node": "vmx", "interface": "ge-0/0/1"},
        ],
    )
    ping, interface = result.output["checks"]
    assert ping["status"] == "error", ping
    assert "was not sent to H1" in ping["reason"], ping
    assert "ip link set eth1 down" in ping["reason"]
    assert not any("ping" in line or "ip link" in line for line in sent(lab, "H1")), sent(lab, "H1")
    assert "eth1" not in lab.devices["H1"].down  # type: ignore[attr-defined]
    assert interface["status"] == "pass", interface  # the other node's line still went
    assert "show interfaces ge-0/0/1" in sent(lab, "vmx")


async def test_a_capture_read_the_grammar_calls_a_change_is_never_sent(
    lab: EmulatedDeviceLab, monkeypatch: pytest.MonkeyPatch
) -> None:
    linux = reads_for(DeviceKind.LINUX)
    changed = (*linux[:2], Read("routes", "ip -4 route flush all"))
    monkeypatch.setitem(_lab_state_reading._ROUTER_READS, DeviceKind.LINUX, changed)
    tools = executor(lab)
    state = await capture_lab_state(tools.lab, CallScope(make_context(PROJECT, TOKEN), TOKEN))
    h1 = state.node("H1")
    assert h1 is not None and h1.reached, h1
    assert h1.routes is None
    assert "was not sent to H1" in dict(h1.unread)["routes"], h1.unread
    assert h1.interfaces is not None  # the read-only reads were still sent and read
    for name in ("H1", "H2"):
        assert "ip -4 route flush all" not in sent(lab, name)
        assert "ip -4 -o addr show" in sent(lab, name)
    assert lab.devices["H1"].routes  # type: ignore[attr-defined]  # nothing flushed
    # the PCs still pinged each other (their addresses are plain)
    assert {(p.source, p.target) for p in state.reachability} == {("H1", "H2"), ("H2", "H1")}


# ------------------------------------------------------------------ what the compilers make
LEGIT: list[dict[str, Any]] = [
    {"kind": "reachability", "from": "N", "to": "10.0.2.10"},
    {"kind": "reachability", "from": "N", "to": "2001:db8::1"},
    {"kind": "ospf_neighbor", "node": "N", "neighbor": "2.2.2.2"},
    {"kind": "bgp_session", "node": "N", "peer": "10.0.12.2"},
    {"kind": "route", "node": "N", "prefix": "10.0.2.0/24"},
    {"kind": "interface", "node": "N", "interface": "ge-0/0/1.0"},
    {"kind": "config_line", "node": "N", "line": "hostname R1"},
]


@pytest.mark.parametrize("kind", [k for k in DeviceKind if k is not DeviceKind.GENERIC])
def test_every_line_the_compilers_make_for_legitimate_values_is_read_only(
    kind: DeviceKind,
) -> None:
    lines = [read.command for read in reads_for(kind)]
    # a scoped IPv6 address is a shell's word; the CLIs' grammars refuse the '%' (an error
    # for that check, said so): only the shell is held to reading it
    scoped = [{"kind": "reachability", "from": "N", "to": "fe80::1%eth0"}]
    legit = LEGIT + scoped if kind is DeviceKind.LINUX else LEGIT
    for check in checks_adapter.validate_python(legit):
        plan = compile_check(check, "N", kind, {})
        if isinstance(plan, Plan):
            lines.append(plan.command)
    changing = {line: judge(line, kind).reason for line in lines if judge(line, kind).changes}
    assert changing == {}, changing


async def test_a_lab_capture_waits_for_consoles_as_background_work(
    lab: EmulatedDeviceLab, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A capture's console runs queue behind a person's commands (the console lock serves
    interactive runs first): the priority it asks for reaches the runner."""
    tools = executor(lab)
    runner = tools.lab.runner
    asked: list[object] = []
    run = runner.run

    async def recording(*args: Any, **kwargs: Any) -> Any:
        asked.append(kwargs.get("priority"))
        return await run(*args, **kwargs)

    monkeypatch.setattr(runner, "run", recording)
    state = await capture_lab_state(tools.lab, CallScope(make_context(PROJECT, TOKEN), TOKEN))
    assert state.node("H1") is not None
    assert asked and set(asked) == {ConsolePriority.BACKGROUND}, asked


async def test_a_standing_run_waits_for_consoles_behind_a_persons_commands(
    lab: EmulatedDeviceLab, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The core's standing intent runs on the real GNS3 tools' probes as background work
    (``ToolContext.background``): its console runs ask for the background priority, so
    a person's commands go first; a person's own verify_intent, on the same probes,
    stays interactive."""
    tools = executor(lab)
    runner = tools.lab.runner
    asked: list[object] = []
    run = runner.run

    async def recording(*args: Any, **kwargs: Any) -> Any:
        asked.append(kwargs.get("priority") or current_priority())
        return await run(*args, **kwargs)

    monkeypatch.setattr(runner, "run", recording)
    check = {"kind": "reachability", "from": "H1", "to": "10.0.0.6", "name": "H1-H2"}
    intent = StandingIntent(InMemoryCheckpointStore(), tools.probes, SteppingClock())
    await intent.put(PROJECT, "user-1", [check])
    result = await intent.run(PROJECT, "user-1", TOKEN)
    await intent.aclose()
    assert result.status == "pass", result
    assert asked and set(asked) == {ConsolePriority.BACKGROUND}, asked

    asked.clear()
    mine = await verify(tools, [check])
    assert mine.output["status"] == "pass", mine.output
    assert asked and set(asked) == {ConsolePriority.INTERACTIVE}, asked
