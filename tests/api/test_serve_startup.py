"""``gns3-copilot serve`` as a person starts it (issue 29, item 3): one line on stdout with
the address to open, apart from the logs; a port in use or a database that cannot be
reached is one clear line, without a traceback and without starting anything first."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import httpx
from cryptography.fernet import Fernet

from tests.fakes.copilot_service import free_port
from tests.fakes.process_output import ProcessOutput

ROOT = Path(__file__).resolve().parents[2]


def serve(data_dir: Path, *flags: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("COPILOT_")}
    return subprocess.Popen(
        [sys.executable, "-m", "entrypoints", "serve", "--data-dir", str(data_dir),
         "--gns3-url", "http://127.0.0.1:9", *flags],
        cwd=ROOT, env=clean | (env or {}), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip


def test_a_port_in_use_is_one_line_and_nothing_is_started(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        process = serve(tmp_path / "data", "--port", str(port))
        output = ProcessOutput(process)
        code = output.finish(within=120)
    assert code == 1, output.describe()
    assert output.stdout == "", output.describe()
    assert output.stderr == (
        f"gns3-copilot: cannot start: 127.0.0.1:{port} is already in use (another "
        "gns3-copilot?): stop it, or choose another port with --port (COPILOT_PORT)"
    ), output.describe()
    assert not (tmp_path / "data").exists()  # refused before anything was made


def test_a_database_that_cannot_be_reached_is_said_once_without_a_traceback(
    tmp_path: Path,
) -> None:
    env = {
        "COPILOT_DATABASE_URL": "postgresql://copilot:secret@127.0.0.1:9/copilot",
        "COPILOT_SECRET_KEY": Fernet.generate_key().decode(),
    }
    process = serve(tmp_path / "data", "--port", str(free_port()), env=env)
    output = ProcessOutput(process)
    code = output.finish(within=120)
    assert code != 0, output.describe()
    said = output.stderr
    assert "Traceback" not in said and "startup failed" not in said, said
    errors = [json.loads(line) for line in said.splitlines() if line.startswith("{")]
    assert [e["event"] for e in errors if e["level"] == "error"] == ["startup_failed"], said
    last = said.splitlines()[-1]
    assert last.startswith("gns3-copilot: cannot start: Cannot connect to the PostgreSQL"), said
    assert "secret" not in said


def test_stdout_is_the_address_to_open_and_it_answers_at_once(tmp_path: Path) -> None:
    port = free_port()
    process = serve(tmp_path / "data", "--port", str(port))
    output = ProcessOutput(process)
    try:
        output.wait_for("in a browser", within=180)
        address = f"http://127.0.0.1:{port}/"
        assert output.stdout == f"gns3-copilot 0.1.0: open {address} in a browser"
        assert httpx.get(address + "healthz", timeout=30).status_code == 200
        assert httpx.get(address, timeout=30).status_code == 200  # the page
        process.send_signal(signal.SIGTERM)
        code = output.finish(within=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert code == 0, output.describe()
    lines = [json.loads(line) for line in output.stderr.splitlines() if line.startswith("{")]
    # An orderly stop logs nothing at error level; start-up's objects are frozen once warm.
    assert not [line for line in lines if line["level"] in {"error", "critical"}], output.stderr
    assert "service_stopped" in [line["event"] for line in lines]
    assert output.stdout.count("\n") == 0  # still the one line
