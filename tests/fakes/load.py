"""Load for end-to-end tests and soak benchmarks: CPU spinners and threads that stream
turns from a served copilot (``tests/fakes/copilot_service.py``)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import httpx

__all__ = ["StreamWatcher", "busy_cpus", "configure_llm"]


@contextmanager
def busy_cpus(count: int) -> Iterator[None]:
    """``count`` processes spinning on the CPU, killed on the way out."""
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    try:
        yield
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait(10)


def configure_llm(url: str, token: str, base_url: str, api_key: str) -> None:
    """Store the user's LLM settings (an OpenAI-compatible server at ``base_url``)."""
    response = httpx.put(
        f"{url}/v3/copilot/llm-config",
        json={"provider": "openai", "model": "gpt-x", "base_url": base_url, "api_key": api_key},
        headers={"Authorization": f"Bearer {token}"},
        timeout=30,
    )
    response.raise_for_status()


class StreamWatcher(threading.Thread):
    """Streams one turn and records its event types until the stream ends.

    ``read_delay`` sleeps after every event (a slow reader); ``first`` is set once an
    event arrived (or the stream failed); ``seconds`` is the time to the stream's end.
    """

    def __init__(
        self,
        url: str,
        token: str,
        project: str,
        message: str = "Explain OSPF in detail",
        read_delay: float = 0.0,
    ) -> None:
        super().__init__(daemon=True)
        self.url, self.token, self.project = url, token, project
        self.message = message
        self.read_delay = read_delay
        self.types: list[str] = []
        self.session_id: str | None = None
        self.first = threading.Event()
        #: Why the stream failed or never started (an HTTP error, another status than 200).
        self.error: BaseException | None = None
        self.seconds: float | None = None

    def run(self) -> None:
        started = time.monotonic()
        try:
            with (
                httpx.Client(base_url=self.url, timeout=120) as client,
                client.stream(
                    "POST",
                    f"/v3/copilot/projects/{self.project}/chat/stream",
                    json={"message": self.message},
                    headers={"Authorization": f"Bearer {self.token}"},
                ) as response,
            ):
                self.session_id = response.headers.get("x-session-id")
                if response.status_code != 200:  # no stream: say what was answered instead
                    body = response.read().decode(errors="replace")[:1000]
                    self.error = RuntimeError(f"HTTP {response.status_code}: {body}")
                    return
                for line in response.iter_lines():
                    if line.startswith("data: "):
                        self.types.append(json.loads(line[6:])["type"])
                        self.first.set()
                        if self.read_delay:
                            time.sleep(self.read_delay)
            self.seconds = time.monotonic() - started
        except httpx.HTTPError as exc:
            self.error = exc
        finally:
            self.first.set()
