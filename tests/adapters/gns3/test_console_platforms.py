"""Each platform's prompts, modes, pagers and interrupt keys, over real telnet sockets."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator

import pytest

from adapters.gns3 import ConsoleRunner, ConsoleTarget, DeviceKind
from tests.adapters.gns3.conftest import eventually
from tests.fakes.telnet_devices import (
    CTRL_C,
    CTRL_CARET,
    EmulatedAristaSwitch,
    EmulatedCiscoRouter,
    EmulatedDevice,
    EmulatedDeviceLab,
    EmulatedFrr,
    EmulatedGenericDevice,
    EmulatedHuawei,
    EmulatedJunos,
    EmulatedLinux,
    EmulatedVpcs,
)


def runner(**overrides: float) -> ConsoleRunner:
    settings = {"command_timeout": 2.0, "recovery_timeout": 2.0, **overrides}
    return ConsoleRunner(**settings)  # type: ignore[arg-type]


def target(device: EmulatedDevice, kind: DeviceKind) -> ConsoleTarget:
    return ConsoleTarget(device.name, "127.0.0.1", device.port, kind)


@pytest.fixture
async def device(request: pytest.FixtureRequest) -> AsyncIterator[EmulatedDevice]:
    emulated: EmulatedDevice = request.param
    async with EmulatedDeviceLab(emulated):
        yield emulated


@pytest.mark.parametrize(
    ("device", "kind", "command", "first_line"),
    [
        (EmulatedVpcs("PC1"), DeviceKind.VPCS, "show ip", "NAME        : PC1[1]"),
        (
            EmulatedCiscoRouter("R1"),
            DeviceKind.CISCO_IOS,
            "show ip interface brief",
            "Interface              IP-Address      OK? Method Status                Protocol",
        ),
        (
            EmulatedAristaSwitch("leaf1"),
            DeviceKind.ARISTA_EOS,
            "show version",
            "Cisco IOS Software, IOSv Software (VIOS-ADVENTERPRISEK9-M), Version 15.9(3)M4, "
            "RELEASE SOFTWARE (fc2)",
        ),
        (EmulatedJunos("vmx"), DeviceKind.JUNIPER_JUNOS, "show version", "Hostname: vmx"),
        (
            EmulatedFrr("R7"),
            DeviceKind.FRR,
            "show ip route",
            "Codes: K - kernel route, C - connected, S - static, O - OSPF",
        ),
        (
            EmulatedLinux("host1"),
            DeviceKind.LINUX,
            "uname -a",
            "Linux host1 6.1.0 #1 SMP x86_64 GNU/Linux",
        ),
        (
            EmulatedHuawei("HUAWEI"),
            DeviceKind.HUAWEI_VRP,
            "display ip interface brief",
            "*down: administratively down",
        ),
        (
            EmulatedGenericDevice("MikroTik"),
            DeviceKind.GENERIC,
            "/system identity print",
            "  name: MikroTik",
        ),
    ],
    indirect=["device"],
)
async def test_each_platform_answers_a_command_with_clean_output(
    device: EmulatedDevice, kind: DeviceKind, command: str, first_line: str
) -> None:
    transcript = await runner().run(target(device, kind), [command])
    assert transcript.error is None, transcript.error
    (outcome,) = transcript.outcomes
    assert outcome.ok, outcome
    assert outcome.output.splitlines()[0] == first_line
    assert command not in outcome.output  # no echo
    assert "More" not in outcome.output and "\x08" not in outcome.output  # pagers answered
    assert device.received[-1] == command or kind is DeviceKind.FRR


@pytest.mark.parametrize("device", [EmulatedVpcs("PC1")], indirect=True)
async def test_vpcs_show_version_lines_ending_in_cr_cr_lf_are_kept(device: EmulatedDevice):
    # Regression (issue 13, 3): a cleaner keeping only what follows each line's last \r
    # blanked every line of VPCS's "show version".
    transcript = await runner().run(target(device, DeviceKind.VPCS), ["show version", "version"])
    for outcome in transcript.outcomes:
        lines = outcome.output.splitlines()
        assert lines[0] == "VPCS version 0.8.3"
        assert "Supported features: ipv4, ipv6, dhcp, arp, ping, trace" in lines
        assert len([line for line in lines if line.strip()]) == 6


# ----------------------------------------------------------------------- Cisco
@pytest.mark.parametrize("device", [EmulatedCiscoRouter("R1", initial_dialog=True)], indirect=True)
async def test_cisco_initial_configuration_dialog_is_declined(device: EmulatedDevice):
    transcript = await runner().run(target(device, DeviceKind.CISCO_IOS), ["show version"])
    assert transcript.error is None
    assert transcript.outcomes[0].output.startswith("Cisco IOS Software")
    assert device.received[:2] == ["no", "show version"]


@pytest.mark.parametrize("device", [EmulatedCiscoRouter("R1", enable_secret="s3")], indirect=True)
async def test_cisco_enable_secret_stops_configuration_with_a_clear_error(device: EmulatedDevice):
    transcript = await runner().run(
        target(device, DeviceKind.CISCO_IOS), ["hostname X"], config_mode=True
    )
    assert transcript.outcomes == []
    assert transcript.error is not None
    assert transcript.error.startswith("could not enter configuration mode on R1 ('enable':")
    assert "Password" in transcript.error
    assert "hostname X" not in device.received
    # The password prompt was left with an interrupt; the console still works.
    after = await runner().run(target(device, DeviceKind.CISCO_IOS), ["show version"])
    assert after.outcomes[0].ok


@pytest.mark.parametrize("device", [EmulatedCiscoRouter("R1", ping_delay=0.05)], indirect=True)
async def test_cisco_ping_is_ended_with_ctrl_caret(device: EmulatedDevice):
    transcript = await runner(command_timeout=0.5).run(
        target(device, DeviceKind.CISCO_IOS), ["ping 192.0.2.9 repeat 100000", "show version"]
    )
    ping, version = transcript.outcomes
    assert ping.timed_out
    assert ping.output.startswith("Type escape sequence to abort.")
    assert "!!!" in ping.output  # what was printed before the limit is kept
    assert device.interrupts[0] == CTRL_CARET
    assert version.ok


@pytest.mark.parametrize("delay", [0.0, 0.02])  # with the prompt, or in a later read
async def test_a_log_message_printed_after_the_prompt_is_kept_apart(delay: float):
    async with EmulatedDeviceLab(EmulatedCiscoRouter("R1")) as lab:
        await _late_log(lab["R1"], delay)


async def _late_log(device: EmulatedDevice, delay: float) -> None:
    device.after_prompt_delay = delay
    log = (
        "\r\n*Mar  1 00:01:00.000: %LINK-3-UPDOWN: Interface GigabitEthernet0/1, "
        "changed state to up\r\n"
    )
    device.after_prompt["show version"] = log
    transcript = await runner().run(
        target(device, DeviceKind.CISCO_IOS), ["show version", "show ip interface brief"]
    )
    version, interfaces = transcript.outcomes
    assert version.ok and interfaces.ok
    assert version.output.endswith("R1 uptime is 5 minutes")
    assert "%LINK-3-UPDOWN" in version.late_output
    assert interfaces.output.startswith("Interface")
    assert "%LINK" not in interfaces.output


@pytest.mark.parametrize("device", [EmulatedCiscoRouter("R1")], indirect=True)
async def test_a_pager_another_client_left_open_is_quit(device: EmulatedDevice):
    assert isinstance(device, EmulatedCiscoRouter)
    device.mode = "enable"
    reader, writer = await asyncio.open_connection("127.0.0.1", device.port)
    try:
        writer.write(b"show running-config\r\n")
        seen = b""
        async with asyncio.timeout(2):
            while b"--More--" not in seen:
                seen += await reader.read(4096)
        transcript = await runner().run(target(device, DeviceKind.CISCO_IOS), ["show version"])
    finally:
        writer.close()
    assert transcript.error is None
    assert transcript.outcomes[0].output.startswith("Cisco IOS Software")
    assert "filler" not in transcript.outcomes[0].output


# ----------------------------------------------------------------------- Arista
@pytest.mark.parametrize("device", [EmulatedAristaSwitch("leaf1")], indirect=True)
async def test_arista_configuration_and_ctrl_c(device: EmulatedDevice):
    assert isinstance(device, EmulatedAristaSwitch)
    transcript = await runner().run(
        target(device, DeviceKind.ARISTA_EOS),
        ["interface Ethernet1", "description uplink"],
        config_mode=True,
    )
    assert transcript.error is None
    assert device.received == [
        "enable",
        "configure terminal",
        "interface Ethernet1",
        "description uplink",
        "end",
        "disable",
    ]
    pinged = await runner(command_timeout=0.4).run(
        target(device, DeviceKind.ARISTA_EOS), ["ping 10.0.0.2 repeat 100000"]
    )
    assert pinged.outcomes[0].timed_out
    assert "icmp_seq=1 " in pinged.outcomes[0].output
    assert device.interrupts == [CTRL_C]
    await eventually(lambda: not device.busy)


# ----------------------------------------------------------------------- Junos
@pytest.mark.parametrize("device", [EmulatedJunos("vmx")], indirect=True)
async def test_junos_pager_is_answered(device: EmulatedDevice):
    transcript = await runner().run(
        target(device, DeviceKind.JUNIPER_JUNOS), ["show interfaces terse"]
    )
    lines = transcript.outcomes[0].output.splitlines()
    assert lines[-1].startswith("ge-0/0/29")
    assert not any("more" in line for line in lines)


@pytest.mark.parametrize("device", [EmulatedJunos("vmx", at_shell=True)], indirect=True)
async def test_junos_configuration_is_committed_from_the_shell_and_the_shell_restored(
    device: EmulatedDevice,
):
    assert isinstance(device, EmulatedJunos)
    line = "set interfaces ge-0/0/0 unit 0 family inet address 10.0.0.1/24"
    transcript = await runner().run(
        target(device, DeviceKind.JUNIPER_JUNOS), [line], config_mode=True
    )
    assert transcript.error is None
    assert device.committed == [line]
    assert device.received == ["cli", "configure", line, "commit and-quit", "exit"]
    assert device.mode == "shell"


@pytest.mark.parametrize("device", [EmulatedJunos("vmx", commit_fails=True)], indirect=True)
async def test_a_failed_junos_commit_is_reported_and_rolled_back(device: EmulatedDevice):
    assert isinstance(device, EmulatedJunos)
    transcript = await runner().run(
        target(device, DeviceKind.JUNIPER_JUNOS), ["set system host-name x"], config_mode=True
    )
    assert transcript.error is not None
    assert "'commit and-quit' failed on vmx" in transcript.error
    assert "configuration check-out failed" in transcript.error
    assert device.received[-2:] == ["rollback 0", "exit configuration-mode"]
    assert device.mode == "operational"
    assert device.committed == []


@pytest.mark.parametrize("device", [EmulatedJunos("vmx")], indirect=True)
async def test_junos_ping_is_interrupted_with_ctrl_c(device: EmulatedDevice):
    transcript = await runner(command_timeout=0.4).run(
        target(device, DeviceKind.JUNIPER_JUNOS), ["ping 10.0.0.2", "show version"]
    )
    ping, version = transcript.outcomes
    assert ping.timed_out and "icmp_seq=1 " in ping.output
    assert device.interrupts == [CTRL_C]
    assert version.ok


# ----------------------------------------------------------------------- FRR
@pytest.mark.parametrize("device", [EmulatedFrr("R7")], indirect=True)
async def test_frr_commands_run_in_vtysh_and_the_shell_is_restored(device: EmulatedDevice):
    assert isinstance(device, EmulatedFrr)
    transcript = await runner().run(
        target(device, DeviceKind.FRR),
        ["router ospf", "network 10.0.0.0/24 area 0"],
        config_mode=True,
    )
    assert transcript.error is None
    assert device.received == [
        "vtysh",
        "show version",  # vtysh is proven before anything is sent to it
        "configure terminal",
        "router ospf",
        "network 10.0.0.0/24 area 0",
        "end",
        "exit",
    ]
    assert device.mode == "shell"
    assert device.config == ["router ospf", "network 10.0.0.0/24 area 0"]
    rejected = await runner().run(target(device, DeviceKind.FRR), ["show ip bgp"])
    assert rejected.outcomes[0].error == "the device rejected the command"


_STRAY_PROMPT = re.compile(r"^R1(?:\([\w-]+\))?#\s*$", re.MULTILINE)


def docker_target(device: EmulatedDevice, enter: str) -> ConsoleTarget:
    return ConsoleTarget(device.name, "127.0.0.1", device.port, DeviceKind.FRR, enter=enter)


@pytest.mark.parametrize("device", [EmulatedFrr("R1", docker=True)], indirect=True)
async def test_a_docker_frr_console_gets_cr_alone_and_no_output_holds_a_stray_prompt(
    device: EmulatedDevice,
):
    assert isinstance(device, EmulatedFrr)
    configured = await runner().run(
        docker_target(device, "\r"),
        [
            "interface eth1",
            "ip address 10.0.12.1/30",
            "exit",
            "router ospf",
            "network 10.0.12.0/30 area 0",
        ],
        config_mode=True,
    )
    shown = await runner().run(
        docker_target(device, "\r"), ["show running-config", "show ip route"]
    )
    assert configured.error is None and shown.error is None
    outcomes = [*configured.outcomes, *shown.outcomes]
    assert all(outcome.ok for outcome in outcomes), [o.to_dict() for o in outcomes]
    for outcome in outcomes:
        assert not _STRAY_PROMPT.search(outcome.output), outcome.to_dict()
        assert not outcome.late_output, outcome.to_dict()
    assert "router ospf" in shown.outcomes[0].output
    assert shown.outcomes[1].output.startswith("Codes:")
    assert configured.prompt == shown.prompt == "R1#"
    assert device.mode == "vtysh"


@pytest.mark.parametrize("device", [EmulatedFrr("R1", docker=True)], indirect=True)
async def test_the_docker_console_emulator_takes_cr_lf_as_two_enters_as_the_real_one_does(
    device: EmulatedDevice,
):
    """The emulator reproduces what the real FRR node does with ``\\r\\n`` (see
    tests/lab): every command is followed by an empty one and an extra prompt."""
    shown = await runner().run(
        docker_target(device, "\r\n"), ["show ip route", "show running-config"]
    )
    texts = [f"{o.output}\n{o.late_output}" for o in shown.outcomes]
    assert any(_STRAY_PROMPT.search(text) for text in texts), texts


@pytest.mark.parametrize("device", [EmulatedFrr("R1", docker=True)], indirect=True)
async def test_a_docker_frr_shell_prompt_is_taken_back_to_vtysh_and_restored(
    device: EmulatedDevice,
):
    assert isinstance(device, EmulatedFrr)
    device.mode = "shell"
    transcript = await runner().run(docker_target(device, "\r"), ["show ip route"])
    assert transcript.error is None
    assert transcript.prompt == "root@R1:/#"
    assert device.received == ["vtysh", "show version", "show ip route", "exit"]
    assert device.mode == "shell"


# ----------------------------------------------------------------------- Linux
@pytest.mark.parametrize("device", [EmulatedLinux("host1")], indirect=True)
async def test_linux_endless_commands_time_out_keep_output_and_recover(device: EmulatedDevice):
    transcript = await runner(command_timeout=0.5).run(
        target(device, DeviceKind.LINUX), ["ping 10.0.0.1", "tail -f /var/log/syslog", "uname"]
    )
    ping, tail, uname = transcript.outcomes
    assert ping.timed_out and ping.output.startswith("PING 10.0.0.1")
    assert "icmp_seq=3 " in ping.output
    assert tail.timed_out
    assert uname.ok and uname.output.startswith("Linux host1")
    assert device.interrupts == [CTRL_C, CTRL_C]
    missing = await runner().run(target(device, DeviceKind.LINUX), ["nmap -sn 10.0.0.0/24"])
    assert missing.outcomes[0].error == "the device rejected the command"


# ----------------------------------------------------------------------- Huawei
@pytest.mark.parametrize("device", [EmulatedHuawei("HUAWEI")], indirect=True)
async def test_huawei_system_view_paging_and_errors(device: EmulatedDevice):
    assert isinstance(device, EmulatedHuawei)
    transcript = await runner().run(
        target(device, DeviceKind.HUAWEI_VRP),
        ["interface GigabitEthernet0/0/1", "ip address 10.0.0.1 24", "bogus"],
        config_mode=True,
    )
    assert [o.error for o in transcript.outcomes] == [None, None, "the device rejected the command"]
    assert device.received[0] == "system-view"
    assert device.received[-1] == "return"
    assert device.view == "user"
    shown = await runner().run(
        target(device, DeviceKind.HUAWEI_VRP), ["display ip interface brief"]
    )
    assert shown.outcomes[0].output.splitlines()[-1].startswith("GigabitEthernet0/0/23")


# ----------------------------------------------------------------------- shared consoles
@pytest.mark.parametrize("device", [EmulatedVpcs("PC1", ping_delay=0.05)], indirect=True)
async def test_another_clients_running_command_is_waited_for_not_mixed_in(device: EmulatedDevice):
    _, writer = await asyncio.open_connection("127.0.0.1", device.port)
    try:
        writer.write(b"ping 10.0.0.9 -c 6\r\n")
        await eventually(lambda: device.busy)
        transcript = await runner().run(target(device, DeviceKind.VPCS), ["show ip"])
    finally:
        writer.close()
    output = transcript.outcomes[0].output
    assert output.startswith("NAME        : PC1[1]")
    assert "icmp_seq" not in output
    assert device.received == ["ping 10.0.0.9 -c 6", "show ip"]


@pytest.mark.parametrize("device", [EmulatedVpcs("PC1", ping_delay=0.05)], indirect=True)
async def test_progress_reports_each_line_as_the_device_prints_it(device: EmulatedDevice):
    seen: list[tuple[float, str]] = []
    loop = asyncio.get_running_loop()
    transcript = await runner().run(
        target(device, DeviceKind.VPCS),
        ["ping 10.0.0.2 -c 5"],
        progress=lambda text: seen.append((loop.time(), text)),
    )
    reported = "".join(text for _, text in seen)
    assert [line for line in reported.splitlines() if line] == transcript.outcomes[
        0
    ].output.splitlines()
    assert len(seen) >= 3  # line by line, not once at the end
    assert seen[-1][0] - seen[0][0] >= 0.1
