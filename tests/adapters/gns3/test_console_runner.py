"""ConsoleRunner over real telnet sockets against the device emulators."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from adapters.gns3 import ConsoleRunner, ConsoleTarget, DeviceKind
from tests.adapters.gns3.conftest import eventually
from tests.fakes.telnet_devices import (
    EmulatedCiscoRouter,
    EmulatedDevice,
    EmulatedDeviceLab,
    EmulatedVpcs,
)

DO, ECHO, SGA, BINARY = 253, 1, 3, 0


@pytest.fixture
async def lab() -> AsyncIterator[EmulatedDeviceLab]:
    async with EmulatedDeviceLab(
        EmulatedVpcs("PC1"),
        EmulatedVpcs("PC2"),
        EmulatedCiscoRouter("R1", drop_on=["show tech-support"]),
    ) as devices:
        yield devices


def target(device: EmulatedDevice, kind: DeviceKind | None = None) -> ConsoleTarget:
    if kind is None:
        kind = DeviceKind.VPCS if isinstance(device, EmulatedVpcs) else DeviceKind.CISCO_IOS
    return ConsoleTarget(device.name, "127.0.0.1", device.port, kind)


def runner(**overrides: float) -> ConsoleRunner:
    settings = {"command_timeout": 1.0, "recovery_timeout": 1.0, **overrides}
    return ConsoleRunner(**settings)  # type: ignore[arg-type]


async def test_vpcs_output_has_no_echo_prompt_or_ansi(lab: EmulatedDeviceLab):
    transcript = await runner().run(target(lab["PC1"]), ["show ip", "?", "foo"])
    assert transcript.error is None
    show, help_, bad = transcript.outcomes
    assert show.output.splitlines()[0] == "NAME        : PC1[1]"
    assert "IP/MASK     : 0.0.0.0/0" in show.output
    assert "show ip" not in show.output
    assert "PC1>" not in show.output
    assert help_.output == "?        Print help\nip       Configure IP"
    assert bad.output == 'Bad command: "foo". Use ? for help.'
    assert bad.error == "the device rejected the command"
    assert lab["PC1"].received == ["show ip", "?", "foo"]


async def test_telnet_negotiation_is_answered(lab: EmulatedDeviceLab):
    await runner().run(target(lab["PC1"]), ["show ip"])
    assert {(DO, ECHO), (DO, SGA), (DO, BINARY)} <= set(lab["PC1"].negotiations)


async def test_slow_vpcs_commands_wait_for_the_prompt(lab: EmulatedDeviceLab):
    transcript = await runner(command_timeout=2.0).run(
        target(lab["PC1"]), ["ip 10.0.0.1/24 10.0.0.254", "ping 10.0.0.2 -c 3", "show ip"]
    )
    ip, ping, show = transcript.outcomes
    assert ip.output == "Checking for duplicate address...\nPC1 : 10.0.0.1/24 gateway 10.0.0.254"
    assert ping.output.count("icmp_seq=") == 3
    assert "IP/MASK     : 10.0.0.1/24" in show.output


async def test_the_first_client_gets_the_banner_and_it_is_drained(lab: EmulatedDeviceLab):
    # The runner is the first client after "boot": the banner and its prompt are discarded.
    transcript = await runner().run(target(lab["PC2"]), ["show ip"])
    assert "Welcome" not in transcript.outcomes[0].output
    assert transcript.outcomes[0].output.startswith("NAME        : PC2[1]")


async def test_a_shared_console_shows_our_output_to_other_clients(lab: EmulatedDeviceLab):
    reader, writer = await asyncio.open_connection("127.0.0.1", lab["PC1"].port)
    try:
        transcript = await runner().run(target(lab["PC1"]), ["show ip"])
        assert transcript.outcomes[0].ok
        seen = b""
        async with asyncio.timeout(2):
            while b"IP/MASK" not in seen:
                seen += await reader.read(4096)
    finally:
        writer.close()


async def test_cisco_more_paging_is_answered(lab: EmulatedDeviceLab):
    transcript = await runner().run(target(lab["R1"]), ["enable", "show running-config"])
    output = transcript.outcomes[1].output
    assert transcript.outcomes[1].ok
    assert "--More--" not in output
    assert "\x08" not in output
    lines = output.splitlines()
    assert lines[0] == "Building configuration..."
    assert lines[-1] == "end"
    assert "! filler line 30" in lines  # beyond the first pages


async def test_cisco_user_mode_error_is_flagged(lab: EmulatedDeviceLab):
    transcript = await runner().run(target(lab["R1"]), ["show running-config", "show version"])
    rejected, version = transcript.outcomes
    assert "% Invalid input detected" in rejected.output
    assert rejected.error == "the device rejected the command"
    assert version.ok
    assert "IOSv" in version.output


async def test_config_mode_is_entered_and_left(lab: EmulatedDeviceLab):
    router = lab["R1"]
    assert isinstance(router, EmulatedCiscoRouter)
    transcript = await runner().run(
        target(router),
        ["interface GigabitEthernet0/0", "ip address 10.0.0.1 255.255.255.0", "no shutdown"],
        config_mode=True,
    )
    assert transcript.error is None
    assert all(outcome.ok for outcome in transcript.outcomes)
    assert router.received == [
        "enable",
        "configure terminal",
        "interface GigabitEthernet0/0",
        "ip address 10.0.0.1 255.255.255.0",
        "no shutdown",
        "end",
        "disable",  # the console is left in the mode it was found in
    ]
    assert router.mode == "user"
    assert " ip address 10.0.0.1 255.255.255.0" in router.config


async def test_a_command_that_never_returns_times_out_and_the_console_recovers(
    lab: EmulatedDeviceLab,
):
    transcript = await runner(command_timeout=0.5).run(
        target(lab["R1"]), ["ping 192.0.2.1 repeat 100000", "show version"]
    )
    hung, after = transcript.outcomes
    assert hung.timed_out
    assert "interrupted" in (hung.error or "")
    assert after.ok
    assert "IOSv" in after.output


async def test_a_dropped_connection_fails_the_rest(lab: EmulatedDeviceLab):
    transcript = await runner().run(
        target(lab["R1"]), ["show version", "show tech-support", "show version"]
    )
    first, dropped, skipped = transcript.outcomes
    assert first.ok
    assert dropped.error is not None
    assert dropped.error.startswith("the device closed the console connection (if the command")
    assert skipped.error == "not run: the console connection was closed"
    assert lab["R1"].received == ["show version", "show tech-support"]


async def test_slow_output_is_read_to_the_prompt(lab: EmulatedDeviceLab):
    router = lab["R1"]
    assert isinstance(router, EmulatedCiscoRouter)
    router.slow_line_delay = 0.15  # gaps longer than the drain's quiet time
    transcript = await runner().run(target(router), ["show logging"])
    assert transcript.outcomes[0].output.count("log line") == 5


async def test_output_over_the_cap_is_truncated(lab: EmulatedDeviceLab):
    transcript = await ConsoleRunner(command_timeout=2.0, max_output_chars=300).run(
        target(lab["R1"]), ["enable", "terminal length 0", "show running-config", "show version"]
    )
    big, after = transcript.outcomes[2:]
    assert big.truncated
    assert len(big.output) <= 300
    assert big.output.startswith("Building configuration")
    assert after.ok
    assert not after.truncated


async def test_devices_are_handled_concurrently(lab: EmulatedDeviceLab):
    pcs = [lab["PC1"], lab["PC2"]]
    for pc in pcs:
        assert isinstance(pc, EmulatedVpcs)
        pc.ip_delay = 1.0
    run = runner(command_timeout=3.0)
    batch = asyncio.gather(*(run.run(target(pc), ["ip 10.0.0.9/24"]) for pc in pcs))
    overlap = False
    async with asyncio.timeout(5):
        while not batch.done():
            overlap = overlap or all(pc.busy for pc in pcs)
            await asyncio.sleep(0.01)
    assert overlap, "both slow commands should have been running at the same time"
    assert all(t.outcomes[0].ok for t in await batch)


async def test_one_command_stream_per_console(lab: EmulatedDeviceLab):
    run = runner()
    results = await asyncio.gather(
        run.run(target(lab["PC1"]), ["show ip"]), run.run(target(lab["PC1"]), ["show ip"])
    )
    assert all(t.outcomes[0].ok for t in results)
    assert lab["PC1"].connections == 2
    assert lab["PC1"].peak_clients == 1


async def test_cancellation_closes_the_connection_at_once(lab: EmulatedDeviceLab):
    router = lab["R1"]
    task = asyncio.create_task(
        runner(command_timeout=30).run(target(router), ["ping 192.0.2.1 repeat 100000"])
    )
    await eventually(lambda: router.busy)
    assert router.client_count == 1
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await eventually(lambda: router.client_count == 0, within=1.0)


async def test_unreachable_console_is_reported():
    transcript = await runner().run(
        ConsoleTarget("R9", "127.0.0.1", 9, DeviceKind.CISCO_IOS), ["show version"]
    )
    assert transcript.error is not None
    assert "cannot connect to the console of R9" in transcript.error


async def test_a_console_without_prompt_is_reported():
    release = asyncio.Event()
    writers: list[asyncio.StreamWriter] = []

    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writers.append(writer)
        await release.wait()
        writer.transport.abort()

    server = await asyncio.start_server(silent, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        transcript = await ConsoleRunner(command_timeout=0.5).run(
            ConsoleTarget("Booting", "127.0.0.1", port, DeviceKind.CISCO_IOS), ["show version"]
        )
    finally:
        release.set()
        await eventually(lambda: all(w.transport.is_closing() for w in writers))
        server.close()
        await server.wait_closed()
    assert transcript.outcomes == []
    assert transcript.error is not None
    assert "no cisco_ios prompt" in transcript.error
