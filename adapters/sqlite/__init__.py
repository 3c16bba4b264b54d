"""SQLite checkpoint store: per-project databases of sessions and their message logs.

:class:`SqliteCheckpointStore` implements :class:`copilot_core.ports.CheckpointStore`
with aiosqlite; see ``docs/sqlite-store.md``. :class:`SqliteStoreReadiness` is its
readiness check. :class:`SqliteDrillResults` keeps the troubleshooting drills (each
project's active drill, each user's results) in one service-wide file.
"""

from adapters.sqlite._drills import DRILLS_DATABASE_NAME, SqliteDrillResults
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
    "DRILLS_DATABASE_NAME",
    "SCHEMA_VERSION",
    "ProjectPathResolver",
    "SqliteCheckpointStore",
    "SqliteDrillResults",
    "SqliteStoreReadiness",
    "SqliteStoreSettings",
    "Synchronous",
]
