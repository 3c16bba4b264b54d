"""A device's lines sent on its console, judged first: the one sender of planned lines.

A fault drill's lines (:class:`~adapters.gns3.drills.Gns3DrillLab`) and a lab build's
device configuration (:class:`~adapters.gns3.labs.Gns3LabBuilder`) are lines in their
platform's own words, written before the call (a catalog, a plan), not typed by the model
in the call. :func:`send_device_lines` sends them the same way for both: each line judged
by its platform's grammar (:func:`~adapters.gns3._faults.line_problem`: a well-formed
change) and the operator's forbidden list, none sent when one is refused; then all of
them in one console run (FRR lines in configuration mode, as the config tool sends them;
Linux shell commands; VPCS commands), every outcome read (a Linux tool's own error text
counts: the console's error rule knows only a shell's "command not found").
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from adapters.gns3._faults import KINDS, line_problem
from adapters.gns3.lab import LabAccess, LabSnapshot
from copilot_core.faults import Platform

__all__ = ["send_device_lines"]

#: What a Linux tool prints when a change did not happen: iproute2, iptables, nft.
_SHELL_FAILED = re.compile(
    r"^(?:RTNETLINK answers: |Error: |Cannot find device|iptables(?: v[\d.]+)?: |"
    r"Bad argument|Command line is not complete|nft: |Error: Could not process rule)",
    re.MULTILINE,
)


async def send_device_lines(
    lab: LabAccess,
    snapshot: LabSnapshot,
    node: dict[str, Any],
    platform: Platform,
    lines: Sequence[str],
) -> str | None:
    """Send ``lines`` to ``node`` (of ``platform``) on its console; ``None`` when every
    line ran, else why not, in a sentence naming the line (nothing is sent when a line is
    refused before)."""
    kind = KINDS[platform]
    config = platform is Platform.FRR
    for line in lines:
        why = line_problem(line, platform) or lab.skills.forbidden.reason(line, kind, config=config)
        if why is not None:
            return why
    transcript = await lab.runner.run(
        snapshot.console_target(node, kind), list(lines), config_mode=config
    )
    if transcript.error is not None:
        return transcript.error
    failed = [
        o
        for o in transcript.outcomes
        if not o.ok or (platform is Platform.LINUX and _SHELL_FAILED.search(o.output))
    ]
    if failed:
        said = failed[0].error or failed[0].output.strip() or "failed"
        return f"`{failed[0].command}`: {said}"
    if len(transcript.outcomes) != len(lines):
        return "not every line ran"
    return None
