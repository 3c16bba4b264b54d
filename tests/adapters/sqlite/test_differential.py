"""Random operation sequences give the same answers from the SQLite and in-memory stores
(the machine: ``tests/contract/store_differential.py``)."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from adapters.sqlite import SqliteCheckpointStore, SqliteStoreSettings
from copilot_core.ports import CheckpointStore
from tests.contract.store_differential import DIFFERENTIAL_SETTINGS, StoresAgree


class SqliteAgrees(StoresAgree):
    async def open_store(self) -> CheckpointStore:
        self.root = Path(tempfile.mkdtemp(prefix="differential-"))
        self.sqlite = SqliteCheckpointStore(self.root, settings=SqliteStoreSettings(max_open=1))
        await self.sqlite.open()
        return self.sqlite

    async def close_store(self) -> None:
        await self.sqlite.close()
        shutil.rmtree(self.root, ignore_errors=True)


TestStoresAgree = SqliteAgrees.TestCase
TestStoresAgree.settings = DIFFERENTIAL_SETTINGS
