"""Run by ``tests/ci/test_gns3_install_once.py`` in its own pytest: a gns3-server install
that takes longer than a test's time limit must not make the tests that need it time out.

The install is replaced (at collection, before the suite's hook runs) by one that takes 2 s
and records when it ran; the tests have a 1 s limit each.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tests.fakes import gns3_server

RECORD = Path(os.environ["GNS3_INSTALL_PROBE_RECORD"])


def _slow_install(venv: Path = Path("unused")) -> Path:
    time.sleep(2.0)
    with RECORD.open("a") as record:
        record.write(f"install {time.monotonic()}\n")
    return venv


gns3_server.ensure_gns3_server_installed = _slow_install  # type: ignore[assignment]


@pytest.fixture(scope="session")
def gns3_server() -> str:  # the real fixture would start a server: not needed here
    return "a server"


@pytest.mark.timeout(1)
@pytest.mark.parametrize("n", [1, 2])
def test_needs_the_server(gns3_server: str, n: int) -> None:
    with RECORD.open("a") as record:
        record.write(f"test {time.monotonic()}\n")


__all__ = ["test_needs_the_server"]
