"""Troubleshooting drills on a GNS3 project: :class:`Gns3DrillLab` (the core's
``DrillLab``: a fault sent to the lab, its constraints judged, the lab restored) and
:class:`DrillTools` (the chat's and MCP's ``practice_drill`` tool over the core's
``Drills``). Above the tools: a drill captures the lab as the lab-state tool does and
restores devices as restore points do.
"""

from adapters.gns3.drills._lab import Gns3DrillLab
from adapters.gns3.drills._tools import DrillTools

__all__ = ["DrillTools", "Gns3DrillLab"]
