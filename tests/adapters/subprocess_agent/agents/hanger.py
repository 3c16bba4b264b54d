"""Reports its pids, starts a tool and a child in its group, then never ends."""

import os
import signal
import subprocess
import sys
import time

from _protocol import arguments, emit

args = arguments()
if args.mode == "ignore-term":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])


emit("status", status="info", message="pids", pid=os.getpid(), pgid=os.getpgid(0), child=child.pid)
emit("tool_start", tool="ping")
emit("tool_args", tool="ping", args={"target": "10.0.0.1"})
emit("chunk", content="partial answer")
while True:
    time.sleep(1)
