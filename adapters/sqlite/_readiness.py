"""Readiness of the SQLite store, for the service's ``/readyz``."""

from __future__ import annotations

import asyncio
import os

from adapters.sqlite._store import SqliteCheckpointStore
from copilot_core.errors import StoreError

__all__ = ["SqliteStoreReadiness"]


class SqliteStoreReadiness:
    """Ready when the data directory is writable: a new project's database goes there."""

    def __init__(self, store: SqliteCheckpointStore) -> None:
        self._store = store

    async def __call__(self) -> None:
        directory = self._store.data_dir
        if not await asyncio.to_thread(os.access, directory, os.W_OK):
            raise StoreError(f"the data directory {directory} is not writable")
