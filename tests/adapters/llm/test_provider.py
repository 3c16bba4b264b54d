"""SettingsLanguageModelProvider: a user's stored settings become their models for a turn."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from adapters.llm import (
    LangchainLanguageModel,
    LLMSettings,
    LLMSettingsRepository,
    SettingsLanguageModelProvider,
)
from copilot_core import CopilotMode, Message
from copilot_core.errors import InvalidRequestError, LLMNotConfiguredError
from copilot_core.ports import ApprovalPolicy, CallOptions, ModelOverrides, TextDelta, UsageDelta
from tests.adapters.llm.conftest import API_KEY, settings_for
from tests.fakes.openai_server import Reply, ScriptedOpenAIServer

NOW = datetime(2026, 1, 2, tzinfo=UTC)


@pytest.fixture
async def repository(tmp_path: Path) -> AsyncIterator[LLMSettingsRepository]:
    async with await LLMSettingsRepository.open(tmp_path) as repo:
        yield repo


async def test_user_without_settings_is_not_configured(
    repository: LLMSettingsRepository,
) -> None:
    provider = SettingsLanguageModelProvider(repository)
    with pytest.raises(LLMNotConfiguredError):
        await provider.for_user("nobody", ModelOverrides())


async def test_selection_follows_the_users_settings(
    repository: LLMSettingsRepository, server: ScriptedOpenAIServer
) -> None:
    await repository.put(
        "alice",
        settings_for(
            server,
            temperature=0.4,
            max_tokens=300,
            context_limit=16_000,
            title_model="gpt-mini",
            copilot_mode=CopilotMode.LAB_AUTOMATION_ASSISTANT,
            approval=ApprovalPolicy.ALWAYS,
        ),
    )
    provider = SettingsLanguageModelProvider(repository)

    selection = await provider.for_user("alice", ModelOverrides())

    assert isinstance(selection.model, LangchainLanguageModel)
    assert selection.model.model_name == "gpt-test"
    assert isinstance(selection.title_model, LangchainLanguageModel)
    assert selection.title_model.model_name == "gpt-mini"
    assert selection.options == CallOptions(temperature=0.4, max_tokens=300)
    assert selection.context_limit == 16_000
    assert selection.copilot_mode is CopilotMode.LAB_AUTOMATION_ASSISTANT
    assert selection.approval is ApprovalPolicy.ALWAYS


async def test_turn_overrides_win_and_title_model_defaults_to_the_model(
    repository: LLMSettingsRepository, server: ScriptedOpenAIServer
) -> None:
    await repository.put("alice", settings_for(server, temperature=0.4))
    provider = SettingsLanguageModelProvider(repository)

    selection = await provider.for_user("alice", ModelOverrides(temperature=1.5, max_tokens=10))

    assert selection.options == CallOptions(temperature=1.5, max_tokens=10)
    assert selection.title_model is selection.model
    assert selection.context_limit == 32_000
    assert selection.copilot_mode is None
    assert selection.approval is ApprovalPolicy.CHANGES  # the default: changes wait


@pytest.mark.parametrize(
    "overrides",
    [ModelOverrides(temperature=2.5), ModelOverrides(temperature=-1), ModelOverrides(max_tokens=0)],
)
async def test_out_of_range_overrides_are_invalid_requests(
    repository: LLMSettingsRepository, server: ScriptedOpenAIServer, overrides: ModelOverrides
) -> None:
    await repository.put("alice", settings_for(server))
    provider = SettingsLanguageModelProvider(repository)
    with pytest.raises(InvalidRequestError):
        await provider.for_user("alice", overrides)


async def test_the_built_model_talks_to_the_users_server_with_the_stored_key(
    repository: LLMSettingsRepository,
    server: ScriptedOpenAIServer,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    await repository.put("alice", settings_for(server))
    server.add(Reply(text="Hi Alice", usage=(9, 2)))
    provider = SettingsLanguageModelProvider(repository)

    selection = await provider.for_user("alice", ModelOverrides(temperature=0.2))
    deltas = [
        d
        async for d in selection.model.stream(
            [Message.user("u1", "Hello", NOW)], [], selection.options
        )
    ]

    assert "".join(d.text for d in deltas if isinstance(d, TextDelta)) == "Hi Alice"
    assert UsageDelta(9, 2) in deltas
    (request,) = server.requests
    assert request.bearer_token == API_KEY
    assert request.body["temperature"] == 0.2
    # even with every library logging at DEBUG, the key is in no log record
    assert caplog.records
    assert API_KEY not in caplog.text


async def test_keyless_local_servers_get_a_placeholder_key(server: ScriptedOpenAIServer) -> None:
    server.api_key = None
    server.add(Reply(text="local", chunk=10))

    class Settings:
        async def get_secret(self, user_id: str) -> LLMSettings | None:
            return LLMSettings(model="llama3", base_url=server.base_url)

    selection = await SettingsLanguageModelProvider(Settings()).for_user("u", ModelOverrides())
    deltas = [d async for d in selection.model.stream([], [], selection.options)]

    assert TextDelta("local") in deltas
    assert server.requests[0].bearer_token == "not-needed"
