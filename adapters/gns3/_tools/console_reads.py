"""Show commands read on many consoles at once: one console run per node, every node at
the same time, each output cleaned and parsed (FRR's parsers, ntc-templates).

What ``verify_intent``'s probe and ``capture_lab_state`` share: a :class:`NodeRun` lists
the commands one node is sent; :func:`read_consoles` runs them and gives, per node and
command, the :class:`~adapters.gns3._intent_reading.Output` or the ``error``
:class:`~copilot_core.intent.Observation` that says why there is none (a rejected command,
a command that failed, a console that did not answer: transient). :func:`unusable` says
why a node's console cannot be read at all (not started, no telnet console).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from adapters.gns3._console import REJECTED, ConsoleTranscript
from adapters.gns3._intent_reading import Output, head
from adapters.gns3._lab import LabSnapshot
from adapters.gns3._platforms import DeviceKind, platform_for
from adapters.gns3._tools.registry import LabAccess
from copilot_core.intent import Evidence, Observation

__all__ = ["NodeOutputs", "NodeRun", "read_consoles", "unusable"]

JSON = dict[str, Any]


@dataclass(slots=True)
class NodeRun:
    """The commands one round sends to one node's console."""

    node: JSON
    commands: list[str] = field(default_factory=list)
    privileged: bool = False

    def add(self, command: str, *, privileged: bool = False) -> None:
        if command not in self.commands:
            self.commands.append(command)
        self.privileged = self.privileged or privileged


@dataclass(slots=True)
class NodeOutputs:
    """What one node's console answered: each command's output, or why there is none;
    ``error`` is the console run's own error (it did not answer), if any."""

    outputs: dict[str, Output | Observation] = field(default_factory=dict)
    error: str | None = None


def unusable(node: JSON) -> Observation | None:
    """Why ``node``'s console cannot be read (not started: transient), else ``None``."""
    name = node.get("name")
    if node.get("status") != "started":
        return Observation.error(
            f"{name} is {node.get('status')}; it must be started", transient=True
        )
    if node.get("console_type") != "telnet" or not node.get("console"):
        return Observation.error(
            f"{name} has no telnet console (console type {node.get('console_type')!r})"
        )
    return None


async def read_consoles(
    lab: LabAccess,
    snapshot: LabSnapshot,
    runs: Mapping[str, NodeRun],
    *,
    deadline: float | None = None,
) -> dict[str, NodeOutputs]:
    """Every node's commands, one console run per node, all nodes at once; ``deadline``
    (event-loop time) bounds them (a command that would start after it is not run)."""
    names = list(runs)
    done = await asyncio.gather(*(_read(lab, snapshot, runs[name], deadline) for name in names))
    return dict(zip(names, done, strict=True))


async def _read(
    lab: LabAccess, snapshot: LabSnapshot, run: NodeRun, deadline: float | None
) -> NodeOutputs:
    kind = snapshot.kind(run.node)
    target = snapshot.console_target(run.node, kind)
    transcript = await lab.runner.run(
        target,
        run.commands,
        privileged=run.privileged,
        limits=_limits(lab, kind, run),
        deadline=deadline,
    )
    return await _outputs(lab, transcript, run.commands)


def _limits(lab: LabAccess, kind: DeviceKind, run: NodeRun) -> list[float]:
    platform = platform_for(kind)
    default = lab.runner.command_timeout
    ceiling = lab.settings.max_command_timeout
    return [min(ceiling, max(default, platform.fitting_limit(c) or 0.0)) for c in run.commands]


async def _outputs(
    lab: LabAccess, transcript: ConsoleTranscript, commands: list[str]
) -> NodeOutputs:
    ran = NodeOutputs(error=transcript.error)
    name = transcript.target.name
    platform = platform_for(transcript.target.kind).ntc_platform
    by_command = {outcome.command: outcome for outcome in transcript.outcomes}
    if platform is not None:
        await lab.parser.ready()
    for command, outcome in by_command.items():
        output = Output(command, outcome.output)
        evidence = Evidence(name, command, head(output, 6))
        if outcome.error == REJECTED:
            ran.outputs[command] = Observation.error(f"{name} rejected {command!r}", evidence)
        elif outcome.error is not None and not (outcome.timed_out and command.startswith("ping")):
            # a ping interrupted at its limit still says how many replies came
            ran.outputs[command] = Observation.error(
                f"{command!r} on {name}: {outcome.error}", evidence, transient=True
            )
        else:
            rows = None
            if platform is not None and not outcome.truncated and outcome.output:
                rows = lab.parser.parse(platform, command, outcome.output)
            ran.outputs[command] = Output(command, outcome.output, rows)
    why = transcript.error or "the command was not run"
    missing = Observation.error(f"the console of {name}: {why}", transient=True)
    for command in commands:
        ran.outputs.setdefault(command, missing)
    return ran
