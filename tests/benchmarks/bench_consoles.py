"""Console figures: command round trip per platform, abort → console ready, a 40-reply ping.

Run: ``python -m tests.benchmarks.bench_consoles [--quick]``. It prints figures; it asserts
nothing about speed.

The consoles are the telnet device emulators of ``tests/fakes/telnet_devices.py`` on
127.0.0.1 (real sockets, real telnet negotiation), driven by the real
:class:`~adapters.gns3.ConsoleRunner` (and, for the ping, the real
:class:`~adapters.gns3.Gns3ToolExecutor` with GNS3's REST answers from
``httpx.MockTransport``):

* round trip: one ``run`` of one command (connect, wake the console, drain, the command,
  close), and each further command of the same run;
* abort: a ``ping`` is running when its task is cancelled (what the core does on abort);
  the time until the device printed its prompt again, and until the next ``run`` on that
  console has its output;
* ping: ``ping 10.0.0.2 -c 40`` with ``timeout_s`` 60 through the tool, at VPCS's real pace
  of one reply a second (``--quick``: 20 ms), with the progress reports it streamed.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import replace

import httpx

from adapters.gns3 import ConsoleRunner, ConsoleTarget, DeviceKind, Gns3Client, Gns3ToolExecutor
from copilot_core import AbortToken, CopilotMode, ParsedToolCall, ToolContext
from copilot_core.ports import ToolProgress
from tests.fakes.telnet_devices import (
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

PLATFORMS: list[tuple[Callable[[], EmulatedDevice], DeviceKind, str]] = [
    (lambda: EmulatedVpcs("PC1"), DeviceKind.VPCS, "show ip"),
    (lambda: EmulatedCiscoRouter("R1"), DeviceKind.CISCO_IOS, "show ip interface brief"),
    (lambda: EmulatedAristaSwitch("leaf1"), DeviceKind.ARISTA_EOS, "show version"),
    (lambda: EmulatedJunos("vmx"), DeviceKind.JUNIPER_JUNOS, "show version"),
    (lambda: EmulatedFrr("R7"), DeviceKind.FRR, "show ip route"),
    (lambda: EmulatedLinux("host1"), DeviceKind.LINUX, "uname -a"),
    (lambda: EmulatedHuawei("HUAWEI"), DeviceKind.HUAWEI_VRP, "display ip interface brief"),
    (lambda: EmulatedGenericDevice("MikroTik"), DeviceKind.GENERIC, "/system identity print"),
]


def _ms(values: list[float]) -> str:
    return (
        f"median {statistics.median(values) * 1000:6.1f} ms "
        f"(min {min(values) * 1000:.1f}, max {max(values) * 1000:.1f})"
    )


async def round_trips(runs: int) -> None:
    print(f"command round trip per platform ({runs} runs each):")
    runner = ConsoleRunner()
    for make, kind, command in PLATFORMS:
        device = make()
        async with EmulatedDeviceLab(device):
            target = ConsoleTarget(device.name, "127.0.0.1", device.port, kind)
            await runner.run(target, [command])  # the banner goes to the first client
            one, eleven = [], []
            for _ in range(runs):
                started = time.perf_counter()
                transcript = await runner.run(target, [command])
                one.append(time.perf_counter() - started)
                assert transcript.outcomes[0].ok, transcript
                started = time.perf_counter()
                await runner.run(target, [command] * 11)
                eleven.append(time.perf_counter() - started)
            further = [(b - a) / 10 for a, b in zip(one, eleven, strict=True)]
        print(f"  {kind.value:<14} one call {_ms(one)}; each further command {_ms(further)}")


async def abort_to_ready(tries: int) -> None:
    prompt_back, next_output = [], []
    async with EmulatedDeviceLab(EmulatedVpcs("PC1", ping_delay=0.2)) as lab:
        pc = lab["PC1"]
        runner = ConsoleRunner(command_timeout=60)
        target = ConsoleTarget("PC1", "127.0.0.1", pc.port, DeviceKind.VPCS)
        for _ in range(tries):
            task = asyncio.create_task(runner.run(target, ["ping 10.0.0.2 -c 1000"]))
            while pc.probes == 0 or not pc.busy:
                await asyncio.sleep(0.005)
            pc.probes = 0
            cancelled = time.perf_counter()
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            while pc.busy:
                await asyncio.sleep(0.001)
            prompt_back.append(time.perf_counter() - cancelled)
            transcript = await runner.run(target, ["show ip"])
            next_output.append(time.perf_counter() - cancelled)
            assert transcript.outcomes[0].ok, transcript
    print(f"abort -> console ready (VPCS ping cancelled, {tries} tries):")
    print(f"  device back at its prompt      {_ms(prompt_back)}")
    print(f"  next command's output received {_ms(next_output)}")


async def forty_replies(delay: float) -> None:
    async with EmulatedDeviceLab(EmulatedVpcs("PC1", ping_delay=delay)) as lab:
        pc = lab["PC1"]
        node = {
            "name": "PC1",
            "node_id": "n1",
            "node_type": "vpcs",
            "status": "started",
            "console": pc.port,
            "console_host": "127.0.0.1",
            "console_type": "telnet",
            "ports": [],
        }
        answers = {
            "/v3/projects/p": {"project_id": "p", "name": "bench", "status": "opened"},
            "/v3/projects/p/nodes": [node],
            "/v3/projects/p/links": [],
            "/v3/templates": [],
        }
        transport = httpx.MockTransport(lambda r: httpx.Response(200, json=answers[r.url.path]))
        async with httpx.AsyncClient(transport=transport) as http:
            executor = Gns3ToolExecutor(Gns3Client("http://127.0.0.1:3080", http=http))
            progress: list[tuple[float, ToolProgress]] = []
            started = time.perf_counter()
            context = ToolContext(
                "p", "u", "s", CopilotMode.LAB_AUTOMATION_ASSISTANT, AbortToken(), "token"
            )
            context = replace(
                context, progress=lambda p: progress.append((time.perf_counter() - started, p))
            )
            arguments = {
                "device_configs": [{"device_name": "PC1", "commands": ["ping 10.0.0.2 -c 40"]}],
                "timeout_s": 60,
            }
            call = ParsedToolCall.parse("c", "execute_vpcs_commands", json.dumps(arguments))
            result = await executor.execute(call, context)
            took = time.perf_counter() - started
    outcome = result.output["results"][0]["output"][0]
    replies = outcome["output"].count("icmp_seq=")
    first = progress[0][0] if progress else float("nan")
    print(f"ping -c 40 with timeout_s 60 (one reply every {delay:g} s):")
    print(
        f"  {took:.2f} s, {replies} replies, timed_out={outcome.get('timed_out', False)}, "
        f"{len(progress)} progress reports (first after {first:.2f} s)"
    )


async def main(quick: bool) -> None:
    await round_trips(5 if quick else 20)
    await abort_to_ready(5 if quick else 20)
    await forty_replies(0.02 if quick else 1.0)


if __name__ == "__main__":
    asyncio.run(main("--quick" in sys.argv[1:]))
