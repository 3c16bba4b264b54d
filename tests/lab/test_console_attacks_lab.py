"""Issue 35, case 5 and the console half of case 8, on the real router lab: vtysh is proven
by its answer, never by a prompt; a flood never leaves a console dead; a person's command
gets the console before queued background runs.

R1 is an FRR 8.4 router (its console: vtysh, and ``bash -i`` after someone types ``exit``),
PC1 a Debian Linux host (its console: a root bash), GNS3 Docker nodes under a real
gns3-server. The consoles are driven the way the attacker did (a telnet connection of our
own to the node's console typing ``exit`` and ``PS1='R1# '``), the product is called
through its executor (teaching mode) or its console runner (for lines today's grammar no
longer lets through: ``find … -delete`` and ``cat /dev/urandom``), and what is asserted is
read on the device itself with ``docker exec`` (``ls /etc/frr``), never through the
product.

Run: ``flock /tmp/router-lab.lock .tox/routers/bin/pytest --router-lab -p no:cacheprovider
-s tests/lab/test_console_attacks_lab.py``.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from adapters.gns3 import ConsoleRunner, ConsoleTarget, Gns3Client, Gns3ToolExecutor
from adapters.gns3.console._lock import ConsolePriority, background_console_use
from adapters.gns3.console._telnet import Telnet, clean_text
from adapters.gns3.model._platforms import DeviceKind
from copilot_core import CopilotMode, ParsedToolCall, ToolResult
from tests.adapters.gns3.conftest import make_context
from tests.lab.lab_project import LabProject
from tests.lab.router_lab import HOST_TEMPLATE, ROUTER_TEMPLATE, RouterLab

pytestmark = [pytest.mark.timeout(1500), pytest.mark.gns3, pytest.mark.slow]

FIGURES: dict[str, float] = {}


def frr_files(topo: LabProject) -> list[str]:
    listed = topo.exec("R1", "ls", "/etc/frr")
    assert listed.returncode == 0, listed.stderr.decode()
    return sorted(listed.stdout.decode().split())


async def type_on_console(target: ConsoleTarget, lines: list[str], until: str) -> str:
    """Type ``lines`` on the node's console through a telnet connection of our own (as a
    person at GNS3's console would) and read until the text ends with ``until``."""
    telnet = await Telnet.open(target.host, target.port, 10.0)
    seen = ""
    try:
        for line in lines:
            await telnet.send(line + target.enter)
        async with asyncio.timeout(20):
            while not clean_text(seen).rstrip().endswith(until.rstrip()):
                seen += await telnet.read(20)
    except TimeoutError:
        pytest.fail(f"the console never showed {until!r}; it said {clean_text(seen)[-600:]!r}")
    finally:
        telnet.abort()
    return clean_text(seen)


@pytest.fixture(scope="module")
def topology(router_lab: RouterLab) -> Any:
    token = router_lab.server.token()
    project = router_lab.server.new_project("console-attacks", token)
    topo = LabProject(router_lab, token, project)
    for template in (HOST_TEMPLATE, HOST_TEMPLATE, ROUTER_TEMPLATE):
        made = topo.api(
            "POST",
            f"/templates/{router_lab.templates[template]}",
            json={"x": 0, "y": 0, "compute_id": "local"},
        )
        assert made.status_code == 201, made.text
    assert sorted(n["name"] for n in topo.api("GET", "/nodes").json()) == ["PC1", "PC2", "R1"]
    assert topo.api("POST", "/nodes/start").status_code in (200, 204)
    topo.wait_for_vtysh("R1")
    try:
        yield topo
    finally:
        print("\nconsole attack figures:", json.dumps(FIGURES, indent=2))
        topo.delete()


@pytest.fixture
async def executor(topology: LabProject) -> AsyncIterator[Gns3ToolExecutor]:
    async with Gns3Client(topology.lab.url, timeout=120.0) as client:
        yield Gns3ToolExecutor(client, runner=ConsoleRunner(command_timeout=20.0))


async def teaching(
    executor: Gns3ToolExecutor, topo: LabProject, device: str, commands: list[str]
) -> ToolResult:
    call = ParsedToolCall.parse(
        "call-t",
        "execute_multiple_device_commands",
        json.dumps({"device_configs": [{"device_name": device, "commands": commands}]}),
    )
    context = make_context(topo.project, topo.token, CopilotMode.TEACHING_ASSISTANT)
    return await executor.execute(call, context)


# ------------------------------------------------------------------ case 5
async def test_a_shell_posing_as_vtysh_gets_no_command_and_frr_keeps_its_files(
    topology: LabProject, executor: Gns3ToolExecutor
) -> None:
    topo = topology
    target = topo.target("R1")
    assert target.kind is DeviceKind.FRR
    files = frr_files(topo)
    assert "frr.conf" in files and "vtysh.conf" in files, files
    # The attacker: vtysh → bash, and a bash prompt that reads like vtysh's.
    shown = await type_on_console(target, ["exit", "PS1='R1# '"], "R1# ")
    assert "R1# " in shown
    assert topo.exec("R1", "pgrep", "-x", "bash").returncode == 0  # the console's bash

    # A read-only command in teaching mode, through the product.
    started = time.monotonic()
    result = await teaching(executor, topo, "R1", ["show running-config"])
    FIGURES["refusal_s"] = round(time.monotonic() - started, 2)
    text = json.dumps(result.output)
    assert result.output["status"] == "failed", result.output
    assert "not in vtysh" in text, text

    # The line of the attack, past any grammar: the console layer alone refuses it.
    runner = ConsoleRunner(command_timeout=20.0)
    direct = await runner.run(target, ["find /etc/frr -name *.conf -delete"])
    assert direct.error is not None and "not in vtysh" in direct.error, direct.error
    assert direct.outcomes[0].error == "not run: the console is not in vtysh"
    assert frr_files(topo) == files  # the oracle: FRR's configuration files are all there

    # Back in vtysh (a person types vtysh): the same read passes the proof and runs.
    await type_on_console(target, ["vtysh"], "R1# ")
    ok = await teaching(executor, topo, "R1", ["show running-config"])
    assert ok.output["status"] == "success", ok.output
    assert "frr version" in json.dumps(ok.output)
    FIGURES["frr_files"] = len(frr_files(topo))


# ------------------------------------------------------------------ case 8: floods
@pytest.mark.parametrize("flood", ["yes", "seq 1 100000000"])
async def test_a_flood_is_capped_interrupted_and_the_host_console_answers_after(
    topology: LabProject, flood: str
) -> None:
    topo = topology
    target = topo.target("PC1")
    runner = ConsoleRunner(command_timeout=60.0)
    started = time.monotonic()
    transcript = await runner.run(target, [flood, "echo alive-$((6*7))"])
    FIGURES[f"{flood}_s"] = round(time.monotonic() - started, 2)
    assert transcript.error is None, transcript.error
    flooded, after = transcript.outcomes
    assert flooded.interrupted and flooded.truncated, flooded.to_dict()
    assert not flooded.timed_out
    assert len(flooded.output) <= runner.max_output_chars
    assert after.ok and "alive-42" in after.output, after.to_dict()
    # Nothing of the flood still runs on the host, and a new run answers at once.
    assert topo.exec("PC1", "pgrep", "-x", flood.split()[0]).returncode != 0
    again = await runner.run(target, ["echo again-$((6*7))"])
    assert again.error is None and "again-42" in again.outcomes[0].output, again.outcomes


# ------------------------------------------------------------------ case 8: fair turns
async def test_a_chat_command_is_not_starved_behind_background_runs(
    topology: LabProject,
) -> None:
    target = topology.target("PC1")
    runner = ConsoleRunner(command_timeout=30.0)
    finished: list[str] = []

    async def run(name: str, command: str) -> None:
        transcript = await runner.run(target, [command])
        assert transcript.error is None and transcript.outcomes[0].ok, transcript.outcomes
        finished.append(name)

    with background_console_use():
        background = [asyncio.create_task(run(f"bg{n}", "sleep 1")) for n in range(6)]
    lock = runner.lock_of(target)
    async with asyncio.timeout(30):
        while lock.waiting(ConsolePriority.BACKGROUND) < 5:
            await asyncio.sleep(0.05)
    started = time.monotonic()
    await asyncio.wait_for(run("chat", "ip -br addr"), 60)
    FIGURES["chat_wait_s"] = round(time.monotonic() - started, 2)
    await asyncio.wait_for(asyncio.gather(*background), 120)
    # The chat ran right after the run that held the console, before the queued ones.
    assert finished.index("chat") == 1, finished


# ------------------------------------------------------------------ case 8: binary output
async def test_binary_output_closes_gns3s_docker_console_and_the_result_says_so(
    topology: LabProject,
) -> None:
    """``cat /dev/urandom`` (today's grammar refuses it in teaching mode; sent here past
    it) on PC2: GNS3 reads a Docker node's console through a websocket that ends on bytes
    that are not UTF-8 (``gns3server/compute/docker/docker_vm.py``), so the console closes
    before any reader can interrupt the command, and stays closed. The product cannot keep
    that console alive; it must say what happened and what brings it back. Run last: PC2's
    console stays dead."""
    topo = topology
    target = topo.target("PC2")
    runner = ConsoleRunner(command_timeout=30.0)
    first = await runner.run(target, ["cat /dev/urandom", "echo alive"])
    flooded = first.outcomes[0]
    FIGURES["urandom_output_chars"] = len(flooded.output)
    # GNS3 closes the console before any byte reaches a client: the error names the likely
    # cause and the remedy.
    assert flooded.error is not None and "closed the console" in flooded.error, flooded.to_dict()
    assert "not text" in flooded.error and "restarted" in flooded.error, flooded.error
    assert first.outcomes[1].error is not None  # never typed into a closed console
    again = await runner.run(target, ["echo again"])
    FIGURES["urandom_console_dead_after"] = float(again.error is not None)
    if again.error is not None:
        assert "restarted" in again.error, again.error
    # The oracle: is the flood still running in the container?
    FIGURES["urandom_cat_still_running"] = float(
        topo.exec("PC2", "pgrep", "-x", "cat").returncode == 0
    )
