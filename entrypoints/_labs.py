"""Lab plans in the composition root (issue 39): the planner, the chat's ``build_lab`` tool
and the build on the user's approval, each on the GNS3 tools' own lab access (``None``
when the tools are not GNS3's: that deployment has no lab plans)."""

from __future__ import annotations

from adapters.gns3 import Gns3LabPlanner, Gns3ToolExecutor, LabBuildTools
from adapters.mcp import CompositeToolExecutor
from copilot_core import ToolGate
from copilot_core.bootstrap import HistoryWindows
from copilot_core.labs import LabBuilds, LabPlanner
from copilot_core.ports import CheckpointStore, Clock, IdFactory, SessionLeases, ToolExecutor

__all__ = ["gns3_lab_build_tools", "gns3_lab_planner", "lab_build_use_case", "with_lab_builds"]


def gns3_lab_planner(tools: ToolExecutor) -> LabPlanner | None:
    """Lab plans resolved and exported on the GNS3 tools' own lab access (``None`` when
    the tools are not GNS3's: that deployment has no lab plans)."""
    return Gns3LabPlanner(tools.lab) if isinstance(tools, Gns3ToolExecutor) else None


def gns3_lab_build_tools(tools: ToolExecutor, planner: LabPlanner | None) -> LabBuildTools | None:
    """The chat's ``build_lab`` tool (a plan built as one verified change) on the GNS3
    tools' own lab access, its plans resolved by the planner (``None`` without one)."""
    if planner is None or not isinstance(tools, Gns3ToolExecutor):
        return None
    return LabBuildTools(tools.lab, planner, tools.probes)


def with_lab_builds(tools: ToolExecutor, builds: LabBuildTools | None) -> ToolExecutor:
    """The GNS3 tools, then ``build_lab`` when lab plans can be built."""
    return tools if builds is None else CompositeToolExecutor(tools, builds)


def lab_build_use_case(
    gate: ToolGate,
    builds: LabBuildTools | None,
    planner: LabPlanner | None,
    store: CheckpointStore,
    leases: SessionLeases,
    clock: Clock,
    ids: IdFactory,
    windows: HistoryWindows | None = None,
) -> LabBuilds | None:
    """A plan built on the user's approval (``POST …/labs/build``): the tool's own
    ``build_lab`` call (``LabBuildTools.build_call``) through the agent's gate, which
    serves that tool (``None`` without it)."""
    if builds is None or planner is None:
        return None
    return LabBuilds(gate, planner, builds, store, leases, clock=clock, ids=ids, windows=windows)
