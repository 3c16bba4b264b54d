"""Prints without end: valid chunk lines, or one line that never ends."""

import os

from _protocol import arguments, emit

args = arguments()
emit("status", status="info", message="pid", pid=os.getpid())
if args.mode == "endless-line":
    block = b"y" * 65536
    while True:
        os.write(1, block)
line = b'{"type": "chunk", "content": "flood flood flood flood flood flood flood"}\n' * 1000
while True:
    os.write(1, line)
