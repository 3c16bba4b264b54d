"""A replica that runs one turn and then hangs: the SIGKILL test's victim.

``python -m tests.adapters.redis.turn_holder URL PREFIX PROJECT SESSION TURN LEASE``
claims the session, opens the turn on the Redis turn log and attaches it, appends three
events, prints ``ready`` once they are written, then waits forever (renewing its
lease) until it is killed.
"""

from __future__ import annotations

import asyncio
import sys

import redis.asyncio as aioredis

from copilot_core.events import ContentEvent
from copilot_core.ports import TurnControl, TurnInfo
from tests.adapters.redis.replica import Replica


async def main(url: str, prefix: str, project: str, session: str, turn: str, lease: str) -> None:
    client = aioredis.Redis.from_url(url)
    log = Replica.on(client, prefix=prefix, lease=float(lease), name="victim")
    await log.start()
    await log.open(TurnInfo(turn, project, session, "alice"), TurnControl())
    for n in range(3):
        log.append(turn, ContentEvent(f"part {n}"))
    await log.flush(turn)
    print("ready", flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:7]))
