"""Random operation sequences give the same answers from the PostgreSQL and in-memory
stores (the machine: ``tests/contract/store_differential.py``), on the real server, a
new schema per example."""

from __future__ import annotations

from hypothesis.stateful import run_state_machine_as_test

from adapters.postgres import PostgresCheckpointStore, PostgresDatabase
from copilot_core.ports import CheckpointStore
from tests.contract.store_differential import DIFFERENTIAL_SETTINGS, StoresAgree
from tests.real_postgres import PostgresForTests


def test_postgres_and_in_memory_stores_agree_on_random_operations(
    postgres: PostgresForTests,
) -> None:
    class PostgresAgrees(StoresAgree):
        async def open_store(self) -> CheckpointStore:
            self.schema = postgres.new_schema()
            self.database = PostgresDatabase(postgres.url, schema=self.schema, max_size=1)
            await self.database.open()
            return PostgresCheckpointStore(self.database)

        async def close_store(self) -> None:
            await self.database.close()
            postgres.drop_schema(self.schema)

    run_state_machine_as_test(PostgresAgrees, settings=DIFFERENTIAL_SETTINGS)
