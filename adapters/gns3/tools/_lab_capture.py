"""Capturing a lab's state on its consoles, and the pure diff of two captures: what
``capture_lab_state`` and ``diff_lab_state`` do, usable without the tools (a verified
change captures before and after and diffs).

:func:`capture_lab_state`: read the project's nodes; send every started node the commands
of its platform (:func:`~adapters.gns3.model._lab_state_reading.reads_for`: show commands only,
the operator's forbidden-command list applies) in one console run per node, all nodes at
once (:func:`~adapters.gns3.tools._console_reads.read_consoles`, as ``verify_intent``
does); read each node's state from the outputs; name the lab's node behind each routing
neighbour's address; then let every PC (VPCS, Linux host) that has an address ping every
other such PC's first address, ``REACH_COUNT`` probes each (the ping and its verdict are
``verify_intent``'s reachability check), a source's pings one after another on its
console, at most ``MAX_PINGING`` sources at once. A node that is not started, has no
telnet console, or whose console does not answer is recorded so (``reached`` false), never
raised. The whole capture is bounded by the settings' ``call_budget``.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace

from pydantic import ValidationError

from adapters.gns3.console import ConsolePriority
from adapters.gns3.lab import CallScope, LabAccess, LabSnapshot
from adapters.gns3.model import (
    PCS,
    DeviceKind,
    LabState,
    NodeState,
    Output,
    Plan,
    Reachability,
    compile_check,
    diff_lab_state,
    node_state,
    reads_for,
)
from adapters.gns3.tools._console_reads import NodeOutputs, NodeRun, read_consoles, unusable
from copilot_core.intent import CheckStatus, Observation, ReachabilityCheck, is_plain_address

__all__ = ["MAX_PINGING", "REACH_COUNT", "LabState", "capture_lab_state", "diff_lab_state"]

JSON = dict[str, object]

#: Probes each PC sends each other PC.
REACH_COUNT = 2
#: Source PCs pinging at the same time.
MAX_PINGING = 8


async def capture_lab_state(lab: LabAccess, scope: CallScope) -> LabState:
    """The lab of the call's project as it is now (see the module's docstring); a GNS3
    that cannot be read raises its :class:`~copilot_core.errors.CopilotError`."""
    started = time.monotonic()
    deadline = asyncio.get_running_loop().time() + lab.settings.call_budget
    snapshot = await lab.snapshot(scope)
    nodes = sorted(snapshot.nodes, key=lambda n: str(n.get("name")))
    states: dict[str, NodeState] = {}
    runs: dict[str, NodeRun] = {}
    refused: dict[str, dict[str, str]] = {}
    for node in nodes:
        name, kind = str(node.get("name")), snapshot.kind(node)
        status = str(node.get("status") or "unknown")
        problem = unusable(node)
        if problem is None and not reads_for(kind):
            problem = Observation.error(f"the state of a {kind.value} device cannot be read")
        if problem is not None:
            states[name] = NodeState(name, kind.value, status, False, problem.reason)
            continue
        run = NodeRun(node)
        for read in reads_for(kind):
            reason = lab.skills.forbidden.reason(read.command, kind)
            if reason is None:
                run.add(read.command, privileged=read.privileged)
            else:
                refused.setdefault(name, {})[read.command] = reason
        runs[name] = run
    scope.context.report_progress(f"reading the state of {len(runs)} node(s)\n")
    ran = await read_consoles(
        lab, snapshot, runs, deadline=deadline, priority=ConsolePriority.BACKGROUND
    )
    ran.update(await _without_privilege(lab, snapshot, runs, ran, deadline))
    for name, run in runs.items():
        states[name] = _state(snapshot, run, ran[name], refused.get(name, {}))
    states = _with_peers(states)
    reachability = await _reachability(lab, snapshot, states, deadline, scope)
    return LabState(
        lab.ids.new_id(),
        scope.project_id,
        lab.clock.now(),
        time.monotonic() - started,
        tuple(states[name] for name in sorted(states)),
        tuple(sorted(reachability, key=lambda p: (p.source, p.target))),
    )


def _answered(outputs: NodeOutputs) -> bool:
    return any(isinstance(got, Output) for got in outputs.outputs.values())


async def _without_privilege(
    lab: LabAccess,
    snapshot: LabSnapshot,
    runs: dict[str, NodeRun],
    ran: dict[str, NodeOutputs],
    deadline: float,
) -> dict[str, NodeOutputs]:
    """A run at the privileged level that ran nothing (an enable password, say) is run
    again without its privileged commands; they stay unread with the reason."""
    again: dict[str, NodeRun] = {}
    for name, run in runs.items():
        if run.privileged and not _answered(ran[name]) and ran[name].error is not None:
            kind = snapshot.kind(run.node)
            plain = {r.command for r in reads_for(kind) if not r.privileged}
            again[name] = NodeRun(run.node, [c for c in run.commands if c in plain])
    if not again:
        return {}
    redone = await read_consoles(
        lab, snapshot, again, deadline=deadline, priority=ConsolePriority.BACKGROUND
    )
    for name, outputs in redone.items():
        if _answered(outputs):
            for command, got in ran[name].outputs.items():
                outputs.outputs.setdefault(command, got)
    return redone


def _state(
    snapshot: LabSnapshot, run: NodeRun, outputs: NodeOutputs, refused: dict[str, str]
) -> NodeState:
    name, kind = str(run.node.get("name")), snapshot.kind(run.node)
    if not _answered(outputs):
        why = outputs.error or next(
            (got.reason for got in outputs.outputs.values() if isinstance(got, Observation)),
            None,
        )
        return NodeState(name, kind.value, "started", False, why or "the console did not answer")
    got: dict[str, Output | str] = dict(refused)
    for command, answer in outputs.outputs.items():
        got[command] = answer if isinstance(answer, Output) else str(answer.reason)
    return node_state(name, kind, got)


def _with_peers(states: dict[str, NodeState]) -> dict[str, NodeState]:
    """Each routing neighbour named by the node whose address it is (``peer_node``)."""
    owner: dict[str, str] = {}
    for name in sorted(states):
        for address in states[name].addresses:
            owner.setdefault(address, name)
    named: dict[str, NodeState] = {}
    for name, state in states.items():
        if not state.neighbors:
            named[name] = state
            continue
        neighbors = []
        for neighbor in state.neighbors:
            peer = owner.get(neighbor.address) or owner.get(neighbor.neighbor)
            neighbors.append(replace(neighbor, peer_node=peer if peer != name else None))
        named[name] = replace(state, neighbors=tuple(neighbors))
    return named


async def _reachability(
    lab: LabAccess,
    snapshot: LabSnapshot,
    states: dict[str, NodeState],
    deadline: float,
    scope: CallScope,
) -> list[Reachability]:
    pcs = [
        name
        for name, state in sorted(states.items())
        if state.reached and state.addresses and state.kind in {k.value for k in PCS}
    ]
    if len(pcs) < 2:
        return []
    scope.context.report_progress(f"pinging between {len(pcs)} PCs\n")
    gate = asyncio.Semaphore(MAX_PINGING)

    async def from_one(source: str) -> list[Reachability]:
        node = snapshot.by_name(source)
        assert node is not None
        kind = snapshot.kind(node)
        run = NodeRun(node)
        plans: dict[str, Plan | Observation] = {}
        for target in pcs:
            if target == source:
                continue
            address = states[target].addresses[0]
            plan = _ping_plan(source, kind, address)
            if isinstance(plan, Plan):
                reason = lab.skills.forbidden.reason(plan.command, kind)
                if reason is None:
                    run.add(plan.command)
                else:
                    plan = Observation.error(reason)
            plans[target] = plan
        outputs = NodeOutputs()
        if run.commands:
            async with gate:
                outputs = (
                    await read_consoles(
                        lab,
                        snapshot,
                        {source: run},
                        deadline=deadline,
                        priority=ConsolePriority.BACKGROUND,
                    )
                )[source]
        pairs = []
        for target, plan in plans.items():
            address = states[target].addresses[0]
            seen = plan
            if isinstance(plan, Plan):
                got = outputs.outputs.get(plan.command)
                seen = plan.decide(got) if isinstance(got, Output) else got or plan
            pairs.append(_pair(source, target, address, seen))
        return pairs

    found = await asyncio.gather(*(from_one(source) for source in pcs))
    return [pair for pairs in found for pair in pairs]


def _ping_plan(source: str, kind: DeviceKind, address: str) -> Plan | Observation:
    """``source``'s ping of ``address``, an address read from a device's output: one that
    is not a plain address (a word outside the safe alphabet) is never put in a line."""
    if not is_plain_address(address):
        return Observation.error(
            f"{address[:80]!r}, read from the device as its address, is not a plain address: "
            "it was not pinged"
        )
    try:
        check = ReachabilityCheck.model_validate(
            {"kind": "reachability", "from": source, "to": address, "count": REACH_COUNT}
        )
    except ValidationError as exc:  # a node name outside the names' alphabet
        return Observation.error(f"{source} cannot be a check's node: {exc.errors()[0]['msg']}")
    return compile_check(check, source, kind, {})


def _pair(source: str, target: str, address: str, seen: Plan | Observation) -> Reachability:
    if isinstance(seen, Observation) and seen.status is not CheckStatus.ERROR:
        observed = seen.observed if isinstance(seen.observed, dict) else {}
        return Reachability(
            source,
            target,
            address,
            bool(observed.get("reachable")),
            int(str(observed.get("replies", 0))),
            int(str(observed.get("sent", REACH_COUNT))),
        )
    reason = seen.reason if isinstance(seen, Observation) else "the ping was not run"
    return Reachability(source, target, address, None, sent=REACH_COUNT, reason=reason)
