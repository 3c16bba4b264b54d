"""Figures for the external agent backend: turn overhead, stream throughput, abort latency.

Run: ``python -m tests.benchmarks.bench_subprocess_agent`` from the repository root.
"""

from __future__ import annotations

import asyncio
import resource
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from adapters.subprocess_agent import AgentConfig, SubprocessAgentBackend
from copilot_core import AbortToken, CopilotMode, ToolContext
from copilot_core.events import ToolStartEvent
from copilot_core.ports import AgentRunConfig

AGENTS = Path(__file__).parents[1] / "adapters" / "subprocess_agent" / "agents"


def backend(script: str, mode: str = "", **overrides: Any) -> SubprocessAgentBackend:
    command = [sys.executable, str(AGENTS / script)] + (["--mode", mode] if mode else [])
    return SubprocessAgentBackend(
        AgentConfig(id="bench", name="Bench", command=command, **overrides)
    )


def config(abort: AbortToken | None = None) -> AgentRunConfig:
    return AgentRunConfig(
        context=ToolContext("p", "u", "s", CopilotMode.TEACHING_ASSISTANT, abort or AbortToken())
    )


async def turn_overhead(runs: int = 20) -> None:
    agent = backend("well_behaved.py")
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        async for _event in agent.run("q", [], config()):
            pass
        times.append((time.perf_counter() - started) * 1000)
    times.sort()
    print(
        "turn with a Python agent (spawn to exit, 14 events): "
        f"median {statistics.median(times):.1f} ms, "
        f"p95 {times[int(runs * 0.95) - 1]:.1f} ms over {runs} runs"
    )


async def throughput() -> None:
    budget = 16 * 1024 * 1024
    agent = backend("flooder.py", max_output_bytes=budget)
    count, started = 0, time.perf_counter()
    async for _event in agent.run("q", [], config()):
        count += 1
    took = time.perf_counter() - started
    print(
        f"event flood: {count} events ({budget / 2**20:.0f} MiB) in {took:.2f} s = "
        f"{count / took:,.0f} events/s, {budget / 2**20 / took:.1f} MiB/s"
    )
    budget = 512 * 1024 * 1024
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    agent = backend("flooder.py", "endless-line", max_output_bytes=budget)
    started = time.perf_counter()
    async for _event in agent.run("q", [], config()):
        pass
    took = time.perf_counter() - started
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    print(
        f"endless line: {budget / 2**20:.0f} MiB skipped in {took:.2f} s = "
        f"{budget / 2**20 / took:.0f} MiB/s; peak RSS grew {grown / 1024:.1f} MiB"
    )


async def abort_latency(mode: str, runs: int = 5) -> None:
    times = []
    for _ in range(runs):
        abort = AbortToken()
        agent = backend("hanger.py", mode, kill_grace=0.5)
        fired = 0.0
        async for event in agent.run("q", [], config(abort)):
            if isinstance(event, ToolStartEvent):
                fired = time.perf_counter()
                abort.abort()
        times.append((time.perf_counter() - fired) * 1000)
    label = "ignores SIGTERM, grace 0.5 s" if mode else "honours SIGTERM"
    print(f"abort to end of turn ({label}): median {statistics.median(times):.1f} ms")


async def main() -> None:
    await turn_overhead()
    await throughput()
    await abort_latency("")
    await abort_latency("ignore-term")


if __name__ == "__main__":
    asyncio.run(main())
