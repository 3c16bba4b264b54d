"""An external agent for the AgentBackend contract (spec 002's JSON lines on stdout).

It reads the lab with one tool and answers; a query starting with "Watch" makes it
stream the start of an answer and then wait forever (until it is stopped).
Standard library only; nothing here knows of gns3-copilot.
"""

import argparse
import json
import sys
import time


def emit(type_: str, **fields: object) -> None:
    sys.stdout.write(json.dumps({"type": type_, **fields}) + "\n")
    sys.stdout.flush()


parser = argparse.ArgumentParser()
parser.add_argument("--json-events", action="store_true")
parser.add_argument("--query", required=True)
parser.add_argument("--history", default="[]")
args = parser.parse_args()

emit("status", status="working", message="reading the lab")
emit("chunk", content="Let me look at the lab. ")
emit("tool_start", tool="gns3_topology_reader", detail="reading nodes and links")
emit("tool_args", tool="gns3_topology_reader", args={})
emit("tool_result", title="Topology", summary="2 nodes", success=True,
     result_data={"nodes": ["PC1", "PC2"], "links": []})  # fmt: skip
emit("tool_end", success=True)
if args.query.startswith("Watch"):
    emit("chunk", content="Watching PC1 and PC2")
    while True:
        time.sleep(1)
emit("chunk", content="Your lab has two nodes, PC1 and PC2, not linked.")
emit("answer", content="Your lab has two nodes, PC1 and PC2, not linked.", steps=1, tools_used=1)
