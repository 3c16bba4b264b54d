"""The ``gns3-copilot`` command."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="gns3-copilot", description="An AI copilot for GNS3 labs."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("serve", help="run the HTTP service (not available yet: see README)")
    args = parser.parse_args(argv)
    if args.command == "serve":
        print(
            "gns3-copilot serve: the HTTP service is not built yet; the core library "
            "(copilot_core) is usable on its own.",
            file=sys.stderr,
        )
        return 2
    return 0
