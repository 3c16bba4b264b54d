"""Fixtures of the GNS3 adapter tests: a real gns3-server, its tokens and fresh projects."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Callable

import pytest

from adapters.gns3 import Gns3Client
from copilot_core import AbortToken, CopilotMode, ToolContext
from tests.fakes.gns3_server import RealGns3Server

_names = itertools.count(1)


@pytest.fixture(scope="session")
def admin_token(gns3_server: RealGns3Server) -> str:
    return gns3_server.token()


@pytest.fixture
async def gns3_client(gns3_server: RealGns3Server) -> AsyncIterator[Gns3Client]:
    async with Gns3Client(gns3_server.url, timeout=20.0) as client:
        yield client


@pytest.fixture
async def project_id(gns3_client: Gns3Client, admin_token: str) -> AsyncIterator[str]:
    """A fresh, opened project owned by admin, deleted afterwards."""
    project = await gns3_client.create_project(admin_token, f"copilot-test-{next(_names)}")
    yield str(project["project_id"])
    await gns3_client.delete_project(admin_token, str(project["project_id"]))


def make_context(
    project_id: str,
    token: str | None,
    mode: CopilotMode = CopilotMode.LAB_AUTOMATION_ASSISTANT,
    abort: AbortToken | None = None,
) -> ToolContext:
    return ToolContext(
        project_id=project_id,
        user_id="user-1",
        session_id="session-1",
        mode=mode,
        abort=abort or AbortToken(),
        credentials=token,
    )


async def eventually(predicate: Callable[[], bool], within: float = 3.0) -> None:
    """Wait, polling every 10 ms, until ``predicate()`` holds; fail after ``within`` s."""
    for _ in range(int(within / 0.01) + 1):
        if predicate():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"condition not met within {within:g} s")
