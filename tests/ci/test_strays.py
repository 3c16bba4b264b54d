"""Strays: a benchmark or a test run killed from outside (a time limit's SIGKILL) left its
server processes running for good (issue 18, item 15). Every helper that starts a server
process arms ``PR_SET_PDEATHSIG``: here the parent is killed with SIGKILL and its children
must be gone within a bounded time."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.ci.conftest import REPO
from tests.fakes.gns3_server import RealGns3Server


def children_of(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found += [int(child) for child in (task / "children").read_text().split()]
        except OSError:
            continue
    return found


def alive(pid: int) -> bool:
    """Running (a zombie waiting for a reaper counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def wait_until_gone(pids: list[int], within: float) -> list[int]:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        left = [pid for pid in pids if alive(pid)]
        if not left:
            return []
        time.sleep(0.1)
    return [pid for pid in pids if alive(pid)]


def start_parent(code: str, tmp_path: Path) -> tuple[subprocess.Popen[str], list[int]]:
    """A parent process running ``code``, which prints ``CHILDREN <pid>...`` once its
    servers run, then sleeps."""
    parent = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO), "TMP_ROOT": str(tmp_path)},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert parent.stdout is not None
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        line = parent.stdout.readline()
        if not line:
            break
        if line.startswith("CHILDREN "):
            return parent, [int(pid) for pid in line.split()[1:]]
    parent.kill()
    rest = parent.communicate()[0]
    raise AssertionError(f"the parent never started its servers:\n{rest}")


def kill_parent(parent: subprocess.Popen[str]) -> None:
    parent.send_signal(signal.SIGKILL)
    parent.wait(timeout=10)
    if parent.stdout is not None:
        parent.stdout.close()


def test_bench_turns_killed_from_outside_takes_its_uvicorn_children_with_it(
    tmp_path: Path,
) -> None:
    """The reproduction itself: ``bench_turns`` (its HTTP section, which runs two uvicorn
    children) killed with SIGKILL once both children run."""
    bench = subprocess.Popen(
        [sys.executable, "-m", "tests.benchmarks.bench_turns", "--quick", "--only", "http"],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        children: list[int] = []
        while time.monotonic() < deadline and len(children) < 2:
            assert bench.poll() is None, "the benchmark ended before starting its servers"
            children = [pid for pid in children_of(bench.pid) if alive(pid)]
            time.sleep(0.1)
        assert len(children) == 2, children
    finally:
        bench.send_signal(signal.SIGKILL)
        bench.wait(timeout=10)
    assert wait_until_gone(children, within=10) == []


def test_a_killed_test_run_takes_the_copilot_service_with_it(
    tmp_path: Path, gns3_server: RealGns3Server
) -> None:
    parent, children = start_parent(
        f"""
        import os, time
        from pathlib import Path
        from tests.fakes.copilot_service import serve_copilot
        with serve_copilot({gns3_server.url!r}, Path(os.environ["TMP_ROOT"])) as copilot:
            print("CHILDREN", copilot.process.pid, flush=True)
            time.sleep(600)
        """,
        tmp_path,
    )
    assert all(alive(pid) for pid in children)
    kill_parent(parent)
    assert wait_until_gone(children, within=10) == []


@pytest.mark.timeout(300)
def test_a_killed_test_run_takes_its_gns3_server_with_it(tmp_path: Path) -> None:
    parent, children = start_parent(
        """
        import time
        from tests.fakes.gns3_server import RealGns3Server
        with RealGns3Server(console_ports=(29000, 29099), udp_ports=(29100, 29199)) as gns3:
            print("CHILDREN", gns3.pid, flush=True)
            time.sleep(600)
        """,
        tmp_path,
    )
    assert all(alive(pid) for pid in children)
    kill_parent(parent)
    # gns3-server gets SIGTERM (so that it stops its own nodes): it needs a few seconds.
    assert wait_until_gone(children, within=30) == []
