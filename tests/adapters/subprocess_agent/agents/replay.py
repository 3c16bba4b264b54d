"""Prints the lines of the file named by --mode, as they are."""

import sys

from _protocol import arguments

args = arguments()
with open(args.mode, encoding="utf-8") as script:
    sys.stdout.write(script.read())
