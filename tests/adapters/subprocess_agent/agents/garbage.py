"""Prints garbage, a too-long line and broken events around a good answer."""

import sys

from _protocol import arguments, emit

arguments()
out = sys.stdout
out.write("this is not json\n")
out.write("[1, 2, 3]\n")
out.write('{"no_type": true}\n')
out.write('{"type": "chunk", "content": "half\n')
out.write('{"type": "teleport"}\n')
out.write('{"type": "step", "step": "one"}\n')
out.write('{"type": "chunk", "content": "' + "x" * 3_000_000 + '"}\n')
out.write("\n")
out.flush()
emit("chunk", content="still ")
emit("chunk", content="here")
