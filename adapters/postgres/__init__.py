"""PostgreSQL adapters: the checkpoint store and the LLM settings rows, for replicas.

* :class:`PostgresDatabase`: a connection pool (psycopg 3) to one database, its schema
  migrated at open (idempotent; replicas starting together apply each migration once).
* :class:`PostgresCheckpointStore`: the core's ``CheckpointStore`` there (every
  project's sessions and message logs).
* :class:`PostgresLLMSettingsStore`: the core's ``LLMSettingsStore`` there (rows of
  settings JSON and key ciphertext; the LLM adapter encrypts).
* :class:`PostgresDrillResults`: the core's ``DrillResults`` there (each project's
  active troubleshooting drill, each user's results).

See ``docs/postgres-store.md`` and ``docs/deployment.md``.
"""

from adapters.postgres._database import DEFAULT_SCHEMA, PostgresDatabase, describe_url
from adapters.postgres._drills import PostgresDrillResults
from adapters.postgres._llm_rows import PostgresLLMSettingsStore
from adapters.postgres._schema import SCHEMA_VERSION
from adapters.postgres._store import PostgresCheckpointStore

__all__ = [
    "DEFAULT_SCHEMA",
    "SCHEMA_VERSION",
    "PostgresCheckpointStore",
    "PostgresDatabase",
    "PostgresDrillResults",
    "PostgresLLMSettingsStore",
    "describe_url",
]
