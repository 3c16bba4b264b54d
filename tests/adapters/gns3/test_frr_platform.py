"""FRR as a platform: found from a Docker node's image or its prompt, its console's Enter."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from adapters.gns3 import ConsoleRunner, ConsoleTarget, DeviceKind, device_kind_of
from adapters.gns3.lab._snapshot import LabSnapshot
from adapters.gns3.model._platforms import platform_for
from tests.fakes.telnet_devices import EmulatedDeviceLab, EmulatedFrr


def docker_node(name: str, image: str) -> dict[str, object]:
    return {
        "name": name,
        "node_id": f"id-{name}",
        "node_type": "docker",
        "console": 5000,
        "console_host": "0.0.0.0",
        "console_type": "telnet",
        "properties": {"image": image},
    }


@pytest.mark.parametrize(
    ("image", "kind"),
    [
        ("frr-lab:8.4", DeviceKind.FRR),
        ("frrouting/frr:v8.4.1", DeviceKind.FRR),
        ("alpine:3.19", DeviceKind.LINUX),
    ],
)
def test_a_docker_nodes_kind_comes_from_its_image(image: str, kind: DeviceKind) -> None:
    assert device_kind_of(docker_node("R1", image), "Docker node") is kind


def test_a_docker_nodes_console_takes_cr_as_enter_and_others_cr_lf() -> None:
    router = docker_node("R1", "frr-lab:8.4")
    pc = {**docker_node("PC1", "frr-lab:8.4"), "node_type": "vpcs"}
    snapshot = LabSnapshot({"project_id": "p"}, [router, pc], [], {}, "127.0.0.1")
    target = snapshot.console_target(router)
    assert (target.host, target.port, target.kind, target.enter) == (
        "127.0.0.1",
        5000,
        DeviceKind.FRR,
        "\r",
    )
    assert snapshot.console_target(pc).enter == "\r\n"


@pytest.mark.parametrize(
    "prompt",
    ["R1# ", "R1(config)# ", "R1(config-if)# ", "R1(config-router)# ", "root@R1:/# "],
)
def test_every_frr_prompt_ends_a_read(prompt: str) -> None:
    platform = platform_for(DeviceKind.FRR)
    assert platform.prompt_at_end(f"some output\r\n{prompt}") == prompt
    assert platform.at_shell(prompt) is prompt.startswith("root@")
    assert platform.in_config(prompt) is ("(config" in prompt)


@pytest.fixture
async def frr() -> AsyncIterator[EmulatedFrr]:
    device = EmulatedFrr("R1", docker=True)
    async with EmulatedDeviceLab(device):
        yield device


async def test_a_docker_node_taken_for_linux_is_recognised_as_frr_by_its_prompt(
    frr: EmulatedFrr,
) -> None:
    target = ConsoleTarget("R1", "127.0.0.1", frr.port, DeviceKind.LINUX, enter="\r")
    transcript = await ConsoleRunner(command_timeout=3.0).run(
        target, ["router ospf"], config_mode=True
    )
    assert transcript.error is None, transcript.error
    assert transcript.target.kind is DeviceKind.FRR
    # the prompt alone proves nothing: vtysh's answer to ``show version`` does
    assert frr.received == ["show version", "configure terminal", "router ospf", "end"]
    assert frr.config == ["router ospf"]


async def test_a_silent_console_is_reported_with_the_offer_to_restart_the_node() -> None:
    left = asyncio.Event()

    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while await reader.read(1024):  # reads what the client sends, answers nothing
            pass
        writer.close()
        await writer.wait_closed()
        left.set()

    server = await asyncio.start_server(silent, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        target = ConsoleTarget("R1", "127.0.0.1", port, DeviceKind.FRR, enter="\r")
        transcript = await ConsoleRunner(wake_timeout=0.5).run(target, ["show ip route"])
        await asyncio.wait_for(left.wait(), 5)
    assert transcript.error is not None
    assert "stays silent" in transcript.error
    assert "restarting the node" in transcript.error


@pytest.mark.parametrize("end_delay", [0.0, 0.3], ids=["end-at-once", "end-late"])
async def test_vtysh_paging_through_more_comes_back_whole_and_is_left_with_one_q(
    frr: EmulatedFrr, end_delay: float
) -> None:
    """With ``terminal paginate`` vtysh pages through util-linux's ``more``: ``--More--``
    takes a space; at the end ``(END)`` takes ``q`` (a space only shows an empty screen).
    ``end-late``: the runner meets the last ``--More--`` before its ``(END)`` and answers
    it with a space; the ``q`` then goes once, and nothing else reaches the prompt."""
    frr.more_rows, frr.more_end_delay = 10, end_delay
    frr.globals = [f"ip route 10.200.{i}.0/24 Null0" for i in range(30)]
    target = ConsoleTarget("R1", "127.0.0.1", frr.port, DeviceKind.FRR, enter="\r")
    runner = ConsoleRunner(command_timeout=5.0)
    commands = ["terminal paginate", "show ip route static", "show running-config",
                "no terminal paginate", "show ip route static"]  # fmt: skip
    transcript = await runner.run(target, commands)
    assert transcript.error is None, transcript.error
    assert all(o.ok and not o.timed_out for o in transcript.outcomes), [
        o.to_dict() for o in transcript.outcomes
    ]
    routes = transcript.outcomes[1].output.splitlines()
    assert routes[2:] == [
        f"S>* 10.200.{i}.0/24 [1/0] unreachable (blackhole), weight 1, 00:00:06" for i in range(30)
    ]
    assert transcript.outcomes[2].output.splitlines() == frr.running_config()
    assert transcript.outcomes[4].output == transcript.outcomes[1].output  # paging off
    # vtysh proven first; no key of the pager's reached the prompt
    assert frr.received == ["show version", *commands]
    assert transcript.prompt == "R1#"
    again = await runner.run(target, ["show ip route static"])
    assert again.outcomes[0].output == transcript.outcomes[1].output
    assert frr.received == ["show version", *commands, "show version", "show ip route static"]


async def test_a_read_that_stops_inside_a_route_line_does_not_end_the_command(
    frr: EmulatedFrr,
) -> None:
    """``S>`` of ``S>* 10.200.0.0/24`` ends like a prompt: when a read of the console stops
    there, the command is not over (the lab's R1 lost 240 of 250 routes that way)."""
    frr.globals = [f"ip route 10.200.{i}.0/24 Null0" for i in range(20)]
    frr.pause_after = "\r\nS>"
    target = ConsoleTarget("R1", "127.0.0.1", frr.port, DeviceKind.FRR, enter="\r")
    transcript = await ConsoleRunner(command_timeout=5.0).run(target, ["show ip route static"])
    assert transcript.error is None, transcript.error
    (outcome,) = transcript.outcomes
    assert outcome.ok, outcome.to_dict()
    assert len(outcome.output.splitlines()) == 2 + 20, outcome.output
    assert transcript.prompt == "R1#"
