"""Lab plans over HTTP (``…/projects/{project_id}/labs``): a plan resolved against the
project's GNS3 server, the project's lab exported as a plan, and a shown plan built on the
user's approval (issue 39).

- ``POST …/labs/plan``: a plan document (``plan``: the plan file's fields as JSON,
  ``docs/labs.md``) or a description (``lab_intent``: routers, links, hosts, OSPF or static,
  a pool) is laid out and resolved by the deployment's
  :class:`~copilot_core.labs.LabPlanner` (templates, ports, every device line judged);
  answered with the resolved plan (the document, each node's template id, each linked
  port's GNS3 numbers), or 422 with every problem by the field of the plan (``problems``).
  ``relative``: against the lab as it is (an intent keeps what it has; the answer says
  what a build would add and remove, and the lab's fingerprint, ``change.base``), and the
  ``digest`` a build of it is bound to (of the plan and, relative, the ``base``).
  Nothing is built here.
- ``GET …/labs/current``: the lab as a plan document (JSON), or as the YAML file a user
  saves (``?format=yaml``).
- ``POST …/labs/build``: the user's approval of a plan shown by ``…/labs/plan`` (the
  plan and the ``digest`` that answer gave, the session that keeps the build): the chat's
  own ``build_lab`` call run through the gate as ONE verified change (the core's
  :class:`~copilot_core.labs.LabBuilds`), answered when it is done with the verification's
  status, the failing checks with their evidence, whether it was rolled back, and its
  restore point; or streamed (``Accept: text/event-stream``, ``_lab_stream``). With
  ``relative`` and ``base``: only the difference from the lab as it is is built (refused
  when the lab is no longer the one ``base`` names).

Resolving reads the server's templates once; exporting reads every started device's
configuration over its console (seconds); a build takes as long as the build and its
checks (bounded by the gate's time limit, ``agent.tool_timeout``). 501 when
the deployment has no lab planner (its tools are not GNS3's), or no builds.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Annotated, Any, Literal

import msgspec
import yaml
from litestar import Controller, Request, Response, get, post
from litestar.openapi.datastructures import ResponseSpec
from litestar.params import JSONBody, QueryParameter
from litestar.response import ServerSentEvent
from litestar.status_codes import HTTP_200_OK, HTTP_422_UNPROCESSABLE_ENTITY
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    WithJsonSchema,
    field_validator,
    model_validator,
)

from adapters.web._body import json_body
from adapters.web._ids import SessionIdField
from adapters.web._lab_stream import build_streamed, wants_stream
from adapters.web._openapi import ErrorBody, errors
from adapters.web._scopes import ProjectScope, ids_in_path, scopes
from adapters.web._state import Injected
from copilot_core import AbortToken, CopilotMode, SessionKey, ToolContext
from copilot_core.errors import NotFoundError
from copilot_core.labs import (
    LabBuildOutcome,
    LabBuildRequest,
    LabBuilds,
    LabIntent,
    LabPlan,
    LabPlanError,
    LabPlanner,
    PlanDelta,
    PlanProblem,
    PlanProblems,
    ResolvedPlan,
    diff,
    named_like,
    parse_plan,
    plan_data,
    plan_fingerprint,
    plan_from_intent,
    plan_schema,
)
from copilot_core.policy import UserLimits

__all__ = [
    "LabBuildBody",
    "LabBuildReply",
    "LabPlanController",
    "LabPlanDocument",
    "LabPlanReply",
    "LabPlanRequest",
]

YAML = "application/yaml"

Format = Annotated[
    Literal["json", "yaml"],
    QueryParameter(description="json (default): the plan document; yaml: the plan's file."),
]


def _inlined(schema: dict[str, Any]) -> dict[str, Any]:
    """A model's JSON Schema with its definitions written in place (no ``$ref``)."""
    defs = schema.get("$defs", {})

    def inline(node: Any) -> Any:
        if isinstance(node, list):
            return [inline(item) for item in node]
        if not isinstance(node, dict):
            return node
        if "$ref" in node:
            target = defs[str(node["$ref"]).rsplit("/", 1)[-1]]
            return inline({**target, **{k: v for k, v in node.items() if k != "$ref"}})
        return {k: inline(v) for k, v in node.items() if k not in ("$defs", "discriminator")}

    return dict(inline(schema))


#: A plan document as the body carries it: read by the core (``parse_plan``), which names
#: every problem by the plan's field; described by the plan file's schema.
_PLAN_SCHEMA = _inlined(plan_schema())
_INTENT_SCHEMA = _inlined(LabIntent.model_json_schema(mode="validation"))
PlanDocument = Annotated[dict[str, Any], WithJsonSchema(_PLAN_SCHEMA)]
#: A description as the body carries it: read by the core (``LabIntent``).
IntentDocument = Annotated[dict[str, Any], WithJsonSchema(_INTENT_SCHEMA)]


def _not_null(schema: dict[str, Any]) -> None:
    """The document's body: ``plan`` and ``lab_intent`` are objects when sent (``null`` is
    refused), and exactly one of them is sent."""
    for name in ("plan", "lab_intent"):
        prop = schema["properties"][name]
        kept = [alt for alt in prop.pop("anyOf", []) if alt != {"type": "null"}]
        prop.pop("default", None)
        if kept:
            prop.update(kept[0])
    schema["oneOf"] = [{"required": ["plan"]}, {"required": ["lab_intent"]}]


class LabPlanRequest(BaseModel):
    """A lab to plan: a plan document or a description, not both."""

    model_config = ConfigDict(extra="forbid", frozen=True, json_schema_extra=_not_null)

    plan: PlanDocument | None = Field(
        default=None, description="A plan document: the plan file's fields (docs/labs.md)."
    )
    lab_intent: IntentDocument | None = Field(
        default=None,
        description="A description: routers, links (router pairs), hosts behind routers, "
        "ospf or static, an address pool; laid out into a plan (docs/labs.md).",
    )
    relative: bool = Field(
        default=False,
        description="Plan against the project's lab as it is: an intent keeps what the lab "
        "has, and the answer says what a build would add and remove.",
    )

    @field_validator("plan", "lab_intent", mode="before")
    @classmethod
    def _sent_as_an_object(cls, value: Any) -> Any:
        if value is None:
            raise ValueError("send an object, or leave the field out")
        return value

    @model_validator(mode="after")
    def _one(self) -> LabPlanRequest:
        if (self.plan is None) == (self.lab_intent is None):
            raise ValueError("give either plan (a document) or lab_intent (a description)")
        return self


class LabPlanDocument(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A plan document: the plan file's fields (docs/labs.md), what is empty left out."""

    summary: str | None = None
    nodes: list[dict[str, Any]]
    links: list[str | dict[str, Any]] = msgspec.field(default_factory=list)
    addressing: dict[str, str] = msgspec.field(default_factory=dict)
    config: dict[str, list[str]] = msgspec.field(default_factory=dict)
    checks: list[dict[str, Any]] = msgspec.field(default_factory=list)

    @classmethod
    def of(cls, plan: LabPlan) -> LabPlanDocument:
        return msgspec.convert(plan_data(plan), cls)


class LabPlanReply(msgspec.Struct, kw_only=True):
    """A plan the server can build: the plan document (every node's template named),
    each node's GNS3 template id, each linked port's adapter and port numbers; with
    ``relative``, what a build would add and remove (``change``)."""

    plan: LabPlanDocument
    templates: dict[str, str]
    ports: dict[str, list[int]]
    #: What building this plan is bound to (``POST …/labs/build`` sends it back): the
    #: ``call_digest`` of the ``build_lab`` call of the plan alone (with ``relative``: of
    #: its relative build from ``change.base``); ``None`` where this deployment cannot
    #: build plans.
    digest: str | None
    change: dict[str, Any] | None = None


class LabBuildBody(BaseModel):
    """A shown plan to build: the user's approval of it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    plan: PlanDocument = Field(
        description="The plan document ``POST …/labs/plan`` answered (``plan``), as it was."
    )
    digest: str = Field(
        pattern=r"^sha256:[0-9a-f]{64}$",
        description="The ``digest`` that answer gave: the approval is bound to it (another "
        "plan: 409, nothing built).",
    )
    session_id: SessionIdField = Field(
        description="The caller's chat session that keeps the build in its history (and "
        "its restore point, for an undo)."
    )
    on_fail: Literal["rollback", "keep"] = Field(
        default="rollback",
        description="When a check fails after the build: roll it back to the lab as it "
        "was (the default), or keep what was built.",
    )
    wait_s: float | None = Field(
        default=None,
        ge=0,
        le=3600,
        description="Seconds the checks may take to hold after the build (none: the "
        "build_lab tool's default; above the server's limit the build is not run).",
    )
    base: str | None = Field(
        default=None,
        pattern=r"^sha256:[0-9a-f]{64}$",
        description="A relative build (a plan ``POST …/labs/plan`` answered with "
        "``relative``): that answer's ``change.base``, the lab's fingerprint; only the "
        "difference from the lab as it is is built, refused when the lab changed since.",
    )


class LabBuildReply(msgspec.Struct, kw_only=True):
    """What the build did: the verification's status, the checks that failed with their
    evidence, whether it was rolled back, its restore point, and the build_lab call's
    whole result (``result``)."""

    #: ``pass``: every check held; ``fail``: one did not (see ``failed_checks``);
    #: ``not_run``: the build did not run to its checks (see ``error``); ``unchecked``: a
    #: plan without checks, built.
    status: Literal["pass", "fail", "not_run", "unchecked"]
    #: The call's status: ``success``, ``error`` (a check failed and the build was rolled
    #: back, or part of it failed), ``aborted``, ``rejected``.
    tool_status: str
    #: Whether the whole build was undone (a check failed, ``on_fail`` rollback).
    rolled_back: bool
    #: Whether what was built stays in the project (not rolled back, or only in part).
    kept: bool
    #: The restore point taken before the build (an undo of it from the session's
    #: restore points), if one was.
    restore_point_id: str | None = None
    #: Each check that decided the build and did not hold after it: its name, status,
    #: reason, what was observed and the evidence (the command and its output).
    failed_checks: list[dict[str, Any]] = msgspec.field(default_factory=list)
    error: str | None = None
    warning: str | None = None
    #: The id of the build_lab call in the session's history.
    tool_call_id: str
    #: The build_lab call's result as the session's history keeps it: the build's
    #: report (nodes, links, devices, problems, timings) and its ``verification``.
    result: dict[str, Any]

    @classmethod
    def of(cls, outcome: LabBuildOutcome) -> LabBuildReply:
        output = dict(outcome.output)
        verification = output.get("verification")
        checks: dict[str, Any] = verification if isinstance(verification, dict) else {}
        after: dict[str, Any] = checks.get("after") or {}
        deciding = set(checks.get("deciding") or ())
        failed = [
            c
            for c in after.get("checks", [])
            if c.get("status") != "pass" and c.get("name") in deciding
        ]
        rolled_back = bool(checks.get("rolled_back"))
        built = any(n.get("created") for n in output.get("nodes") or ())
        return cls(
            status=outcome.status,
            tool_status=outcome.result.status.value,
            rolled_back=rolled_back,
            kept=built and not rolled_back,
            restore_point_id=output.get("restore_point_id"),
            failed_checks=failed,
            error=output.get("error"),
            warning=output.get("warning"),
            tool_call_id=outcome.call_id,
            result=output,
        )


def _reply_data(outcome: LabBuildOutcome) -> dict[str, Any]:
    data: dict[str, Any] = msgspec.to_builtins(LabBuildReply.of(outcome))
    return data


_PLAN_RESPONSES = {
    HTTP_200_OK: ResponseSpec(
        LabPlanReply, description="The resolved plan; nothing was built.", generate_examples=False
    ),
    **errors(404, 409, 501),
    HTTP_422_UNPROCESSABLE_ENTITY: ResponseSpec(
        ErrorBody,
        description="The plan or the description cannot be built: every problem by its "
        "field (``problems``), or the body is not a plan request.",
        generate_examples=False,
    ),
}


def _context(project: ProjectScope) -> ToolContext:
    """The caller's context for the planner (as the lab tools act for the caller)."""
    return ToolContext(
        project_id=project.project_id,
        user_id=project.user_id,
        session_id="",
        mode=CopilotMode.LAB_AUTOMATION_ASSISTANT,
        abort=AbortToken(),
        credentials=project.caller.token,
    )


def _refused(source: str, problems: tuple[PlanProblem, ...]) -> Response[dict[str, Any]]:
    listed = "; ".join(str(p) for p in problems)
    return Response(
        {
            "detail": f"The {source} cannot be built: {listed}.",
            "code": "invalid_plan",
            "problems": [{"field": p.field, "message": p.message} for p in problems],
        },
        status_code=HTTP_422_UNPROCESSABLE_ENTITY,
    )


def _change(current: LabPlan | None, wanted: LabPlan) -> dict[str, Any]:
    delta = diff(current, wanted) if current is not None else PlanDelta(
        add_nodes=wanted.nodes, add_links=wanted.links, add_lines=wanted.config
    )  # fmt: skip
    return {**delta.as_data(), "base": plan_fingerprint(current)}


_TYPES: dict[str, Callable[[Any], bool]] = {
    "boolean": lambda v: isinstance(v, bool),
    "integer": lambda v: (
        (isinstance(v, int) and not isinstance(v, bool))
        or (isinstance(v, float) and v.is_integer())
    ),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "string": lambda v: isinstance(v, str),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
    "null": lambda v: v is None,
}


def _mistyped(schema: Mapping[str, Any], value: Any, where: str) -> PlanProblem | None:
    """The first value of ``value`` whose JSON type (or constant) its schema does not
    allow: the body is read as strictly as every other body (no number for a boolean, no
    string for a number), which the core's lenient reading of a file would not refuse."""
    alternatives = schema.get("anyOf") or schema.get("oneOf")
    if alternatives:
        tried = [_mistyped(alternative, value, where) for alternative in alternatives]
        if None in tried:
            return None
        # the alternative that went deepest is the one meant (a check of its kind)
        return max((t for t in tried if t is not None), key=lambda t: len(t.field))
    if "const" in schema and value != schema["const"]:
        return PlanProblem(where, f"should be {schema['const']!r}")
    if "enum" in schema and value not in schema["enum"]:
        return PlanProblem(where, f"should be one of {', '.join(map(str, schema['enum']))}")
    kinds = schema.get("type")
    if kinds is not None:
        kinds = [kinds] if isinstance(kinds, str) else kinds
        if not any(_TYPES[kind](value) for kind in kinds if kind in _TYPES):
            return PlanProblem(where, f"should be of JSON type {' or '.join(kinds)}")
    if isinstance(value, dict):
        properties = schema.get("properties") or {}
        extra = schema.get("additionalProperties", True)
        for key, item in value.items():
            inner = properties.get(key, extra)
            field = f"{where}.{key}" if where else str(key)
            if inner is False:
                return PlanProblem(field, "is not a field of it")
            if isinstance(inner, Mapping) and (found := _mistyped(inner, item, field)):
                return found
    if isinstance(value, list):
        prefix = schema.get("prefixItems") or []
        rest = schema.get("items", True)
        for index, item in enumerate(value):
            inner = prefix[index] if index < len(prefix) else rest
            if isinstance(inner, Mapping) and (
                found := _mistyped(inner, item, f"{where}[{index}]")
            ):
                return found
    return None


def _plan(data: dict[str, Any]) -> LabPlan:
    """The plan a body carries; :class:`LabPlanError` names what is wrong."""
    mistyped = _mistyped(_PLAN_SCHEMA, data, "")
    if mistyped is not None:
        raise LabPlanError("plan", [mistyped])
    return parse_plan(data, "plan")


def _intent(data: dict[str, Any]) -> LabIntent:
    """The description a body carries; :class:`LabPlanError` names every wrong field."""
    mistyped = _mistyped(_INTENT_SCHEMA, data, "")
    if mistyped is not None:
        raise LabPlanError("intent", [mistyped])
    try:
        return LabIntent.model_validate(data)
    except ValidationError as exc:
        raise LabPlanError(
            "intent",
            [
                PlanProblem(
                    "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in e["loc"]).lstrip(
                        "."
                    )
                    or "intent",
                    e["msg"],
                )
                for e in exc.errors()
            ],
        ) from None


async def _current(labs: LabPlanner, context: ToolContext) -> LabPlan | None:
    try:
        return await labs.current(context)
    except NotFoundError:  # nothing a plan holds yet: everything is new
        return None


class LabPlanController(Controller):
    path = "/projects/{project_id:str}/labs"
    tags = ["labs"]  # noqa: RUF012 - Litestar's declared attribute
    dependencies = {**scopes()}  # noqa: RUF012 - Litestar's declared attribute
    guards = [ids_in_path]  # noqa: RUF012 - Litestar's declared attribute

    @post(
        "/plan",
        operation_id="planLab",
        status_code=HTTP_200_OK,
        guards=[json_body],
        responses=_PLAN_RESPONSES,
    )
    async def plan(
        self,
        project: Injected[ProjectScope],
        labs: Injected[LabPlanner],
        lab_builds_if_any: Injected[LabBuilds | None],
        data: JSONBody[LabPlanRequest],
    ) -> Response[Any]:
        """Lay out and resolve a lab plan against the project's GNS3 server (templates,
        ports, every device line judged by its platform's grammar) without building
        anything. 422 names every problem by its field (``problems``)."""
        context = _context(project)
        current = await _current(labs, context) if data.relative else None
        try:
            if data.plan is not None:
                wanted = _plan(data.plan)
            else:
                wanted = plan_from_intent(_intent(data.lab_intent or {}), keep=current)
        except LabPlanError as exc:
            return _refused(exc.source, exc.problems)
        resolved = await labs.resolve(wanted, context)
        if isinstance(resolved, PlanProblems):
            return _refused("plan", resolved.problems)
        there = await labs.resolve(current, context) if current is not None else None
        if isinstance(there, ResolvedPlan):  # the lab's ports as the lab names them
            resolved = named_like(resolved, there)
        base = plan_fingerprint(current) if data.relative else None
        reply = LabPlanReply(
            plan=LabPlanDocument.of(resolved.plan),
            templates={n.name: n.template_id for n in resolved.nodes},
            ports={p.endpoint: [p.adapter_number, p.port_number] for p in resolved.ports},
            digest=None
            if lab_builds_if_any is None
            else lab_builds_if_any.digest(resolved.plan, base),
            change=_change(current, resolved.plan) if data.relative else None,
        )
        return Response(reply)

    @get(
        "/current",
        operation_id="getCurrentLab",
        responses={
            HTTP_200_OK: ResponseSpec(
                LabPlanDocument,
                description="format=json: the plan document; format=yaml "
                "(application/yaml): the plan's file.",
                generate_examples=False,
            ),
            **errors(404, 409, 501),
        },
    )
    async def current(
        self,
        project: Injected[ProjectScope],
        labs: Injected[LabPlanner],
        format: Format = "json",
    ) -> Response[Any]:
        """The project's lab as a plan document: nodes (FRR routers, Linux hosts, VPCS)
        with their templates and positions, links by port name, addresses, each started
        device's configuration lines; no checks. ``?format=yaml``: the plan's YAML file,
        to save and build elsewhere. 404 when the project has nothing a plan holds."""
        plan = await labs.current(_context(project))
        if format == "yaml":
            text = yaml.safe_dump(plan_data(plan), sort_keys=False, allow_unicode=True)
            return Response(text, media_type=YAML)
        return Response(LabPlanDocument.of(plan))

    @post(
        "/build",
        operation_id="buildLab",
        status_code=HTTP_200_OK,
        guards=[json_body],
        responses={
            HTTP_200_OK: ResponseSpec(
                LabBuildReply,
                description="The build ran (or was refused by its gate: ``not_run``): its "
                "verification's status, the failing checks, rolled back or kept.",
                generate_examples=False,
            ),
            **errors(403, 404, 409, 501),
            HTTP_422_UNPROCESSABLE_ENTITY: ResponseSpec(
                ErrorBody,
                description="The plan cannot be built: every problem by its field "
                "(``problems``), or the body is not a build request. Nothing was built.",
                generate_examples=False,
            ),
        },
    )
    async def build(
        self,
        request: Request[Any, Any, Any],
        project: Injected[ProjectScope],
        lab_builds: Injected[LabBuilds],
        limits: Injected[UserLimits],
        data: JSONBody[LabBuildBody],
    ) -> Response[Any]:
        """Build a plan ``POST …/labs/plan`` showed, as the user's approval of it: the
        chat's ``build_lab`` call, run through the copilot's gate as ONE verified change
        (a restore point, the nodes, links, starts and every device's lines, then the
        plan's checks retried until they hold or ``wait_s`` passes; on a failing check
        rolled back to the lab as it was, or kept with ``on_fail: keep``), recorded in the
        session's history. Answered when the build and its checks are done (within the
        gate's time limit); with ``Accept: text/event-stream``, streamed: its progress
        (``tool_progress``), then the answer (``lab_build``). 409: the plan is not the
        one shown (its digest), or the session has a turn, a rollback or a build running;
        nothing is built. 403: the operator's policy keeps the caller below lab
        automation."""
        key = SessionKey(project.project_id, data.session_id, project.user_id)
        await lab_builds.admit(key, limits)  # 403, 404 before the plan is read
        try:
            plan = _plan(data.plan)
        except LabPlanError as exc:
            return _refused(exc.source, exc.problems)
        build = LabBuildRequest(
            key,
            plan,
            data.digest,
            on_fail=data.on_fail,
            wait_s=data.wait_s,
            base=data.base,
            credentials=project.caller.token,
            by=project.caller.principal.username or None,
            limits=limits,
        )
        try:
            if wants_stream(request.headers.get("accept")):
                streamed = await build_streamed(lab_builds, build, _reply_data)
                if isinstance(streamed, ServerSentEvent):
                    return streamed
                outcome = streamed
            else:
                outcome = await lab_builds(build)
        except LabPlanError as exc:
            return _refused(exc.source, exc.problems)
        return Response(LabBuildReply.of(outcome))
