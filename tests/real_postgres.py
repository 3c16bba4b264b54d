"""The real PostgreSQL server the tests use: a database of its own per test run.

The server is the machine's (127.0.0.1:5432, trust auth, user ``postgres``; another
one with ``GNS3_COPILOT_TEST_POSTGRES_URL``, a URL to its maintenance database). A run
creates the database ``copilot_test_<random>`` and drops it at the end; each test gets
a schema of its own in it, dropped after the test.
"""

from __future__ import annotations

import os
import subprocess
import uuid

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

__all__ = ["MAINTENANCE_URL", "PostgresForTests"]

MAINTENANCE_URL = os.environ.get(
    "GNS3_COPILOT_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
)


class PostgresForTests:
    """A database of this test run on the real server (see the module doc)."""

    def __init__(self, maintenance_url: str = MAINTENANCE_URL) -> None:
        self.maintenance_url = maintenance_url
        self.name = f"copilot_test_{uuid.uuid4().hex[:12]}"
        info = conninfo_to_dict(maintenance_url)
        info["dbname"] = self.name
        self.conninfo = make_conninfo("", **info)
        user = f"{info['user']}@" if info.get("user") else ""
        host = info.get("host", "127.0.0.1")
        port = info.get("port", "5432")
        self.url = f"postgresql://{user}{host}:{port}/{self.name}"

    def create(self) -> None:
        try:
            with psycopg.connect(self.maintenance_url, autocommit=True, connect_timeout=5) as conn:
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(self.name)))
        except psycopg.OperationalError as exc:
            raise RuntimeError(
                f"The tests need PostgreSQL at {self.maintenance_url} ({exc}). Start it: "
                "pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start"
            ) from exc

    def drop(self) -> None:
        with psycopg.connect(self.maintenance_url, autocommit=True, connect_timeout=5) as conn:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(self.name))
            )

    def new_schema(self) -> str:
        return f"t_{uuid.uuid4().hex[:16]}"

    def drop_schema(self, schema: str) -> None:
        with psycopg.connect(self.conninfo, autocommit=True, connect_timeout=5) as conn:
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))

    def schemas(self) -> set[str]:
        with psycopg.connect(self.conninfo, autocommit=True, connect_timeout=5) as conn:
            rows = conn.execute("SELECT nspname FROM pg_namespace").fetchall()
        return {str(row[0]) for row in rows}

    def dump(self, schema: str) -> str:
        """``pg_dump`` of one schema, as plain SQL text."""
        completed = subprocess.run(
            ["pg_dump", "--schema", schema, "--dbname", self.url],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        return completed.stdout
