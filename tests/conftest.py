"""Suite-wide settings and the fixtures several test packages share.

Hypothesis profiles: ``HYPOTHESIS_PROFILE=ci`` (the default when ``CI`` is set).
"""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from adapters.gns3 import Gns3Client
from tests.fakes import gns3_server as gns3_server_fixture
from tests.fakes.gns3_server import RealGns3Server
from tests.real_postgres import PostgresForTests
from tests.real_redis import RedisForTests

_LAB = Path(__file__).resolve().parent / "lab"

settings.register_profile("dev", max_examples=60, deadline=None)
settings.register_profile(
    "ci", max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--router-lab",
        action="store_true",
        help="run tests/lab: FRR routers in GNS3 Docker nodes (needs root and Docker; "
        "tox -e routers)",
    )


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """tests/lab runs only with --router-lab (its own tox env, after the main check)."""
    if _LAB in collection_path.parents or collection_path == _LAB:
        return None if config.getoption("--router-lab") else True
    return None


def pytest_collection_finish(session: pytest.Session) -> None:
    """Install gns3-server (into ``.cache``, 20–60 s on a clean clone) once, before any test
    runs: per-test time limits then never count the install. Only when a collected test
    needs the server."""
    if any("gns3_server" in getattr(item, "fixturenames", ()) for item in session.items):
        gns3_server_fixture.ensure_gns3_server_installed()


@pytest.fixture(scope="session")
def gns3_server() -> Iterator[RealGns3Server]:
    """One real gns3-server 3.0.6 for the whole session (installed on first use into
    ``.cache/gns3-server-venv``), shared by the GNS3 adapter and end-to-end tests."""
    server = RealGns3Server(console_ports=(25000, 25499), udp_ports=(26000, 26499))
    with server:
        yield server


@pytest.fixture(scope="session")
def admin_token(gns3_server: RealGns3Server) -> str:
    """The real server's admin token (one for the session, as the server is)."""
    return gns3_server.token()


@pytest.fixture
async def gns3_client(gns3_server: RealGns3Server) -> AsyncIterator[Gns3Client]:
    async with Gns3Client(gns3_server.url, timeout=20.0) as client:
        yield client


@pytest.fixture
async def project_id(gns3_client: Gns3Client, admin_token: str) -> AsyncIterator[str]:
    """A fresh, opened project on the real server, owned by admin, deleted afterwards."""
    project = await gns3_client.create_project(admin_token, f"copilot-test-{uuid.uuid4().hex[:8]}")
    yield str(project["project_id"])
    await gns3_client.delete_project(admin_token, str(project["project_id"]))


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresForTests]:
    """A database of this test run on the real PostgreSQL server, dropped at the end."""
    database = PostgresForTests()
    database.create()
    try:
        yield database
    finally:
        database.drop()


@pytest.fixture
def postgres_schema(postgres: PostgresForTests) -> Iterator[str]:
    """A fresh schema name in the run's database (created by the store), dropped after."""
    schema = postgres.new_schema()
    try:
        yield schema
    finally:
        postgres.drop_schema(schema)


@pytest.fixture(scope="session")
def redis_server() -> RedisForTests:
    """The machine's Redis (checked once); tests use key prefixes of their own."""
    server = RedisForTests()
    server.check()
    return server


@pytest.fixture(autouse=True)
def _sse_streams_outlive_an_earlier_shutdown() -> Iterator[None]:
    """A test that stops a served app as SIGTERM would (``server.handle_exit``) also sets
    sse-starlette's process-wide ``AppStatus.should_exit``: that library patches uvicorn's
    handler so that open SSE streams end on shutdown. In production the process then
    exits; in one pytest process every later SSE stream (the MCP SDK's responses) would
    end before its first event. Each test starts with it clear."""
    yield
    sse = sys.modules.get("sse_starlette.sse")
    if sse is not None:
        sse.AppStatus.should_exit = False
