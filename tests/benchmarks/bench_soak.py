"""Soak: the served service under many streams, and SIGTERM under load, many times.

``python -m tests.benchmarks.bench_soak [--quick]`` (also ``python -m tests.benchmarks soak``)
starts a real gns3-server, the scripted OpenAI-compatible server and ``gns3-copilot
serve`` as subprocesses on 127.0.0.1, then prints:

* **many streams**: 200 concurrent turns of a long streamed answer plus one slow
  reader (one event a second): the service's peak and final RSS, and the p50/p99 time
  from request to ``done``;
* **SIGTERM under load**: 50 times (5 with ``--quick``): two CPU spinners, ten turns
  streaming, SIGTERM: the time to exit (target: every one within 10 s), and whether
  every stream ended with ``abort`` then ``done``.

It asserts nothing about speed; it exits non-zero only when something broke.
"""

from __future__ import annotations

import argparse
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.fakes.copilot_service import serve_copilot
from tests.fakes.gns3_server import RealGns3Server
from tests.fakes.load import StreamWatcher, busy_cpus, configure_llm
from tests.fakes.openai_server import Reply, ScriptedOpenAIServer

__all__ = ["main"]

API_KEY = "sk-soak"
ANSWER = "OSPF floods link-state adverts. "


def rss_kib(pid: int) -> tuple[int, int]:
    """(peak, current) resident set size of a process, from /proc."""
    fields = dict(
        line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
    )
    return int(fields["VmHWM"].split()[0]), int(fields["VmRSS"].split()[0])


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def project(gns3: RealGns3Server, token: str) -> str:
    return gns3.new_project("soak", token)


def many_streams(gns3: RealGns3Server, token: str, lab: str, root: Path, count: int) -> bool:
    with ScriptedOpenAIServer(api_key=API_KEY) as llm:
        for _ in range(count + 1):
            llm.add(Reply(text=ANSWER * 60, chunk=8, token_delay=0.005))
        with serve_copilot(gns3.url, root) as copilot:
            configure_llm(copilot.url, token, llm.base_url, API_KEY)
            before = rss_kib(copilot.process.pid)[1]
            slow = StreamWatcher(copilot.url, token, lab, read_delay=1.0)
            slow.start()
            watchers = [StreamWatcher(copilot.url, token, lab) for _ in range(count)]
            for watcher in watchers:
                watcher.start()
            for watcher in watchers:
                watcher.join(300)
            peak, after = rss_kib(copilot.process.pid)
            times = [w.seconds for w in watchers if w.seconds is not None]
            failed = [w for w in watchers if w.error or not w.types or w.types[-1] != "done"]
            print(f"many streams: {count} turns at once plus one slow reader")
            print(f"  service RSS before   {before / 1024:8.1f} MiB")
            print(f"  service RSS peak     {peak / 1024:8.1f} MiB")
            print(f"  service RSS after    {after / 1024:8.1f} MiB")
            if times:
                print(f"  turn time p50        {statistics.median(times) * 1000:8.0f} ms")
                print(f"  turn time p99        {percentile(times, 0.99) * 1000:8.0f} ms")
            print(f"  streams that failed  {len(failed):8d}")
            print(f"  slow reader had read {len(slow.types):8d} events meanwhile")
    return not failed


def sigterm_runs(gns3: RealGns3Server, token: str, lab: str, root: Path, runs: int) -> bool:
    exits: list[float] = []
    broken = 0
    for run in range(runs):
        with ScriptedOpenAIServer(api_key=API_KEY) as llm:
            for _ in range(10):
                llm.add(Reply(text=ANSWER * 400, chunk=4, token_delay=0.01))
            where = root / f"sigterm-{run}"
            where.mkdir()
            with serve_copilot(gns3.url, where) as copilot:
                configure_llm(copilot.url, token, llm.base_url, API_KEY)
                watchers = [StreamWatcher(copilot.url, token, lab) for _ in range(10)]
                with busy_cpus(2):
                    for watcher in watchers:
                        watcher.start()
                    for watcher in watchers:
                        watcher.first.wait(60)
                    started = time.monotonic()
                    copilot.process.send_signal(signal.SIGTERM)
                    try:
                        copilot.process.wait(timeout=60)
                        exits.append(time.monotonic() - started)
                    except subprocess.TimeoutExpired:
                        exits.append(float("inf"))
                for watcher in watchers:
                    watcher.join(10)
                if any(w.types[-2:] != ["abort", "done"] for w in watchers):
                    broken += 1
        print(f"  run {run + 1:2d}: exit after {exits[-1]:6.2f} s", flush=True)
    finite = [t for t in exits if t != float("inf")]
    print(f"SIGTERM under load: {runs} runs, 2 CPU spinners, 10 streams each")
    print(f"  exit time p50        {statistics.median(exits):8.2f} s")
    print(f"  exit time max        {max(exits):8.2f} s")
    print(f"  runs over 10 s       {sum(t > 10 for t in exits):8d}   (target: 0)")
    print(f"  runs that hung       {len(exits) - len(finite):8d}")
    print(f"  runs with a stream not ending abort+done {broken:3d}")
    return len(finite) == len(exits) and not broken


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="bench_soak")
    parser.add_argument("--quick", action="store_true", help="20 streams, 5 SIGTERMs")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-soak-") as tmp, RealGns3Server() as gns3:
        token = gns3.token()
        lab = project(gns3, token)
        root = Path(tmp)
        (root / "streams").mkdir()
        ok = many_streams(gns3, token, lab, root / "streams", 20 if args.quick else 200)
        ok = sigterm_runs(gns3, token, lab, root, 5 if args.quick else 50) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
