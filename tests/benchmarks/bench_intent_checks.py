"""Intent check figures: how long one ``verify_intent`` check takes, per platform and kind.

Run: ``python -m tests.benchmarks.bench_intent_checks [--quick]``. It prints figures; it
asserts nothing about speed.

Each case of ``tests/adapters/gns3/test_intent_consoles.py`` (every check kind that passes,
fails or errors on Cisco IOS, Arista EOS, Junos, FRR and VPCS) runs through a new
:class:`~adapters.gns3.Gns3ToolExecutor` (GNS3's REST answers from ``httpx.MockTransport``)
against the telnet emulators of ``tests/fakes/telnet_devices.py`` on 127.0.0.1: one attempt,
from the call to its verdict (the node lookup, the console run and the parsing). The test
module proves the verdicts; this measures them, so that the suite has no test that cannot
fail.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time

from tests.adapters.gns3.test_intent_consoles import CASES, emulated_lab, executor, verify


async def main(quick: bool) -> None:
    runs = 1 if quick else 5
    print(f"one verify_intent check, call to verdict ({runs} run(s) each, median):")
    async with emulated_lab() as lab:
        for platform, check, expected, _ in CASES:
            took: list[float] = []
            for _ in range(runs):
                started = time.perf_counter()
                result = await verify(executor(lab), [check])
                took.append(time.perf_counter() - started)
                status = result.output.get("status")
                if status != expected:  # a figure of the wrong outcome would mislead
                    raise SystemExit(f"{platform} {check}: {status}, expected {expected}")
            label = f"{platform} {check['kind']} {expected}"
            print(f"  {label:40s} {statistics.median(took) * 1000:7.0f} ms")


if __name__ == "__main__":
    asyncio.run(main("--quick" in sys.argv[1:]))
