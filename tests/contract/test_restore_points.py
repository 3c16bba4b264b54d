"""The RestorePoints contract: one set of assertions, run on every restore feature.

Each harness gives a ``RestorePoints``, the store its points are kept in, a context in a
session that store keeps (and one in a session it does not), and three moves on its lab:
make one change the way an approved change is made (a restore point first; the point is
returned), do something since that undoing that change would touch (a conflict), and read
what the lab looks like. The assertions go through the port and the store only:

* ``fake``: ``copilot_core.testing.FakeRestorePoints`` over the in-memory store (its lab is
  scripted: reading it says nothing, so only the promises about points are checked);
* ``gns3``: ``Gns3ToolExecutor.restore`` against the real gns3-server 3.0.6, in a fresh
  project: the change makes a VPCS node through the executor as an approved call, the
  conflict links another node to it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest

from adapters.gns3 import ConsoleRunner, Gns3Client, Gns3ToolExecutor
from copilot_core import (
    AbortToken,
    CopilotMode,
    ParsedToolCall,
    Session,
    ToolContext,
    ToolStatus,
)
from copilot_core.errors import RestorePointNotTakenError
from copilot_core.ports import (
    ApprovalDecision,
    ChangePreview,
    Clearance,
    RestorePoint,
    RestorePoints,
    RollbackOptions,
    RollbackStatus,
)
from copilot_core.testing import FakeRestorePoints, InMemoryCheckpointStore

SESSION = "session-1"
APPROVED = ApprovalDecision(True, user_id="alice", comment="Undo by the user")


@dataclass
class RestoreHarness:
    restore: RestorePoints
    store: InMemoryCheckpointStore
    #: A context in ``SESSION``, which the store keeps, with the lab's credentials.
    context: ToolContext
    #: A context in a session the store does not keep.
    stranger: ToolContext
    #: Make one change as an approved one (a restore point first): that point.
    change: Callable[[], Awaitable[RestorePoint]]
    #: Do something since ``point``'s change that undoing it would touch.
    conflict: Callable[[RestorePoint], Awaitable[None]]
    #: What the lab looks like now (comparable).
    lab: Callable[[], Awaitable[Any]]


HarnessFactory = Callable[
    [pytest.FixtureRequest], contextlib.AbstractAsyncContextManager[RestoreHarness]
]


async def _kept_session(project_id: str) -> InMemoryCheckpointStore:
    store = InMemoryCheckpointStore()
    now = datetime.now(UTC)
    session = Session(
        thread_id=SESSION, user_id="alice", project_id=project_id, created_at=now, updated_at=now
    )
    await store.create_session(session)
    return store


def _context(project_id: str, credentials: str | None, session: str = SESSION) -> ToolContext:
    return ToolContext(
        project_id,
        "alice",
        session,
        CopilotMode.LAB_AUTOMATION_ASSISTANT,
        AbortToken(),
        credentials,
    )


# ======================================================================= the fake
@contextlib.asynccontextmanager
async def _fake(request: pytest.FixtureRequest) -> AsyncIterator[RestoreHarness]:
    store = await _kept_session("project-1")
    restore = FakeRestorePoints(store)
    context = _context("project-1", "token")
    changes = 0

    async def change() -> RestorePoint:
        nonlocal changes
        changes += 1
        preview = ChangePreview(f"create node N{changes}", topology=[f"create node N{changes}"])
        return await restore.take(
            context, tool_call_id=f"call-{changes}", tool_name="create_node", preview=preview
        )

    async def conflict(point: RestorePoint) -> None:
        restore.conflicts[point.id] = ["a link to the node the change made was made since"]

    async def lab() -> Any:
        return None

    yield RestoreHarness(
        restore, store, context, _context("project-1", "token", "nobody"), change, conflict, lab
    )


# ======================================================================= GNS3
@contextlib.asynccontextmanager
async def _gns3(request: pytest.FixtureRequest) -> AsyncIterator[RestoreHarness]:
    server = request.getfixturevalue("gns3_server")
    token = await asyncio.to_thread(server.token)
    async with Gns3Client(server.url, timeout=20.0) as client:
        project = await client.create_project(token, f"restore-contract-{request.node.name}"[:80])
        project_id = str(project["project_id"])
        try:
            store = await _kept_session(project_id)
            executor = Gns3ToolExecutor(
                client, runner=ConsoleRunner(command_timeout=1.0), restore_points=store
            )
            context = _context(project_id, token)
            calls = 0

            async def run(name: str, arguments: dict[str, Any], *, approved: bool) -> Any:
                nonlocal calls
                calls += 1
                call = ParsedToolCall.parse(f"call-{calls}", name, json.dumps(arguments))
                clearance = Clearance(decision=APPROVED if approved else None)
                result = await executor.execute(call, context, clearance)
                assert result.status is ToolStatus.SUCCESS, result.output
                return result

            await run(
                "create_gns3_node",
                {"nodes": [{"template_name": "VPCS", "name": "Bob"}]},
                approved=False,
            )

            async def change() -> RestorePoint:
                made = await run(
                    "create_gns3_node",
                    {"nodes": [{"template_name": "VPCS", "name": f"Carol{calls}"}]},
                    approved=True,
                )
                point = await store.restore_point(
                    project_id, SESSION, made.metadata["restore_point_id"]
                )
                assert point is not None
                return point

            async def conflict(point: RestorePoint) -> None:
                assert point.change is not None
                (carol,) = point.change.described.nodes_created
                link = {"node1": carol, "port1": "e0", "node2": "Bob", "port2": "e0"}
                await run("create_gns3_link", {"links": [link]}, approved=False)

            async def lab() -> Any:
                topology = (await run("gns3_topology_reader", {}, approved=False)).output
                nodes = sorted(node["name"] for node in topology["nodes"])
                links = sorted(json.dumps(link, sort_keys=True) for link in topology["links"])
                return nodes, links

            yield RestoreHarness(
                executor.restore,
                store,
                context,
                _context(project_id, token, "nobody"),
                change,
                conflict,
                lab,
            )
        finally:
            await client.delete_project(token, project_id)


HARNESSES: dict[str, HarnessFactory] = {"fake": _fake, "gns3": _gns3}
_MARKS = {"gns3": [pytest.mark.gns3, pytest.mark.timeout(300)]}


@pytest.fixture(params=[pytest.param(name, marks=_MARKS.get(name, [])) for name in HARNESSES])
async def harness(request: pytest.FixtureRequest) -> AsyncIterator[RestoreHarness]:
    async with HARNESSES[request.param](request) as made:
        yield made


async def kept(harness: RestoreHarness) -> list[RestorePoint]:
    return await harness.store.restore_points(harness.context.project_id, SESSION)


# ========================================================================= taking
async def test_a_point_taken_is_kept_with_the_session(harness: RestoreHarness) -> None:
    preview = ChangePreview("create node Dave", topology=["create node Dave (VPCS)"])

    point = await harness.restore.take(
        harness.context, tool_call_id="call-take", tool_name="create_gns3_node", preview=preview
    )

    assert (point.project_id, point.session_id) == (harness.context.project_id, SESSION)
    assert (point.tool_call_id, point.tool_name, point.summary) == (
        "call-take",
        "create_gns3_node",
        "create node Dave",
    )
    assert await kept(harness) == [point]


async def test_no_point_is_taken_outside_a_session_the_store_keeps(
    harness: RestoreHarness,
) -> None:
    preview = ChangePreview("create node Dave", topology=["create node Dave (VPCS)"])

    with pytest.raises(RestorePointNotTakenError):
        await harness.restore.take(
            harness.stranger, tool_call_id="call-x", tool_name="create_gns3_node", preview=preview
        )
    assert await kept(harness) == []


# ===================================================================== rolling back
async def test_a_rollback_takes_a_point_first_and_puts_the_lab_back(
    harness: RestoreHarness,
) -> None:
    before = await harness.lab()
    point = await harness.change()
    after = await harness.lab()

    preview = await harness.restore.preview(point, RollbackOptions(), harness.context)
    assert preview.summary.startswith(f"roll back to before {point.tool_name}")
    assert not [line for line in preview.topology if line.startswith("conflict: ")]
    assert await harness.lab() == after  # a preview changes nothing
    result = await harness.restore.roll_back(
        point, RollbackOptions(), harness.context, approval=APPROVED, tool_call_id="call-undo"
    )

    assert result.status is RollbackStatus.SUCCESS, result.to_json()
    assert result.rolled_back_to is not None and result.rolled_back_to.restore_point_id == point.id
    assert json.loads(json.dumps(result.to_json()))["restore_point_id"] == result.restore_point_id
    points = await kept(harness)
    assert [p.id for p in points] == [point.id, result.restore_point_id]
    assert points[1].tool_call_id == "call-undo"
    assert await harness.lab() == before
    # The point taken first undoes the rollback.
    undone = await harness.restore.roll_back(
        points[1], RollbackOptions(), harness.context, approval=APPROVED, tool_call_id="call-redo"
    )
    assert undone.status is RollbackStatus.SUCCESS, undone.to_json()
    assert await harness.lab() == after


async def test_a_conflicting_rollback_changes_and_keeps_nothing_unless_forced(
    harness: RestoreHarness,
) -> None:
    point = await harness.change()
    await harness.conflict(point)
    lab = await harness.lab()

    preview = await harness.restore.preview(point, RollbackOptions(), harness.context)
    refused = await harness.restore.roll_back(
        point, RollbackOptions(), harness.context, approval=APPROVED, tool_call_id="call-undo"
    )

    assert [line for line in preview.topology if line.startswith("conflict: ")]
    assert refused.status is RollbackStatus.CONFLICT, refused.to_json()
    assert refused.conflicts and refused.restore_point_id is None and not refused.forced
    assert refused.error
    assert await kept(harness) == [point]
    assert await harness.lab() == lab
    forced = await harness.restore.roll_back(
        point,
        RollbackOptions(force=True),
        harness.context,
        approval=APPROVED,
        tool_call_id="call-force",
    )
    assert forced.status is not RollbackStatus.CONFLICT, forced.to_json()
    assert forced.forced and forced.conflicts
    assert forced.restore_point_id is not None
    assert forced.restore_point_id in [p.id for p in await kept(harness)]


async def test_the_rollback_as_a_tool_call_names_the_point_and_its_options(
    harness: RestoreHarness,
) -> None:
    plain = harness.restore.as_tool_call("p-1", RollbackOptions())
    forced = harness.restore.as_tool_call("p-1", RollbackOptions(use_snapshot=True, force=True))

    assert plain.name == forced.name and plain.name
    arguments = json.loads(plain.arguments)
    assert isinstance(arguments, dict) and "p-1" in arguments.values()
    assert json.loads(forced.arguments) != arguments
