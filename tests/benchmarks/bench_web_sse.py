"""HTTP service figures over real HTTP on 127.0.0.1 (uvicorn, scripted model, in-memory store).

Run: ``python -m tests.benchmarks.bench_web_sse``. Prints figures; asserts nothing.
"""

from __future__ import annotations

import asyncio
import statistics
import time

from copilot_core.testing import text_reply
from tests.api.conftest import collect_until_done, raw_events, run_service

TURNS = 30
DELTAS = 2000


async def main() -> None:
    async with run_service() as service, service.client() as client:
        url = service.chat_url() + "/stream"
        service.model.add(*(text_reply("warm up") for _ in range(3)))
        for _ in range(3):
            await client.post(url, json={"message": "warm", "stream": False})

        firsts: list[float] = []
        for _ in range(TURNS):
            service.model.add(text_reply("hello there", chunk=3))
            started = time.perf_counter()
            async with client.stream("POST", url, json={"message": "hi"}) as r:
                first = True
                async for event in raw_events(r):
                    if first:
                        firsts.append(time.perf_counter() - started)
                        first = False
                    if event.type == "done":
                        break
        print(
            f"time to first event: median {statistics.median(firsts) * 1000:.1f} ms, "
            f"p90 {sorted(firsts)[int(TURNS * 0.9)] * 1000:.1f} ms over {TURNS} turns"
        )

        service.model.add(text_reply("x" * DELTAS, chunk=1))
        started = time.perf_counter()
        async with client.stream("POST", url, json={"message": "long"}) as r:
            events = await collect_until_done(r, limit=DELTAS * 2)
        elapsed = time.perf_counter() - started
        print(f"one turn of {len(events)} events: {len(events) / elapsed:,.0f} events/s")

        started = time.perf_counter()
        for _ in range(200):
            await client.get(service.chat_url() + "/sessions", params={"limit": 50})
        elapsed = time.perf_counter() - started
        print(f"GET sessions (in-memory store): {200 / elapsed:,.0f} requests/s sequential")


if __name__ == "__main__":
    from entrypoints.observability import configure_logging

    configure_logging("warning")  # as a production service at warning level
    asyncio.run(main())
