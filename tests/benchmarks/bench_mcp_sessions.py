"""MCP sessions of one user: how many the endpoint keeps, and what 10,000 attempts cost.

Run: ``python -m tests.benchmarks.bench_mcp_sessions [ATTEMPTS] [CAP ...]`` (defaults:
10000 attempts; caps 10, the default of ``mcp.max_sessions_per_user``, and 9999, about
what the endpoint allowed one user before the per-user cap: the SDK's 10,000). It prints
figures; it asserts nothing.

The product runs as in production: ``gns3-copilot serve`` in a subprocess and a real
gns3-server 3.0.6 (which checks the token once, then the service's auth cache answers).
One new GNS3 user sends ``initialize`` (2025-06-18, a new session each) ``ATTEMPTS``
times over keep-alive HTTP on 127.0.0.1; the figures are the sessions opened, the
attempts refused (429), the service's resident memory (VmRSS of its process) before and
after, and the attempts per second. A second user then opens one session: refused or not.
"""

from __future__ import annotations

import sys
import tempfile
import time
import uuid
from pathlib import Path

import httpx

from tests.fakes.copilot_service import serve_copilot
from tests.fakes.gns3_server import RealGns3Server

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "bench", "version": "1"},
    },
}


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def run(gns3: RealGns3Server, attempts: int, cap: int) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-mcp-sessions-") as root:
        env = {
            "COPILOT_MCP__MAX_SESSIONS_PER_USER": str(cap),
            "COPILOT_MCP__MAX_SESSIONS": str(max(10_000, cap + 1)),
            "COPILOT_LOG_LEVEL": "warning",
        }
        with serve_copilot(gns3.url, Path(root), env, ready_within=300) as service:
            token = gns3.create_user(f"b-{uuid.uuid4().hex[:10]}", "a-long-password-1")
            other = gns3.create_user(f"o-{uuid.uuid4().hex[:10]}", "a-long-password-1")
            url = f"{service.url}/v3/copilot/mcp"
            headers = {
                "Authorization": f"Bearer {token}",
                "Accept": "application/json, text/event-stream",
            }
            statuses: dict[int, int] = {}
            with httpx.Client(timeout=60) as client:
                client.post(url, json=INITIALIZE, headers={**headers, "Mcp-Session-Id": "x"})
                before = rss_mib(service.process.pid)
                started = time.perf_counter()
                for _ in range(attempts):
                    status = client.post(url, json=INITIALIZE, headers=headers).status_code
                    statuses[status] = statuses.get(status, 0) + 1
                seconds = time.perf_counter() - started
                after = rss_mib(service.process.pid)
                second = client.post(
                    url, json=INITIALIZE, headers={**headers, "Authorization": f"Bearer {other}"}
                ).status_code
            print(
                f"cap {cap:>5}: {attempts} attempts in {seconds:.1f} s "
                f"({attempts / seconds:.0f}/s); opened {statuses.get(200, 0)}, refused (429) "
                f"{statuses.get(429, 0)}, other {sorted(set(statuses) - {200, 429})}; "
                f"RSS {before:.1f} -> {after:.1f} MiB ({after - before:+.1f}); "
                f"another user's first session: HTTP {second}",
                flush=True,
            )


def main(argv: list[str]) -> None:
    attempts = int(argv[0]) if argv else 10_000
    caps = [int(a) for a in argv[1:]] or [10, 9999]
    with RealGns3Server(console_ports=(27500, 27599), udp_ports=(27600, 27699)) as gns3:
        for cap in caps:
            run(gns3, attempts, cap)


if __name__ == "__main__":
    main(sys.argv[1:])
