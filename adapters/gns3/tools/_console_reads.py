"""Show commands read on many consoles at once: one console run per node, every node at
the same time, each output cleaned and parsed (FRR's parsers, ntc-templates).

What ``verify_intent``'s probe and ``capture_lab_state`` share: a :class:`NodeRun` lists
the commands one node is sent; :func:`read_consoles` runs them and gives, per node and
command, the :class:`~adapters.gns3.model._intent_reading.Output` or the ``error``
:class:`~copilot_core.intent.Observation` that says why there is none (a rejected command,
a command that failed, a console that did not answer: transient). :func:`unusable` says
why a node's console cannot be read at all (not started, no telnet console).

This is the one place where compiled lines (a check's, a capture's) go to a console: each
is judged here by its platform's grammar (:func:`adapters.gns3.model._grammar.judge`) just
before it is sent, and one that is not read-only is never sent; its output is an
``error`` observation that says why (:func:`refused_lines`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from adapters.gns3.console import REJECTED, ConsolePriority, ConsoleTranscript
from adapters.gns3.lab import LabAccess, LabSnapshot
from adapters.gns3.model import DeviceKind, Output, head, judge, platform_for
from copilot_core.intent import Evidence, Observation

__all__ = ["NodeOutputs", "NodeRun", "read_consoles", "refused_lines", "unusable"]

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
    priority: ConsolePriority | None = None,
) -> dict[str, NodeOutputs]:
    """Every node's commands, one console run per node, all nodes at once; ``deadline``
    (event-loop time) bounds them (a command that would start after it is not run).
    ``priority``: how the runs wait for a console (background work, such as a lab-state
    capture, passes :attr:`ConsolePriority.BACKGROUND`; default: the caller's)."""
    names = list(runs)
    done = await asyncio.gather(
        *(_read(lab, snapshot, runs[name], deadline, priority) for name in names)
    )
    return dict(zip(names, done, strict=True))


def refused_lines(kind: DeviceKind, name: str, commands: list[str]) -> dict[str, Observation]:
    """The commands of a read-only run that ``kind``'s grammar does not call read-only,
    each with the ``error`` that says why it is not sent (for good: not transient)."""
    refused: dict[str, Observation] = {}
    for command in commands:
        verdict = judge(command, kind)
        if verdict.changes:
            why = verdict.reason or "it is not a read-only form"
            refused[command] = Observation.error(
                f"{command!r} was not sent to {name}: a read-only check or capture sends "
                f"only read-only lines ({why})",
                Evidence(name, command),
            )
    return refused


async def _read(
    lab: LabAccess,
    snapshot: LabSnapshot,
    run: NodeRun,
    deadline: float | None,
    priority: ConsolePriority | None,
) -> NodeOutputs:
    """One node's run: every line judged by its platform's grammar just before it is
    sent (what compiled it is never trusted: a check's template, a capture's read), and
    only the read-only ones sent."""
    kind = snapshot.kind(run.node)
    refused = refused_lines(kind, str(run.node.get("name")), run.commands)
    commands = [command for command in run.commands if command not in refused]
    if not commands:
        return NodeOutputs(outputs=dict(refused))
    target = snapshot.console_target(run.node, kind)
    transcript = await lab.runner.run(
        target,
        commands,
        privileged=run.privileged,
        limits=_limits(lab, kind, commands),
        deadline=deadline,
        priority=priority,
    )
    ran = await _outputs(lab, transcript, commands)
    ran.outputs.update(refused)
    return ran


def _limits(lab: LabAccess, kind: DeviceKind, commands: list[str]) -> list[float]:
    platform = platform_for(kind)
    default = lab.runner.command_timeout
    ceiling = lab.settings.max_command_timeout
    return [min(ceiling, max(default, platform.fitting_limit(c) or 0.0)) for c in commands]


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
