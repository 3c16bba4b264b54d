"""A writer process for the SIGKILL test, and the turns it writes.

Every turn ``t`` of a session is: the user message (one append), a step of an
assistant message calling two tools with their two results (one append, counted with
the LLM call that made it), the final answer (one append, with its LLM call), then
the end of the turn (``record_turn``: time and, for turn 0, the title). Everything
is a function of ``t``, so a reader can tell exactly what a complete prefix looks like.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from multiprocessing.connection import Connection

from adapters.sqlite import SqliteCheckpointStore
from copilot_core import Message, Session
from copilot_core.ports import FunctionCall, ToolCall, Usage

__all__ = ["TITLE", "USER", "turn_appends", "write_until_killed"]

USER = "alice"
TITLE = "Turn zero title"
T0 = datetime(2026, 3, 1, tzinfo=UTC)


def turn_appends(t: int) -> list[tuple[list[Message], Usage | None]]:
    """The appends of turn ``t`` with the usage saved with each, in order (each one
    transaction)."""
    at = T0 + timedelta(seconds=t)
    calls = tuple(
        ToolCall(id=f"call-{t}-{k}", function=FunctionCall(name="show_run", arguments='{"n":1}'))
        for k in range(2)
    )
    output = f"interface Gi0/{t}\n ip address 10.0.{t}.1 255.255.255.0\n" * 60
    return [
        ([Message.user(f"u-{t}", f"question {t}", at)], None),
        (
            [
                Message.assistant(f"a-{t}", "", at, tool_calls=calls),
                *(
                    Message.tool(f"t-{t}-{k}", call.id, "show_run", output, at)
                    for k, call in enumerate(calls)
                ),
            ],
            Usage(1, 60 + t, 5),
        ),
        ([Message.assistant(f"f-{t}", f"answer {t} " * 40, at)], Usage(1, 40, 5 + t)),
    ]


def write_until_killed(data_dir: str, project_id: str, thread_id: str, ready: Connection) -> None:
    """Process entry point: tell the parent we run, then write turns forever."""
    ready.send("running")
    ready.close()
    asyncio.run(_write(data_dir, project_id, thread_id))


async def _write(data_dir: str, project_id: str, thread_id: str) -> None:
    async with SqliteCheckpointStore(data_dir) as store:
        await store.create_session(
            Session(
                thread_id=thread_id,
                user_id=USER,
                project_id=project_id,
                created_at=T0,
                updated_at=T0,
            )
        )
        t = 0
        while True:
            for messages, usage in turn_appends(t):
                await store.append_messages(project_id, thread_id, messages, usage=usage)
            await store.record_turn(
                project_id,
                thread_id,
                T0 + timedelta(seconds=t),
                title=TITLE if t == 0 else None,
            )
            t += 1
