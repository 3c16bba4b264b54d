"""The composition root: settings, the container with fakes, shutdown, and the real CLI."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import select
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from dependency_injector import providers

from adapters.web.testing import StaticAuthenticator, StaticProjectGate
from copilot_core import ModelSelection
from copilot_core.ports import Principal
from copilot_core.testing import (
    FakeCheckProbes,
    FakeRestorePoints,
    FakeToolExecutor,
    FakeTopologySource,
    Hang,
    InMemoryCheckpointStore,
    ScriptedLanguageModel,
    StaticModelProvider,
    text_reply,
    tool_reply,
)
from entrypoints import Settings, build_container, create_app
from entrypoints.cli import CopilotServer
from tests.api.conftest import raw_events
from tests.fakes.process_output import ProcessOutput

ROOT = Path(__file__).resolve().parents[2]
PROJECT = "5e1f0000-0000-4000-8000-000000000001"


def test_settings_come_from_copilot_environment_variables_flat_names_included(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("COPILOT_HOST", "0.0.0.0")
    monkeypatch.setenv("COPILOT_PORT", "9999")
    monkeypatch.setenv("COPILOT_GNS3_URL", "http://10.0.0.5:3080")
    monkeypatch.setenv("COPILOT_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("COPILOT_SECRET_KEY", "fernet-key-value")
    monkeypatch.setenv("COPILOT_HEARTBEAT_INTERVAL", "5")
    monkeypatch.setenv("COPILOT_ABORT_ON_DISCONNECT", "true")
    monkeypatch.setenv("COPILOT_CORS_ORIGINS", '["https://ui.lab"]')
    settings = Settings()
    assert settings.web.cors_origins == ("https://ui.lab",)
    assert (settings.host, settings.port, settings.gns3.url) == (
        "0.0.0.0",
        9999,
        "http://10.0.0.5:3080",
    )
    assert settings.data_dir == tmp_path
    assert settings.web.heartbeat_interval == 5
    assert settings.web.abort_on_disconnect is True
    assert settings.secret_key is not None
    assert settings.secret_key.get_secret_value() == "fernet-key-value"
    assert "fernet-key-value" not in repr(settings)
    # Flags win over the environment.
    assert Settings(port=1234).port == 1234


def test_settings_defaults_and_validation(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("COPILOT_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("XDG_DATA_HOME", "/srv/data")
    settings = Settings()
    assert (settings.host, settings.port) == ("127.0.0.1", 8080)
    assert settings.gns3.url == "http://127.0.0.1:3080"
    assert settings.data_dir == Path("/srv/data/gns3-copilot")
    assert settings.web.heartbeat_interval == 15.0
    assert settings.web.abort_on_disconnect is False
    monkeypatch.setenv("COPILOT_GNS3_URL", "not a url")
    with pytest.raises(ValueError, match=r"gns3\.url"):
        Settings()


@pytest.fixture
def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def _serve(server: CopilotServer) -> AsyncIterator[str]:
    task = asyncio.create_task(server.serve())
    for _ in range(500):
        if server.started or task.done():
            break
        await asyncio.sleep(0.01)
    if task.done():
        task.result()
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 15)


async def test_create_app_with_overridden_providers_runs_turns_and_saves_them_on_sigterm(
    tmp_path: Path,
) -> None:
    import uvicorn

    settings = Settings(data_dir=tmp_path / "data", port=0, shutdown_grace=5)
    container = build_container(settings)
    store = InMemoryCheckpointStore()
    model = ScriptedLanguageModel()
    model.add(
        tool_reply(("show_ip", {"device": "PC1"})),
        text_reply("quick answer"),
        [*text_reply("partial answer", chunk=8)[:2], Hang()],
    )
    title = ScriptedLanguageModel(default=text_reply("Title"))

    async def fake_store() -> AsyncIterator[InMemoryCheckpointStore]:
        yield store

    gateways = container.gateways
    gateways.store.override(providers.Resource(fake_store))
    gateways.authenticator.override(
        providers.Object(StaticAuthenticator({"tok-SECRET-xyz": Principal("u1", "user")}))
    )
    gateways.projects.override(providers.Object(StaticProjectGate(opened={PROJECT})))
    gateways.tools.override(
        providers.Object(FakeToolExecutor().add("show_ip", lambda args, ctx: "10.0.0.1/24"))
    )
    gateways.probes.override(providers.Object(FakeCheckProbes()))  # the lab's checks too
    gateways.restore.override(providers.Object(FakeRestorePoints(store)))  # and its undo
    gateways.topology.override(providers.Object(FakeTopologySource()))
    gateways.models.override(
        providers.Object(StaticModelProvider(ModelSelection(model, title_model=title)))
    )
    app = create_app(settings, container)
    lines = _LogLines()
    lines.setFormatter(logging.getLogger().handlers[0].formatter)
    logging.getLogger().addHandler(lines)
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_config=None, lifespan="on")
    server = CopilotServer(config, container.service().begin_shutdown)
    server.install_signal_handlers = lambda: None  # type: ignore[method-assign]
    async for base_url in _serve(server):
        assert (tmp_path / "data").is_dir()
        async with httpx.AsyncClient(
            base_url=base_url, headers={"Authorization": "Bearer tok-SECRET-xyz"}, timeout=10
        ) as client:
            url = f"/v3/copilot/projects/{PROJECT}/chat/stream"
            quick = await client.post(url, json={"message": "hi", "stream": False})
            assert quick.json()["content"] == "quick answer"
            metrics = await client.get("/metrics")
            assert metrics.status_code == 200
            assert metrics.headers["content-type"].startswith("text/plain; version=0.0.4")
            exposed = metrics.text
            assert 'copilot_turns_total{outcome="completed"} 1.0' in exposed
            assert 'copilot_tool_calls_total{status="success",tool="show_ip"} 1.0' in exposed
            assert 'copilot_tool_seconds_count{tool="show_ip"} 1.0' in exposed
            assert "copilot_llm_call_seconds_count 2.0" in exposed
            assert 'copilot_llm_tokens_total{direction="input"} 30.0' in exposed
            async with client.stream("POST", url, json={"message": "slow"}) as r:
                session_id = r.headers["x-session-id"]
                events = []
                async for event in raw_events(r):
                    events.append(event)
                    if len(events) == 1:
                        server.handle_exit(signal.SIGTERM, None)  # as the signal would
                    if event.type == "done":
                        break
        assert [e.type for e in events][-2:] == ["abort", "done"]
        page = await store.history(PROJECT, session_id)
        assert [m.content for m in page.messages] == ["slow", "partial answer"[:16]]
        assert page.messages[-1].role.value == "assistant"
    logging.getLogger().removeHandler(lines)
    records = [json.loads(line) for line in lines.lines]
    started = [r for r in records if r["event"] == "turn_started" and r["stream"] is True]
    assert started
    finished = [r for r in records if r["event"] == "turn_finished"]
    assert [r["outcome"] for r in finished] == ["completed", "aborted"]
    assert finished[0]["tool_calls"] == 1 and finished[0]["llm_calls"] == 2
    (tool,) = [r for r in records if r["event"] == "tool_called"]
    assert (tool["tool"], tool["status"], tool["user_id"]) == ("show_ip", "success", "u1")
    assert started[0]["user_id"] == "u1"
    assert started[0]["project_id"] == PROJECT
    assert started[0]["session_id"] == session_id
    assert started[0]["request_id"]
    assert not any("tok-SECRET-xyz" in line for line in lines.lines)


class _LogLines(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))


def test_gns3_copilot_serve_starts_answers_and_stops_on_sigterm(
    tmp_path: Path, free_port: int
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("COPILOT_")}
    data_dir = tmp_path / "data"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "entrypoints",
            "serve",
            "--port",
            str(free_port),
            "--data-dir",
            str(data_dir),
            "--gns3-url",
            "http://127.0.0.1:9",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    output = ProcessOutput(process)
    try:
        base = f"http://127.0.0.1:{free_port}"
        # Wait for the service to say it listens (its address, printed once the socket is
        # bound) or to exit, however loaded the machine is.
        output.wait_for("in a browser", within=180)
        health = httpx.get(base + "/healthz", timeout=30)
        assert health.status_code == 200
        assert health.json() == {"status": "ok"}
        ready = httpx.get(base + "/readyz", timeout=10)
        assert ready.status_code == 503  # nothing listens on the GNS3 URL
        assert ready.json()["checks"]["gns3"].startswith("failed")
        refused = httpx.get(
            base + "/v3/copilot/agents",
            headers={"Authorization": "Bearer tok-SECRET-123"},
            timeout=5,
        )
        # The token cannot be checked while GNS3 is down: a 503 that says so, not a 401
        # (it was a 502 on every chat route: issue 18, item 11).
        assert refused.status_code == 503
        assert refused.headers["retry-after"] == "5"
        assert "GNS3 at http://127.0.0.1:9 cannot be reached" in refused.json()["detail"]
        assert "tok-SECRET-123" not in refused.text
        project = "0f1e2d3c-4b5a-4697-8887-a6b5c4d3e2f1"
        chat = f"{base}/v3/copilot/projects/{project}/chat"
        for method, url, body in [
            ("GET", f"{chat}/sessions", None),
            ("POST", f"{chat}/stream", {"message": "hello"}),
            ("GET", f"{chat}/sessions/{project}/history", None),
            ("DELETE", f"{chat}/sessions/{project}", None),
            ("GET", f"{base}/v3/copilot/llm-config", None),
        ]:
            answer = httpx.request(
                method, url, json=body, headers={"Authorization": "Bearer tok-2"}, timeout=10
            )
            assert answer.status_code == 503, (method, url, answer.text)
            assert answer.headers["retry-after"] == "5"
            assert "cannot be reached" in answer.json()["detail"]
        assert data_dir.is_dir()
        process.send_signal(signal.SIGTERM)
        code = output.finish(within=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    out, err = output.stdout, output.stderr
    assert code == 0, output.describe()
    lines = []
    for line in err.splitlines():
        if not line.strip():
            continue
        try:
            lines.append(json.loads(line))
        except ValueError:
            pytest.fail(
                f"the service's stderr has a line that is not JSON: {line!r}\n" + output.describe()
            )
    assert lines, "no log lines"
    events = [line["event"] for line in lines]
    assert "service_started" in events
    assert "service_stopped" in events
    # Once started, start-up's objects are out of the collector's full passes.
    settled = next(line for line in lines if line["event"] == "heap_settled")
    assert settled["frozen"] > 50_000, settled
    request = next(line for line in lines if line.get("path") == "/v3/copilot/agents")
    assert request["status"] == 503
    # Operators are told at start: where to point a browser, and that GNS3 does not answer.
    assert f"open http://127.0.0.1:{free_port}/ in a browser" in out
    warning = next(line for line in lines if line["event"] == "gns3_unreachable")
    assert warning["level"] == "warning"
    assert "http://127.0.0.1:9" in warning["reason"]
    assert request["request_id"]
    assert "tok-SECRET-123" not in err + out


def test_serve_refuses_invalid_settings_with_a_clear_message(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from entrypoints.cli import main

    monkeypatch.setenv("COPILOT_PORT", "eighty")
    assert main(["serve"]) == 2
    assert "port" in capsys.readouterr().err
    monkeypatch.delenv("COPILOT_PORT")
    assert main(["serve", "--gns3-url", "gns3.local"]) == 2
    said = capsys.readouterr().err
    # What the URL must look like, in words, not the thousand-character regex (issue 29).
    assert "gns3.url: 'gns3.local' is not a URL: it must start with http:// or https://" in said
    assert len(said) < 300, said
    assert main(["serve", "--gns3-url", "http://gns3.local:3080/v3/"]) == 2
    said = capsys.readouterr().err
    assert "gns3.url: give GNS3's own address without /v3" in said
    assert "e.g. http://gns3.local:3080" in said


def test_version_is_printed(capsys: pytest.CaptureFixture[str]) -> None:
    from entrypoints.cli import main

    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out.strip() == "gns3-copilot 0.1.0"


def test_logs_on_a_terminal_are_human_readable(tmp_path: Path, free_port: int) -> None:
    """Under a pseudo-terminal (an operator running it by hand) the lines are for people;
    piped (the test above, a service manager) they stay JSON."""
    import pty

    env = {k: v for k, v in os.environ.items() if not k.startswith("COPILOT_")}
    env["NO_COLOR"] = "1"
    controller, terminal = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "entrypoints", "serve", "--port", str(free_port),
         "--data-dir", str(tmp_path / "data"), "--gns3-url", "http://127.0.0.1:9"],
        cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=terminal, stderr=terminal,
    )  # fmt: skip
    os.close(terminal)
    seen = b""
    try:
        deadline = time.monotonic() + 30
        while b"gns3_unreachable" not in seen and time.monotonic() < deadline:
            ready, _, _ = select.select([controller], [], [], 0.5)
            if ready:
                try:
                    seen += os.read(controller, 65536)
                except OSError:  # the child closed the terminal
                    break
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(controller)
    text = seen.decode(errors="replace")
    assert f"open http://127.0.0.1:{free_port}/ in a browser" in text
    started = next(line for line in text.splitlines() if "service_started" in line)
    assert not started.lstrip().startswith("{")  # not JSON
    assert "[info" in started and "gns3_url=http://127.0.0.1:9" in started
    unreachable = next(line for line in text.splitlines() if "gns3_unreachable" in line)
    assert "[warning" in unreachable
