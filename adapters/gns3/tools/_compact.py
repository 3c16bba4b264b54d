"""The GNS3 tools in the compact tool set (small models): a sentence each, which are
everyday tools, and the words of a user's message that bring the others in.

An everyday turn (build, link, start, address, ping, show) reads the everyday tools
only; a message that speaks of a capture, a filter, a snapshot, deleting, undoing…
brings the tool for it (see :func:`copilot_core` ``compact_tools``)."""

from __future__ import annotations

from dataclasses import replace

from copilot_core import ToolSpec

__all__ = ["COMPACT_PROFILES", "with_compact_profile"]

#: tool -> (brief, everyday, cues)
COMPACT_PROFILES: dict[str, tuple[str, bool, tuple[str, ...]]] = {
    "gns3_topology_reader": ("Read the lab: nodes, their ports and status, links.", True, ()),
    "get_gns3_templates": ("List the templates nodes are created from.", True, ()),
    "create_gns3_node": ("Create nodes from templates (template_name, e.g. VPCS).", True, ()),
    "create_gns3_link": ("Link two nodes' free ports (names as in the topology).", True, ()),
    "start_gns3_node": ("Start nodes by name.", True, ()),
    "start_all_gns3_nodes": ("Start every node.", True, ()),
    "execute_multiple_device_commands": (
        "Run read-only commands (show, ping) on started devices.",
        True,
        (),
    ),
    "execute_multiple_device_config_commands": (
        "Configure started devices: routers, switches, Linux hosts (VPCS: "
        "execute_vpcs_commands); give only the lines, the tool enters and leaves "
        "configuration mode.",
        True,
        (),
    ),
    "execute_vpcs_commands": (
        "Run commands on VPCS hosts: ip 10.0.0.2/24 10.0.0.1, show ip, ping 10.0.0.1.",
        True,
        (),
    ),
    "device_skills": (
        "A platform's command guide: action list, or get a topic.",
        False,
        ("syntax", "how do", "how to", "guide", "skill"),
    ),
    "update_gns3_node_name": ("Rename nodes.", False, ("rename",)),
    "verify_intent": (
        "Check the network does what was meant (reachability, OSPF/BGP neighbours, routes, "
        "interfaces, config lines); retried until it holds or wait_s runs out.",
        False,
        ("verify", "check", "did it work", "intent", "adjacen", "neighbo", "reachab"),
    ),
    "standing_intent": (
        "List, add or remove the user's standing checks (always-true facts of the lab).",
        False,
        ("always", "standing", "intent"),
    ),
    "capture_lab_state": (
        "Record the network's state (interfaces, neighbours, routes, config, PC "
        "reachability); answers a state_id for diff_lab_state.",
        False,
        ("what changed", "baseline", "before and after", "lab state", "network state", "diff"),
    ),
    "diff_lab_state": (
        "What changed between two states (from, to: state_id or now): adjacencies, routes, "
        "interfaces, reachability, config lines.",
        False,
        ("what changed", "differen", "diff", "compare", "broke", "lab state", "network state"),
    ),
    "packet_capture": (
        "Capture packets on a link: start, stop, analyze.",
        False,
        ("captur", "wireshark", "pcap", "packet", "sniff"),
    ),
    "gns3_snapshots": ("List, create or restore project snapshots.", False, ("snapshot",)),
    "gns3_link_filters": (
        "Get, set or clear a link's faults: delay, jitter, loss, corruption.",
        False,
        ("delay", "latency", "jitter", "loss", "corrupt", "filter", "fault", "drop"),
    ),
    "stop_gns3_node": ("Stop nodes by name.", False, ("stop", "shut", "power off")),
    "suspend_gns3_node": ("Suspend nodes by name.", False, ("suspend", "pause")),
    "stop_all_gns3_nodes": ("Stop every node.", False, ("stop", "shut", "power off")),
    "wait_for_console": (
        "Wait until started nodes' consoles show their prompt.",
        False,
        ("wait", "boot"),
    ),
    "delete_gns3_node": ("Delete nodes by name, with their links.", False, ("delet", "remov")),
    "delete_gns3_link": (
        "Delete links, each named by its two nodes.",
        False,
        ("delet", "remov", "unlink", "disconnect"),
    ),
    "gns3_annotate": (
        "Put a text note or a rectangle on the canvas.",
        False,
        ("note", "annotat", "label", "draw", "canvas"),
    ),
    "restore_point": (
        "List restore points, or roll one back (undo a change).",
        False,
        ("undo", "restore", "roll", "revert"),
    ),
    # the labs package's tool of this registry (adapters.gns3.labs: gns3_lab_tools)
    "plan_lab": (
        "Plan a whole lab (routers, links, hosts, OSPF or static, a pool) or a change to "
        "it: ports, addresses, every device's lines and checks, judged; builds nothing.",
        False,
        ("plan", "build", "design", "topolog", "triangle", "new lab", "yaml", "export"),
    ),
}


def with_compact_profile(spec: ToolSpec) -> ToolSpec:
    """``spec`` with its brief, everyday flag and cues (a tool not listed is everyday)."""
    profile = COMPACT_PROFILES.get(spec.name)
    if profile is None:
        return spec
    brief, everyday, cues = profile
    return replace(spec, brief=brief, everyday=everyday, cues=cues)
