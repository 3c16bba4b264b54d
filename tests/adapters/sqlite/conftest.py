"""Fixtures of the SQLite store's tests: real database files under ``tmp_path``."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from adapters.sqlite import SqliteCheckpointStore


def project_id(n: int) -> str:
    return str(uuid.UUID(int=n))


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
async def store(data_dir: Path) -> AsyncIterator[SqliteCheckpointStore]:
    async with SqliteCheckpointStore(data_dir) as opened:
        yield opened
