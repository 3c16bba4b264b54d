"""Answers with its whole environment, as JSON."""

import json
import os

from _protocol import arguments, emit

arguments()
emit("answer", content=json.dumps(dict(os.environ)))
