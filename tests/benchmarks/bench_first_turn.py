"""How long the first turn after ``serve`` takes before anything streams, against later turns.

Run: ``python -m tests.benchmarks.bench_first_turn [RUNS]`` (3 by default). It prints
figures; it asserts nothing.

The product runs as in production: ``gns3-copilot serve`` in a subprocess (a fresh data
directory each run), a real gns3-server 3.0.6, and the scripted OpenAI-compatible server
(real wire protocol, zero delay). Each run sends its first turn at once after a probe
answers ``200``: ``/readyz`` (the service says it is ready for chats: the start-up
warm-up has loaded what a turn's model needs) or ``/healthz`` (the process answers; the
warm-up is still loading, and the turn waits for it), then a second turn. Each turn is a
new session whose model first calls ``gns3_topology_reader``, then answers; the figures
are the time from the request to the first event of the stream, to the first answer
token and to ``done``, and the time from the process's start to the probe's ``200``.

A second part explains the first turn's extra time: in a fresh interpreter that has
imported what ``serve`` imports at start-up, it times each thing the first turn does for
the first time (the lazy ``langchain_openai`` import, the first ``ChatOpenAI``, the
tokenizer, the TextFSM template index): what the warm-up loads.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from httpx_sse import connect_sse

from tests.fakes.copilot_service import serve_copilot
from tests.fakes.gns3_server import RealGns3Server
from tests.fakes.openai_server import Reply, ScriptedOpenAIServer, ToolCallScript

API_KEY = "sk-bench-first-turn"

_FIRST_USES = r"""
import time
t0 = time.perf_counter()
import entrypoints.container  # what serve imports before it listens
t1 = time.perf_counter()
from langchain_openai import ChatOpenAI
t2 = time.perf_counter()
ChatOpenAI(model="gpt-4o-mini", api_key="x", base_url="http://127.0.0.1:9/v1")
t3 = time.perf_counter()
from adapters.llm import TiktokenTokenCounter
TiktokenTokenCounter.for_model("gpt-4o-mini").count_text("hello")
t4 = time.perf_counter()
from adapters.gns3.model._parsing import ShowParser
ShowParser().warm()
t5 = time.perf_counter()
print(f"  start-up imports (before the port opens)  {t1 - t0:6.3f} s")
print(f"  import langchain_openai (first turn)      {t2 - t1:6.3f} s")
print(f"  first ChatOpenAI() (SSL context, client)  {t3 - t2:6.3f} s")
print(f"  tiktoken cl100k (first token count)       {t4 - t3:6.3f} s")
print(f"  TextFSM index (first console command)     {t5 - t4:6.3f} s")
"""


def _turn(api: httpx.Client, project: str, llm: ScriptedOpenAIServer) -> tuple[float, float, float]:
    llm.add(
        Reply(tool_calls=[ToolCallScript("gns3_topology_reader", {})], usage=(100, 5)),
        Reply(text="Your lab is empty.", usage=(120, 5)),
        Reply(text="Empty lab"),  # the title
    )
    started = time.perf_counter()
    first = answer = 0.0
    with connect_sse(
        api, "POST", f"/projects/{project}/chat/stream", json={"message": "What is in my lab?"}
    ) as source:
        for event in source.iter_sse():
            now = time.perf_counter() - started
            kind = json.loads(event.data).get("type")
            first = first or now
            if kind == "content" and not answer:
                answer = now
            if kind == "done":
                return first, answer, now
    raise AssertionError("the stream ended without done")


def one_run(gns3: RealGns3Server, llm: ScriptedOpenAIServer, probe: str) -> dict[str, float]:
    """A new ``serve``; the first turn at once after ``probe`` answers, then another."""
    token = gns3.token()
    created = httpx.post(
        f"{gns3.url}/v3/projects",
        json={"name": f"bench-{time.time_ns()}"},
        headers={"Authorization": f"Bearer {token}"},
    )
    project = str(created.json()["project_id"])
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        with serve_copilot(gns3.url, Path(tmp), probe=probe) as service:
            up = time.perf_counter() - started
            with service.api(token) as api:
                settings = {"provider": "openai", "model": "gpt-4o-mini", "base_url": llm.base_url}
                api.put("/llm-config", json={**settings, "api_key": API_KEY}).raise_for_status()
                first = _turn(api, project, llm)
                second = _turn(api, project, llm)
    return {"up": up, "first": first[0], "first_done": first[2], "second": second[0]}


def main(runs: int) -> None:
    load = os.getloadavg()[0]
    print(
        f"first turn after serve: {runs} runs per probe, a new serve each, real GNS3, "
        f"zero-delay LLM ({os.cpu_count()} cores, load {load:.1f} at the start)"
    )
    results: dict[str, list[dict[str, float]]] = {"/readyz": [], "/healthz": []}
    with (
        RealGns3Server(console_ports=(28000, 28099), udp_ports=(28100, 28199)) as gns3,
        ScriptedOpenAIServer(api_key=API_KEY) as llm,
    ):
        for _ in range(runs):  # alternated, so that both see the same load
            for probe, figures in results.items():
                figures.append(one_run(gns3, llm, probe))
    for probe, figures in results.items():
        print(f"  the first turn sent at once after {probe} answered 200:")
        for key, what in (
            ("up", f"start to {probe} 200"),
            ("first", "turn 1: first event"),
            ("first_done", "turn 1: done"),
            ("second", "turn 2: first event"),
        ):
            values = sorted(figure[key] * 1000 for figure in figures)
            print(
                f"    {what:24s} median {statistics.median(values):6.0f} ms "
                f"(min {values[0]:.0f}, max {values[-1]:.0f})"
            )
    print(f"  load at the end {os.getloadavg()[0]:.1f}")
    print("what the first turn does for the first time, timed in a fresh interpreter:")
    subprocess.run([sys.executable, "-c", _FIRST_USES], check=True)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
