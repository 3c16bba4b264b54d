"""Gets the router lab's image ready ahead of its tests: ``python -m tests.lab.prepare``.

``.ci/run`` runs this in the background while the main suite runs, so that a new machine
builds the FRR image (several minutes) beside the other tests instead of before the router
tests. It starts a Docker daemon the way the lab does when none answers, makes the image
present (from the daemon, the cache outside the clone, or a build; the lab's file lock
makes the router tests wait for a build still under way), and stops only the daemon it
started. A machine that cannot run the lab is said and is not an error here: the lab's
fixture says the same when the router tests start.
"""

from __future__ import annotations

import sys
import time

from tests.lab.router_lab import DockerDaemon, LabUnavailableError, check_machine, ensure_frr_image


def main() -> int:
    started = time.monotonic()
    try:
        check_machine()
        daemon = DockerDaemon().start()
    except LabUnavailableError as exc:
        print(f"router lab: not prepared: {exc}", flush=True)
        return 0
    try:
        figures = ensure_frr_image()
    except RuntimeError as exc:
        print(f"router lab: the image could not be made: {exc}", flush=True)
        return 1
    finally:
        daemon.stop()
    how = ", ".join(f"{name} {seconds:.0f} s" for name, seconds in figures.items()) or "present"
    print(f"router lab: image ready ({how}) after {time.monotonic() - started:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
