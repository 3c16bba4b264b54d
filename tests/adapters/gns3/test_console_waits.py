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


async def console(
    answer: Callable[[bytes], bytes], connections: list[int] | None = None
) -> asyncio.Server:
    """A TCP console that answers each line it gets with ``answer(line)``; each connection
    appends to ``connections`` (one per try of the runner's)."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if connections is not None:
            connections.append(1)
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
    began = time.monotonic()
    result = await run(executor, "wait_for_console", {"node_names": ["PC1"]}, approved=None)
    took = time.monotonic() - began
    (pc1,) = result.output["results"]
    assert pc1["status"] == "success", pc1
    assert pc1["output"]["prompt"] == "PC1>"
    # The time it took, in seconds, is part of the call's own time (however long that was).
    assert 0 <= pc1["output"]["waited_s"] <= round(took, 2) + 0.01


async def test_a_console_that_shows_no_prompt_is_given_up_on_in_time(
    lab: EmulatedDeviceLab,
) -> None:
    # Neither console ever shows a prompt: the call ends only because its bound does.
    tries: dict[str, list[int]] = {"Silent": [], "Booting": []}
    silent = await console(lambda line: b"", tries["Silent"])
    booting = await console(lambda line: b"Press RETURN to get started\r\n", tries["Booting"])
    try:
        executor, _ = make(
            lab, InMemoryCheckpointStore(), [node("Silent", silent), node("Booting", booting)]
        )
        result = await run(
            executor,
            "wait_for_console",
            {"node_names": ["Silent", "Booting", "PC1"], "timeout_s": 1.5},
            approved=None,
        )
        after_the_answer = {name: len(seen) for name, seen in tries.items()}
        for _ in range(20):  # nothing tries these consoles any more once answered
            await asyncio.sleep(0)
    finally:
        silent.close()
        booting.close()
    items = {r["device_name"]: r for r in result.output["results"]}
    assert items["PC1"]["status"] == "success"
    for name in ("Silent", "Booting"):
        assert items[name]["status"] == "failed"
        # the bound that ended it is the call's 1.5 s (not the server's start timeout)
        assert items[name]["error"].startswith(f"no prompt on {name}'s console within 1.5 s")
        assert after_the_answer[name] >= 1
    assert {name: len(seen) for name, seen in tries.items()} == after_the_answer


async def test_a_console_that_asks_for_a_login_fails_at_once(lab: EmulatedDeviceLab) -> None:
    tries: list[int] = []
    locked = await console(lambda line: b"\r\nrouter login: ", tries)
    try:
        executor, _ = make(lab, InMemoryCheckpointStore(), [node("Locked", locked)])
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
    assert len(tries) == 1  # at once: the first look at the console, not a wait for a prompt
