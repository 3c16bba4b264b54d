"""PC1 – R1 – R2 – PC2 on real FRR routers (GNS3 Docker nodes), driven by the copilot's own
console runner: addresses and OSPF configured, the adjacency Full, PC1 pings PC2 across both
routers, and the console's behaviour on a real FRR node (no stray prompt, config mode, a
command that times out and the console ready again within 2 s, a command that pages).

With ``GNS3_COPILOT_CAPTURE=DIR`` the show commands' real output is written to DIR (one file
per command, the command on its first line): that is how ``tests/adapters/gns3/data/frr``
was made. Figures are printed (``-s``), never asserted.
"""

from __future__ import annotations

import asyncio
import os
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from adapters.gns3 import ConsoleRunner, DeviceKind
from adapters.gns3.console._telnet import Telnet
from adapters.gns3.model._device_state import keeper_for
from adapters.gns3.model._frr_parsing import parse_frr
from tests.lab.lab_project import STRAY_PROMPT, LabProject
from tests.lab.router_lab import HOST_TEMPLATE, ROUTER_TEMPLATE, RouterLab, docker_memory_mib

# The first test also waits for the session fixture: on a new machine that builds the image.
pytestmark = [pytest.mark.timeout(1500), pytest.mark.gns3, pytest.mark.slow]

FIGURES: dict[str, float] = {}

ADDRESSES = {
    "R1": [
        "interface eth0",
        "ip address 10.0.1.1/24",
        "exit",
        "interface eth1",
        "ip address 10.0.12.1/30",
        "ip ospf network point-to-point",
        "exit",
        "router ospf",
        "ospf router-id 1.1.1.1",
        "network 10.0.1.0/24 area 0",
        "network 10.0.12.0/30 area 0",
        "exit",
        "router bgp 65001",
        "neighbor 10.0.12.2 remote-as 65002",
        "exit",
    ],
    "R2": [
        "interface eth0",
        "ip address 10.0.2.1/24",
        "exit",
        "interface eth1",
        "ip address 10.0.12.2/30",
        "ip ospf network point-to-point",
        "exit",
        "router ospf",
        "ospf router-id 2.2.2.2",
        "network 10.0.2.0/24 area 0",
        "network 10.0.12.0/30 area 0",
        "exit",
        "router bgp 65002",
        "neighbor 10.0.12.1 remote-as 65001",
        "exit",
    ],
}
PCS = {"PC1": ("10.0.1.10/24", "10.0.1.1"), "PC2": ("10.0.2.10/24", "10.0.2.1")}
SHOWS = [
    "show ip route",
    "show ip ospf neighbor",
    "show ip ospf interface",
    "show bgp summary",
    "show interface brief",
    "show running-config",
]


@pytest.fixture(scope="module")
def topology(router_lab: RouterLab) -> Iterator[LabProject]:
    token = router_lab.server.token()
    started = time.monotonic()
    project = router_lab.server.new_project("routers", token)
    topo = LabProject(router_lab, token, project)
    ids: dict[str, str] = {}
    for template, count in ((HOST_TEMPLATE, 2), (ROUTER_TEMPLATE, 2)):
        for _ in range(count):
            made = topo.api(
                "POST",
                f"/templates/{router_lab.templates[template]}",
                json={"x": 0, "y": 0, "compute_id": "local"},
            )
            assert made.status_code == 201, made.text
            ids[made.json()["name"]] = made.json()["node_id"]
    assert sorted(ids) == ["PC1", "PC2", "R1", "R2"]
    for a, pa, b, pb in (("PC1", 0, "R1", 0), ("R1", 1, "R2", 1), ("R2", 0, "PC2", 0)):
        link = topo.api(
            "POST",
            "/links",
            json={
                "nodes": [
                    {"node_id": ids[a], "adapter_number": pa, "port_number": 0},
                    {"node_id": ids[b], "adapter_number": pb, "port_number": 0},
                ]
            },
        )
        assert link.status_code == 201, link.text
    assert topo.api("POST", "/nodes/start").status_code in (200, 204)
    FIGURES["lab_nodes_started_s"] = time.monotonic() - started
    FIGURES["_t0"] = started
    try:
        yield topo
    finally:
        topo.delete()
        shown = {k: round(v, 2) for k, v in FIGURES.items() if not k.startswith("_")}
        print("\nrouter lab figures:", shown, flush=True)


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def capture(command: str, output: str) -> None:
    folder = os.environ.get("GNS3_COPILOT_CAPTURE")
    if folder:
        path = Path(folder) / (re.sub(r"[^a-z0-9]+", "_", command.lower()).strip("_") + ".txt")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"{command}\n{output}\n")


def test_a_docker_nodes_console_target_speaks_frr_with_cr(topology: LabProject) -> None:
    target = topology.target("R1")
    assert (target.kind, target.enter) == (DeviceKind.FRR, "\r")
    host = topology.target("PC1")
    assert (host.kind, host.enter) == (DeviceKind.LINUX, "\r")


def test_ospf_reaches_full_and_pc1_pings_pc2_across_both_routers(topology: LabProject) -> None:
    runner = ConsoleRunner(command_timeout=20.0, wake_timeout=60.0)

    async def scenario() -> None:
        for name, (address, gateway) in PCS.items():
            done = await runner.run(
                topology.target(name),
                [f"ip addr add {address} dev eth0", f"ip route add default via {gateway}"],
            )
            assert done.error is None, done.error
            assert all(o.ok for o in done.outcomes), [o.to_dict() for o in done.outcomes]
        for name, lines in ADDRESSES.items():
            sent = time.monotonic()
            done = await runner.run(topology.target(name), lines, config_mode=True)
            FIGURES[f"{name}_config_s"] = time.monotonic() - sent
            assert done.error is None, done.error
            for outcome in done.outcomes:
                assert outcome.ok, outcome.to_dict()
                assert not STRAY_PROMPT.search(outcome.output), outcome.to_dict()
            assert done.prompt == f"{name}#"
        # Wait (bounded) for the route to PC2's LAN on R1: OSPF Full, then the route.
        deadline = time.monotonic() + 120
        full_at = None
        while time.monotonic() < deadline:
            seen = await runner.run(
                topology.target("R1"), ["show ip ospf neighbor", "show ip route"]
            )
            neighbor, route = seen.outcomes[0].output, seen.outcomes[1].output
            if full_at is None and "Full" in neighbor:
                full_at = time.monotonic()
            if "10.0.2.0/24" in route and "O>*" in route:
                break
            await asyncio.sleep(1)
        else:
            pytest.fail(f"no OSPF route to 10.0.2.0/24 on R1 within 120 s:\n{neighbor}\n{route}")
        assert full_at is not None
        FIGURES["lab_start_to_ospf_full_s"] = full_at - FIGURES["_t0"]
        FIGURES["lab_start_to_route_s"] = time.monotonic() - FIGURES["_t0"]
        ping = None
        for _ in range(5):  # the first probes after the route appears may be lost to ARP
            ping = await runner.run(topology.target("PC1"), ["ping -c 3 -W 1 10.0.2.10"])
            if " 0% packet loss" in ping.outcomes[0].output:
                break
        assert ping is not None
        assert " 0% packet loss" in ping.outcomes[0].output, ping.outcomes[0].output
        assert "64 bytes from 10.0.2.10" in ping.outcomes[0].output

    run(scenario())


def test_show_commands_come_back_whole_and_round_trip_is_measured(topology: LabProject) -> None:
    runner = ConsoleRunner(command_timeout=20.0)

    async def scenario() -> None:
        await asyncio.sleep(0)
        shown = await runner.run(topology.target("R1"), SHOWS)
        assert shown.error is None
        for outcome in shown.outcomes:
            assert outcome.ok, outcome.to_dict()
            assert outcome.output.strip(), outcome.command
            assert not STRAY_PROMPT.search(outcome.output), outcome.to_dict()
            capture(outcome.command, outcome.output)
        running = shown.outcomes[SHOWS.index("show running-config")].output
        assert "router ospf" in running and "hostname R1" in running
        assert "Interface" in shown.outcomes[SHOWS.index("show interface brief")].output
        rounds = []
        for _ in range(5):
            began = time.monotonic()
            one = await runner.run(topology.target("R2"), ["show ip ospf neighbor"])
            rounds.append(time.monotonic() - began)
            assert one.outcomes[0].ok
        FIGURES["console_run_round_trip_s_median"] = sorted(rounds)[2]

    run(scenario())


def test_a_command_that_times_out_is_interrupted_and_the_console_is_ready_within_2s(
    topology: LabProject,
) -> None:
    runner = ConsoleRunner(command_timeout=20.0, recovery_timeout=5.0)

    async def scenario() -> None:
        target = topology.target("PC1")
        timed = await runner.run(target, ["ping 10.0.2.10", "echo after"], limits=[2.0, 10.0])
        assert timed.outcomes[0].timed_out
        assert "bytes from 10.0.2.10" in timed.outcomes[0].output
        assert timed.outcomes[1].ok and timed.outcomes[1].output == "after"
        # Abort mid-command: the run is cancelled; the console must be ready again at once.
        task = asyncio.create_task(runner.run(target, ["ping 10.0.2.10"]))
        await asyncio.sleep(1.5)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        began = time.monotonic()
        again = await runner.run(target, ["echo ready"])
        FIGURES["ready_after_abort_s"] = time.monotonic() - began
        assert again.error is None and again.outcomes[0].output == "ready"
        assert FIGURES["ready_after_abort_s"] < 2.0

    run(scenario())


#: Lines a student or a change may add, each taken back by the restore on the real FRR:
#: its ``no`` form must be one FRR accepts (``no description`` takes no words).
ADDED_SINCE = [
    "ip route 10.99.0.0/24 Null0",
    "interface eth0",
    "description checked by the student",
    "ip ospf cost 50",
    "bandwidth 10000",
    "exit",
]


def test_lines_added_since_a_restore_point_are_taken_back_exactly(topology: LabProject) -> None:
    """The real router is the oracle: R2's configuration read, lines added on its console,
    the keeper's restore sent, and R2 reads exactly as before (every negation accepted)."""
    runner = ConsoleRunner(command_timeout=20.0)
    keeper = keeper_for(DeviceKind.FRR)
    assert keeper is not None

    async def read() -> dict[str, Any]:
        seen = await runner.run(topology.target("R2"), list(keeper.read_commands))
        assert seen.error is None and all(o.ok for o in seen.outcomes)
        return keeper.parse([o.output for o in seen.outcomes])

    async def scenario() -> None:
        saved = await read()
        added = await runner.run(topology.target("R2"), ADDED_SINCE, config_mode=True)
        assert added.error is None, added.error
        assert all(o.ok for o in added.outcomes), [o.to_dict() for o in added.outcomes]
        changed = await read()
        shown = [line.strip() for line in changed["lines"]]
        assert all(line in shown for line in ADDED_SINCE if line != "exit"), changed
        assert keeper.differences(saved, changed), changed
        plan = keeper.restore(saved, changed)
        undone = await runner.run(topology.target("R2"), plan.commands, config_mode=True)
        assert undone.error is None, undone.error
        assert all(o.ok for o in undone.outcomes), [o.to_dict() for o in undone.outcomes]
        assert keeper.differences(saved, await read()) == []

    run(scenario())


def test_rolling_ospf_back_on_r2_drops_the_adjacency(topology: LabProject) -> None:
    """R2's restore point from before OSPF (its addresses only) is put back the way a
    rollback does it: the running configuration read, compared, and only the difference
    sent (``no router ospf``, ``no ip ospf network …``), then nothing differs any more."""
    runner = ConsoleRunner(command_timeout=20.0)
    keeper = keeper_for(DeviceKind.FRR)
    assert keeper is not None

    async def read() -> dict[str, Any]:
        seen = await runner.run(topology.target("R2"), list(keeper.read_commands))
        assert seen.error is None and all(o.ok for o in seen.outcomes)
        return keeper.parse([o.output for o in seen.outcomes])

    async def scenario() -> None:
        current = await read()
        saved = {
            "lines": [
                line
                for line in current["lines"]
                if "ospf" not in line and not line.startswith(" network")
            ]
        }
        plan = keeper.restore(saved, current)
        assert "no router ospf" in plan.commands
        undone = await runner.run(topology.target("R2"), plan.commands, config_mode=True)
        assert undone.error is None, undone.error
        assert all(o.ok for o in undone.outcomes), [o.to_dict() for o in undone.outcomes]
        assert keeper.differences(saved, await read()) == []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            seen = await runner.run(topology.target("R1"), ["show ip ospf neighbor"])
            if "2.2.2.2" not in seen.outcomes[0].output:
                return
            await asyncio.sleep(1)
        pytest.fail("R1 still lists R2 as an OSPF neighbour 60 s after R2's OSPF was removed")

    run(scenario())
    FIGURES.update(
        {f"memory_mib_{k.split('.')[1]}": v for k, v in docker_memory_mib("GNS3.R").items()}
    )


def test_a_command_that_pages_comes_back_whole_with_no_stray_prompt(
    topology: LabProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    """vtysh's pager on (``terminal paginate``): FRR pipes each output through util-linux's
    ``more``, a screen (GNS3's Docker console: 200 rows) at a time, then pads the last
    screen and waits at ``(END)`` for ``q``, even for a one-line output. The runner answers
    each ``--More--`` with a space and the ``(END)`` with one ``q``, and returns the whole
    output once, with neither the pager's prompt nor a stray vtysh prompt in it."""
    sent: list[str] = []
    original = Telnet.send

    async def recording(self: Telnet, text: str) -> None:
        sent.append(text)
        await original(self, text)

    monkeypatch.setattr(Telnet, "send", recording)
    runner = ConsoleRunner(command_timeout=30.0)
    # 250 routes: the routing table and the running configuration are two screens each.
    prefixes = [f"10.200.{i}.0/24" for i in range(250)]

    async def scenario() -> None:
        added = await runner.run(
            topology.target("R1"), [f"ip route {p} Null0" for p in prefixes], config_mode=True
        )
        assert added.error is None and all(o.ok for o in added.outcomes), added.error
        sent.clear()
        began = time.monotonic()
        paged = await runner.run(
            topology.target("R1"),
            ["terminal paginate", "show ip route static", "show running-config",
             "show ip ospf neighbor", "no terminal paginate", "show ip route static"],
        )  # fmt: skip
        FIGURES["paged_run_s"] = time.monotonic() - began
        assert paged.error is None, paged.error
        for outcome in paged.outcomes:
            assert outcome.ok and not outcome.timed_out, outcome.to_dict()
            assert not STRAY_PROMPT.search(outcome.output), outcome.to_dict()
            assert "More" not in outcome.output and "(END)" not in outcome.output
        routes, running = paged.outcomes[1].output, paged.outcomes[2].output
        # The pager was met: a space for each full screen, one q for each end (the two
        # long outputs and the neighbour table); nothing else was typed.
        keys = [key for key in sent if key in (" ", "q")]
        assert keys.count("q") == 3 and keys.count(" ") >= 2, sent
        rows = parse_frr("show ip route", routes)  # the same table, static routes only
        assert rows is not None
        assert [r["prefix"] for r in rows] == prefixes, routes
        statics = [line for line in running.splitlines() if line.startswith("ip route 10.")]
        assert statics == [f"ip route {p} Null0" for p in prefixes], running
        assert running.rstrip().endswith("end"), running[-300:]
        assert "Neighbor ID" in paged.outcomes[3].output
        unpaged = parse_frr("show ip route", paged.outcomes[5].output)  # paging off again
        assert unpaged is not None and [r["prefix"] for r in unpaged] == prefixes
        assert paged.prompt == "R1#"
        sent.clear()
        again = await runner.run(topology.target("R1"), ["show ip ospf neighbor"])
        assert again.outcomes[0].ok and "Neighbor ID" in again.outcomes[0].output
        assert not [key for key in sent if key in (" ", "q")], sent

    run(scenario())
