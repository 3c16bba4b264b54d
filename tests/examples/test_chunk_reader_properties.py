"""examples/embed_core/test_chunk_reader.py — a library user's own property test of the
core's ToolCallAccumulator and StatsCollector — run as its user runs it (pytest in a
subprocess), and kept to the core's public root."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[2]
EXAMPLE = ROOT / "examples" / "embed_core"


def test_the_users_property_test_passes() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_chunk_reader.py"],
        cwd=EXAMPLE,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "3 passed" in done.stdout


def test_the_reader_uses_the_accumulator_and_the_stats_from_the_public_root() -> None:
    tree = ast.parse((EXAMPLE / "chunk_reader.py").read_text())
    imported = {
        (node.module, alias.name)
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module
        for alias in node.names
    }
    assert ("copilot_core", "ToolCallAccumulator") in imported
    assert ("copilot_core", "StatsCollector") in imported
    ours = {module for module, _ in imported if module.split(".")[0] == "copilot_core"}
    assert ours <= {"copilot_core", "copilot_core.events", "copilot_core.ports"}
