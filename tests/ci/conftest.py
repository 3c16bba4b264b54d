"""Running the functions of ``.ci/lib.sh`` in bash, with stub commands on ``PATH``.

The stubs stand for the machine's tools (apt-get, python3, pg_isready, ...): each is a small
shell script that records its arguments in ``calls.log`` and behaves as the test says.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@dataclass
class CiShell:
    """A bash that sources ``.ci/lib.sh``; ``stub()`` puts commands in front of ``PATH``."""

    root: Path
    env: dict[str, str] = field(default_factory=dict)

    @property
    def bin(self) -> Path:
        return self.root / "bin"

    @property
    def calls(self) -> list[str]:
        log = self.root / "calls.log"
        return log.read_text().splitlines() if log.exists() else []

    def stub(self, name: str, body: str) -> Path:
        """A command ``name`` that logs ``name args...`` then runs ``body`` (bash)."""
        self.bin.mkdir(exist_ok=True)
        path = self.bin / name
        path.write_text(f'#!/bin/bash\necho "{name} $*" >>"{self.root}/calls.log"\n{body}\n')
        path.chmod(0o755)
        return path

    def _command(self, script: str) -> list[str]:
        return ["/bin/bash", "-c", f"set -euo pipefail; source {REPO}/.ci/lib.sh; {script}"]

    def _environment(self) -> dict[str, str]:
        return {
            "PATH": f"{self.bin}:/usr/local/bin:/usr/bin:/bin",
            "HOME": str(self.root),
            "CI_APT_LOCKS": "",
            **self.env,
        }

    def run(self, script: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self._command(script),
            cwd=self.root,
            env=self._environment(),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def start(self, script: str, stderr: Path) -> subprocess.Popen[str]:
        """``script`` running in the background, its standard error written to ``stderr``
        (read it while it runs)."""
        with stderr.open("w") as sink:
            return subprocess.Popen(
                self._command(script),
                cwd=self.root,
                env=self._environment(),
                stdout=subprocess.DEVNULL,
                stderr=sink,
                text=True,
            )


@pytest.fixture
def ci(tmp_path: Path) -> CiShell:
    shell = CiShell(tmp_path)
    shell.bin.mkdir()
    (tmp_path / "constraints.txt").write_text("tox==4.0\n")
    return shell


__all__ = ["REPO", "CiShell", "ci"]
