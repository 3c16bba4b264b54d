"""How long ``gns3-copilot serve`` takes to start, as a person runs it.

Run: ``python -m tests.benchmarks.bench_startup [RUNS]`` (5 by default). It prints
figures; it asserts nothing.

Each run starts ``python -m entrypoints serve`` in a fresh data directory (SQLite, a GNS3
URL nothing answers on) and measures from the process's start to: the line on stdout
with the address to open, the first ``200`` from ``/healthz`` and the first ``200`` from
``/`` (the page), then how long it takes to stop on SIGTERM; and the CPU time the process
had used when ``/healthz`` answered (on a loaded machine the wall time is mostly waiting).
Every other run waits before the SIGTERM until ``/readyz`` reports ``"warm_up": "ok"``
(the start-up warm-up has loaded what a turn's model needs: ready for chats, GNS3 aside)
and measures that, and the stop after the warm-up; the others stop during the warm-up.
Also the import time of ``entrypoints.cli`` alone (``python -X importtime``), the larger
part of the start.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from tests.fakes.copilot_service import free_port
from tests.fakes.process_output import ProcessOutput

ROOT = Path(__file__).resolve().parents[2]


def _until_ok(url: str, started: float, within: float = 120.0) -> float:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            if httpx.get(url, timeout=5).status_code == 200:
                return time.monotonic() - started
        except httpx.TransportError:
            pass
        time.sleep(0.01)
    raise RuntimeError(f"{url} did not answer 200 within {within} s")


def _until_warm(url: str, started: float, within: float = 120.0) -> float:
    """Until ``/readyz`` says the warm-up has loaded (whatever GNS3's check says)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        with contextlib.suppress(httpx.TransportError, ValueError):
            if httpx.get(url, timeout=5).json()["checks"].get("warm_up") == "ok":
                return time.monotonic() - started
        time.sleep(0.02)
    raise RuntimeError(f"{url} did not report the warm-up done within {within} s")


def one_run(wait_warm: bool = False) -> dict[str, float]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("COPILOT_")}
    port = free_port()
    with tempfile.TemporaryDirectory() as data:
        started = time.monotonic()
        process = subprocess.Popen(
            [sys.executable, "-m", "entrypoints", "serve", "--port", str(port),
             "--data-dir", data, "--gns3-url", "http://127.0.0.1:9"],
            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        output = ProcessOutput(process)
        try:
            base = f"http://127.0.0.1:{port}"
            healthz = _until_ok(base + "/healthz", started)
            cpu = _cpu_seconds(process.pid)  # what the start cost, whatever the load
            page = _until_ok(base + "/", started)
            output.wait_for("in a browser", within=120)
            address = time.monotonic() - started  # at most: it was printed before
            warm = _until_warm(base + "/readyz", started) if wait_warm else None
            stopping = time.monotonic()
            process.send_signal(signal.SIGTERM)
            output.finish(within=60)
            stop = time.monotonic() - stopping
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
    if warm is None:
        return {"healthz": healthz, "cpu": cpu, "page": page, "address": address, "stop": stop}
    return {"healthz": healthz, "cpu": cpu, "page": page, "warm": warm, "stop_warm": stop}


def _cpu_seconds(pid: int) -> float:
    """The process's CPU time so far (user + system, from ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def import_seconds() -> float:
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import entrypoints.cli"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    )  # fmt: skip
    last = done.stderr.strip().splitlines()[-1]
    match = re.search(r"\|\s*(\d+)\s*\|", last)
    return int(match.group(1)) / 1e6 if match else float("nan")


def main(argv: list[str]) -> int:
    runs = int(argv[0]) if argv else 5
    load = os.getloadavg()[0]
    print(
        f"gns3-copilot serve start-up, {runs} runs stopped during the warm-up and {runs} "
        f"after it, alternated ({os.cpu_count()} cores, load {load:.1f})"
    )
    results = [one_run(wait_warm=bool(run % 2)) for run in range(2 * runs)]
    for name, what in (
        ("healthz", "first 200 from /healthz"),
        ("cpu", "CPU time (user+sys) until then"),
        ("page", "first 200 from / (the page)"),
        ("address", "the address line seen (at most)"),
        ("warm", "/readyz says warm_up ok"),
        ("stop", "SIGTERM (during warm-up) to exit"),
        ("stop_warm", "SIGTERM (after warm-up) to exit"),
    ):
        values = sorted(result[name] for result in results if name in result)
        if not values:
            continue
        print(
            f"  {what:34s} median {statistics.median(values):5.2f} s"
            f"  min {values[0]:5.2f} s  max {values[-1]:5.2f} s"
        )
    imports = sorted(import_seconds() for _ in range(3))
    print(f"  {'import entrypoints.cli':34s} median {statistics.median(imports):5.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
