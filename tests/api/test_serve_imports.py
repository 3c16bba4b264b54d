"""What ``serve`` imports before it listens (issue 29, item 4: ready in seconds): not the
LLM providers' integrations, LangChain or the MCP SDK. Those load with the first model
built, with MCP servers configured, or once the service answers (the warm-up, the MCP
endpoint's own start); the tests of those adapters show them working then."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: Loaded later, never on the way to the first ``/healthz``.
DEFERRED = (
    "langchain_core",
    "langchain_openai",
    "langchain_anthropic",
    "langchain_ollama",
    "langsmith",
    "openai",
    "anthropic",
    "ollama",
    "mcp",
    "mcp_types",
)

# Everything ``serve`` does before uvicorn runs the app's start-up: the CLI's imports,
# the settings from flags, the container and the app.
_SERVE_PATH = """
import json, sys
from entrypoints.cli import main  # what `python -m entrypoints serve` imports
from entrypoints.app import create_app
from entrypoints.container import build_container
from entrypoints.settings import Settings

settings = Settings(data_dir=sys.argv[1], gns3={"url": "http://127.0.0.1:9"})
container = build_container(settings)
create_app(settings, container)
container.service()
print(json.dumps(sorted(name for name in sys.modules if "." not in name)))
"""


def _loaded(tmp_path: Path, code: str, *args: str) -> set[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("COPILOT_")}
    result = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "data"), *args],
        cwd=ROOT, env=clean | {"PYTHONPATH": str(ROOT)}, capture_output=True, text=True,
        timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return set(json.loads(result.stdout.splitlines()[-1]))


def test_the_serve_path_imports_no_llm_integration_langchain_or_mcp_sdk(tmp_path: Path) -> None:
    loaded = _loaded(tmp_path, _SERVE_PATH)
    assert "litestar" in loaded and "entrypoints" in loaded  # it did build the app
    assert sorted(loaded.intersection(DEFERRED)) == []


def test_the_public_names_still_import_and_load_what_they_need(tmp_path: Path) -> None:
    code = """
import json, sys
from adapters.llm import LangchainLanguageModel, to_langchain
from adapters.mcp import McpServerStatus, McpToolSource
assert LangchainLanguageModel.__module__ == "adapters.llm._model"
assert McpToolSource.__module__ == "adapters.mcp._source"
print(json.dumps(sorted(name for name in sys.modules if "." not in name)))
"""
    loaded = _loaded(tmp_path, code)
    assert {"langchain_core", "mcp"} <= loaded


def test_the_endpoint_spells_the_sdk_headers_as_the_sdk_does() -> None:
    from mcp.server.streamable_http import MCP_SESSION_ID_HEADER
    from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER

    from adapters.mcp import _endpoint

    assert MCP_SESSION_ID_HEADER.encode("ascii") == _endpoint._SESSION_HEADER
    assert MCP_PROTOCOL_VERSION_HEADER.encode("ascii") == _endpoint._VERSION_HEADER
