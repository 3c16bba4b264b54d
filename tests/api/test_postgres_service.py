"""The service on PostgreSQL: ``--database-url`` selects it, the data lands there and
is shared by replicas, ``/readyz`` checks it, and a database that cannot be used stops
the start-up with a clear message (never the password).

The real PostgreSQL server (a schema per test), the real CLI in a child process, the
real app on uvicorn in process; the GNS3 side is faked (authenticator, project gate,
topology) and the LLM is the scripted OpenAI server over HTTP, so the API key the
model receives is the one decrypted from PostgreSQL.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import psycopg
import pytest
import uvicorn
from cryptography.fernet import Fernet
from dependency_injector import providers
from psycopg import sql

from adapters.web.testing import StaticAuthenticator, StaticProjectGate
from copilot_core.ports import Principal
from copilot_core.testing import FakeTopologySource
from entrypoints import Settings, build_container, create_app
from entrypoints.cli import CopilotServer
from tests.fakes.openai_server import Reply, ScriptedOpenAIServer
from tests.real_postgres import PostgresForTests

ROOT = Path(__file__).resolve().parents[2]
PROJECT = str(uuid.UUID(int=42))
TOKEN = "tok-pg-Secret-991"
API_KEY = "sk-pg-5Jq8uV2wX9yZ1aB3cD4eF6gH"
PASSWORD = "pg-Pass-w0rd-314"
SECRET_KEY = Fernet.generate_key().decode()


def _settings(postgres: PostgresForTests, schema: str, data_dir: Path) -> Settings:
    return Settings(
        data_dir=data_dir,
        port=0,
        gns3={"url": "http://127.0.0.1:9"},
        database_url=postgres.url,
        database_schema=schema,
        secret_key=SECRET_KEY,
        shutdown_grace=2,
    )


@contextlib.asynccontextmanager
async def _replica(settings: Settings) -> AsyncIterator[str]:
    """One replica of the service on uvicorn in process; yields its base URL."""
    container = build_container(settings)
    container.gateways.authenticator.override(
        providers.Object(StaticAuthenticator({TOKEN: Principal("u-alice", "alice")}))
    )
    container.gateways.projects.override(providers.Object(StaticProjectGate(opened={PROJECT})))
    container.gateways.topology.override(providers.Object(FakeTopologySource()))
    app = create_app(settings, container)
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_config=None, lifespan="on")
    server = CopilotServer(config, container.service().begin_shutdown)
    server.install_signal_handlers = lambda: None  # type: ignore[method-assign]
    task = asyncio.create_task(server.serve())
    for _ in range(1000):
        if server.started or task.done():
            break
        await asyncio.sleep(0.01)
    if task.done():
        task.result()
    assert server.started
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 15)


def _client(base_url: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        base_url=base_url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=20
    )


def _rows(postgres: PostgresForTests, schema: str, query: str) -> list[tuple[object, ...]]:
    with psycopg.connect(postgres.conninfo, autocommit=True) as conn:
        conn.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(schema)))
        return conn.execute(query).fetchall()  # type: ignore[arg-type]


async def test_a_turn_and_the_llm_settings_live_in_postgres_and_another_replica_sees_them(
    postgres: PostgresForTests, postgres_schema: str, tmp_path: Path
) -> None:
    settings = _settings(postgres, postgres_schema, tmp_path / "a")
    with ScriptedOpenAIServer(api_key=API_KEY, default=Reply(text="OSPF lab")) as llm:
        llm.add(Reply(text="R1 and R2 are neighbours.", usage=(40, 8)))
        async with _replica(settings) as base_url, _client(base_url) as client:
            ready = await client.get("/readyz")
            assert ready.json()["checks"]["store"] == "ok"
            put = await client.put(
                "/v3/copilot/llm-config",
                json={"provider": "openai", "model": "gpt-test", "base_url": llm.base_url,
                      "api_key": API_KEY},
            )  # fmt: skip
            assert put.status_code == 200, put.text
            assert put.json()["api_key_set"] is True
            reply = await client.post(
                f"/v3/copilot/projects/{PROJECT}/chat/stream",
                json={"message": "Are R1 and R2 OSPF neighbours?", "stream": False},
            )
            assert reply.status_code == 200, reply.text
            assert reply.json()["content"] == "R1 and R2 are neighbours."
            session_id = reply.json()["session_id"]
        # The model got the key decrypted from PostgreSQL.
        assert llm.requests[0].bearer_token == API_KEY

    stored = _rows(
        postgres,
        postgres_schema,
        "SELECT s.thread_id, s.message_count, s.llm_calls_count, count(m.seq) "
        "FROM chat_sessions s JOIN chat_messages m ON m.session_id = s.id "
        "GROUP BY s.id",
    )
    assert stored == [(session_id, 2, 1, 2)]
    assert not any((tmp_path / "a").rglob("*.db"))  # nothing went to SQLite
    dump = postgres.dump(postgres_schema)
    assert "gpt-test" in dump
    assert API_KEY not in dump

    # A second replica (another data directory, the same database) serves it all.
    replica = _replica(_settings(postgres, postgres_schema, tmp_path / "b"))
    async with replica as base_url, _client(base_url) as client:
        listed = await client.get(f"/v3/copilot/projects/{PROJECT}/chat/sessions")
        assert [s["thread_id"] for s in listed.json()] == [session_id]
        history = await client.get(
            f"/v3/copilot/projects/{PROJECT}/chat/sessions/{session_id}/history"
        )
        assert [m["role"] for m in history.json()["messages"]] == ["user", "assistant"]
        config = await client.get("/v3/copilot/llm-config")
        assert config.json()["api_key_set"] is True


async def test_readyz_reports_a_database_that_stopped_answering(
    postgres: PostgresForTests, postgres_schema: str, tmp_path: Path
) -> None:
    role = f"copilot_role_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(postgres.conninfo, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(role)))
        admin.execute(
            sql.SQL("GRANT CREATE ON DATABASE {} TO {}").format(
                sql.Identifier(postgres.name), sql.Identifier(role)
            )
        )
    url = postgres.url.replace("postgresql://postgres@", f"postgresql://{role}:{PASSWORD}@")
    settings = _settings(postgres, postgres_schema, tmp_path).model_copy(
        update={"database_url": Settings(database_url=url, secret_key=SECRET_KEY).database_url}
    )
    try:
        async with _replica(settings) as base_url, _client(base_url) as client:
            assert (await client.get("/readyz")).json()["checks"]["store"] == "ok"
            with psycopg.connect(postgres.conninfo, autocommit=True) as admin:
                # The role may no longer log in, and its connections are cut.
                admin.execute(sql.SQL("ALTER ROLE {} NOLOGIN").format(sql.Identifier(role)))
                admin.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s",
                    (role,),
                )
            await asyncio.sleep(0.2)
            ready = await client.get("/readyz")
            assert ready.status_code == 503
            check = ready.json()["checks"]["store"]
            assert check.startswith("failed"), check
            assert "PostgreSQL" in check
            assert PASSWORD not in ready.text
    finally:
        with psycopg.connect(postgres.conninfo, autocommit=True) as admin:
            admin.execute(
                sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(postgres_schema))
            )
            admin.execute(
                sql.SQL("REVOKE ALL ON DATABASE {} FROM {}").format(
                    sql.Identifier(postgres.name), sql.Identifier(role)
                )
            )
            admin.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))


# ============================================================== the real CLI
def _serve(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("COPILOT_")}
    return subprocess.run(
        [sys.executable, "-m", "entrypoints", "serve", "--port", "0", *args],
        cwd=ROOT,
        env={**base, **(env or {})},
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        (f"postgresql://postgres:{PASSWORD}@127.0.0.1:1/copilot", "Connection refused"),
        (f"postgresql://postgres:{PASSWORD}@no-such-host.invalid/copilot", "no-such-host.invalid"),
        ("MISSING_DATABASE", "does not exist"),
        (f"postgresql://postgres:{PASSWORD}@127.0.0.1/x?bogus=1", "not valid"),
    ],
    ids=["refused", "unknown-host", "unknown-database", "bad-parameter"],
)
def test_serve_with_a_database_it_cannot_use_stops_with_a_clear_message(
    postgres: PostgresForTests, tmp_path: Path, url: str, expected: str
) -> None:
    if url == "MISSING_DATABASE":
        url = postgres.url.replace("postgresql://postgres@", f"postgresql://postgres:{PASSWORD}@")
        url += "_missing"
    done = _serve(
        "--data-dir",
        str(tmp_path),
        env={"COPILOT_DATABASE_URL": url, "COPILOT_SECRET_KEY": SECRET_KEY},
    )
    assert done.returncode == 3, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("gns3-copilot: cannot start: ")
    assert expected in last
    assert "PostgreSQL" in last
    assert PASSWORD not in done.stderr + done.stdout


def test_serve_refuses_a_database_url_that_is_not_postgres_or_has_no_secret_key(
    tmp_path: Path,
) -> None:
    refused = _serve(
        "--data-dir",
        str(tmp_path),
        "--database-url",
        f"mysql://root:{PASSWORD}@127.0.0.1/copilot",
        env={"COPILOT_SECRET_KEY": SECRET_KEY},
    )
    assert refused.returncode == 2
    assert "database_url: must be a postgresql:// URL" in refused.stderr
    assert PASSWORD not in refused.stderr
    keyless = _serve(
        "--data-dir", str(tmp_path), "--database-url", "postgresql://postgres@127.0.0.1/x"
    )
    assert keyless.returncode == 2
    assert "COPILOT_SECRET_KEY" in keyless.stderr


def test_database_settings_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("COPILOT_"):
            monkeypatch.delenv(name)
    assert Settings().database_url is None  # SQLite by default
    monkeypatch.setenv("COPILOT_DATABASE_URL", "")
    assert Settings().database_url is None
    monkeypatch.setenv("COPILOT_DATABASE_URL", f"postgresql://copilot:{PASSWORD}@db/copilot")
    monkeypatch.setenv("COPILOT_SECRET_KEY", SECRET_KEY)
    monkeypatch.setenv("COPILOT_DATABASE_SCHEMA", "copilot_prod")
    settings = Settings()
    assert settings.database_url is not None
    assert settings.database_url.get_secret_value().endswith("@db/copilot")
    assert settings.database_schema == "copilot_prod"
    assert PASSWORD not in repr(settings)
    monkeypatch.setenv("COPILOT_DATABASE_SCHEMA", "Bad-Name")
    with pytest.raises(ValueError, match="database_schema"):
        Settings()
