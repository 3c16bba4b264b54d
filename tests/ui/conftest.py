"""The chat page in headless Chromium against the whole product: ``python -m entrypoints
serve`` as a subprocess, a real gns3-server and the scripted OpenAI-compatible server.

Chromium is Debian's package (``/usr/bin/chromium``; ``.ci/run`` installs it), driven
by Playwright's own driver; no browser is ever downloaded. Everything is on 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, Page, Playwright, expect, sync_playwright

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


@pytest.fixture
def page(browser: Browser, service: Service) -> Iterator[Page]:
    context = browser.new_context(
        base_url=service.url, viewport={"width": 1280, "height": 800}, service_workers="block"
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
