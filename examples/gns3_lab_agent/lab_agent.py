#!/usr/bin/env python3
"""A small external agent for gns3-copilot: answers questions about a GNS3 lab.

It speaks spec 002's JSON-line protocol on stdout and uses no language model: it
reads the project's nodes and links from the GNS3 v3 REST API and answers from
them with fixed rules, so the same lab and question always give the same answer.

Command line (what gns3-copilot passes by default)::

    lab_agent.py --json-events --query TEXT --history JSON

Environment: ``GNS3_URL`` and ``GNS3_PROJECT_ID`` (set by gns3-copilot),
``GNS3_TOKEN`` (only when the agent is configured with ``pass_token: true``), or
``LAB_AGENT_TOPOLOGY_FILE``: a JSON file ``{"nodes": [...], "links": [...]}`` in
GNS3's shapes, to try it without a server. Standard library only.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
import urllib.error
import urllib.request
from typing import Any

Topology = dict[str, list[dict[str, Any]]]


def emit(kind: str, **fields: Any) -> None:
    sys.stdout.write(json.dumps({"type": kind, **fields}, ensure_ascii=False) + "\n")
    sys.stdout.flush()


# ---------------------------------------------------------------- reading the lab
def fetch(url: str, token: str | None) -> Any:
    request = urllib.request.Request(url, headers={"Accept": "application/json"})
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read().decode("utf-8"))


def read_topology() -> tuple[Topology | None, str]:
    """The lab's nodes and links, and where they came from (or why there are none)."""
    path = os.environ.get("LAB_AGENT_TOPOLOGY_FILE")
    if path:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
        return {"nodes": data.get("nodes", []), "links": data.get("links", [])}, f"file {path}"
    base, project = os.environ.get("GNS3_URL"), os.environ.get("GNS3_PROJECT_ID")
    if not base or not project:
        return None, "no GNS3_URL and GNS3_PROJECT_ID in my environment"
    token = os.environ.get("GNS3_TOKEN")
    root = f"{base.rstrip('/')}/v3/projects/{project}"
    try:
        nodes = fetch(f"{root}/nodes", token)
        links = fetch(f"{root}/links", token)
    except urllib.error.HTTPError as exc:
        hint = " (configure the agent with pass_token: true)" if exc.code == 401 else ""
        return None, f"GNS3 answered {exc.code} {exc.reason}{hint}"
    except (urllib.error.URLError, TimeoutError, ValueError) as exc:
        return None, f"GNS3 at {base} could not be read: {exc}"
    return {"nodes": nodes, "links": links}, f"GNS3 project {project}"


# ---------------------------------------------------------------- answering
def port_name(node: dict[str, Any], adapter: Any, port: Any) -> str:
    for item in node.get("ports") or []:
        if item.get("adapter_number") == adapter and item.get("port_number") == port:
            return str(item.get("name"))
    return f"{adapter}/{port}"


def link_lines(topology: Topology, only: set[str] | None = None) -> list[str]:
    by_id = {node["node_id"]: node for node in topology["nodes"]}
    lines = []
    for link in topology["links"]:
        ends = []
        for end in link.get("nodes", []):
            node = by_id.get(end.get("node_id"), {"name": "?"})
            ends.append(
                (node["name"], port_name(node, end.get("adapter_number"), end.get("port_number")))
            )
        if len(ends) != 2 or (only and not only & {ends[0][0], ends[1][0]}):
            continue
        state = " (suspended)" if link.get("suspend") else ""
        lines.append(f"- {ends[0][0]} {ends[0][1]} ↔ {ends[1][0]} {ends[1][1]}{state}")
    return sorted(lines)


def node_line(node: dict[str, Any]) -> str:
    console = ""
    if node.get("console") is not None:
        kind = node.get("console_type", "telnet")
        console = f", console {kind} {node.get('console_host') or ''}:{node['console']}"
    return f"- {node['name']} ({node.get('node_type', '?')}, {node.get('status', '?')}{console})"


def answer(query: str, topology: Topology) -> tuple[str, str]:
    """(what I decided to look at, the answer) for a question about this lab."""
    q = query.lower()
    nodes = sorted(topology["nodes"], key=lambda node: node["name"].lower())
    named = {
        node["name"] for node in nodes if re.search(rf"\b{re.escape(node['name'].lower())}\b", q)
    }

    if re.search(r"\b(stopped|down|not running|off)\b", q):
        stopped = [node for node in nodes if node.get("status") != "started"]
        if not stopped:
            return "nodes not started", f"All {len(nodes)} nodes are started."
        names = ", ".join(node["name"] for node in stopped)
        return (
            "nodes not started",
            f"{len(stopped)} of {len(nodes)} nodes are not started: {names}.",
        )
    if re.search(r"\b(running|started|up)\b", q):
        started = [node["name"] for node in nodes if node.get("status") == "started"]
        text = ", ".join(started) if started else "none"
        return "started nodes", f"{len(started)} of {len(nodes)} nodes are started: {text}."
    if re.search(r"\b(link|links|connected|connection|connections|cable|wired)\b", q):
        lines = link_lines(topology, named or None)
        where = f" of {', '.join(sorted(named))}" if named else ""
        if not lines:
            return "links", f"There are no links{where}."
        return "links", f"Links{where} ({len(lines)}):\n" + "\n".join(lines)
    if re.search(r"\b(console|telnet|vnc)\b", q):
        lines = [node_line(node) for node in nodes if not named or node["name"] in named]
        return "consoles", "Consoles:\n" + "\n".join(lines)
    if named:
        lines = [node_line(node) for node in nodes if node["name"] in named]
        links = link_lines(topology, named)
        text = "\n".join(lines) + ("\nLinks:\n" + "\n".join(links) if links else "\nNo links.")
        return "named nodes", text

    statuses: dict[str, int] = {}
    for node in nodes:
        statuses[node.get("status", "?")] = statuses.get(node.get("status", "?"), 0) + 1
    counts = ", ".join(f"{n} {status}" for status, n in sorted(statuses.items()))
    text = (
        f"The lab has {len(nodes)} nodes ({counts or 'none'}) and {len(topology['links'])} links.\n"
    )
    text += "\n".join(node_line(node) for node in nodes)
    return "summary", text.rstrip()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json-events", action="store_true", help="speak JSON lines (always on)")
    parser.add_argument("--query", required=True)
    parser.add_argument("--history", default="[]")
    args = parser.parse_args()
    started = time.monotonic()
    history = json.loads(args.history or "[]")

    emit("plan", steps=["Read the lab topology", "Answer from it"], current_step=0)
    emit("step", step=1, total=2, status="started")
    emit(
        "thinking",
        content=f"Reading the lab to answer: {args.query!r} ({len(history)} earlier messages).",
    )
    emit("tool_start", tool="read_topology", detail="GET nodes and links")
    emit(
        "tool_args",
        tool="read_topology",
        args={"project_id": os.environ.get("GNS3_PROJECT_ID")},
        detail="",
    )
    topology, source = read_topology()
    if topology is None:
        emit("tool_result", title="Topology", summary=source, success=False)
        emit("tool_end", success=False)
        text = (
            f"I could not read the lab: {source}. With access I would read the project's "
            "nodes and links from GNS3 and answer about their status, links and consoles."
        )
        emit("status", status="warning", message=source)
        decided = "nothing"
    else:
        summary = f"{len(topology['nodes'])} nodes, {len(topology['links'])} links from {source}"
        emit(
            "tool_result",
            title="Topology",
            summary=summary,
            success=True,
            result_data={"nodes": len(topology["nodes"]), "links": len(topology["links"])},
        )
        emit("tool_end", success=True)
        decided, text = answer(args.query, topology)
    emit("step", step=2, total=2, status="started")
    emit("status", status="working", message=f"Answering about: {decided}")
    for line in text.splitlines(keepends=True):
        emit("chunk", content=line)
    emit(
        "answer", content=text, elapsed=round(time.monotonic() - started, 3), steps=2, tools_used=1
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
