"""Lab plans on GNS3 (issue 39): :class:`Gns3LabPlanner` (the core's ``LabPlanner``: a
plan's templates, ports and device lines judged against the server, and the project's
lab exported as a plan) and the chat's ``plan_lab`` tool (a tool of the GNS3 registry:
:func:`gns3_lab_tools` is every GNS3 tool and it); :class:`Gns3LabBuilder` (a
resolved plan built: nodes, links, start, every device's lines, consoles bounded) and the
chat's ``build_lab`` tool (:class:`LabBuildTools`: the build as ONE verified change).
Beside the drills, above the tools: all are built on the tool source's
:class:`~adapters.gns3.LabAccess`.
"""

from adapters.gns3.labs._build import Gns3LabBuilder, LabBuildReport
from adapters.gns3.labs._build_tool import BUILD_TOOL, LabBuildTools
from adapters.gns3.labs._plan_tool import PLAN_TOOL, gns3_lab_tools, lab_tools
from adapters.gns3.labs._planner import Gns3LabPlanner

__all__ = [
    "BUILD_TOOL",
    "PLAN_TOOL",
    "Gns3LabBuilder",
    "Gns3LabPlanner",
    "LabBuildReport",
    "LabBuildTools",
    "gns3_lab_tools",
    "lab_tools",
]
