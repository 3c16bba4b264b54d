"""``gns3-copilot serve`` as a real subprocess on 127.0.0.1, for end-to-end and browser tests.

Usage::

    with serve_copilot(gns3_url, tmp_path, env={"COPILOT_HEARTBEAT_INTERVAL": "1"}) as copilot:
        with copilot.api(token) as api:
            api.get("/capabilities")

It starts ``python -m entrypoints serve`` (the console script's code path) on a free
port, waits (bounded) until ``/readyz`` answers 200, and stops it with SIGTERM at the end
(SIGKILL if it does not stop within 30 s). The service's output goes to ``service.log``.
If the test process dies first (even by SIGKILL), the service is killed with it.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from tests.fakes.lifeline import die_with_parent

__all__ = ["ServedCopilot", "free_port", "serve_copilot"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass(frozen=True)
class ServedCopilot:
    url: str
    log: Path
    data_dir: Path
    process: subprocess.Popen[str]

    def api(self, token: str | None = None) -> httpx.Client:
        """A client of ``/v3/copilot``, with the bearer token when one is given."""
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(base_url=f"{self.url}/v3/copilot", headers=headers, timeout=30)


@contextmanager
def serve_copilot(
    gns3_url: str,
    root: Path,
    env: Mapping[str, str] | None = None,
    ready_within: float = 180,
    probe: str = "/readyz",
) -> Iterator[ServedCopilot]:
    """``probe``: the route whose ``200`` ends the wait (``/healthz``: the process
    answers, before the start-up warm-up has loaded the LLM libraries)."""
    port = free_port()
    log = root / "service.log"
    data_dir = root / "data"
    with log.open("w") as sink:
        process = subprocess.Popen(
            [sys.executable, "-m", "entrypoints", "serve", "--host", "127.0.0.1",
             "--port", str(port), "--gns3-url", gns3_url, "--data-dir", str(data_dir)],
            stdout=sink,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            text=True,
            env={**os.environ, "COPILOT_LOG_LEVEL": "info", **(env or {})},
            # Killed with the test run, even by SIGKILL (its data is a temporary directory).
            preexec_fn=die_with_parent(signal.SIGKILL),
        )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + ready_within
        while time.monotonic() < deadline:
            assert process.poll() is None, log.read_text()
            try:
                if httpx.get(f"{url}{probe}", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        else:
            raise AssertionError("the service did not become ready:\n" + log.read_text())
        yield ServedCopilot(url, log, data_dir, process)
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
