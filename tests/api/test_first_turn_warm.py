"""The first turn after start-up is as quick as the next (issue 36, item 6): what a turn's
model loads is loaded by the start-up warm-up, and ``/readyz`` says the service is ready
for chats only once it is (a turn sent earlier waits for those imports: 1.9-2.3 s before
its first event on a busy 2-core machine, against 0.2-0.3 s for the next turn).

Not timed (the figures are ``bench_first_turn``'s): in a fresh interpreter, the service as
``serve`` builds it runs its warm-up; once ``/readyz`` says ``warm_up: ok``, one turn with
a tool call goes through the real OpenAI integration to the scripted OpenAI-compatible
server, and no module of LangChain, LangSmith, the providers' SDKs, their HTTP clients or
the tokenizer is imported by that turn (``sys.modules`` before and after).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from entrypoints import app as app_module
from tests.api.real_app import real_app

ROOT = Path(__file__).resolve().parents[2]

#: The libraries a turn's model uses: none may load during the turn itself.
LIBRARIES = (
    "adapters.llm",
    "anthropic",
    "httpx",
    "httpx2",
    "langchain",
    "langchain_anthropic",
    "langchain_core",
    "langchain_ollama",
    "langchain_openai",
    "langsmith",
    "ollama",
    "openai",
    "tiktoken",
)

_ONE_TURN_AFTER_THE_WARM_UP = r"""
import asyncio, json, sys
from pathlib import Path

from copilot_core.testing import FakeToolExecutor
from tests.api.conftest import collect_until_done
from tests.api.real_app import real_app
from tests.fakes.openai_server import Reply, ScriptedOpenAIServer, ToolCallScript

KEY = "sk-warm-4Fq9wX2e"


async def main() -> None:
    tools = FakeToolExecutor().add("show_ip", lambda args, context: "PC1: 10.0.0.1/24")
    with ScriptedOpenAIServer(api_key=KEY, default=Reply(text="Lab")) as llm:
        async with real_app(Path(sys.argv[1]), tools=tools) as app, app.client() as http:
            before_ready = set(sys.modules)
            checks = {}
            for _ in range(1200):  # at most 120 s, however loaded the machine
                checks = (await http.get("/readyz")).json()["checks"]
                if checks.get("warm_up") == "ok":
                    break
                await asyncio.sleep(0.1)
            warmed = set(sys.modules)
            stored = await http.put(
                "/v3/copilot/llm-config",
                json={"provider": "openai", "model": "gpt-warm", "base_url": llm.base_url,
                      "api_key": KEY},
            )
            assert stored.status_code == 200, stored.text
            llm.add(
                Reply(tool_calls=[ToolCallScript("show_ip", {"device": "PC1"})]),
                Reply(text="PC1 has 10.0.0.1/24."),
            )
            async with http.stream(
                "POST", app.chat_url(), json={"message": "What is PC1's address?"}
            ) as response:
                assert response.status_code == 200, await response.aread()
                events = await collect_until_done(response)
            print(json.dumps({
                "checks": checks,
                "types": [event.type for event in events],
                "warm_up_loaded": sorted(warmed - before_ready),
                "turn_loaded": sorted(set(sys.modules) - warmed),
            }))


asyncio.run(main())
"""


def _of_a_library(module: str) -> bool:
    return any(module == name or module.startswith(name + ".") for name in LIBRARIES)


@pytest.mark.timeout(300)
def test_a_turn_after_the_warm_up_loads_no_module_of_the_model_libraries(tmp_path: Path) -> None:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("COPILOT_", "LANG"))}
    result = subprocess.run(
        [sys.executable, "-c", _ONE_TURN_AFTER_THE_WARM_UP, str(tmp_path / "data")],
        cwd=ROOT, env=clean | {"PYTHONPATH": str(ROOT)}, capture_output=True, text=True,
        timeout=240, check=False,
    )  # fmt: skip
    said = f"exit {result.returncode}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr[-6000:]}"
    assert result.returncode == 0, said
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["checks"]["warm_up"] == "ok", said
    types = report["types"]
    assert "tool_start" in types and types[-1] == "done", said  # a real turn, to its end
    # The warm-up did load the OpenAI integration and LangChain (not already there)...
    assert {"langchain_openai", "langchain_core.tracers.langchain"} <= set(
        report["warm_up_loaded"]
    ), said
    # ...and the turn, everything it needed of them.
    assert [m for m in report["turn_loaded"] if _of_a_library(m)] == [], said


async def test_readyz_waits_for_the_warm_up_and_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    release = threading.Event()
    started = threading.Event()

    def slow_warm_up(stop: object = None) -> bool:  # the warm-up, held until released
        started.set()
        return release.wait(120)

    monkeypatch.setattr(app_module, "warm_up", slow_warm_up)
    async with real_app(tmp_path / "data") as app, app.client() as http:
        assert await asyncio.to_thread(started.wait, 60)
        waiting = await http.get("/readyz")
        assert waiting.status_code == 503
        check = waiting.json()["checks"]["warm_up"]
        assert check.startswith("failed: still loading the LLM libraries"), check
        assert "gns3" in waiting.json()["checks"]  # the other checks are still reported
        release.set()
        for _ in range(600):  # at most 60 s
            check = (await http.get("/readyz")).json()["checks"]["warm_up"]
            if check == "ok":
                break
            await asyncio.sleep(0.1)
        assert check == "ok"
