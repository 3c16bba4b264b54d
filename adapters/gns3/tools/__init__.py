"""The GNS3 tools, one module per family, served through :class:`Gns3ToolExecutor`
(the core's ``ToolExecutor`` and ``TopologySource``): thin handlers over the lab,
console, restore and model packages.
"""

from adapters.gns3.lab import Gns3Tool, Gns3ToolSettings, LabAccess, ToolRegistry, openai_schema
from adapters.gns3.tools._device_lines import send_device_lines
from adapters.gns3.tools._executor import Gns3ToolExecutor, Gns3TopologySource, gns3_tools
from adapters.gns3.tools._lab_capture import capture_lab_state
from adapters.gns3.tools._nodes import unknown_template

__all__ = [
    "Gns3Tool",
    "Gns3ToolExecutor",
    "Gns3ToolSettings",
    "Gns3TopologySource",
    "LabAccess",
    "ToolRegistry",
    "capture_lab_state",
    "gns3_tools",
    "openai_schema",
    "send_device_lines",
    "unknown_template",
]
