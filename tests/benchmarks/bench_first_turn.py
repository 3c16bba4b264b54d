"""How long the first turn after ``serve`` takes before anything streams, against later turns.

Run: ``python -m tests.benchmarks.bench_first_turn [TURNS]``. It prints figures; it asserts
nothing.

The product runs as in production: ``gns3-copilot serve`` in a subprocess, a real
gns3-server 3.0.6, and the scripted OpenAI-compatible server (real wire protocol, zero
delay). Each turn is a new session whose model first calls ``gns3_topology_reader``, then
answers; the figure is the time from the request to the first event of the stream, to the
first answer token, and to ``done``.

A second part explains the first turn's extra time: in a fresh interpreter that has
imported what ``serve`` imports at start-up, it times each thing the first turn does for
the first time (the lazy ``langchain_openai`` import, the first ``ChatOpenAI``, the
tokenizer, the TextFSM template index).
"""

from __future__ import annotations

import json
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
from adapters.gns3._parsing import ShowParser
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


def main(turns: int) -> None:
    with (
        tempfile.TemporaryDirectory() as tmp,
        RealGns3Server(console_ports=(28000, 28099), udp_ports=(28100, 28199)) as gns3,
        ScriptedOpenAIServer(api_key=API_KEY) as llm,
        serve_copilot(gns3.url, Path(tmp)) as service,
    ):
        token = gns3.token()
        created = httpx.post(
            f"{gns3.url}/v3/projects",
            json={"name": f"bench-{time.time_ns()}"},
            headers={"Authorization": f"Bearer {token}"},
        )
        project = str(created.json()["project_id"])
        with service.api(token) as api:
            settings = {"provider": "openai", "model": "gpt-4o-mini", "base_url": llm.base_url}
            api.put("/llm-config", json={**settings, "api_key": API_KEY}).raise_for_status()
            figures = [_turn(api, project, llm) for _ in range(turns)]
    first, *later = figures
    print(f"first turn after serve ({turns} turns, new session each, real GNS3, zero-delay LLM):")
    print(
        f"  turn 1:      first event {first[0] * 1000:7.0f} ms, first token "
        f"{first[1] * 1000:7.0f} ms, done {first[2] * 1000:7.0f} ms"
    )
    for label, index in (("first event", 0), ("first token", 1), ("done", 2)):
        values = [f[index] * 1000 for f in later]
        print(
            f"  turns 2-{turns} {label:<12} median {statistics.median(values):5.0f} ms "
            f"(min {min(values):.0f}, max {max(values):.0f})"
        )
    print("what the first turn does for the first time, timed in a fresh interpreter:")
    subprocess.run([sys.executable, "-c", _FIRST_USES], check=True)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 6)
