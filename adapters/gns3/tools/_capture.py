"""The packet capture tool: start, stop, or analyse the capture on a link."""

from __future__ import annotations

import asyncio
import re
from typing import Annotated, Any, Literal

from pydantic import Field

from adapters.gns3.lab import BOTH_MODES, AtMost, CallScope, Gns3Tool, LabAccess, batch, item
from adapters.gns3.model import analyze_pcap
from adapters.gns3.tools._links import LinkEnds, resolve_ends
from copilot_core import CopilotMode, ToolResult
from copilot_core.errors import CopilotError
from copilot_core.ports import ChangePreview, ToolEffect

__all__ = ["capture_tools"]


class PacketCapture(LinkEnds):
    action: Literal["start", "stop", "analyze"]
    seconds: Annotated[float, Field(ge=1), AtMost("capture_max_seconds")] | None = Field(
        None, description="analyze only: how long to read the capture"
    )


async def packet_capture(lab: LabAccess, args: PacketCapture, scope: CallScope) -> ToolResult:
    snapshot = await lab.snapshot(scope)
    label = args.label
    resolved = resolve_ends(snapshot, args)
    if isinstance(resolved, str):
        return batch([item(label, "failed", error=resolved)])
    (node1, port1), (node2, port2) = resolved
    link = snapshot.find_link(node1, port1, node2, port2)
    if link is None:
        existing = "; ".join(snapshot.describe_link(other) for other in snapshot.links) or "none"
        return batch(
            [item(label, "failed", error=f"No link joins {label}; existing links: {existing}.")]
        )
    link_id = str(link["link_id"])
    try:
        if args.action == "start":
            ends = f"{node1['name']}_{port1['name']}-{node2['name']}_{port2['name']}"
            file_name = re.sub(r"[^A-Za-z0-9_.-]+", "_", ends) + ".pcap"
            await lab.client.start_capture(scope.token, scope.project_id, link_id, file_name)
            return batch([item(label, "success", {"capturing": True, "file": file_name})])
        if args.action == "stop":
            await lab.client.stop_capture(scope.token, scope.project_id, link_id)
            return batch([item(label, "success", {"capturing": False})])
        seconds = args.seconds or lab.settings.capture_default_seconds
        data = await _read_capture(lab, scope, link_id, seconds)
    except CopilotError as exc:
        hint = " Start a capture first with action start." if args.action == "analyze" else ""
        return batch([item(label, "failed", error=exc.message + hint)])
    summary = analyze_pcap(data)
    summary["seconds"] = seconds
    return batch([item(label, "success", summary)])


async def _read_capture(lab: LabAccess, scope: CallScope, link_id: str, seconds: float) -> bytes:
    chunks: list[bytes] = []
    stream = lab.client.capture_stream(
        scope.token, scope.project_id, link_id, max_bytes=lab.settings.capture_max_bytes
    )
    try:
        async with asyncio.timeout(seconds):
            async for chunk in stream:
                chunks.append(chunk)
    except TimeoutError:
        pass
    finally:
        await stream.aclose()
    return b"".join(chunks)


def _captured(args: PacketCapture, mode: CopilotMode) -> ChangePreview | None:
    if args.action == "analyze":
        return None  # reads the capture that runs
    verb = "start" if args.action == "start" else "stop"
    return ChangePreview(
        f"{verb} the packet capture on {args.label}",
        topology=[f"{verb} capturing packets on the link {args.label}"],
    )


def _nothing_kept(args: PacketCapture, preview: ChangePreview) -> None:
    return None  # a capture changes no configuration: no restore point


def capture_tools() -> list[Gns3Tool[Any]]:
    return [
        Gns3Tool(
            "packet_capture",
            "Capture packets on the link between node1/port1 and node2/port2: action start, "
            "stop, or analyze (read the running capture for `seconds`, default "
            "{settings.capture_default_seconds:g}, at most {settings.capture_max_seconds:g}, "
            "and summarise protocols, top talkers, ICMP echo pairs and ARP).",
            PacketCapture,
            packet_capture,
            BOTH_MODES,
            effect=ToolEffect.CAPTURE,
            example={
                "action": "start",
                "node1": "R1",
                "port1": "Gi0/0",
                "node2": "PC1",
                "port2": "e0",
            },
            change=_captured,
            restores=_nothing_kept,
        )
    ]
