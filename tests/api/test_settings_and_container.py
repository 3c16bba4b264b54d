"""Settings in sections (flags, ``COPILOT_<SECTION>__<FIELD>``, the old flat names), and
the containers that carry every one of them to the component it tunes."""

from __future__ import annotations

import argparse
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from dependency_injector import providers

from adapters.gns3 import ConsoleRunner
from adapters.sqlite import SqliteCheckpointStore
from adapters.web.testing import StaticAuthenticator, StaticProjectGate
from copilot_core import CopilotMode, ModelSelection
from copilot_core.ports import Principal
from copilot_core.rules import MAX_MESSAGE_CHARS
from copilot_core.testing import (
    FakeCheckProbes,
    FakeRestorePoints,
    FakeToolExecutor,
    FakeTopologySource,
    InMemoryCheckpointStore,
    ScriptedLanguageModel,
    StaticModelProvider,
    text_reply,
    tool_reply,
)
from entrypoints import Settings, build_container, create_app
from entrypoints.cli import CopilotServer, main
from entrypoints.container import resolve
from entrypoints.settings import (
    FLAT_ALIASES,
    add_setting_flags,
    section_fields,
    settings_from_flags,
)

PROJECT = "5e1f0000-0000-4000-8000-000000000002"


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in list(os.environ):
        if name.startswith("COPILOT_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))


def _flags(*argv: str) -> Settings:
    parser = argparse.ArgumentParser()
    add_setting_flags(parser)
    return settings_from_flags(parser.parse_args(argv))


def test_sectioned_environment_names_set_every_section(monkeypatch: pytest.MonkeyPatch) -> None:
    values = {
        "COPILOT_GNS3__URL": "http://gns3.lab:3080",
        "COPILOT_GNS3__CAPTURE_MAX_SECONDS": "12",
        "COPILOT_CONSOLE__MAX_OUTPUT_CHARS": "5000",
        "COPILOT_AGENT__MAX_LLM_CALLS": "7",
        "COPILOT_AGENT__TOOL_TIMEOUT": "45",
        "COPILOT_CHAT__MAX_MESSAGE_CHARS": "4000",
        "COPILOT_CHAT__HISTORY_CHARS_PER_TOKEN": "null",
        "COPILOT_WEB__HEARTBEAT_INTERVAL": "2.5",
        "COPILOT_WEB__CORS_ORIGINS": '["https://ui.lab"]',
        "COPILOT_STORE__SYNCHRONOUS": "FULL",
    }
    for name, value in values.items():
        monkeypatch.setenv(name, value)
    settings = Settings()
    assert settings.gns3.url == "http://gns3.lab:3080"
    assert settings.gns3.capture_max_seconds == 12
    assert settings.console.max_output_chars == 5000
    assert (settings.agent.max_llm_calls, settings.agent.tool_timeout) == (7, 45)
    assert settings.chat.max_message_chars == 4000
    assert settings.chat.history_chars_per_token is None
    assert settings.web.heartbeat_interval == 2.5
    assert settings.web.cors_origins == ("https://ui.lab",)
    assert settings.store.synchronous == "FULL"


def test_the_flat_names_of_earlier_versions_are_aliases_the_sectioned_names_beat(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COPILOT_HEARTBEAT_INTERVAL", "5")
    monkeypatch.setenv("COPILOT_COMMAND_TIMEOUT", "9")
    monkeypatch.setenv("COPILOT_APPROVAL_TIMEOUT", "60")
    monkeypatch.setenv("COPILOT_GNS3_URL", "http://old.lab:3080")
    monkeypatch.setenv("COPILOT_GNS3__URL", "http://new.lab:3080")
    settings = Settings()
    assert settings.web.heartbeat_interval == 5
    assert settings.console.command_timeout == 9
    assert settings.chat.approval_timeout == 60
    assert settings.gns3.url == "http://new.lab:3080"
    for alias, (section, field) in FLAT_ALIASES.items():
        assert field in section_fields(type(getattr(settings, section))), alias


def test_a_misspelt_or_invalid_setting_stops_with_its_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COPILOT_WEB__HEARTBEAT_INTERVALL", "5")
    with pytest.raises(ValueError, match="heartbeat_intervall"):
        Settings()
    monkeypatch.delenv("COPILOT_WEB__HEARTBEAT_INTERVALL")
    monkeypatch.setenv("COPILOT_CHAT__MAX_MESSAGE_CHARS", str(MAX_MESSAGE_CHARS + 1))
    with pytest.raises(ValueError, match=r"chat\.max_message_chars"):
        Settings()


def test_every_setting_has_a_flag_and_flags_beat_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COPILOT_WEB__HEARTBEAT_INTERVAL", "5")
    monkeypatch.setenv("COPILOT_WEB__AUTH_CACHE_TTL", "7")
    settings = _flags(
        "--host", "0.0.0.0", "--port", "1",
        "--gns3-url", "http://flag.lab:3080", "--gns3-timeout", "4",
        "--console-command-timeout", "11",
        "--agent-max-llm-calls", "3",
        "--chat-max-message-chars", "900", "--chat-approval-timeout", "30",
        "--web-heartbeat-interval", "9", "--web-abort-on-disconnect", "true",
        "--store-max-open", "8",
    )  # fmt: skip
    assert (settings.host, settings.port) == ("0.0.0.0", 1)
    assert (settings.gns3.url, settings.gns3.timeout) == ("http://flag.lab:3080", 4)
    assert settings.console.command_timeout == 11
    assert settings.agent.max_llm_calls == 3
    assert (settings.chat.max_message_chars, settings.chat.approval_timeout) == (900, 30)
    assert settings.web.heartbeat_interval == 9  # the flag, not the environment
    assert settings.web.auth_cache_ttl == 7  # the environment, no flag given
    assert settings.web.abort_on_disconnect is True
    assert settings.store.max_open == 8
    assert _flags("--chat-history-chars-per-token", "null").chat.history_chars_per_token is None
    parser = argparse.ArgumentParser()
    add_setting_flags(parser)
    flags = {option for action in parser._actions for option in action.option_strings}
    for section in ("gns3", "console", "agent", "chat", "web", "store"):
        for field in section_fields(type(getattr(settings, section))):
            if (section, field) == ("gns3", "password"):
                continue
            assert f"--{section}-{field.replace('_', '-')}" in flags, (section, field)
    # A key or a password on a command line is visible to every user of the machine.
    assert "--secret-key" not in flags
    assert "--gns3-password" not in flags


def test_defaults_are_the_components_own() -> None:
    """A section is its component's settings type (tests/unit/test_settings_declared_once.py);
    the console's defaults are the runner's own, and a store built without settings keeps
    what the service's default ``store`` section says."""
    settings = Settings()
    runner = ConsoleRunner()
    assert settings.console.command_timeout == runner.command_timeout
    assert settings.console.max_output_chars == runner.max_output_chars
    assert settings.chat.max_message_chars == MAX_MESSAGE_CHARS
    store = SqliteCheckpointStore(Path("/unused"))
    assert (store.max_open, store.idle_timeout) == (
        settings.store.max_open,
        settings.store.idle_timeout,
    )


def test_serve_reports_a_bad_flag_value_with_the_setting_name(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["serve", "--chat-max-message-chars", "0"]) == 2
    assert "chat.max_message_chars" in capsys.readouterr().err


async def test_one_provider_builds_what_the_web_app_needs_with_every_section_applied(
    tmp_path: Path,
) -> None:
    settings = Settings(
        data_dir=tmp_path,
        gns3={"url": "http://127.0.0.1:9", "timeout": 2},
        console={"command_timeout": 12},
        chat={"max_message_chars": 321, "max_page": 50, "approval_timeout": 42},
        web={"heartbeat_interval": 0, "auth_cache_ttl": 5},
        store={"max_open": 3, "busy_timeout": 1.5},
    )
    container = build_container(settings)
    await container.init_resources()  # type: ignore[misc]
    try:
        deps = await resolve(container.web.collaborators())
        assert deps.chat.settings.max_message_chars == 321
        assert deps.chat.settings.max_page == 50
        assert deps.chat.runner.settings.approval_timeout == 42
        assert set(deps.readiness) == {"store", "gns3"}
        await deps.readiness["store"]()  # the data directory is writable
        store = await resolve(container.gateways.store())
        assert (store.max_open, store.busy_timeout, store.data_dir) == (3, 1.5, tmp_path)
        console = await resolve(container.gateways.console())
        assert console.command_timeout == 12
        web = container.web.settings()
        assert web.heartbeat is None  # 0 turns heartbeats off
        assert web.auth_cache_ttl == 5
        assert await resolve(container.web.collaborators()) is deps
    finally:
        await container.shutdown_resources()  # type: ignore[misc]


@pytest.fixture
async def step_budget_of_one(tmp_path: Path) -> AsyncIterator[str]:
    """The real composition root, with ``--agent-max-llm-calls 1`` and a model that
    always wants a tool, behind a real server."""
    settings = _flags("--data-dir", str(tmp_path), "--port", "0", "--agent-max-llm-calls", "1")
    container = build_container(settings)
    store = InMemoryCheckpointStore()

    async def fake_store() -> AsyncIterator[InMemoryCheckpointStore]:
        yield store

    model = ScriptedLanguageModel(default=tool_reply(("show_ip", {"device": "PC1"})))
    title = ScriptedLanguageModel(default=text_reply("Title"))
    gateways = container.gateways
    gateways.store.override(providers.Resource(fake_store))
    gateways.authenticator.override(
        providers.Object(StaticAuthenticator({"tok": Principal("u1", "user")}))
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
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_config=None, lifespan="on")
    server = CopilotServer(config, container.service().begin_shutdown)
    server.install_signal_handlers = lambda: None  # type: ignore[method-assign]
    import asyncio

    task = asyncio.create_task(server.serve())
    # Until it listens (or fails), however loaded the machine: 5 s was once not enough.
    deadline = asyncio.get_running_loop().time() + 120
    while not (server.started or task.done()):
        assert asyncio.get_running_loop().time() < deadline, "the server did not start"
        await asyncio.sleep(0.01)
    if task.done():
        task.result()  # its start-up failure, as raised
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 15)


async def test_the_agent_step_budget_flag_reaches_the_agent(step_budget_of_one: str) -> None:
    async with httpx.AsyncClient(
        base_url=step_budget_of_one, headers={"Authorization": "Bearer tok"}, timeout=60
    ) as client:
        reply = await client.post(
            f"/v3/copilot/projects/{PROJECT}/chat/stream",
            json={"message": "what is PC1's address?", "stream": False},
        )
    assert reply.status_code == 200, reply.text
    body: dict[str, Any] = reply.json()
    assert body["stats"]["llm_calls"] == 1
    assert body["messages"][-1]["metadata"].get("step_limit") is True


async def test_the_agents_guards_and_the_platform_guides_reach_the_agent(tmp_path: Path) -> None:
    settings = _flags(
        "--data-dir",
        str(tmp_path),
        "--agent-argument-chars",
        "500",
        "--agent-tool-argument-limits",
        '{"execute_vpcs_commands": {"max_items": 3}}',
        "--agent-tool-call-interval",
        "0",
    )
    container = build_container(settings)
    await container.init_resources()  # type: ignore[misc]
    try:
        await resolve(container.web.collaborators())
        agent_settings = container.core.agent_settings()
        limits = agent_settings.argument_limits
        assert (limits.default.max_chars, limits.default.max_items) == (500, 64)
        vpcs = limits.of("execute_vpcs_commands")
        assert (vpcs.max_chars, vpcs.max_items) == (500, 3)
        assert agent_settings.tool_call_coalescing.interval == 0
        assert agent_settings.tool_call_coalescing.growth == 0
        guides = (await resolve(container.core.agent())).prompts.platforms
        vpcs_guide = guides["vpcs"]
        assert not isinstance(vpcs_guide, str)  # lines, each kept when its tools are offered
        assert "ip <address>/<prefix> <gateway>" in vpcs_guide[0].text
        # The other topics named, read with the skills tool (a line that needs it).
        assert "troubleshooting" in vpcs_guide[-1].text
        assert vpcs_guide[-1].tools == ("device_skills",)
        assert {"cisco_ios", "frr", "juniper_junos"} <= set(guides)
    finally:
        await container.shutdown_resources()  # type: ignore[misc]


async def test_one_gate_one_clock_and_one_id_factory_serve_every_caller(tmp_path: Path) -> None:
    settings = Settings(
        data_dir=tmp_path,
        gns3={"url": "http://127.0.0.1:9"},
        agent={"tool_timeout": 77, "max_result_chars": 4321, "progress_interval": 0.5},
    )
    container = build_container(settings)
    await container.init_resources()  # type: ignore[misc]
    try:
        deps = await resolve(container.web.collaborators())
        gate = await resolve(container.core.gate())
        agent = await resolve(container.core.agent())
        assert agent.tools is gate
        assert await resolve(container.mcp_tools()) is gate  # no MCP servers: the same tools
        # The agent's tools end with the drills' practice_drill, over the service's drills.
        assert gate.specs(CopilotMode.TEACHING_ASSISTANT)[-1].name == "practice_drill"
        assert deps.drills is not None and deps.drills.results is await resolve(
            container.gateways.drill_results()
        )
        assert (gate.timeout, gate.max_result_chars, gate.progress_interval) == (77, 4321, 0.5)
        assert deps.rollback.bounds == gate.bounds == container.core.call_bounds()
        assert deps.intent.bounds == gate.bounds
        assert container.core.clock() is container.gateways.clock()
        assert container.core.ids() is container.gateways.ids()
    finally:
        await container.shutdown_resources()  # type: ignore[misc]
