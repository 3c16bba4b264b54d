"""Undo (issue 27): how long rolling back a change takes, as the user's click does it.

Run: ``python -m tests.benchmarks.bench_undo [--quick]``. It prints figures; it asserts
nothing about speed. Every call goes through :class:`~adapters.gns3.Gns3ToolExecutor` as
an approved change (so the change takes its restore point, and the rollback, itself an
approved change, takes one of what it changes before it runs), against a real
gns3-server 3.0.6 (the dynamips Ethernet switch runs here) with a SQLite store.

Scenarios:

* **switch**: SW1, an Ethernet switch with VLAN 10 on ports 0 and 1, PC1 and PC2 linked
  to it; ``delete_gns3_node SW1``, then the rollback (timed) makes SW1 and its two links
  again;
* **devices**: IP addresses on PC1 and PC2 and an interface and a static route on R1
  (telnet emulators behind GNS3's answers, as in ``bench_restore_points``), then the
  rollback (timed) of each of the three changes' restore points, at once.
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
from adapters.sqlite import SqliteCheckpointStore
from copilot_core import AbortToken, CopilotMode, ParsedToolCall, Session, ToolContext, ToolResult
from copilot_core.ports import ApprovalDecision, Clearance
from tests.benchmarks.bench_restore_points import RunningConsoles
from tests.fakes.gns3_server import RealGns3Server
from tests.fakes.telnet_devices import EmulatedCiscoRouter, EmulatedDeviceLab, EmulatedVpcs

SESSION = "bench-undo"
APPROVED = Clearance(decision=ApprovalDecision(True, user_id="bench"))


class Calls:
    def __init__(self, executor: Gns3ToolExecutor, project_id: str, token: str) -> None:
        self.executor = executor
        self.context = ToolContext(
            project_id, "bench", SESSION, CopilotMode.LAB_AUTOMATION_ASSISTANT, AbortToken(), token
        )
        self.n = 0

    async def run(
        self, name: str, arguments: dict[str, Any], *, approved: bool = True
    ) -> ToolResult:
        self.n += 1
        call = ParsedToolCall.parse(f"c{self.n}", name, json.dumps(arguments))
        if approved:
            result = await self.executor.execute(call, self.context, APPROVED)
        else:
            result = await self.executor.execute(call, self.context)
        if result.output.get("status") != "success":
            raise RuntimeError(f"{name}: {json.dumps(result.output)[:1200]}")
        return result

    async def undo(self, point_id: str) -> float:
        began = time.perf_counter()
        await self.run("restore_point", {"action": "rollback", "restore_point_id": point_id})
        return time.perf_counter() - began


def _ms(values: list[float]) -> str:
    return (
        f"median {statistics.median(values) * 1000:7.1f} ms "
        f"(min {min(values) * 1000:.1f}, max {max(values) * 1000:.1f}, n={len(values)})"
    )


async def switch(calls: Calls, client: Gns3Client, token: str, project: str, rounds: int) -> None:
    templates = {t["name"]: t["template_id"] for t in await client.templates(token)}
    made = await client.create_node_from_template(token, project, templates["Ethernet switch"])
    mapping = made["properties"]["ports_mapping"]
    for port in mapping[:2]:
        port["vlan"] = 10
    await client.update_node(
        token, project, made["node_id"], name="SW1", properties={"ports_mapping": mapping}
    )
    for port, name in enumerate(("PC1", "PC2")):
        await calls.run(
            "create_gns3_link",
            {"links": [{"node1": "SW1", "port1": f"e{port}", "node2": name, "port2": "e0"}]},
            approved=False,
        )
    took = []
    for _ in range(rounds):
        deleted = await calls.run("delete_gns3_node", {"node_names": ["SW1"]})
        took.append(await calls.undo(deleted.output["restore_point_id"]))
    nodes = {n["name"]: n for n in await client.nodes(token, project)}
    vlans = [p["vlan"] for p in nodes["SW1"]["properties"]["ports_mapping"]][:3]
    print(f"deleted switch with two links, rolled back          {_ms(took)}")
    links = len(await client.links(token, project))
    print(f"  after the last one: SW1's first VLANs {vlans}, links {links}")


async def devices(calls: Calls, rounds: int) -> None:
    took = []
    for n in range(rounds):
        changes = await asyncio.gather(
            calls.run("execute_vpcs_commands", {"device_configs": [
                {"device_name": "PC1", "commands": [f"ip 10.0.{n}.1/24 10.0.{n}.254"]}]}),
            calls.run("execute_vpcs_commands", {"device_configs": [
                {"device_name": "PC2", "commands": [f"ip 10.0.{n}.2/24 10.0.{n}.254"]}]}),
            calls.run("execute_multiple_device_config_commands", {"device_configs": [{
                "device_name": "R1", "config_commands": [
                    "interface GigabitEthernet0/0", f"ip address 10.0.{n}.254 255.255.255.0",
                    "no shutdown", "exit", f"ip route 0.0.0.0 0.0.0.0 10.0.{n}.1"]}]}),
        )  # fmt: skip
        began = time.perf_counter()
        await asyncio.gather(*(calls.undo(c.output["restore_point_id"]) for c in changes))
        took.append(time.perf_counter() - began)
    print(f"3-device configuration change, 3 rollbacks at once  {_ms(took)}")


async def main(quick: bool) -> None:
    rounds = 3 if quick else 10
    with RealGns3Server(console_ports=(28200, 28299), udp_ports=(28300, 28399)) as server:
        token = server.token()
        async with EmulatedDeviceLab(
            EmulatedVpcs("PC1", ip_delay=0.01),
            EmulatedVpcs("PC2", ip_delay=0.01),
            EmulatedCiscoRouter("R1"),
        ) as lab:
            consoles = {
                "PC1": (lab["PC1"].port, "vpcs"),
                "PC2": (lab["PC2"].port, "vpcs"),
                "R1": (lab["R1"].port, "dynamips"),
            }
            transport = RunningConsoles(server.url, consoles)
            transport.running = False
            with tempfile.TemporaryDirectory() as data:
                async with (
                    Gns3Client(server.url, http=httpx.AsyncClient(transport=transport)) as client,
                    SqliteCheckpointStore(Path(data)) as store,
                ):
                    project = str(
                        (await client.create_project(token, f"undo-{time.time_ns()}"))["project_id"]
                    )
                    now = datetime.now(UTC)
                    await store.create_session(
                        Session(thread_id=SESSION, user_id="bench", project_id=project,
                                created_at=now, updated_at=now)
                    )  # fmt: skip
                    executor = Gns3ToolExecutor(
                        client, runner=ConsoleRunner(command_timeout=5.0), restore_points=store
                    )
                    calls = Calls(executor, project, token)
                    await calls.run(
                        "create_gns3_node",
                        {
                            "nodes": [
                                {"template_name": "VPCS", "name": n} for n in ("PC1", "PC2", "R1")
                            ]
                        },
                        approved=False,
                    )
                    print(f"rounds: {rounds}; a real gns3-server, a SQLite store")
                    await switch(calls, client, token, project, rounds)
                    transport.running = True
                    await devices(calls, rounds)
                    await client.delete_project(token, project)


if __name__ == "__main__":
    asyncio.run(main("--quick" in sys.argv[1:]))
