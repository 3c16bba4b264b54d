"""The chat page's weight and time to interactive, in Debian's Chromium (Playwright).

Run: ``python -m tests.benchmarks.bench_page [RUNS]``. It prints figures; it asserts
nothing.

The product runs as in production (``gns3-copilot serve`` in a subprocess, a real
gns3-server 3.0.6, the scripted OpenAI-compatible server). One session with a tool call
and an answer is made first. Each run is a fresh browser context (empty cache):

* **sign-in page**: bytes transferred (as Chromium counts them: headers and bodies as
  sent) and the time from navigation to the sign-in form being usable;
* **signed-in reload**: with the token in session storage, the time from navigation to
  the page being usable (project chosen, its session's history shown, the composer
  enabled), and every byte transferred until then (page, assets and API calls).
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from playwright.sync_api import Page, sync_playwright

from tests.fakes.copilot_service import serve_copilot
from tests.fakes.gns3_server import RealGns3Server
from tests.fakes.openai_server import Reply, ScriptedOpenAIServer, ToolCallScript

API_KEY = "sk-bench-page"
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]

_READY = """() => {
  const input = document.getElementById("message-input");
  return document.body.dataset.project && input && !input.disabled
    && document.querySelector(".message.assistant") !== null;
}"""


class Transfer:
    """Bytes Chromium received, per request kind, from the DevTools protocol."""

    def __init__(self, page: Page) -> None:
        self.kinds: dict[str, str] = {}
        self.bytes: dict[str, int] = {}
        session = page.context.new_cdp_session(page)
        session.send("Network.enable")
        session.on("Network.responseReceived", self._response)
        session.on("Network.loadingFinished", self._finished)

    def _response(self, event: dict[str, Any]) -> None:
        url = str(event["response"]["url"])
        self.kinds[event["requestId"]] = "api" if "/v3/copilot/" in url else "page"

    def _finished(self, event: dict[str, Any]) -> None:
        kind = self.kinds.get(event["requestId"], "page")
        self.bytes[kind] = self.bytes.get(kind, 0) + int(event["encodedDataLength"])


def _sign_in_page(page: Page, url: str) -> tuple[float, Transfer]:
    transfer = Transfer(page)
    page.goto(url + "/")
    page.wait_for_function("() => !document.getElementById('login-view').hidden")
    ready = float(page.evaluate("performance.now()"))
    page.wait_for_load_state("networkidle")
    return ready, transfer


def _signed_in(page: Page, url: str, token: str, user: dict[str, Any], where: list[str]) -> Any:
    page.goto(url + "/ui/favicon.svg")
    page.evaluate(
        """([token, user, project, session]) => {
          sessionStorage.setItem("copilot.token", token);
          sessionStorage.setItem("copilot.user", JSON.stringify(user));
          sessionStorage.setItem("copilot.project", JSON.stringify(project));
          sessionStorage.setItem("copilot.session", JSON.stringify(session));
        }""",
        [token, user, *where],
    )
    transfer = Transfer(page)
    page.goto(url + "/")
    page.wait_for_function(_READY, timeout=15_000)
    ready = float(page.evaluate("performance.now()"))
    return ready, transfer


def main(runs: int) -> None:
    with (
        tempfile.TemporaryDirectory() as tmp,
        RealGns3Server(console_ports=(28200, 28299), udp_ports=(28300, 28399)) as gns3,
        ScriptedOpenAIServer(api_key=API_KEY) as llm,
        serve_copilot(gns3.url, Path(tmp)) as service,
        sync_playwright() as playwright,
    ):
        token = gns3.token()
        headers = {"Authorization": f"Bearer {token}"}
        created = httpx.post(
            f"{gns3.url}/v3/projects", json={"name": f"bench-{time.time_ns()}"}, headers=headers
        )
        project = str(created.json()["project_id"])
        with service.api(token) as api:
            settings = {"provider": "openai", "model": "gpt-4o-mini", "base_url": llm.base_url}
            api.put("/llm-config", json={**settings, "api_key": API_KEY}).raise_for_status()
            llm.add(
                Reply(tool_calls=[ToolCallScript("gns3_topology_reader", {})]),
                Reply(text="Your lab is **empty**.\n\n```\nR1# show ip route\n```"),
                Reply(text="Empty lab"),
            )
            turn = api.post(
                f"/projects/{project}/chat/stream",
                json={"message": "What is in my lab?", "stream": False},
            )
            turn.raise_for_status()
            session = str(turn.json()["session_id"])
            user = api.get("/me").json()
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        login: list[tuple[float, dict[str, int]]] = []
        signed: list[tuple[float, dict[str, int]]] = []
        for _ in range(runs):
            for target, measure in ((login, "login"), (signed, "signed")):
                context = browser.new_context(service_workers="block")
                page = context.new_page()
                if measure == "login":
                    ready, transfer = _sign_in_page(page, service.url)
                else:
                    ready, transfer = _signed_in(page, service.url, token, user, [project, session])
                target.append((ready, dict(transfer.bytes)))
                context.close()
        browser.close()
    _print("sign-in page (cold cache)", login)
    _print("signed-in reload: project, session and history shown (cold cache)", signed)


def _print(title: str, figures: list[tuple[float, dict[str, int]]]) -> None:
    times = [ready for ready, _ in figures]
    page_bytes = [b.get("page", 0) for _, b in figures]
    api_bytes = [b.get("api", 0) for _, b in figures]
    print(f"{title}, {len(figures)} runs:")
    print(
        f"  time to interactive  median {statistics.median(times):6.0f} ms "
        f"(min {min(times):.0f}, max {max(times):.0f})"
    )
    print(
        f"  transferred          page and assets {statistics.median(page_bytes) / 1024:6.1f} KiB, "
        f"API {statistics.median(api_bytes) / 1024:6.1f} KiB"
    )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
