"""wait_for_console over real telnet sockets: a prompt, a silent console, a login prompt."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable

import pytest

from copilot_core.testing import InMemoryCheckpointStore
from tests.adapters.gns3.test_restore_points import make, run
from tests.fakes.telnet_devices import EmulatedDeviceLab, EmulatedVpcs


@pytest.fixture
async def lab() -> AsyncIterator[EmulatedDeviceLab]:
    async with EmulatedDeviceLab(EmulatedVpcs("PC1")) as devices:
        yield devices


async def console(answer: Callable[[bytes], bytes]) -> asyncio.Server:
    """A TCP console that answers each line it gets with ``answer(line)``."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while line := await reader.readline():
                writer.write(answer(line))
                await writer.drain()
        except ConnectionError:
            pass
        finally:
            writer.close()

    return await asyncio.start_server(serve, "127.0.0.1", 0)


def node(name: str, server: asyncio.Server) -> dict[str, object]:
    return {
        "name": name,
        "node_id": f"id-{name}",
        "node_type": "qemu",
        "status": "started",
        "console": server.sockets[0].getsockname()[1],
        "console_host": "127.0.0.1",
        "console_type": "telnet",
        "template_id": "tpl-qemu",
        "ports": [],
    }


async def test_a_started_nodes_prompt_is_returned_with_the_time_it_took(
    lab: EmulatedDeviceLab,
) -> None:
    executor, _ = make(lab, InMemoryCheckpointStore())
    result = await run(executor, "wait_for_console", {"node_names": ["PC1"]}, approved=None)
    (pc1,) = result.output["results"]
    assert pc1["status"] == "success", pc1
    assert pc1["output"]["prompt"] == "PC1>"
    assert pc1["output"]["waited_s"] < 5


async def test_a_console_that_shows_no_prompt_is_given_up_on_in_time(
    lab: EmulatedDeviceLab,
) -> None:
    silent = await console(lambda line: b"")
    booting = await console(lambda line: b"Press RETURN to get started\r\n")
    try:
        executor, _ = make(
            lab, InMemoryCheckpointStore(), [node("Silent", silent), node("Booting", booting)]
        )
        began = time.monotonic()
        result = await run(
            executor,
            "wait_for_console",
            {"node_names": ["Silent", "Booting", "PC1"], "timeout_s": 1.5},
            approved=None,
        )
        elapsed = time.monotonic() - began
    finally:
        silent.close()
        booting.close()
    items = {r["device_name"]: r for r in result.output["results"]}
    assert items["PC1"]["status"] == "success"
    for name in ("Silent", "Booting"):
        assert items[name]["status"] == "failed"
        assert items[name]["error"].startswith(f"no prompt on {name}'s console within 1.5 s")
    assert elapsed < 6


async def test_a_console_that_asks_for_a_login_fails_at_once(lab: EmulatedDeviceLab) -> None:
    locked = await console(lambda line: b"\r\nrouter login: ")
    try:
        executor, _ = make(lab, InMemoryCheckpointStore(), [node("Locked", locked)])
        began = time.monotonic()
        result = await run(
            executor,
            "wait_for_console",
            {"node_names": ["Locked"], "timeout_s": 60},
            approved=None,
        )
    finally:
        locked.close()
    (locked_item,) = result.output["results"]
    assert locked_item["status"] == "failed"
    assert "asks for a login" in locked_item["error"]
    assert time.monotonic() - began < 10
