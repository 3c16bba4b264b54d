"""Consoles that hold against what an attacker (or an accident) leaves on them, over real
telnet on 127.0.0.1 (:mod:`tests.fakes.telnet_devices`):

* a shell whose prompt was made to look like vtysh's (``PS1='R1# '``) gets nothing but the
  probe: vtysh is proven by its answer, never by its prompt (issue 35, case 5);
* output that floods or is not text is cut and interrupted at once, and the console
  answers the next command (issue 35, case 8: ``cat /dev/urandom``);
* a person's command gets the console before queued background runs (issue 35, case 8).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator

import pytest

from adapters.gns3.console._lock import ConsoleLock, background_console_use
from adapters.gns3.console._runner import ConsolePriority, ConsoleRunner, ConsoleTarget
from adapters.gns3.model._platforms import DeviceKind
from tests.fakes.telnet_devices import EmulatedDeviceLab, EmulatedFrr, EmulatedLinux

_FRR_FILES = {"/etc/frr/frr.conf", "/etc/frr/vtysh.conf", "/etc/frr/daemons"}


@pytest.fixture
async def frr() -> AsyncIterator[EmulatedFrr]:
    device = EmulatedFrr("R1", docker=True)
    async with EmulatedDeviceLab(device):
        yield device


@pytest.fixture
async def host() -> AsyncIterator[EmulatedLinux]:
    device = EmulatedLinux("H1")
    async with EmulatedDeviceLab(device):
        yield device


def frr_target(device: EmulatedFrr, kind: DeviceKind = DeviceKind.FRR) -> ConsoleTarget:
    return ConsoleTarget(device.name, "127.0.0.1", device.port, kind, enter="\r")


def host_target(device: EmulatedLinux) -> ConsoleTarget:
    return ConsoleTarget(device.name, "127.0.0.1", device.port, DeviceKind.LINUX)


async def leave_in_shell_looking_like_vtysh(device: EmulatedFrr) -> None:
    """What the attacker typed on the console: ``exit`` (vtysh → the shell), then a shell
    prompt that reads like vtysh's, through a telnet connection of their own."""
    reader, writer = await asyncio.open_connection("127.0.0.1", device.port)
    try:
        writer.write(b"exit\rPS1='R1# '\r")
        await writer.drain()
        async with asyncio.timeout(5):
            seen = b""
            while not seen.endswith(b"\r\nR1# "):
                seen += await reader.read(1024)
    finally:
        writer.close()
    assert device.mode == "shell" and device.ps1 == "R1# "
    device.received.clear()


# ------------------------------------------------------------------ case 5: vtysh proven
async def test_a_shell_whose_prompt_looks_like_vtysh_gets_nothing_but_the_probe(
    frr: EmulatedFrr,
) -> None:
    await leave_in_shell_looking_like_vtysh(frr)
    transcript = await ConsoleRunner(command_timeout=3.0).run(
        frr_target(frr), ["find /etc/frr -name frr.conf -delete", "show running-config"]
    )
    assert transcript.error is not None
    assert "not in vtysh" in transcript.error, transcript.error
    assert "'R1#'" in transcript.error
    assert frr.received == ["show version"]  # the probe alone reached the shell
    assert frr.files == _FRR_FILES
    assert [o.error for o in transcript.outcomes] == ["not run: the console is not in vtysh"] * 2


async def test_configuration_lines_are_not_typed_into_a_shell_posing_as_vtysh(
    frr: EmulatedFrr,
) -> None:
    """A config prompt is no proof either: ``do show version`` is asked there."""
    await leave_in_shell_looking_like_vtysh(frr)
    frr.ps1 = "R1(config)# "
    transcript = await ConsoleRunner(command_timeout=3.0).run(
        frr_target(frr), ["no router ospf"], config_mode=True
    )
    assert transcript.error is not None and "not in vtysh" in transcript.error
    assert frr.received == ["do show version"]


async def test_real_vtysh_passes_the_probe_and_runs_the_commands(frr: EmulatedFrr) -> None:
    runner = ConsoleRunner(command_timeout=3.0)
    transcript = await runner.run(frr_target(frr), ["show running-config"])
    assert transcript.error is None, transcript.error
    assert transcript.outcomes[0].ok
    assert "frr version 8.4.1" in transcript.outcomes[0].output
    assert frr.received == ["show version", "show running-config"]


async def test_leaving_vtysh_in_a_run_is_noticed_before_the_next_command(
    frr: EmulatedFrr,
) -> None:
    frr.ps1 = "R1# "  # the shell behind vtysh already poses as vtysh
    transcript = await ConsoleRunner(command_timeout=3.0).run(
        frr_target(frr), ["show ip route", "exit", "show running-config"]
    )
    assert frr.received == ["show version", "show ip route", "exit", "show version"]
    assert transcript.outcomes[2].error == "not run: the console is not in vtysh"
    assert transcript.error is not None and "not in vtysh" in transcript.error


async def test_a_node_read_as_linux_becomes_frr_only_when_vtysh_answers(
    frr: EmulatedFrr,
) -> None:
    """A Linux-looking node whose console shows ``R1#``: FRR when vtysh answers the probe;
    a shell with that prompt stays the Linux host its commands were judged for."""
    runner = ConsoleRunner(command_timeout=3.0)
    proven = await runner.run(frr_target(frr, DeviceKind.LINUX), ["show ip route"])
    assert proven.target.kind is DeviceKind.FRR
    await leave_in_shell_looking_like_vtysh(frr)
    posing = await runner.run(frr_target(frr, DeviceKind.LINUX), ["ip -br addr"])
    assert posing.error is None, posing.error
    assert posing.target.kind is DeviceKind.LINUX
    assert frr.received == ["show version", "ip -br addr"]
    assert "10.0.0.1/24" in posing.outcomes[0].output


# ------------------------------------------------------------------ case 8: floods
@pytest.mark.parametrize(
    ("command", "why"), [("yes", "passed 50000 characters"), ("cat /dev/urandom", "is not text")]
)
async def test_a_flood_is_cut_interrupted_and_the_console_answers_next(
    host: EmulatedLinux, command: str, why: str
) -> None:
    runner = ConsoleRunner(command_timeout=30.0, max_output_chars=2_000, flood_chars=50_000)
    transcript = await runner.run(host_target(host), [command, "uname"])
    flooded, after = transcript.outcomes
    assert transcript.error is None, transcript.error
    assert flooded.interrupted and flooded.truncated and not flooded.timed_out
    assert flooded.error is not None and why in flooded.error
    assert "interrupted" in flooded.error
    assert len(flooded.output) <= 2_000
    assert not flooded.output.startswith(command)  # the echo is not output
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f\ufffd]", flooded.output)
    assert flooded.to_dict()["interrupted"] is True
    assert host.interrupts == ["\x03"]  # one Ctrl-C stopped it
    assert after.ok and "Linux" in after.output
    assert host.flooded > 0
    again = await runner.run(host_target(host), ["uname"])
    assert again.outcomes[0].ok, again.outcomes[0].to_dict()


async def test_a_flood_the_interrupt_does_not_stop_is_left_on_a_new_connection(
    host: EmulatedLinux,
) -> None:
    """Ctrl-C is lost on the first connection (the device ignores it there): the runner
    connects again, interrupts once more, and the console answers."""
    ignored = 0
    original = host.flood

    async def deaf_once(chunk: bytes) -> int:
        nonlocal ignored
        sent = await original(chunk)
        if ignored == 0:  # the first Ctrl-C is swallowed: flood on
            ignored = 1
            host._interrupt.clear()
            sent += await original(chunk)
        return sent

    host.flood = deaf_once  # type: ignore[method-assign]
    runner = ConsoleRunner(max_output_chars=1_000, flood_chars=20_000, recovery_timeout=1.0)
    before = host.connections
    transcript = await runner.run(host_target(host), ["yes", "uname"])
    assert transcript.outcomes[0].interrupted
    assert transcript.outcomes[1].ok, transcript.outcomes[1].to_dict()
    assert host.connections - before == 2
    assert host.interrupts.count("\x03") >= 2


async def test_a_console_closed_by_binary_output_says_why_and_what_brings_it_back(
    host: EmulatedLinux,
) -> None:
    """GNS3's console of a Docker node closes on output that is not UTF-8 and stays closed
    (the lab's H1 until its restart): the result names the cause and the remedy."""
    host.dies_on_binary = True
    runner = ConsoleRunner(command_timeout=10.0)
    transcript = await runner.run(host_target(host), ["cat /dev/urandom", "uname"])
    flooded, skipped = transcript.outcomes
    assert flooded.interrupted and flooded.error is not None
    assert "not text" in flooded.error and "restarted" in flooded.error, flooded.error
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f\ufffd]", flooded.output)
    assert skipped.error is not None and skipped.error.startswith("not run: the console")
    again = await runner.run(host_target(host), ["uname"])
    assert again.error is not None and "before it showed a prompt" in again.error
    assert "restarted" in again.error


# ------------------------------------------------------------------ case 8: fair turns
async def test_a_chat_command_gets_the_console_before_queued_background_runs(
    host: EmulatedLinux,
) -> None:
    runner = ConsoleRunner(command_timeout=5.0)
    target = host_target(host)
    lock = runner.lock_of(target)
    await lock.acquire()  # someone's run holds the console while the others queue
    with background_console_use():
        background = [asyncio.create_task(runner.run(target, [f"ip -o addr {n}"])) for n in "abc"]
    await _until(lambda: lock.waiting(ConsolePriority.BACKGROUND) == 3)
    chat = asyncio.create_task(runner.run(target, ["uname"]))
    await _until(lambda: lock.waiting(ConsolePriority.INTERACTIVE) == 1)
    lock.release()
    done = await asyncio.wait_for(asyncio.gather(chat, *background), 30)
    assert all(t.error is None for t in done)
    assert host.received == ["uname", "ip -o addr a", "ip -o addr b", "ip -o addr c"]


async def test_a_cancelled_waiter_leaves_the_queue_and_the_turn_moves_on() -> None:
    lock = ConsoleLock()
    await lock.acquire()
    order: list[str] = []

    async def take(name: str, priority: ConsolePriority) -> None:
        await lock.acquire(priority)
        order.append(name)
        lock.release()

    gone = asyncio.create_task(take("gone", ConsolePriority.INTERACTIVE))
    late = asyncio.create_task(take("background", ConsolePriority.BACKGROUND))
    chat = asyncio.create_task(take("chat", ConsolePriority.INTERACTIVE))
    await _until(lambda: lock.waiting(ConsolePriority.INTERACTIVE) == 2)
    gone.cancel()
    lock.release()
    await asyncio.wait_for(asyncio.gather(late, chat), 5)
    assert gone.cancelled()
    assert order == ["chat", "background"]
    assert not lock.locked()


async def _until(condition: object, within: float = 5.0) -> None:
    """Wait (bounded) until ``condition()`` holds, yielding to the other tasks."""
    assert callable(condition)
    async with asyncio.timeout(within):
        while not condition():
            await asyncio.sleep(0.01)
