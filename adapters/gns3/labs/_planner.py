"""A lab plan against a GNS3 server: :class:`Gns3LabPlanner`, the core's ``LabPlanner``.

**resolve** reads the server's templates once and judges what the core cannot:

- each node's template (by id or name; none given: the server's template for the node's
  platform, the first by name) exists and makes nodes of the node's platform (an FRR
  router must not come from a Linux host's template);
- each port a link names exists on the node that template makes (the ports are told from
  the template, :mod:`._templates`; an abbreviation GNS3's own names accept, ``e0`` for
  ``Ethernet0``, is one), and two ends of the plan are not the same port;
- each device line is a well-formed change of the node's platform, judged as the fault
  catalog's lines and a drill's are (:func:`~adapters.gns3._faults.line_problem`: the
  platform's grammar, a change, not forbidden) and by the operator's forbidden list;
- each check can be answered on its node's platform (a Linux host answers reachability
  only), as the catalog's checks are.

Every problem is a :class:`~copilot_core.labs.PlanProblem` named by the plan file's
field (``nodes[1].template``, ``links[0]``, ``config.R1[3]``, ``checks[2]``); a bad plan
is an answer (:class:`~copilot_core.labs.PlanProblems`), not an exception. A resolved
plan names every node's template (the one chosen for a node that named none).

**current** exports the project's lab (:mod:`._current`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from adapters.gns3._faults import line_problem
from adapters.gns3.lab import CallScope, LabAccess
from adapters.gns3.labs._current import export_lab
from adapters.gns3.labs._templates import (
    KINDS,
    PLATFORMS,
    find_template,
    template_kind,
    template_ports,
)
from adapters.gns3.model import DeviceKind, compile_check
from copilot_core import ToolContext
from copilot_core.errors import AuthenticationError
from copilot_core.intent import Observation, check_node
from copilot_core.labs import (
    LabPlan,
    PlanNode,
    PlanProblem,
    PlanProblems,
    Platform,
    ResolvedNode,
    ResolvedPlan,
    ResolvedPort,
)

__all__ = ["Gns3LabPlanner", "plan_scope"]

JSON = dict[str, Any]
Template = Mapping[str, Any]
_SPLIT = re.compile(r"([a-z-]*)(.*)")


def plan_scope(context: ToolContext) -> CallScope:
    """The caller's scope; :class:`AuthenticationError` without GNS3 credentials."""
    if not context.credentials:
        raise AuthenticationError("No GNS3 credentials came with this request.")
    return CallScope(context, context.credentials)


class Gns3LabPlanner:
    """The core's :class:`~copilot_core.labs.LabPlanner` over the tool source's
    :class:`~adapters.gns3.LabAccess` (see the module docstring)."""

    def __init__(self, lab: LabAccess) -> None:
        self.lab = lab

    async def resolve(self, plan: LabPlan, context: ToolContext) -> ResolvedPlan | PlanProblems:
        scope = plan_scope(context)
        templates = await self.lab.client.templates(scope.token)
        return resolve_plan(plan, templates, self.lab)

    async def current(self, context: ToolContext) -> LabPlan:
        return await export_lab(self.lab, plan_scope(context))


def resolve_plan(
    plan: LabPlan, templates: Sequence[Template], lab: LabAccess | None = None
) -> ResolvedPlan | PlanProblems:
    """``plan`` resolved against ``templates`` (the server's), its lines judged also by
    ``lab``'s forbidden list when given (see the module docstring)."""
    problems: list[PlanProblem] = []
    chosen: dict[str, Template] = {}
    for index, node in enumerate(plan.nodes):
        found = _template_for(node, templates)
        if isinstance(found, PlanProblem):
            problems.append(PlanProblem(f"nodes[{index}].template", found.message))
        else:
            chosen[node.name] = found
    ports = list(_ports(plan, chosen, problems))
    problems += _line_problems(plan, lab)
    problems += _check_problems(plan)
    if problems:
        return PlanProblems(tuple(problems))
    nodes = tuple(
        n.model_copy(update={"template": str(chosen[n.name].get("name"))}) for n in plan.nodes
    )
    return ResolvedPlan(
        plan=plan.model_copy(update={"nodes": nodes}),
        nodes=tuple(
            ResolvedNode(n.name, str(chosen[n.name].get("template_id"))) for n in plan.nodes
        ),
        ports=tuple(ports),
    )


def _label(kind: DeviceKind) -> str:
    """A device kind as a plan names it (``frr``, ``linux``, ``vpcs``), else its own name."""
    platform = PLATFORMS.get(kind)
    return platform.value if platform is not None else kind.value


def _template_for(node: PlanNode, templates: Sequence[Template]) -> Template | PlanProblem:
    """The template ``node`` is made from, or why there is none (field filled by the caller)."""
    wanted = KINDS[node.platform]
    fitting = sorted(
        (t for t in templates if template_kind(t) is wanted), key=lambda t: str(t.get("name"))
    )
    names = ", ".join(str(t.get("name")) for t in fitting) or "none"
    if node.template is None:
        if fitting:
            return fitting[0]
        every = ", ".join(sorted(str(t.get("name")) for t in templates)) or "none"
        return PlanProblem(
            "",
            f"the server has no template for {node.platform.value} nodes; its templates: "
            f"{every}. Add one, or name a template",
        )
    template = find_template(templates, node.template)
    if template is None:
        return PlanProblem(
            "",
            f"the server has no template {node.template!r}; its templates for "
            f"{node.platform.value} nodes: {names}",
        )
    kind = template_kind(template)
    if kind is not wanted:
        return PlanProblem(
            "",
            f"{node.template!r} makes {_label(kind)} nodes, not {node.platform.value}; "
            f"templates for {node.platform.value} nodes: {names}",
        )
    return template


def _fold(name: object) -> str:
    return "".join(str(name).lower().split())


def _abbreviates(wanted: str, name: str) -> bool:
    """Whether ``wanted`` is ``name`` with its letters shortened (``e0``, ``eth0`` for
    ``Ethernet0``), as the tools read a port's name."""
    want_alpha, want_rest = _SPLIT.fullmatch(wanted).groups()  # type: ignore[union-attr]
    full_alpha, full_rest = _SPLIT.fullmatch(name).groups()  # type: ignore[union-attr]
    return bool(want_alpha) and want_rest == full_rest and full_alpha.startswith(want_alpha)


def _find_port(ports: Sequence[JSON], wanted: str) -> JSON | None:
    """The port ``wanted`` names: its name or short name, else one abbreviation of it."""
    key = _fold(wanted)
    exact = [p for p in ports if key in (_fold(p["name"]), _fold(p["short_name"]))]
    if len(exact) == 1:
        return exact[0]
    matches = [p for p in ports if key and _abbreviates(key, _fold(p["name"]))]
    return matches[0] if len(matches) == 1 else None


def _ports(
    plan: LabPlan, chosen: Mapping[str, Template], problems: list[PlanProblem]
) -> Iterator[ResolvedPort]:
    taken: dict[tuple[str, int, int], tuple[str, int]] = {}
    for index, link in enumerate(plan.links):
        field = f"links[{index}]"
        for end in link.ends:
            node, _, wanted = end.partition(":")
            template = chosen.get(node)
            if template is None:
                continue  # its template is the problem, said on the node
            ports = template_ports(template)
            if ports is None:
                problems.append(
                    PlanProblem(
                        field,
                        f"the ports of a {template.get('template_type')} template "
                        f"({template.get('name')!r}, {node}'s) cannot be told beforehand: "
                        "use a Docker, QEMU or VPCS template",
                    )
                )
                continue
            port = _find_port(ports, wanted)
            if port is None:
                names = ", ".join(str(p["name"]) for p in ports)
                problems.append(
                    PlanProblem(
                        field,
                        f"{node} has no port {wanted} (a node of {template.get('name')!r} "
                        f"has {names})",
                    )
                )
                continue
            key = (node, int(port["adapter_number"]), int(port["port_number"]))
            if key in taken and taken[key][0] != end:
                problems.append(
                    PlanProblem(
                        field,
                        f"{end} is the port {node}:{port['name']}, already the end "
                        f"{taken[key][0]} of links[{taken[key][1]}]: a port takes one link",
                    )
                )
                continue
            taken.setdefault(key, (end, index))
            yield ResolvedPort(end, key[1], key[2])


def _line_problems(plan: LabPlan, lab: LabAccess | None) -> Iterator[PlanProblem]:
    for config in plan.config:
        node = plan.node(config.node)
        if node is None:
            continue  # the core said so
        kind = KINDS[node.platform]
        in_config = node.platform is Platform.FRR
        for number, line in enumerate(config.lines):
            why = line_problem(line, node.platform)
            if why is None and lab is not None:
                why = lab.skills.forbidden.reason(line, kind, config=in_config)
            if why is not None:
                yield PlanProblem(f"config.{config.node}[{number}]", why)


def _check_problems(plan: LabPlan) -> Iterator[PlanProblem]:
    addresses: dict[str, list[str]] = {}
    for entry in plan.addressing:
        node = entry.interface.partition(":")[0]
        addresses.setdefault(node, []).append(entry.address.split("/")[0])
    resolved = {node.name: addresses.get(node.name, []) for node in plan.nodes}
    for index, check in enumerate(plan.checks):
        name = check_node(check)
        checked = plan.node(name)
        if checked is None:
            continue  # the core said so
        compiled = compile_check(check, name, KINDS[checked.platform], resolved)
        if isinstance(compiled, Observation):
            yield PlanProblem(
                f"checks[{index}]",
                f"{name} ({checked.platform.value}) cannot answer it: {compiled.reason}",
            )
