"""The result shapes every batched tool answers with.

One item per device, node or link: ``{device_name, status: success|partial_success|failed,
output, blocked_commands?, error?}``, wrapped as ``{"status": ..., "results": [...]}``.
The :class:`~copilot_core._tools.ToolResult` status is ``error`` only when every item
failed, so the agent re-reads the topology after a partly successful change.
"""

from __future__ import annotations

from typing import Any

from copilot_core import ToolResult, ToolStatus

__all__ = ["batch", "item"]

JSON = dict[str, Any]


def item(name: str, status: str, output: Any = None, **extra: Any) -> JSON:
    """One device's, node's or link's result; ``None`` extras are left out."""
    result: JSON = {"device_name": name, "status": status, "output": output}
    result.update({key: value for key, value in extra.items() if value is not None})
    return result


def batch(results: list[JSON]) -> ToolResult:
    """The items wrapped with their overall status."""
    statuses = {result["status"] for result in results}
    if statuses == {"success"}:
        overall = "success"
    elif statuses == {"failed"}:
        overall = "failed"
    else:
        overall = "partial_success"
    status = ToolStatus.ERROR if overall == "failed" else ToolStatus.SUCCESS
    return ToolResult({"status": overall, "results": results}, status)
