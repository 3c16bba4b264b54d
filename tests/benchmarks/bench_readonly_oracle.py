"""The read-only oracle's long campaign (issue 35) on the real router lab.

Run: ``flock /tmp/router-lab.lock python -m tests.benchmarks.bench_readonly_oracle
[--examples N] [--quick]`` (500 lines per platform by default, 40 with ``--quick``; it
needs the router lab: root, dockerd, the FRR image; without it, it says so and exits 0).
Hypothesis builds lines from the risky constructs (:mod:`tests.readonly_lines`), the
product judges each, and every line judged read-only runs on a throwaway Linux host and an
FRR router (vtysh and bash) with their state compared before and after
(:mod:`tests.lab.readonly_oracle`). It prints, per platform, the read-only forms, the lines
generated, judged read-only, run on the devices, and the escapes found (each with what it
changed); it asserts nothing.
"""

from __future__ import annotations

import argparse
import sys
import time

from hypothesis import HealthCheck, given, settings

from adapters.gns3 import DeviceKind
from adapters.gns3.model._grammar import read_only_list
from tests.lab.readonly_oracle import Oracle, oracle_project
from tests.lab.router_lab import LabUnavailableError, RouterLab
from tests.readonly_lines import risky_line


def campaign(oracle: Oracle, kind: DeviceKind, examples: int) -> dict[str, float]:
    oracle.figures.clear()
    oracle.escapes.clear()
    began = time.monotonic()

    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(line=risky_line(kind))
    def run(line: str) -> None:
        oracle.try_line(line, kind)

    run()
    figures: dict[str, float] = {
        "read_only_forms": len(read_only_list(kind)),
        **oracle.figures,
        "escapes": len(oracle.escapes),
        "seconds": round(time.monotonic() - began, 1),
    }
    return figures


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--examples", type=int, default=500)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    examples = 40 if args.quick else args.examples
    lab = RouterLab()
    try:
        lab.start()
    except LabUnavailableError as exc:
        print(f"bench_readonly_oracle: the router lab cannot run here: {exc}")
        return 0
    try:
        oracle = oracle_project(lab)
        try:
            for kind in (DeviceKind.LINUX, DeviceKind.FRR):
                figures = campaign(oracle, kind, examples)
                print(f"{kind.value:6} {figures}", flush=True)
                for escape in oracle.escapes:
                    print(f"  ESCAPE {escape.how}: {escape.line!r} changed {escape.changed}")
        finally:
            oracle.lab.delete()
    finally:
        lab.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
