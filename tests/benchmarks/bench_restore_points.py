"""Restore points: how long taking one and rolling it back take, for a 3-device change.

Run: ``python -m tests.benchmarks.bench_restore_points [--quick]``. It prints figures; it
asserts nothing about speed.

The lab: a real gns3-server 3.0.6 (started here, its own port ranges) with three nodes,
PC1, PC2 and R1, PC1 linked to R1. GNS3 cannot start nodes on this machine (no uBridge),
so the consoles are the telnet emulators of ``tests/fakes/telnet_devices.py`` (two VPCS,
one IOS router): GNS3's answers pass through unchanged except that, where the scenario
says the nodes run, PC1, PC2 and R1 read "started" with their console on an emulator
(R1 as a dynamips router). Everything else (topology, links, filters, drawings,
snapshots, node files) is the real server. Restore points go to a real SQLite store.

Scenarios: a restore point is taken (timed) with the scope the change's tool uses; the
change is made through the real :class:`~adapters.gns3.Gns3ToolExecutor`; the restore
point is rolled back (timed). An approved change costs its restore point on top of the
change; a rollback through the ``restore_point`` tool, being an approved change itself,
costs a restore point (of what it changes) on top of the rollback.

* **devices**: IP addresses on PC1 and PC2 and an interface and a static route on R1
  (one call per tool, the three consoles read concurrently); the restore point reads the
  three configurations (and the VPCS startup files), the rollback reads, sends the
  commands back and reads each again;
* **topology, nodes running**: a link deleted and a node created (restore point: the
  topology, no GNS3 snapshot since nodes run; rollback by difference);
* **topology, nodes stopped**: the same with every node stopped: the restore point also
  takes a GNS3 snapshot; rolled back by difference, and by restoring the snapshot.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from adapters.gns3 import ConsoleRunner, Gns3Client, Gns3ToolExecutor
from adapters.gns3.lab._registry import CallScope, RestoreScope
from adapters.gns3.tools._restore import roll_back, take_restore_point
from adapters.sqlite import SqliteCheckpointStore
from copilot_core import AbortToken, CopilotMode, ParsedToolCall, Session, ToolContext, ToolResult
from copilot_core.ports import ChangePreview, RestorePoint
from tests.fakes.gns3_server import RealGns3Server
from tests.fakes.telnet_devices import EmulatedCiscoRouter, EmulatedDeviceLab, EmulatedVpcs

SESSION = "bench-session"


class RunningConsoles(httpx.AsyncBaseTransport):
    """The real GNS3 API, except that the named nodes read as started, on emulators."""

    def __init__(self, url: str, consoles: dict[str, tuple[int, str]]) -> None:
        self._real = httpx.AsyncHTTPTransport()
        self.consoles = consoles
        self.running = True

    def _patch(self, node: dict[str, Any]) -> dict[str, Any]:
        found = self.consoles.get(str(node.get("name")))
        if not self.running or found is None:
            return node
        port, node_type = found
        return {
            **node,
            "status": "started",
            "console": port,
            "console_host": "127.0.0.1",
            "console_type": "telnet",
            "node_type": node_type,
        }

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self._real.handle_async_request(request)
        path = request.url.path
        if request.method != "GET" or "/nodes" not in path or "/files/" in path:
            return response
        await response.aread()
        if response.status_code != 200:
            return response
        body = json.loads(response.content)
        patched = [self._patch(n) for n in body] if isinstance(body, list) else self._patch(body)
        return httpx.Response(200, json=patched)

    async def aclose(self) -> None:
        await self._real.aclose()


class Bench:
    """The executor, a project, and the scope of its calls."""

    def __init__(self, executor: Gns3ToolExecutor, project_id: str, token: str) -> None:
        self.executor = executor
        self.project_id = project_id
        self.token = token
        self.context = ToolContext(
            project_id, "bench", SESSION, CopilotMode.LAB_AUTOMATION_ASSISTANT, AbortToken(), token
        )
        self.scope = CallScope(self.context, token)
        self.calls = 0

    async def run(self, name: str, arguments: dict[str, Any]) -> tuple[ToolResult, float]:
        """One call as the model makes it, not approved (no restore point)."""
        self.calls += 1
        call = ParsedToolCall.parse(f"c{self.calls}", name, json.dumps(arguments))
        began = time.perf_counter()
        result = await self.executor.execute(call, self.context)
        if result.output.get("status") != "success":
            raise RuntimeError(f"{name} failed: {json.dumps(result.output)[:800]}")
        return result, time.perf_counter() - began

    async def take(self, what: RestoreScope) -> tuple[RestorePoint, float]:
        began = time.perf_counter()
        point = await take_restore_point(
            self.executor.lab,
            self.scope,
            what,
            tool_call_id=f"t{self.calls}",
            tool_name="bench",
            preview=ChangePreview("bench"),
        )
        return point, time.perf_counter() - began

    async def roll_back(self, point: RestorePoint, *, use_snapshot: bool) -> float:
        began = time.perf_counter()
        result = await roll_back(self.executor.lab, self.scope, point, use_snapshot=use_snapshot)
        took = time.perf_counter() - began
        if result.status.value != "success":
            raise RuntimeError(f"rollback failed: {json.dumps(result.to_json())[:800]}")
        return took


def _ms(values: list[float]) -> str:
    ordered = sorted(values)
    p90 = ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]
    return (
        f"median {statistics.median(values) * 1000:7.1f} ms, p90 {p90 * 1000:7.1f} ms "
        f"(min {min(values) * 1000:.1f}, max {max(values) * 1000:.1f})"
    )


async def devices(bench: Bench, rounds: int, lab: EmulatedDeviceLab) -> None:
    taking, changing, rolling = [], [], []
    for n in range(rounds):
        point, took = await bench.take(RestoreScope(devices=("PC1", "PC2", "R1")))
        taking.append(took)
        began = time.perf_counter()
        await asyncio.gather(
            bench.run(
                "execute_vpcs_commands",
                {
                    "device_configs": [
                        {"device_name": "PC1", "commands": [f"ip 10.0.{n}.1/24 10.0.{n}.254"]},
                        {"device_name": "PC2", "commands": [f"ip 10.0.{n}.2/24 10.0.{n}.254"]},
                    ]
                },
            ),
            bench.run(
                "execute_multiple_device_config_commands",
                {
                    "device_configs": [
                        {
                            "device_name": "R1",
                            "config_commands": [
                                "interface GigabitEthernet0/0",
                                f"ip address 10.0.{n}.254 255.255.255.0",
                                "no shutdown",
                                "exit",
                                f"ip route 0.0.0.0 0.0.0.0 10.0.{n}.1",
                            ],
                        }
                    ]
                },
            ),
        )
        changing.append(time.perf_counter() - began)
        rolling.append(await bench.roll_back(point, use_snapshot=False))
    pc1, r1 = lab["PC1"], lab["R1"]
    assert isinstance(pc1, EmulatedVpcs) and isinstance(r1, EmulatedCiscoRouter)
    print("3-device change (PC1, PC2: ip; R1: interface address, no shutdown, static route):")
    print(f"  restore point (3 consoles, 2 startup files, saved)  {_ms(taking)}")
    print(f"  the change itself, for scale                        {_ms(changing)}")
    print(f"  rollback (read, put back, read back; x3 at once)    {_ms(rolling)}")
    print(
        f"  after the last rollback: PC1 {pc1.ip}, R1 static routes "
        f"{[line for line in r1.config if line.startswith('ip route')]}"
    )


async def topology(bench: Bench, rounds: int, *, stopped: bool) -> None:
    taking, by_difference, by_snapshot = [], [], []
    for n in range(rounds):
        for use_snapshot in (False, True) if stopped else (False,):
            point, took = await bench.take(RestoreScope(topology=True))
            if stopped and point.snapshot is None:
                raise RuntimeError(f"no GNS3 snapshot: {point.kept.get('gns3_snapshot_skipped')}")
            taking.append(took)
            await bench.run("delete_gns3_link", {"links": [{"node1": "PC1", "node2": "R1"}]})
            await bench.run(
                "create_gns3_node", {"nodes": [{"template_name": "VPCS", "name": f"X{n}"}]}
            )
            took = await bench.roll_back(point, use_snapshot=use_snapshot)
            (by_snapshot if use_snapshot else by_difference).append(took)
    label = "stopped: a GNS3 snapshot is taken too" if stopped else "running: no GNS3 snapshot"
    print(f"topology change (a link deleted, a node created), nodes {label}:")
    print(f"  restore point (nodes, links, drawings, saved)       {_ms(taking)}")
    print(f"  rollback by difference, read back                  {_ms(by_difference)}")
    if by_snapshot:
        print(f"  rollback by the GNS3 snapshot, read back           {_ms(by_snapshot)}")


async def main(quick: bool) -> None:
    rounds = 3 if quick else 10
    with RealGns3Server(console_ports=(28000, 28099), udp_ports=(28100, 28199)) as server:
        token = server.token()
        async with EmulatedDeviceLab(
            EmulatedVpcs("PC1", ip_delay=0.01),
            EmulatedVpcs("PC2", ip_delay=0.01),
            EmulatedCiscoRouter("R1"),
        ) as lab:
            transport = RunningConsoles(
                server.url,
                {
                    "PC1": (lab["PC1"].port, "vpcs"),
                    "PC2": (lab["PC2"].port, "vpcs"),
                    "R1": (lab["R1"].port, "dynamips"),
                },
            )
            with tempfile.TemporaryDirectory() as data:
                async with (
                    Gns3Client(server.url, http=httpx.AsyncClient(transport=transport)) as client,
                    SqliteCheckpointStore(Path(data)) as store,
                ):
                    project = await client.create_project(token, f"bench-{time.time_ns()}")
                    project_id = str(project["project_id"])
                    now = datetime.now(UTC)
                    await store.create_session(
                        Session(
                            thread_id=SESSION,
                            user_id="bench",
                            project_id=project_id,
                            created_at=now,
                            updated_at=now,
                        )
                    )
                    executor = Gns3ToolExecutor(
                        client,
                        runner=ConsoleRunner(command_timeout=5.0),
                        restore_points=store,
                    )
                    bench = Bench(executor, project_id, token)
                    names = ("PC1", "PC2", "R1")
                    await bench.run(
                        "create_gns3_node",
                        {"nodes": [{"template_name": "VPCS", "name": name} for name in names]},
                    )
                    await bench.run(
                        "create_gns3_link",
                        {"links": [{"node1": "PC1", "port1": "e0", "node2": "R1", "port2": "e0"}]},
                    )
                    print(f"rounds: {rounds}; a real gns3-server, a SQLite store")
                    await devices(bench, rounds, lab)
                    await topology(bench, rounds, stopped=False)
                    transport.running = False
                    await topology(bench, rounds, stopped=True)
                    points = await store.restore_points(project_id, SESSION)
                    sizes = [len(json.dumps(p.to_dict())) for p in points]
                    median, largest = statistics.median(sizes) / 1024, max(sizes) / 1024
                    print(
                        f"restore points saved: {len(points)}; their state: median "
                        f"{median:.1f} KiB, max {largest:.1f} KiB (JSON)"
                    )
                    await client.delete_project(token, project_id)


if __name__ == "__main__":
    asyncio.run(main("--quick" in sys.argv[1:]))
