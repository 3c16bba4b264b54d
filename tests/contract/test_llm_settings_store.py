"""The LLMSettingsStore contract: the same assertions on every store of settings rows.

The rows are opaque to a store: settings JSON and ciphertext bytes in, the same out.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest

from adapters.llm import SqliteLLMSettingsStore
from adapters.postgres import PostgresDatabase, PostgresLLMSettingsStore
from copilot_core.ports import LLMSettingsRecord, LLMSettingsStore

RowsFactory = Callable[
    [pytest.FixtureRequest, Path], contextlib.AbstractAsyncContextManager[LLMSettingsStore]
]
T0 = datetime(2026, 3, 1, tzinfo=UTC)
CIPHER = b"gAAAAAB\x00\xff-not-really-fernet"


@contextlib.asynccontextmanager
async def _sqlite(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[LLMSettingsStore]:
    rows = await SqliteLLMSettingsStore.open(tmp_path / "copilot.db")
    try:
        yield rows
    finally:
        await rows.close()


@contextlib.asynccontextmanager
async def _postgres(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[LLMSettingsStore]:
    url = request.getfixturevalue("postgres").url
    schema = request.getfixturevalue("postgres_schema")
    async with PostgresDatabase(url, schema=schema, max_size=4) as database:
        yield PostgresLLMSettingsStore(database)


STORES: dict[str, RowsFactory] = {"postgres": _postgres, "sqlite": _sqlite}


@pytest.fixture(params=sorted(STORES))
async def rows(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[LLMSettingsStore]:
    async with STORES[request.param](request, tmp_path) as made:
        yield made


async def test_a_row_comes_back_byte_for_byte(rows: LLMSettingsStore) -> None:
    assert await rows.put("alice", '{"model": "m", "t": "é"}', CIPHER, T0, keep_api_key=False)
    assert await rows.get("alice") == LLMSettingsRecord('{"model": "m", "t": "é"}', CIPHER)


async def test_unknown_user_has_no_row(rows: LLMSettingsStore) -> None:
    assert await rows.get("bob") is None
    assert await rows.delete("bob") is False


async def test_keeping_the_key_replaces_only_the_settings(rows: LLMSettingsStore) -> None:
    await rows.put("alice", '{"v": 1}', CIPHER, T0, keep_api_key=True)
    assert await rows.put("alice", '{"v": 2}', None, T0, keep_api_key=True) is True
    assert await rows.get("alice") == LLMSettingsRecord('{"v": 2}', CIPHER)


async def test_not_keeping_the_key_replaces_or_removes_it(rows: LLMSettingsStore) -> None:
    await rows.put("alice", '{"v": 1}', CIPHER, T0, keep_api_key=True)
    assert await rows.put("alice", '{"v": 2}', b"other", T0, keep_api_key=True) is True
    assert await rows.get("alice") == LLMSettingsRecord('{"v": 2}', b"other")
    assert await rows.put("alice", '{"v": 3}', None, T0, keep_api_key=False) is False
    assert await rows.get("alice") == LLMSettingsRecord('{"v": 3}', None)


async def test_a_new_row_kept_without_a_key_has_none(rows: LLMSettingsStore) -> None:
    assert await rows.put("carol", '{"v": 1}', None, T0, keep_api_key=True) is False
    assert await rows.get("carol") == LLMSettingsRecord('{"v": 1}', None)


async def test_users_are_separate_and_delete_forgets_one(rows: LLMSettingsStore) -> None:
    await rows.put("alice", '{"who": "a"}', CIPHER, T0, keep_api_key=False)
    await rows.put("bob", '{"who": "b"}', None, T0, keep_api_key=False)
    assert await rows.delete("alice") is True
    assert await rows.get("alice") is None
    assert await rows.get("bob") == LLMSettingsRecord('{"who": "b"}', None)


async def test_concurrent_puts_of_many_users_all_land(rows: LLMSettingsStore) -> None:
    await asyncio.gather(
        *(
            rows.put(f"u{n}", f'{{"n": {n}}}', CIPHER if n % 2 else None, T0, keep_api_key=False)
            for n in range(16)
        )
    )
    for n in range(16):
        assert await rows.get(f"u{n}") == LLMSettingsRecord(
            f'{{"n": {n}}}', CIPHER if n % 2 else None
        )
