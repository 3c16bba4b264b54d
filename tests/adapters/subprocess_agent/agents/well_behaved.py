"""Speaks every event of spec 002, then answers with what it was given."""

import json

from _protocol import arguments, emit

args = arguments()
history = json.loads(args.history)
emit("status", status="info", message="history", history=history)
emit("plan", steps=["look", "answer"], current_step=0)
emit("step", step=1, total=2, status="started")
emit("thinking", content="I should look at the lab.")
emit("tool_start", tool="list_nodes", detail="reading nodes")
emit("tool_args", tool="list_nodes", args={"project": "p1"}, detail="")
emit(
    "tool_result",
    title="Nodes",
    summary="2 nodes",
    success=True,
    result_data={"nodes": ["R1", "R2"]},
)
emit("tool_end", success=True)
emit("step", step=2, total=2, status="started")
emit("chunk", content="You asked: ")
emit("chunk", content=args.query)
emit(
    "answer",
    content=f"You asked: {args.query} (history {len(history)})",
    elapsed=0.1,
    steps=2,
    tools_used=1,
)
