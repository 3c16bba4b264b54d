"""Lab plans: a lab to build as one value, from a description's parts or a file (issue 39).

A service that builds labs from a description uses this module (``docs/labs.md``):

* the value, :class:`LabPlan` (:class:`PlanNode` s, :class:`PlanLink` s between ports,
  :class:`PlanAddress` es, each device's :class:`DeviceConfig`, intent checks), its
  references checked when it is made (every problem a :class:`PlanProblem`, named by the
  field of the plan's file);
* a plan from a description's parts: :func:`plan_from_intent` (a :class:`LabIntent`:
  routers, router links, :class:`HostIntent` s, OSPF or static, an address pool), which
  lays out ports, addresses, FRR and host lines and the default checks, keeping what the
  current lab already has;
* a plan relative to the lab as it is: :func:`diff` (a :class:`PlanDelta`), the lab named
  by its export's :func:`plan_fingerprint` (what a relative build is bound to), the
  plan's ports named as the lab names them (:func:`named_like`);
* the file: :func:`parse_plan` (a file's parsed data; :class:`LabPlanError` names every
  wrong field), :func:`plan_data` (a plan as a file writes it), :func:`plan_schema`
  (its JSON Schema), :func:`parse_link` and :func:`link_text` (``R1:eth0-R2:eth0``);
* a fault catalog's lab shape as a plan: :func:`plan_from_shape` (nodes, links,
  addresses, the protocols as FRR lines, hosts' addresses and gateways, default checks);
* the port the server is reached through, :class:`LabPlanner` (``resolve``: templates,
  ports and device lines that exist, a :class:`ResolvedPlan` or :class:`PlanProblems`;
  ``current``: the lab exported as a plan);
* a plan built on the user's click (``POST …/labs/build``): :class:`LabBuilds`, the
  use case that runs the chat's build call (the tool source's, :class:`LabBuildCalls`)
  through the gate as the user's approval, bound to the plan shown
  (:meth:`LabBuilds.digest`).
"""

from __future__ import annotations

from copilot_core._lab_build import (
    BuildStatus,
    LabBuildOutcome,
    LabBuildRequest,
    LabBuilds,
    PlanChangedError,
)
from copilot_core._lab_plan import (
    DeviceConfig,
    LabPlan,
    PlanAddress,
    PlanLink,
    PlanNode,
    PlanProblem,
    link_text,
    parse_link,
)
from copilot_core._lab_plan_diff import PlanDelta, diff, named_like
from copilot_core._lab_plan_file import (
    LabPlanError,
    parse_plan,
    plan_data,
    plan_fingerprint,
    plan_schema,
)
from copilot_core._lab_plan_intent import HostIntent, LabIntent, plan_from_intent
from copilot_core._lab_plan_ports import (
    LabBuildCalls,
    LabPlanner,
    PlanProblems,
    ResolvedNode,
    ResolvedPlan,
    ResolvedPort,
)
from copilot_core._lab_plan_shape import plan_from_shape
from copilot_core._lab_shape import Platform

__all__ = [
    "BuildStatus",
    "DeviceConfig",
    "HostIntent",
    "LabBuildCalls",
    "LabBuildOutcome",
    "LabBuildRequest",
    "LabBuilds",
    "LabIntent",
    "LabPlan",
    "LabPlanError",
    "LabPlanner",
    "PlanAddress",
    "PlanChangedError",
    "PlanDelta",
    "PlanLink",
    "PlanNode",
    "PlanProblem",
    "PlanProblems",
    "Platform",
    "ResolvedNode",
    "ResolvedPlan",
    "ResolvedPort",
    "diff",
    "link_text",
    "named_like",
    "parse_link",
    "parse_plan",
    "plan_data",
    "plan_fingerprint",
    "plan_from_intent",
    "plan_from_shape",
    "plan_schema",
]
