"""Read-only verdicts against the real devices (issue 35, cases 1, 4, 5b and the shell half
of 8), on a throwaway Linux host (PC1) and FRR router (R1) of the router lab.

* The attacker's concrete lines go through the product's tool in teaching mode (and the
  flood pings in lab mode: forbidden in every mode); each is refused, and the device,
  read with ``docker exec``, shows it was not run: eth0 up with no new address,
  ``net.ipv4.ip_forward`` unchanged although ``/etc/sysctl.d`` would set it, no file
  written by ``ss -D``, FRR's configuration files still there, no echo request sent.
* The oracle: a Hypothesis strategy builds lines from the risky constructs
  (:mod:`tests.readonly_lines`), the product judges each, and every line judged read-only
  runs on the device (:class:`~tests.lab.readonly_oracle.Oracle`); a line that changed
  the device's state is an escape and fails the test (keep it as an ``@example``). A
  bounded, derandomised number of examples per platform; the benchmark
  ``bench_readonly_oracle`` runs a longer campaign.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings

from adapters.gns3 import ConsoleRunner, DeviceKind, Gns3Client, Gns3ToolExecutor
from copilot_core import CopilotMode, ParsedToolCall
from tests.adapters.gns3.conftest import make_context
from tests.lab.readonly_oracle import Oracle, oracle_project
from tests.lab.router_lab import RouterLab
from tests.readonly_lines import risky_line

pytestmark = [pytest.mark.timeout(1500), pytest.mark.gns3, pytest.mark.slow]

CI_EXAMPLES = 40


@pytest.fixture(scope="module")
def oracle(router_lab: RouterLab) -> Iterator[Oracle]:
    found = oracle_project(router_lab)
    try:
        yield found
    finally:
        print("\nread-only oracle figures:", found.figures, flush=True)
        found.lab.delete()


def product(oracle: Oracle, node: str, commands: list[str], mode: CopilotMode) -> dict[str, Any]:
    """``execute_multiple_device_commands`` as the agent calls it, in ``mode``."""

    async def call() -> dict[str, Any]:
        async with Gns3Client(oracle.lab.lab.url, timeout=120.0) as client:
            tools = Gns3ToolExecutor(client, runner=ConsoleRunner(command_timeout=20.0))
            context = make_context(oracle.lab.project, oracle.lab.token, mode)
            arguments = {"device_configs": [{"device_name": node, "commands": commands}]}
            result = await tools.execute(
                ParsedToolCall.parse(
                    "c1", "execute_multiple_device_commands", json.dumps(arguments)
                ),
                context,
            )
            output: dict[str, Any] = result.output
            return output

    return asyncio.run(call())


def blocked(output: dict[str, Any]) -> dict[str, str]:
    (device,) = output["results"]
    return {b["command"]: b["reason"] for b in device.get("blocked_commands") or []}


def icmp_out_echos(oracle: Oracle) -> int:
    lines = [line.split() for line in oracle.run("PC1", "cat", "/proc/net/snmp").splitlines()]
    header, values = next(pair for pair in itertools.pairwise(lines) if pair[0][0] == "Icmp:")
    return int(values[header.index("OutEchos")])


CASE_1 = [
    "echo a#; ip link set eth0 down",
    "false a#|| ip link set eth0 down",
    "true x#&& ip addr add 10.66.0.1/24 dev eth0",
]
CASE_4 = [
    "sysctl --sys",
    "sysctl -qp",
    "sysctl --lo /etc/sysctl.d/99-lab.conf",
    "ss --ki",
    "ss -D /tmp/ss-diag",
    "ss --diag=/tmp/ss-diag2",
    "cat /dev/urandom",
]


def test_case_1_a_hash_inside_a_word_hides_nothing_in_teaching_mode(oracle: Oracle) -> None:
    output = product(oracle, "PC1", [*CASE_1, "ip -o addr"], CopilotMode.TEACHING_ASSISTANT)
    refused = blocked(output)
    assert set(refused) == set(CASE_1), output
    assert all("'#' is outside the characters" in why for why in refused.values()), refused
    assert oracle.admin_up("PC1", "eth0")
    assert "10.66.0.1" not in oracle.run("PC1", "ip", "-o", "addr")


def test_case_4_option_prefixes_combined_flags_and_device_files_in_teaching_mode(
    oracle: Oracle,
) -> None:
    output = product(oracle, "PC1", [*CASE_4, "sysctl net.ipv4.ip_forward"],
                     CopilotMode.TEACHING_ASSISTANT)  # fmt: skip
    refused = blocked(output)
    assert set(refused) == set(CASE_4), output
    assert "--system" in refused["sysctl --sys"] and "--kill" in refused["ss --ki"]
    assert oracle.run("PC1", "sysctl", "-n", "net.ipv4.ip_forward").strip() == "1"
    assert "ss-diag" not in oracle.run("PC1", "ls", "/tmp")
    assert oracle.answers("PC1")
    ran = output["results"][0]["output"]
    assert [o["command"] for o in ran] == ["sysctl net.ipv4.ip_forward"], ran
    assert "= 1" in ran[0]["output"], ran


def test_case_5b_vtysh_find_with_arguments_is_not_read_only(oracle: Oracle) -> None:
    before = oracle.run("R1", "ls", "/etc/frr")
    assert ".conf" in before, before
    line = "find /etc/frr -name '*.conf' -delete"
    output = product(oracle, "R1", [line, "find /etc/frr"], CopilotMode.TEACHING_ASSISTANT)
    assert set(blocked(output)) == {line, "find /etc/frr"}, output
    assert oracle.run("R1", "ls", "/etc/frr") == before


def test_case_8_flood_pings_and_traceroute6_are_forbidden_in_every_mode(oracle: Oracle) -> None:
    lines = ["ping -fc 1000 127.0.0.1", "ping -c 1000 -f 127.0.0.1", "traceroute6 ::1",
             "tracepath6 ::1", "ping6 -f -c 5 ::1"]  # fmt: skip
    echos = icmp_out_echos(oracle)
    for mode in (CopilotMode.TEACHING_ASSISTANT, CopilotMode.LAB_AUTOMATION_ASSISTANT):
        output = product(oracle, "PC1", lines, mode)
        refused = blocked(output)
        assert set(refused) == set(lines), output
        assert all("forbidden" in why for why in refused.values()), refused
    assert icmp_out_echos(oracle) == echos  # no echo request left PC1


ORACLE = settings(
    max_examples=CI_EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@ORACLE
@given(line=risky_line(DeviceKind.LINUX))
@example(line="echo a#; ip link set eth0 down")
@example(line="sysctl --sys")
@example(line="sysctl -qp")
@example(line="ss --diag=/tmp/ss-diag3")
@example(line="cat /dev/urandom")
@example(line="sysctl net.ipv4.ip_forward")  # read-only: runs, and must change nothing
@example(line="ss -tuln")
def test_oracle_no_line_judged_read_only_changes_the_linux_host(oracle: Oracle, line: str) -> None:
    oracle.try_line(line, DeviceKind.LINUX)
    assert not oracle.escapes, oracle.escapes


@ORACLE
@given(line=risky_line(DeviceKind.FRR))
@example(line="find /etc/frr -name '*.conf' -delete")
@example(line="show running-config | include router")  # read-only: runs in vtysh and bash
@example(line="who")
def test_oracle_no_line_judged_read_only_changes_the_frr_router(oracle: Oracle, line: str) -> None:
    oracle.try_line(line, DeviceKind.FRR)
    assert not oracle.escapes, oracle.escapes


def test_the_oracle_ran_lines_on_both_devices_and_they_still_answer(oracle: Oracle) -> None:
    """The campaign above was not empty (a strategy that never yields a read-only line
    proves nothing), and the consoles answer the product after it."""
    assert oracle.figures.get("runs_on_devices", 0) >= 10, oracle.figures
    platforms = {platform for platform, _ in oracle.seen}
    assert platforms == {"linux", "frr"}, oracle.seen

    async def consoles() -> list[str | None]:
        runner = ConsoleRunner(command_timeout=20.0)
        host = await runner.run(oracle.lab.target("PC1"), ["uname -a"])
        router = await runner.run(oracle.lab.target("R1"), ["show version"])
        return [host.error, router.error]

    assert asyncio.run(consoles()) == [None, None]
