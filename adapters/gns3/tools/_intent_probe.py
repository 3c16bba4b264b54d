"""The GNS3 lab as a :class:`~copilot_core.intent.CheckProbe`: checks answered on consoles.

One round (:meth:`Gns3CheckProbe.observe`): read the project's nodes; look up the
addresses of the nodes that checks name as targets (one console run per such node);
compile each check for its node's platform (:mod:`adapters.gns3.model._intent_compile`); run
every node's commands in one console run per node, all nodes at once; parse each output
(FRR's parsers, ntc-templates) and decide each check from it. Nothing a check sends
changes a device: its values are typed at the check's model (names and addresses of a
closed alphabet), every line is judged by its platform's grammar just before it is sent
(:mod:`adapters.gns3.tools._console_reads`: a line that is not read-only is an ``error``,
never sent), and the operator's forbidden-command list still applies. A console that
does not answer, or a node that is not started, is a transient ``error`` (retried while
the wait lasts); an unknown node, a platform that cannot answer the check, a rejected
command or output no parser reads is an ``error`` for good. A caller no person waits for
(``ToolContext.background``: a standing intent's run) waits for consoles as background
work (:func:`~adapters.gns3.console._lock.background_console_use`), so a person's
commands go first; anyone else's rounds are interactive.

:class:`Gns3CheckProbes` is the lab's :class:`~copilot_core.intent.CheckProbes`: a
probe per caller and the operator's limits (``max_batch``, ``max_verify_wait``,
``verify_interval``), for the core's standing intent and ``verify_intent`` alike.
"""

from __future__ import annotations

from collections.abc import Sequence

from adapters.gns3.console import ConsolePriority, background_console_use, current_priority
from adapters.gns3.lab import CallScope, LabAccess, LabSnapshot
from adapters.gns3.model import Plan, address_reads, addresses, compile_check, names_to_resolve
from adapters.gns3.tools._console_reads import NodeOutputs, NodeRun, read_consoles, unusable
from copilot_core import ToolContext
from copilot_core.errors import AuthenticationError, CopilotError
from copilot_core.intent import Check, Observation, ProbeLimits, check_node

__all__ = ["Gns3CheckProbe", "Gns3CheckProbes"]


class Gns3CheckProbes:
    """The lab's checks for each caller (the core's ``CheckProbes``): one implementation
    for the core's standing intent and the ``verify_intent`` tool."""

    def __init__(self, lab: LabAccess) -> None:
        self.lab = lab

    @property
    def limits(self) -> ProbeLimits:
        settings = self.lab.settings
        return ProbeLimits(settings.max_batch, settings.max_verify_wait, settings.verify_interval)

    def probe(self, context: ToolContext) -> Gns3CheckProbe:
        if not context.credentials:
            raise AuthenticationError(
                "No GNS3 credentials came with this request; checks cannot be run on GNS3."
            )
        return Gns3CheckProbe(self.lab, CallScope(context, context.credentials))


class Gns3CheckProbe:
    """Answers checks on the lab of one call (its project and the caller's token)."""

    def __init__(self, lab: LabAccess, scope: CallScope) -> None:
        self.lab = lab
        self.scope = scope

    async def observe(self, checks: Sequence[Check]) -> list[Observation]:
        if self.scope.context.background and current_priority() is ConsolePriority.INTERACTIVE:
            with background_console_use():  # a person's console commands go first
                return await self._observe(checks)
        return await self._observe(checks)

    async def _observe(self, checks: Sequence[Check]) -> list[Observation]:
        try:
            snapshot = await self.lab.snapshot(self.scope)
        except CopilotError as exc:
            failed = Observation.error(f"GNS3 could not be read: {exc.message}", transient=True)
            return [failed] * len(checks)
        resolved, unresolved = await self._resolve(snapshot, checks)
        plans: list[Plan | Observation] = []
        runs: dict[str, NodeRun] = {}
        for check in checks:
            planned = self._plan(snapshot, check, resolved, unresolved)
            plans.append(planned)
            if isinstance(planned, Plan):
                node = snapshot.by_name(planned.node)
                assert node is not None
                run = runs.setdefault(planned.node, NodeRun(node))
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
        runs: dict[str, NodeRun] = {}
        for name, required in wanted.items():
            node = snapshot.by_name(name)
            if node is None:
                if required:
                    unresolved[name] = Observation.error(snapshot.unknown_node(name))
                continue
            problem = unusable(node)
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
            runs.setdefault(str(node.get("name")), NodeRun(node)).add(command)
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
        problem = unusable(node)
        if problem is not None:
            return problem
        kind = snapshot.kind(node)
        planned = compile_check(check, str(node.get("name")), kind, resolved)
        if isinstance(planned, Plan):
            reason = self.lab.skills.forbidden.reason(planned.command, kind)
            if reason is not None:
                return Observation.error(reason)
        return planned

    async def _run_all(
        self, snapshot: LabSnapshot, runs: dict[str, NodeRun]
    ) -> dict[str, NodeOutputs]:
        return await read_consoles(self.lab, snapshot, runs)

    @staticmethod
    def _decide(planned: Plan | Observation, ran: dict[str, NodeOutputs]) -> Observation:
        if isinstance(planned, Observation):
            return planned
        got = ran[planned.node].outputs[planned.command]
        if isinstance(got, Observation):
            return got
        return planned.decide(got)
