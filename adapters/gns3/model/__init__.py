"""The GNS3 adapter's network model: platforms and their command grammar, the command
policy, parsed show output, checks compiled per platform, device configuration
state, the lab's state and its diff, capture summaries.

Pure: it does no I/O (an import-linter contract forbids httpx, tenacity, telnetlib3,
asyncio, socket, sqlite3 and subprocess here), so it is tested without a lab. The
other sub-packages use it through this face.
"""

from adapters.gns3.model._capture import analyze_pcap
from adapters.gns3.model._command_policy import (
    DEFAULT_FORBIDDEN_COMMANDS,
    DeviceKind,
    ForbiddenCommandFilter,
    configuration_reason,
    device_kind_of,
    teaching_refusal,
)
from adapters.gns3.model._device_state import (
    BlockKeeper,
    ConfigLine,
    ConfigurationKeeper,
    LinuxKeeper,
    config_tree,
    keeper_for,
)
from adapters.gns3.model._drill_state import (
    HOST_READS,
    differences,
    host_plan,
    judge_constraints,
    link_fields,
    link_updates,
    parse_host,
)
from adapters.gns3.model._grammar import (
    LABELS,
    Verdict,
    control_character_error,
    forbidden_match,
    judge,
    judge_strictest,
)
from adapters.gns3.model._hints import platform_hint
from adapters.gns3.model._intent_compile import Plan, compile_check, names_to_resolve
from adapters.gns3.model._intent_reading import Output, address_reads, addresses, head
from adapters.gns3.model._lab_state import LabState, LabStateStore, NodeState, Reachability
from adapters.gns3.model._lab_state_diff import CATEGORIES, diff_lab_state
from adapters.gns3.model._lab_state_reading import PCS, node_state, reads_for
from adapters.gns3.model._parsing import ShowParser
from adapters.gns3.model._platforms import (
    ModeStep,
    Platform,
    kind_from_name,
    pager_prompt,
    platform_for,
)

__all__ = [
    "CATEGORIES",
    "DEFAULT_FORBIDDEN_COMMANDS",
    "HOST_READS",
    "LABELS",
    "PCS",
    "BlockKeeper",
    "ConfigLine",
    "ConfigurationKeeper",
    "DeviceKind",
    "ForbiddenCommandFilter",
    "LabState",
    "LabStateStore",
    "LinuxKeeper",
    "ModeStep",
    "NodeState",
    "Output",
    "Plan",
    "Platform",
    "Reachability",
    "ShowParser",
    "Verdict",
    "address_reads",
    "addresses",
    "analyze_pcap",
    "compile_check",
    "config_tree",
    "configuration_reason",
    "control_character_error",
    "device_kind_of",
    "diff_lab_state",
    "differences",
    "forbidden_match",
    "head",
    "host_plan",
    "judge",
    "judge_constraints",
    "judge_strictest",
    "keeper_for",
    "kind_from_name",
    "link_fields",
    "link_updates",
    "names_to_resolve",
    "node_state",
    "pager_prompt",
    "parse_host",
    "platform_for",
    "platform_hint",
    "reads_for",
    "teaching_refusal",
]
