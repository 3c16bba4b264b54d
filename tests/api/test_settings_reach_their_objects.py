"""Every setting reaches the object it configures: the container is built from settings
taken from the environment, and the objects it builds are read back."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from copilot_core.rules import CallBounds
from entrypoints import Settings, build_container
from entrypoints.container import Container, resolve


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in list(os.environ):
        if name.startswith("COPILOT_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("COPILOT_GNS3__URL", "http://127.0.0.1:9")  # nothing answers there


async def _started(settings: Settings) -> AsyncIterator[Container]:
    container = build_container(settings)
    await container.init_resources()  # type: ignore[misc]
    try:
        yield container
    finally:
        await container.shutdown_resources()  # type: ignore[misc]


async def test_the_history_settings_reach_the_windows_the_runner_uses(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COPILOT_CHAT__HISTORY_CHARS_PER_TOKEN", "null")
    monkeypatch.setenv("COPILOT_CHAT__HISTORY_PAGE", "7")
    monkeypatch.setenv("COPILOT_CHAT__HISTORY_CACHE_SESSIONS", "0")
    async for container in _started(Settings()):
        deps = await resolve(container.web.collaborators())
        windows = deps.chat.runner.windows
        assert (windows.chars_per_token, windows.page, windows.keep_sessions) == (None, 7, 0)


async def test_the_model_wait_and_tool_set_settings_reach_the_agent_and_the_provider(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COPILOT_AGENT__CONNECT_TIMEOUT", "3")
    monkeypatch.setenv("COPILOT_AGENT__FIRST_TOKEN_TIMEOUT", "900")
    monkeypatch.setenv("COPILOT_AGENT__TOKEN_TIMEOUT", "45")
    monkeypatch.setenv("COPILOT_AGENT__WAITING_INTERVAL", "2.5")
    monkeypatch.setenv("COPILOT_AGENT__TOOL_SET", "compact")
    async for container in _started(Settings()):
        agent_settings = container.core.agent_settings()
        assert agent_settings.model_timeouts.first_token == 900
        assert agent_settings.model_timeouts.between_tokens == 45
        assert agent_settings.waiting_interval == 2.5
        assert agent_settings.tool_set == "compact"
        timeouts = (await container.gateways.models())._timeouts
        assert (timeouts.connect, timeouts.first_token, timeouts.between_tokens) == (3, 900, 45)


async def test_a_standing_run_is_bounded_as_a_tool_call_on_the_gns3_tools_own_probes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COPILOT_AGENT__TOOL_TIMEOUT", "123")
    monkeypatch.setenv("COPILOT_AGENT__MAX_RESULT_CHARS", "4567")
    async for container in _started(Settings()):
        intent = await resolve(container.core.intent())
        mcp_gate = await resolve(container.mcp_tools())
        assert intent.bounds == mcp_gate.bounds == CallBounds(123, 4567)
        tools = await resolve(container.gateways.tools())
        assert intent.probes is tools.probes  # the ones verify_intent uses
