"""The session's router lab: one Docker daemon, the FRR image, one gns3-server with the
FRR and Linux host templates. A machine that cannot run it skips, saying which check failed.

The lab tests over HTTP share the served service: ``gns3-copilot serve`` (a subprocess on
127.0.0.1) against the lab's gns3-server, and the scripted OpenAI-wire model its users
configure with ``API_KEY``: each module gets its own of both."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from tests.fakes.copilot_service import ServedCopilot, serve_copilot
from tests.fakes.openai_server import ScriptedOpenAIServer
from tests.lab.router_lab import LabUnavailableError, RouterLab

#: The key the scripted model asks for (a module's users put it in their LLM config).
API_KEY = "sk-router-lab-key"


@pytest.fixture(scope="session")
def router_lab() -> Iterator[RouterLab]:
    lab = RouterLab()
    started = time.monotonic()
    try:
        lab.start()
    except LabUnavailableError as exc:
        pytest.skip(f"the router lab cannot run on this machine: {exc}")
    lab.figures["lab_ready_s"] = time.monotonic() - started
    print("\nrouter lab ready:", {k: round(v, 2) for k, v in lab.figures.items()}, flush=True)
    try:
        yield lab
    finally:
        lab.stop()


@pytest.fixture(scope="module")
def llm() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer(api_key=API_KEY) as server:
        yield server


@pytest.fixture(scope="module")
def service(
    router_lab: RouterLab, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServedCopilot]:
    root = tmp_path_factory.mktemp("served-copilot")
    # GNS3 requests that create and start Docker nodes take seconds on a loaded machine.
    env = {"COPILOT_HEARTBEAT_INTERVAL": "2", "COPILOT_GNS3_TIMEOUT": "120"}
    with serve_copilot(router_lab.url, root, env=env) as served:
        yield served
