"""LLMSettingsRepository on a real SQLite file: encrypted key, public view, one row per user."""

from __future__ import annotations

import os
import stat
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from cryptography.fernet import Fernet
from pydantic import SecretStr, ValidationError

from adapters.llm import (
    DATABASE_FILENAME,
    KEY_FILENAME,
    LLMSettings,
    LLMSettingsRepository,
    PublicLLMSettings,
    load_or_create_key,
    parse_llm_settings,
)
from copilot_core import CopilotMode
from copilot_core.errors import InvalidRequestError, StoreError

KEY = "sk-live-Qm4N7pR2sT9vW1xY3zA5bC8d"


def alice_settings(**changes: object) -> LLMSettings:
    data: dict[str, object] = {
        "model": "gpt-4o-mini",
        "base_url": "http://127.0.0.1:11434/v1/",
        "api_key": SecretStr(KEY),
        "temperature": 0.3,
        "max_tokens": 2000,
        "context_limit": 64000,
        "title_model": "gpt-4o-nano",
        "copilot_mode": "lab_automation_assistant",
    }
    data.update(changes)
    return LLMSettings.model_validate(data)


def database_bytes(data_dir: Path) -> bytes:
    """Every byte of the database, its WAL and shared-memory files."""
    return b"".join(path.read_bytes() for path in sorted(data_dir.glob(f"{DATABASE_FILENAME}*")))


@pytest.fixture
async def repository(tmp_path: Path) -> AsyncIterator[LLMSettingsRepository]:
    async with await LLMSettingsRepository.open(tmp_path) as repo:
        yield repo


async def test_put_then_read_back_public_and_secret(repository: LLMSettingsRepository) -> None:
    stored = await repository.put("alice", alice_settings())

    public = await repository.get_public("alice")
    secret = await repository.get_secret("alice")

    assert public == stored
    assert isinstance(public, PublicLLMSettings)
    assert public.api_key_set is True
    assert "api_key" not in public.model_dump()
    assert KEY not in public.model_dump_json()
    assert public.base_url == "http://127.0.0.1:11434/v1"
    assert public.copilot_mode is CopilotMode.LAB_AUTOMATION_ASSISTANT
    assert secret is not None
    assert secret.api_key is not None
    assert secret.api_key.get_secret_value() == KEY
    assert secret.model_dump(exclude={"api_key"}) == alice_settings().model_dump(
        exclude={"api_key"}
    )


async def test_unknown_user_has_no_settings(repository: LLMSettingsRepository) -> None:
    assert await repository.get_public("bob") is None
    assert await repository.get_secret("bob") is None
    assert await repository.delete("bob") is False


async def test_one_row_per_user_and_users_are_separate(repository: LLMSettingsRepository) -> None:
    await repository.put("alice", alice_settings())
    await repository.put("alice", alice_settings(model="deepseek-chat"))
    await repository.put("bob", alice_settings(model="llama3", api_key=None))

    alice = await repository.get_public("alice")
    bob = await repository.get_public("bob")
    assert alice is not None
    assert bob is not None
    assert alice.model == "deepseek-chat"
    assert bob.model == "llama3"
    assert bob.api_key_set is False


async def test_put_without_key_keeps_the_stored_key_and_empty_key_removes_it(
    repository: LLMSettingsRepository,
) -> None:
    await repository.put("alice", alice_settings())

    kept = await repository.put("alice", alice_settings(api_key=None, temperature=1.0))
    secret = await repository.get_secret("alice")
    assert kept.api_key_set is True
    assert secret is not None
    assert secret.api_key is not None
    assert secret.api_key.get_secret_value() == KEY
    assert secret.temperature == 1.0

    removed = await repository.put("alice", alice_settings(api_key=SecretStr("")))
    assert removed.api_key_set is False
    secret = await repository.get_secret("alice")
    assert secret is not None
    assert secret.api_key is None

    await repository.put("alice", alice_settings())
    replaced = await repository.put("alice", alice_settings(api_key=None), keep_api_key=False)
    assert replaced.api_key_set is False


async def test_delete_forgets_the_user(repository: LLMSettingsRepository) -> None:
    await repository.put("alice", alice_settings())
    assert await repository.delete("alice") is True
    assert await repository.get_public("alice") is None


async def test_api_key_is_nowhere_in_the_database_files(tmp_path: Path) -> None:
    async with await LLMSettingsRepository.open(tmp_path) as repository:
        await repository.put("alice", alice_settings())
        await repository.put("alice", alice_settings(temperature=0.9))  # re-encrypted
        on_disk = database_bytes(tmp_path)
        assert on_disk  # the database (and its WAL) really hold the settings
        assert b"gpt-4o-mini" in on_disk
        assert KEY.encode() not in on_disk
        assert KEY[-12:].encode() not in on_disk
    on_disk = database_bytes(tmp_path)
    assert b"gpt-4o-mini" in on_disk
    assert KEY.encode() not in on_disk


async def test_settings_survive_a_restart_with_the_generated_key(tmp_path: Path) -> None:
    async with await LLMSettingsRepository.open(tmp_path) as repository:
        await repository.put("alice", alice_settings())

    key_file = tmp_path / KEY_FILENAME
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    async with await LLMSettingsRepository.open(tmp_path) as reopened:
        secret = await reopened.get_secret("alice")
    assert secret is not None
    assert secret.api_key is not None
    assert secret.api_key.get_secret_value() == KEY


async def test_configured_key_is_used_and_no_key_file_is_written(tmp_path: Path) -> None:
    configured = SecretStr(Fernet.generate_key().decode())
    async with await LLMSettingsRepository.open(tmp_path, encryption_key=configured) as repo:
        await repo.put("alice", alice_settings())
    assert not (tmp_path / KEY_FILENAME).exists()

    async with await LLMSettingsRepository.open(tmp_path, encryption_key=configured) as repo:
        secret = await repo.get_secret("alice")
        assert secret is not None
        assert secret.api_key is not None


async def test_a_changed_encryption_key_is_a_clear_store_error(tmp_path: Path) -> None:
    async with await LLMSettingsRepository.open(tmp_path) as repository:
        await repository.put("alice", alice_settings())

    other = SecretStr(Fernet.generate_key().decode())
    async with await LLMSettingsRepository.open(tmp_path, encryption_key=other) as repository:
        public = await repository.get_public("alice")
        assert public is not None
        assert public.api_key_set is True
        with pytest.raises(StoreError, match="Set your API key again") as caught:
            await repository.get_secret("alice")
    assert KEY not in str(caught.value)


def test_key_file_with_loose_mode_is_tightened(tmp_path: Path) -> None:
    key = load_or_create_key(tmp_path)
    path = tmp_path / KEY_FILENAME
    os.chmod(path, 0o644)

    assert load_or_create_key(tmp_path) == key
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_invalid_configured_key_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not a valid Fernet key"):
        load_or_create_key(tmp_path, SecretStr("too-short"))


# ------------------------------------------------------------------------ settings
@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("temperature", -0.1),
        ("temperature", 2.01),
        ("max_tokens", 0),
        ("context_limit", 0),
        ("model", ""),
        ("base_url", "ftp://example"),
        ("provider", "gemini"),
        ("unknown", 1),
    ],
)
def test_out_of_range_settings_are_refused(field: str, value: object) -> None:
    data = {"model": "m", "api_key": KEY, field: value}
    with pytest.raises(ValidationError):
        LLMSettings.model_validate(data)
    with pytest.raises(InvalidRequestError, match=field) as caught:
        parse_llm_settings(data)
    assert KEY not in str(caught.value)


def test_bounds_are_inclusive_and_defaults_apply() -> None:
    settings = LLMSettings(model="m", temperature=2.0)
    assert LLMSettings(model="m", temperature=0.0).temperature == 0.0
    assert settings.effective_title_model == "m"
    assert settings.effective_context_limit == 32_000
    assert settings.public().api_key_set is False


def test_the_key_never_shows_in_repr_or_dumps() -> None:
    settings = alice_settings()
    assert KEY not in repr(settings)
    assert KEY not in str(settings.model_dump())
    assert KEY not in settings.model_dump_json()


async def test_concurrent_puts_of_many_users_all_land(repository: LLMSettingsRepository) -> None:
    import asyncio

    users = [f"user-{i}" for i in range(20)]
    await asyncio.gather(
        *(
            repository.put(user, alice_settings(model=f"m-{i}", api_key=None if i % 2 else KEY))
            for i, user in enumerate(users)
        )
    )
    for i, user in enumerate(users):
        public = await repository.get_public(user)
        assert public is not None
        assert public.model == f"m-{i}"
        assert public.api_key_set is (i % 2 == 0)


@pytest.mark.parametrize(
    ("provider", "base_url"),
    [
        ("openai", None),
        ("DeepSeek", "https://api.deepseek.com/v1"),
        ("ollama", "http://localhost:11434/v1"),
        ("lm-studio", None),
        ("lmstudio", "http://localhost:1234/v1"),
        ("vllm", "http://localhost:8000/v1"),
    ],
)
def test_openai_compatible_providers_default_their_base_url(
    provider: str, base_url: str | None
) -> None:
    if provider == "lm-studio":  # not a known spelling: refused with the list
        with pytest.raises(ValidationError, match="lmstudio"):
            LLMSettings(provider=provider, model="m")
        return
    settings = LLMSettings(provider=provider, model="m")
    assert settings.provider == provider.lower()
    assert settings.effective_base_url == base_url
    assert LLMSettings(provider=provider, model="m", base_url="http://h/v1").effective_base_url == (
        "http://h/v1"
    )


def test_openai_compatible_needs_a_base_url() -> None:
    with pytest.raises(ValidationError, match="needs a base_url"):
        LLMSettings(provider="openai_compatible", model="m")


async def test_put_accepts_a_request_body_mapping(repository: LLMSettingsRepository) -> None:
    stored = await repository.put(
        "alice", {"provider": "ollama", "model": "llama3.1", "api_key": KEY, "temperature": 0.5}
    )
    assert stored.api_key_set is True
    secret = await repository.get_secret("alice")
    assert secret is not None
    assert secret.api_key is not None
    assert secret.api_key.get_secret_value() == KEY
    assert secret.effective_base_url == "http://localhost:11434/v1"

    with pytest.raises(InvalidRequestError, match="temperature") as caught:
        await repository.put("alice", {"model": "x", "api_key": KEY, "temperature": 3})
    assert KEY not in str(caught.value)
    unchanged = await repository.get_public("alice")
    assert unchanged is not None
    assert unchanged.model == "llama3.1"
