"""The LLM settings repository over PostgreSQL rows: keys round-trip, and a dump of the
database holds none in clear."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from cryptography.fernet import Fernet
from pydantic import SecretStr

from adapters.llm import KEY_FILENAME, LLMSettings, LLMSettingsRepository
from adapters.postgres import PostgresDatabase, PostgresLLMSettingsStore
from copilot_core.errors import StoreError
from tests.real_postgres import PostgresForTests

KEY = "sk-live-Pg7N2pR9sT4vW1xY3zA5bC8d"
SECRET_KEY = SecretStr(Fernet.generate_key().decode())


def settings(**changes: object) -> LLMSettings:
    data: dict[str, object] = {
        "model": "gpt-4o-mini",
        "api_key": SecretStr(KEY),
        "temperature": 0.3,
        "title_model": "gpt-4o-nano",
    }
    data.update(changes)
    return LLMSettings.model_validate(data)


@pytest.fixture
async def database(
    postgres: PostgresForTests, postgres_schema: str
) -> AsyncIterator[PostgresDatabase]:
    async with PostgresDatabase(postgres.url, schema=postgres_schema) as opened:
        yield opened


async def test_settings_and_key_round_trip_through_postgres_and_no_file_is_written(
    database: PostgresDatabase, tmp_path: Path
) -> None:
    rows = PostgresLLMSettingsStore(database)
    repository = await LLMSettingsRepository.open(tmp_path, encryption_key=SECRET_KEY, rows=rows)
    stored = await repository.put("alice", settings())
    assert stored.api_key_set is True
    secret = await repository.get_secret("alice")
    assert secret is not None
    assert secret.api_key is not None
    assert secret.api_key.get_secret_value() == KEY
    kept = await repository.put("alice", settings(api_key=None, temperature=1.0))
    assert kept.api_key_set is True
    await repository.close()  # the rows' database is the caller's: still usable
    assert (await rows.get("alice")) is not None
    assert os.listdir(tmp_path) == []  # neither a SQLite file nor a key file


async def test_a_replica_with_the_same_key_reads_what_another_wrote(
    postgres: PostgresForTests, postgres_schema: str, database: PostgresDatabase, tmp_path: Path
) -> None:
    first = await LLMSettingsRepository.open(
        tmp_path / "a", encryption_key=SECRET_KEY, rows=PostgresLLMSettingsStore(database)
    )
    await first.put("alice", settings())
    async with PostgresDatabase(postgres.url, schema=postgres_schema) as other:
        second = await LLMSettingsRepository.open(
            tmp_path / "b", encryption_key=SECRET_KEY, rows=PostgresLLMSettingsStore(other)
        )
        secret = await second.get_secret("alice")
        assert secret is not None
        assert secret.api_key is not None
        assert secret.api_key.get_secret_value() == KEY
        stranger = await LLMSettingsRepository.open(
            tmp_path / "c", rows=PostgresLLMSettingsStore(other)
        )  # its own generated key
        assert (tmp_path / "c" / KEY_FILENAME).exists()
        with pytest.raises(StoreError, match="Set your API key again"):
            await stranger.get_secret("alice")


async def test_no_api_key_is_in_a_dump_of_the_database(
    postgres: PostgresForTests, postgres_schema: str, database: PostgresDatabase, tmp_path: Path
) -> None:
    repository = await LLMSettingsRepository.open(
        tmp_path, encryption_key=SECRET_KEY, rows=PostgresLLMSettingsStore(database)
    )
    await repository.put("alice", settings())
    await repository.put("bob", settings(model="llama3.1", api_key=SecretStr(KEY[::-1])))
    await repository.put("alice", settings(temperature=0.9))  # re-encrypted
    dump = postgres.dump(postgres_schema)
    assert "gpt-4o-mini" in dump  # the dump really holds the settings
    assert "llama3.1" in dump
    for secret in (KEY, KEY[::-1], KEY[-12:], KEY[::-1][-12:]):
        assert secret not in dump
    assert SECRET_KEY.get_secret_value() not in dump
