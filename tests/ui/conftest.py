"""The chat page in headless Chromium against the whole product: ``python -m entrypoints
serve`` as a subprocess, a real gns3-server and the scripted OpenAI-compatible server.

Chromium is Debian's package (``/usr/bin/chromium``; ``.ci/run`` installs it), driven
by Playwright's own driver; no browser is ever downloaded. Everything is on 127.0.0.1.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Page, Playwright, ViewportSize, expect, sync_playwright

from tests.fakes.copilot_service import ServedCopilot as Service
from tests.fakes.copilot_service import serve_copilot
from tests.fakes.gns3_server import RealGns3Server
from tests.fakes.openai_server import ScriptedOpenAIServer

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]
API_KEY = "sk-ui-very-secret-key"
expect.set_options(timeout=10_000)

SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"


@dataclass
class Lab:
    """The GNS3 side: the admin's token, an opened and a closed project."""

    token: str
    opened: str
    opened_name: str
    closed: str
    closed_name: str


@pytest.fixture(scope="package")
def llm() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer(api_key=API_KEY) as server:
        yield server


@pytest.fixture(scope="package")
def service(
    gns3_server: RealGns3Server, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Service]:
    root = tmp_path_factory.mktemp("ui-service")
    agent = Path(__file__).parents[1] / "adapters" / "subprocess_agent" / "agents"
    external = {  # a second agent, so the page offers the agent selector
        "id": "example",
        "name": "Example agent",
        "description": "Speaks every spec 002 event.",
        "command": [sys.executable, str(agent / "well_behaved.py")],
        "cwd": str(agent),
        "time_limit": 30,
    }
    env = {
        "COPILOT_HEARTBEAT_INTERVAL": "0.5",
        "COPILOT_AGENTS": json.dumps([external]),
        "COPILOT_AGENT__WAITING_INTERVAL": "0.3",  # a slow model's first token is seen waited for
    }
    with serve_copilot(gns3_server.url, root, env=env) as served:
        yield served


@pytest.fixture(scope="package")
def lab(gns3_server: RealGns3Server) -> Iterator[Lab]:
    token = gns3_server.token()
    headers = {"Authorization": f"Bearer {token}"}
    suffix = time.time_ns() % 10**9
    created: dict[str, tuple[str, str]] = {}
    for kind in ("opened", "closed"):
        name = f"ui-{kind}-{suffix}"
        response = httpx.post(
            f"{gns3_server.url}/v3/projects", json={"name": name}, headers=headers, timeout=30
        )
        assert response.status_code == 201, response.text
        created[kind] = (str(response.json()["project_id"]), name)
    closing = httpx.post(
        f"{gns3_server.url}/v3/projects/{created['closed'][0]}/close", headers=headers, timeout=30
    )
    assert closing.status_code in (200, 201, 204), closing.text
    try:
        yield Lab(token, *created["opened"], *created["closed"])
    finally:
        for project_id, _ in created.values():
            httpx.delete(f"{gns3_server.url}/v3/projects/{project_id}", headers=headers, timeout=30)


@pytest.fixture(scope="package")
def configured(service: Service, lab: Lab, llm: ScriptedOpenAIServer) -> Lab:
    """The admin's LLM settings point at the scripted server."""
    with service.api(lab.token) as api:
        stored = api.put(
            "/llm-config",
            json={
                "provider": "openai",
                "model": "gpt-ui",
                "base_url": llm.base_url,
                "api_key": API_KEY,
            },
        )
        assert stored.status_code == 200, stored.text
    return lab


@pytest.fixture(scope="package")
def playwright() -> Iterator[Playwright]:
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: install Debian's chromium (.ci/run does it)")
    with sync_playwright() as running:
        yield running


@pytest.fixture(scope="package")
def browser(playwright: Playwright) -> Iterator[Browser]:
    # launch() gives every run a fresh, temporary user-data directory.
    browser = playwright.chromium.launch(
        executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True, timeout=30_000
    )
    try:
        yield browser
    finally:
        browser.close()


@contextlib.contextmanager
def new_page(
    browser: Browser, base_url: str, viewport: ViewportSize, *, has_touch: bool = False
) -> Iterator[Page]:
    """A page in a browser context of its own (no service worker, 10 s waits), closed
    afterwards; the test fails if the page threw a JavaScript error."""
    context = browser.new_context(
        base_url=base_url, viewport=viewport, service_workers="block", has_touch=has_touch
    )
    context.set_default_timeout(10_000)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    try:
        yield page
    finally:
        context.close()
    assert not errors, f"JavaScript errors on the page: {errors}"


@pytest.fixture
def page(browser: Browser, service: Service) -> Iterator[Page]:
    with new_page(browser, service.url, {"width": 1280, "height": 800}) as page:
        yield page


@contextlib.contextmanager
def scripted_stream(events: list[tuple[float, dict[str, Any]]], turn: str) -> Iterator[str]:
    """A server on 127.0.0.1 that answers any POST as the service streams a turn: each of
    ``events`` (its delay in seconds, its wire data) one SSE event, ids ``{turn}:1``… .
    Its URL while the block runs."""

    class ScriptedTurn(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.end_headers()
            for seq, (delay, data) in enumerate(events, start=1):
                time.sleep(delay)
                self.wfile.write(f"id: {turn}:{seq}\ndata: {json.dumps(data)}\n\n".encode())
                self.wfile.flush()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), ScriptedTurn)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/stream"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def sign_in(page: Page, username: str = "admin", password: str = "admin") -> None:
    page.goto("/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Sign in").click()
    page.locator("#app-view").wait_for(state="visible")


def choose_project(page: Page, project_id: str) -> None:
    page.locator(f"#project-select option[value='{project_id}']").wait_for(state="attached")
    page.get_by_label("GNS3 project").select_option(project_id)
    # The page marks the project it shows once its sessions are loaded.
    page.locator(f"body[data-project='{project_id}']").wait_for(state="attached")


def screenshot(page: Page, name: str) -> None:
    """Save a screenshot: into ``docs/screenshots`` when ``COPILOT_UI_SCREENSHOTS=1`` (to
    refresh the documentation), else into a temporary directory (tests leave the tree clean)."""
    if os.environ.get("COPILOT_UI_SCREENSHOTS") == "1":
        target = SCREENSHOTS
    else:
        target = Path(tempfile.gettempdir()) / "gns3-copilot-ui-screenshots"
    target.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(target / f"{name}.png"))
