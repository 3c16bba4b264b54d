"""Starts a tool, streams a little, fills stderr and dies with status 3."""

import sys

from _protocol import arguments, emit

arguments()
emit("tool_start", tool="show_run")
emit("tool_args", tool="show_run", args={"node": "R1"})
emit("chunk", content="partial")
sys.stderr.write("noise " * 20_000 + "\n")
sys.stderr.write("Traceback: boom at the end\n")
sys.stderr.flush()
sys.exit(3)
