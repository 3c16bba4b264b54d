"""SQLite checkpoint store: per-project databases of sessions and their message logs.

:class:`SqliteCheckpointStore` implements :class:`copilot_core.ports.CheckpointStore`
with aiosqlite; see ``docs/sqlite-store.md``. :class:`SqliteStoreReadiness` is its
readiness check.
"""

from adapters.sqlite._readiness import SqliteStoreReadiness
from adapters.sqlite._schema import SCHEMA_VERSION
from adapters.sqlite._store import (
    DATABASE_DIR,
    DATABASE_NAME,
    ProjectPathResolver,
    SqliteCheckpointStore,
    SqliteStoreSettings,
    Synchronous,
)

__all__ = [
    "DATABASE_DIR",
    "DATABASE_NAME",
    "SCHEMA_VERSION",
    "ProjectPathResolver",
    "SqliteCheckpointStore",
    "SqliteStoreReadiness",
    "SqliteStoreSettings",
    "Synchronous",
]
