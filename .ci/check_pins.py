"""Fail when an environment holds a package that constraints.txt does not pin.

    python .ci/check_pins.py constraints.txt ENV_PYTHON [ENV_PYTHON ...]

Each ENV_PYTHON is asked for its ``pip freeze`` (the project itself left out); every
package it lists must be pinned, at the version installed. A package that is not pinned
would be resolved afresh on every new machine, which is how an unpinned redis turned CI
red: the check names each one, and the fix is `bash .ci/refresh-constraints` or a pin.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path


def _name(requirement: str) -> str:
    """A distribution's name as PEP 503 compares it."""
    return re.sub(r"[-_.]+", "-", requirement).lower()


def _pins(path: Path) -> dict[str, str]:
    pins: dict[str, str] = {}
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.split("#", 1)[0].strip()
        if "==" in line:
            name, version = line.split("==", 1)
            pins[_name(name)] = version.strip()
    return pins


def _installed(python: str) -> dict[str, tuple[str, str]]:
    result = subprocess.run(
        [python, "-m", "pip", "freeze", "--exclude", "gns3-copilot", "--disable-pip-version-check"],
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise SystemExit(f"{python} -m pip freeze failed:\n{result.stderr}")
    installed: dict[str, tuple[str, str]] = {}
    for line in result.stdout.splitlines():
        if "==" in line:
            name, version = line.split("==", 1)
            installed[_name(name)] = (name, version.strip())
        elif line.strip():
            installed[_name(line)] = (line.strip(), "(not from an index)")
    return installed


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    pins = _pins(Path(argv[0]))
    problems: list[str] = []
    for python in argv[1:]:
        for key, (name, version) in sorted(_installed(python).items()):
            pinned = pins.get(key)
            if pinned is None:
                problems.append(f"{python}: {name}=={version} is installed but not pinned")
            elif pinned != version:
                problems.append(f"{python}: {name}=={version} is installed, pinned {pinned}")
    if problems:
        print(f"{argv[0]} does not cover what is installed:", file=sys.stderr)
        for problem in problems:
            print(f"  {problem}", file=sys.stderr)
        print("  refresh it with `bash .ci/refresh-constraints`, or pin these", file=sys.stderr)
        return 1
    print(f"{argv[0]}: every installed package is pinned ({len(argv) - 1} environment(s))")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
