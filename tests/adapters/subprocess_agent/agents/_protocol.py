"""What every test agent shares: its command line and a way to print one event."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--json-events", action="store_true")
    parser.add_argument("--query", required=True)
    parser.add_argument("--history", default="[]")
    parser.add_argument("--mode", default="")
    return parser.parse_args()


def emit(type_: str, **fields: Any) -> None:
    sys.stdout.write(json.dumps({"type": type_, **fields}) + "\n")
    sys.stdout.flush()
