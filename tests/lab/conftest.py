"""The session's router lab: one Docker daemon, the FRR image, one gns3-server with the
FRR and Linux host templates. A machine that cannot run it skips, saying which check failed."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from tests.lab.router_lab import LabUnavailableError, RouterLab


@pytest.fixture(scope="session")
def router_lab() -> Iterator[RouterLab]:
    lab = RouterLab()
    started = time.monotonic()
    try:
        lab.start()
    except LabUnavailableError as exc:
        pytest.skip(f"the router lab cannot run on this machine: {exc}")
    lab.figures["lab_ready_s"] = time.monotonic() - started
    print("\nrouter lab ready:", {k: round(v, 2) for k, v in lab.figures.items()}, flush=True)
    try:
        yield lab
    finally:
        lab.stop()
