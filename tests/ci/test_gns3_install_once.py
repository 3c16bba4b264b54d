"""The browser tests' first run from a clean clone timed out while the gns3-server fixture
installed (20–60 s, inside a 120 s per-test limit): the suite installs it once, after
collection and before any test, where no per-test limit applies."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.ci.conftest import REPO


def test_a_slow_gns3_server_install_runs_once_before_the_tests_outside_their_time_limit(
    tmp_path: Path,
) -> None:
    record = tmp_path / "record"
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "tests/ci/probes/gns3_install_probe.py"],
        cwd=REPO,
        env={**os.environ, "GNS3_INSTALL_PROBE_RECORD": str(record)},
        capture_output=True,
        text=True,
        timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 passed" in result.stdout
    events = [line.split()[0] for line in record.read_text().splitlines()]
    assert events == ["install", "test", "test"]


def test_the_install_is_skipped_when_no_collected_test_needs_a_server(tmp_path: Path) -> None:
    record = tmp_path / "record"
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "tests/ci/probes/gns3_install_probe.py", "-k", "no_such_test"],
        cwd=REPO,
        env={**os.environ, "GNS3_INSTALL_PROBE_RECORD": str(record)},
        capture_output=True,
        text=True,
        timeout=120,
    )  # fmt: skip
    assert result.returncode == 5, result.stdout + result.stderr  # nothing ran
    assert not record.exists()
