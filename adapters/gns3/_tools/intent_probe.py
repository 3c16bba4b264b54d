"""The GNS3 lab as a :class:`~copilot_core.intent.CheckProbe`: checks answered on consoles.

One round (:meth:`Gns3CheckProbe.observe`): read the project's nodes; look up the
addresses of the nodes that checks name as targets (one console run per such node);
compile each check for its node's platform (:mod:`adapters.gns3._intent_compile`); run
every node's commands in one console run per node, all nodes at once; parse each output
(FRR's parsers, ntc-templates) and decide each check from it. Nothing a check sends
changes a device (show commands and pings); the operator's forbidden-command list still
applies. A console that does not answer, or a node that is not started, is a transient
``error`` (retried while the wait lasts); an unknown node, a platform that cannot answer
the check, a rejected command or output no parser reads is an ``error`` for good.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from adapters.gns3._console import REJECTED, ConsoleTranscript
from adapters.gns3._intent_compile import Plan, compile_check, names_to_resolve
from adapters.gns3._intent_reading import Output, address_reads, addresses, head
from adapters.gns3._lab import LabSnapshot
from adapters.gns3._platforms import DeviceKind, platform_for
from adapters.gns3._tools.registry import CallScope, LabAccess
from copilot_core.errors import CopilotError
from copilot_core.intent import Check, Evidence, Observation, check_node

__all__ = ["Gns3CheckProbe"]

JSON = dict[str, Any]


@dataclass(slots=True)
class _NodeRun:
    """The commands one round sends to one node's console."""

    node: JSON
    commands: list[str] = field(default_factory=list)
    privileged: bool = False

    def add(self, command: str, *, privileged: bool = False) -> None:
        if command not in self.commands:
            self.commands.append(command)
        self.privileged = self.privileged or privileged


@dataclass(slots=True)
class _Ran:
    """What one node's console answered: each command's output, or why there is none."""

    outputs: dict[str, Output | Observation] = field(default_factory=dict)


class Gns3CheckProbe:
    """Answers checks on the lab of one call (its project and the caller's token)."""

    def __init__(self, lab: LabAccess, scope: CallScope) -> None:
        self.lab = lab
        self.scope = scope

    async def observe(self, checks: Sequence[Check]) -> list[Observation]:
        try:
            snapshot = await self.lab.snapshot(self.scope)
        except CopilotError as exc:
            failed = Observation.error(f"GNS3 could not be read: {exc.message}", transient=True)
            return [failed] * len(checks)
        resolved, unresolved = await self._resolve(snapshot, checks)
        plans: list[Plan | Observation] = []
        runs: dict[str, _NodeRun] = {}
        for check in checks:
            planned = self._plan(snapshot, check, resolved, unresolved)
            plans.append(planned)
            if isinstance(planned, Plan):
                node = snapshot.by_name(planned.node)
                assert node is not None
                run = runs.setdefault(planned.node, _NodeRun(node))
                run.add(planned.command, privileged=planned.privileged)
        ran = await self._run_all(snapshot, runs)
        return [self._decide(planned, ran) for planned in plans]

    # ------------------------------------------------------------------ phases
    async def _resolve(
        self, snapshot: LabSnapshot, checks: Sequence[Check]
    ) -> tuple[dict[str, list[str]], dict[str, Observation]]:
        """The addresses of the node names checks point at; why a name has none."""
        wanted: dict[str, bool] = {}
        for check in checks:
            for name, required in names_to_resolve(check):
                wanted[name] = wanted.get(name, False) or required
        unresolved: dict[str, Observation] = {}
        runs: dict[str, _NodeRun] = {}
        for name, required in wanted.items():
            node = snapshot.by_name(name)
            if node is None:
                if required:
                    unresolved[name] = Observation.error(snapshot.unknown_node(name))
                continue
            problem = self._unusable(snapshot, node)
            command = address_reads(snapshot.kind(node))
            if problem is None and command is None:
                problem = Observation.error(
                    f"the addresses of {name} ({snapshot.kind(node).value}) cannot be read; "
                    "give an address instead of its name"
                )
            if problem is not None:
                unresolved[name] = problem
                continue
            assert command is not None
            runs.setdefault(str(node.get("name")), _NodeRun(node)).add(command)
        ran = await self._run_all(snapshot, runs)
        resolved: dict[str, list[str]] = {}
        for name in wanted:
            node = snapshot.by_name(name)
            if node is None or name in unresolved:
                continue
            kind = snapshot.kind(node)
            command = address_reads(kind)
            got = ran[str(node.get("name"))].outputs.get(str(command))
            if isinstance(got, Observation):
                unresolved[name] = got
            elif got is not None:
                resolved[name] = addresses(kind, got)
        return resolved, unresolved

    def _plan(
        self,
        snapshot: LabSnapshot,
        check: Check,
        resolved: dict[str, list[str]],
        unresolved: dict[str, Observation],
    ) -> Plan | Observation:
        for name, _ in names_to_resolve(check):
            if name in unresolved:
                return unresolved[name]
        name = check_node(check)
        node = snapshot.by_name(name)
        if node is None:
            return Observation.error(snapshot.unknown_node(name))
        problem = self._unusable(snapshot, node)
        if problem is not None:
            return problem
        kind = snapshot.kind(node)
        planned = compile_check(check, str(node.get("name")), kind, resolved)
        if isinstance(planned, Plan):
            reason = self.lab.skills.forbidden.reason(planned.command, kind)
            if reason is not None:
                return Observation.error(reason)
        return planned

    @staticmethod
    def _unusable(snapshot: LabSnapshot, node: JSON) -> Observation | None:
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

    async def _run_all(self, snapshot: LabSnapshot, runs: dict[str, _NodeRun]) -> dict[str, _Ran]:
        names = list(runs)
        done = await asyncio.gather(*(self._run(snapshot, runs[name]) for name in names))
        return dict(zip(names, done, strict=True))

    async def _run(self, snapshot: LabSnapshot, run: _NodeRun) -> _Ran:
        kind = snapshot.kind(run.node)
        target = snapshot.console_target(run.node, kind)
        transcript = await self.lab.runner.run(
            target, run.commands, privileged=run.privileged, limits=self._limits(kind, run)
        )
        return await self._outputs(transcript, run.commands)

    def _limits(self, kind: DeviceKind, run: _NodeRun) -> list[float]:
        platform = platform_for(kind)
        default = self.lab.runner.command_timeout
        ceiling = self.lab.settings.max_command_timeout
        return [min(ceiling, max(default, platform.fitting_limit(c) or 0.0)) for c in run.commands]

    async def _outputs(self, transcript: ConsoleTranscript, commands: list[str]) -> _Ran:
        ran = _Ran()
        name = transcript.target.name
        platform = platform_for(transcript.target.kind).ntc_platform
        by_command = {outcome.command: outcome for outcome in transcript.outcomes}
        if platform is not None:
            await self.lab.parser.ready()
        for command, outcome in by_command.items():
            output = Output(command, outcome.output)
            evidence = Evidence(name, command, head(output, 6))
            if outcome.error == REJECTED:
                ran.outputs[command] = Observation.error(f"{name} rejected {command!r}", evidence)
            elif outcome.error is not None and not (
                outcome.timed_out and command.startswith("ping")
            ):
                # a ping interrupted at its limit still says how many replies came
                ran.outputs[command] = Observation.error(
                    f"{command!r} on {name}: {outcome.error}", evidence, transient=True
                )
            else:
                rows = None
                if platform is not None and not outcome.truncated and outcome.output:
                    rows = self.lab.parser.parse(platform, command, outcome.output)
                ran.outputs[command] = Output(command, outcome.output, rows)
        why = transcript.error or "the command was not run"
        missing = Observation.error(f"the console of {name}: {why}", transient=True)
        for command in commands:
            ran.outputs.setdefault(command, missing)
        return ran

    @staticmethod
    def _decide(planned: Plan | Observation, ran: dict[str, _Ran]) -> Observation:
        if isinstance(planned, Observation):
            return planned
        got = ran[planned.node].outputs[planned.command]
        if isinstance(got, Observation):
            return got
        return planned.decide(got)
