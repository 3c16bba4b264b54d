"""The GNS3 adapter: REST client, console runner, tools, skills and capture analysis.

* :class:`Gns3Client` — the GNS3 v3 REST API on httpx, with the caller's token per call.
* :class:`Gns3ClientDirectory` — signing in and listing projects, for the web page.
* :class:`Gns3GroupDirectory` — a user's GNS3 groups, for the operator's policy.
* :class:`Gns3ToolExecutor` — the core's ``ToolExecutor``: the copilot's lab tools.
* :func:`gns3_tools` — the :class:`ToolRegistry` of :class:`Gns3Tool` s (argument model,
  handler, modes, whether it changes the lab), for any other consumer of the same tools.
* :class:`Gns3TopologySource` — the core's ``TopologySource``.
* :class:`ConsoleRunner` — commands over telnet consoles.
* :class:`Gns3Settings`, :class:`ConsoleSettings` — the service's ``gns3`` and ``console``
  settings.
* :class:`SkillLibrary` — device skills and the forbidden-command list, reloadable.
* :func:`load_fault_catalog` — the troubleshooting faults (:class:`FaultCatalog`), judged.
* :class:`Gns3DrillLab` — the core's ``DrillLab``: a drill's fault sent to, and the lab
  restored from, a GNS3 project.
* :class:`DrillTools` — the chat's ``practice_drill`` tool over the core's ``Drills``.
* :class:`Gns3LabPlanner` — the core's ``LabPlanner``: a lab plan resolved against the
  server, the project's lab exported as a plan; :func:`gns3_lab_tools` — the registry of
  every GNS3 tool and ``plan_lab``.
* :func:`analyze_pcap` — a packet capture summarised for a model.
* :class:`Gns3ProjectWatcher` — follows GNS3's project lifecycle (closed, deleted).
"""

from adapters.gns3._faults import (
    FAULTS_DIR,
    FaultCatalog,
    FaultCatalogError,
    baseline_lines,
    load_fault_catalog,
)
from adapters.gns3._settings import ConsoleSettings, Gns3Settings
from adapters.gns3._skills import BUILTIN_SKILLS_DIR, Skill, SkillLibrary
from adapters.gns3.console import CommandOutcome, ConsoleRunner, ConsoleTarget, ConsoleTranscript
from adapters.gns3.drills import DrillTools, Gns3DrillLab
from adapters.gns3.labs import Gns3LabBuilder, Gns3LabPlanner, LabBuildTools, gns3_lab_tools
from adapters.gns3.model import (
    DEFAULT_FORBIDDEN_COMMANDS,
    DeviceKind,
    ForbiddenCommandFilter,
    analyze_pcap,
    configuration_reason,
    device_kind_of,
)
from adapters.gns3.rest import (
    Gns3Authenticator,
    Gns3Client,
    Gns3ClientDirectory,
    Gns3GroupDirectory,
    Gns3ProjectGate,
    Gns3ProjectWatcher,
    ProjectLifecycleHandler,
    ReconcileReport,
)
from adapters.gns3.tools import (
    Gns3Tool,
    Gns3ToolExecutor,
    Gns3ToolSettings,
    Gns3TopologySource,
    LabAccess,
    ToolRegistry,
    gns3_tools,
    openai_schema,
)

__all__ = [
    "BUILTIN_SKILLS_DIR",
    "DEFAULT_FORBIDDEN_COMMANDS",
    "FAULTS_DIR",
    "CommandOutcome",
    "ConsoleRunner",
    "ConsoleSettings",
    "ConsoleTarget",
    "ConsoleTranscript",
    "DeviceKind",
    "DrillTools",
    "FaultCatalog",
    "FaultCatalogError",
    "ForbiddenCommandFilter",
    "Gns3Authenticator",
    "Gns3Client",
    "Gns3ClientDirectory",
    "Gns3DrillLab",
    "Gns3GroupDirectory",
    "Gns3LabBuilder",
    "Gns3LabPlanner",
    "Gns3ProjectGate",
    "Gns3ProjectWatcher",
    "Gns3Settings",
    "Gns3Tool",
    "Gns3ToolExecutor",
    "Gns3ToolSettings",
    "Gns3TopologySource",
    "LabAccess",
    "LabBuildTools",
    "ProjectLifecycleHandler",
    "ReconcileReport",
    "Skill",
    "SkillLibrary",
    "ToolRegistry",
    "analyze_pcap",
    "baseline_lines",
    "configuration_reason",
    "device_kind_of",
    "gns3_lab_tools",
    "gns3_tools",
    "load_fault_catalog",
    "openai_schema",
]
