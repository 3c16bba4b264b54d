"""SIGTERM while ``serve`` is still warming up stops it promptly.

``serve`` listens first and loads LangChain, the providers' SDKs and the MCP SDK after,
in threads (the warm-up). An import cannot be interrupted, so a shutdown must not wait
for one: the warm-up stops between its steps, its threads are not joined, and an MCP
request waiting for the SDK is answered 503. Here the warm-up is made slow on purpose:
a launcher (test-only) makes the warm-up's first model and the MCP endpoint's loading
import a module that takes minutes to import, as a large SDK would on a very busy
machine. A service that waited for the warm-up would take that long to exit; this one
exits within seconds, with status 0, no traceback and nothing logged at error level.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from tests.fakes.copilot_service import free_port
from tests.fakes.process_output import ProcessOutput

pytestmark = [pytest.mark.timeout(400), pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]

#: How long the slow module takes to import: far beyond the bound below.
SLOW_IMPORT = 240
#: SIGTERM to exit, at most (seconds in practice; the bound is generous for a loaded
#: machine, and still far below what waiting for the warm-up would take).
EXIT_WITHIN = 60

_SLOW_MODULE = f"""
import sys, time
print("slow_sdk: import started", file=sys.stderr, flush=True)
time.sleep({SLOW_IMPORT})
"""

# `gns3-copilot serve`, with the warm-up's first step and the MCP endpoint's SDK loading
# each importing `slow_sdk` first (one import: the second waits for the first's lock).
_LAUNCHER = """
import sys
sys.path.insert(0, sys.argv[1])
import adapters.llm._warm as warm
import adapters.mcp._endpoint as endpoint

built = warm.build_chat_model

def slow_build(*args, **kwargs):
    import slow_sdk  # noqa: F401
    return built(*args, **kwargs)

warm.build_chat_model = slow_build
endpoint._SDK_MODULES = ("slow_sdk", *endpoint._SDK_MODULES)

from entrypoints.cli import main
sys.exit(main(sys.argv[2:]))
"""


def _until_healthz(url: str, output: ProcessOutput, within: float) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        assert output.process.poll() is None, output.describe()
        try:
            if httpx.get(url, timeout=5).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.05)
    raise AssertionError(f"/healthz did not answer 200 within {within} s:\n{output.describe()}")


class _WaitingMcpRequest(threading.Thread):
    """An MCP request sent on a socket of its own, whose whole answer is kept."""

    def __init__(self, port: int) -> None:
        super().__init__(daemon=True)
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode()
        self.sock.sendall(
            b"POST /v3/copilot/mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b"Authorization: Bearer any-token\r\nContent-Type: application/json\r\n"
            b"Accept: application/json, text/event-stream\r\n"
            b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body
        )
        self.sock.settimeout(SLOW_IMPORT + 60)
        self.answer = b""
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            while chunk := self.sock.recv(65536):
                self.answer += chunk
        except OSError as exc:
            self.error = exc
        finally:
            self.sock.close()


def test_sigterm_while_the_warm_up_imports_exits_at_once_and_answers_the_waiting_request(
    tmp_path: Path,
) -> None:
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "slow_sdk.py").write_text(_SLOW_MODULE)
    port = free_port()
    clean = {k: v for k, v in os.environ.items() if not k.startswith("COPILOT_")}
    process = subprocess.Popen(
        [sys.executable, "-c", _LAUNCHER, str(hooks), "serve", "--port", str(port),
         "--data-dir", str(tmp_path / "data"), "--gns3-url", "http://127.0.0.1:9"],
        cwd=ROOT, env=clean | {"COPILOT_LOG_LEVEL": "info"}, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    output = ProcessOutput(process)
    try:
        output.wait_for("in a browser", within=180)
        _until_healthz(f"http://127.0.0.1:{port}/healthz", output, within=120)
        output.wait_for("slow_sdk: import started", within=120)  # the warm-up is under way
        waiting = _WaitingMcpRequest(port)
        waiting.start()
        # Answered after the request above was sent: the loop has read that one by now.
        assert httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=30).status_code == 200
        assert waiting.is_alive(), waiting.answer  # it waits for the SDK
        process.send_signal(signal.SIGTERM)
        code = output.finish(within=EXIT_WITHIN)  # fails, saying what it printed, if not
        waiting.join(30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    said = output.describe()
    assert code == 0, said
    assert "Traceback" not in said, said
    lines = [json.loads(line) for line in output.stderr.splitlines() if line.startswith("{")]
    assert not [line for line in lines if line["level"] in {"error", "critical"}], said
    events = [line["event"] for line in lines]
    assert "service_stopped" in events, said
    assert "heap_settled" not in events, said  # no full collection on the way out
    # The request that waited for the MCP SDK got an answer, not a dropped connection.
    assert not waiting.is_alive() and waiting.error is None, (waiting.error, said)
    head, _, body = waiting.answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 503"), waiting.answer
    assert json.loads(body)["error_description"] == "The service is stopping.", waiting.answer
