"""Time a 3-device show-command batch through Gns3ToolExecutor against the telnet emulators.

Run: ``python -m tests.benchmarks.gns3_console_batch`` (prints median/min/max of N runs).
GNS3's REST answers come from httpx.MockTransport (nodes "started" with the emulators as
their consoles); the consoles are real telnet sockets on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import time

import httpx

from adapters.gns3 import ConsoleRunner, Gns3Client, Gns3ToolExecutor
from copilot_core import AbortToken, CopilotMode, ParsedToolCall, ToolContext
from tests.fakes.telnet_devices import EmulatedCiscoRouter, EmulatedDeviceLab, EmulatedVpcs

PROJECT = "bench-project"


def _api(lab: EmulatedDeviceLab) -> httpx.MockTransport:
    nodes = [
        {
            "name": d.name,
            "node_id": f"n{i}",
            "node_type": "vpcs" if isinstance(d, EmulatedVpcs) else "dynamips",
            "status": "started",
            "console": d.port,
            "console_host": "127.0.0.1",
            "console_type": "telnet",
            "ports": [],
        }
        for i, d in enumerate(lab.devices.values())
    ]
    answers = {
        f"/v3/projects/{PROJECT}": {"project_id": PROJECT, "name": "bench", "status": "opened"},
        f"/v3/projects/{PROJECT}/nodes": nodes,
        f"/v3/projects/{PROJECT}/links": [],
        "/v3/templates": [],
    }
    return httpx.MockTransport(lambda r: httpx.Response(200, json=answers[r.url.path]))


async def main(runs: int) -> None:
    async with (
        EmulatedDeviceLab(
            EmulatedVpcs("PC1"), EmulatedVpcs("PC2"), EmulatedCiscoRouter("R1")
        ) as lab,
        httpx.AsyncClient(transport=_api(lab)) as http,
    ):
        executor = Gns3ToolExecutor(
            Gns3Client("http://127.0.0.1:3080", http=http), runner=ConsoleRunner()
        )
        arguments = {
            "device_configs": [
                {"device_name": "PC1", "commands": ["show ip"]},
                {"device_name": "PC2", "commands": ["show ip"]},
                {"device_name": "R1", "commands": ["show ip interface brief", "show version"]},
            ]
        }
        call = ParsedToolCall.parse("b", "execute_multiple_device_commands", json.dumps(arguments))
        context = ToolContext(PROJECT, "u", "s", CopilotMode.TEACHING_ASSISTANT, AbortToken(), "t")
        times = []
        for _ in range(runs):
            started = time.perf_counter()
            result = await executor.execute(call, context)
            times.append(time.perf_counter() - started)
            assert result.output["status"] == "success", result.output
    print(
        f"3-device show batch (PC1, PC2: show ip; R1: 2 commands), {runs} runs: "
        f"median {statistics.median(times) * 1000:.0f} ms, min {min(times) * 1000:.0f} ms, "
        f"max {max(times) * 1000:.0f} ms"
    )


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 10))
