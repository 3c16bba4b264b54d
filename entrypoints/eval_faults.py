"""``gns3-copilot eval --suite faults``: the catalog's faults score a model on a real GNS3.

For each lab shape of the cases chosen (``--fault`` ids, else ``--topic``, else every
fault; plus the shapes' healthy cases unless ``--no-healthy``), a lab: the project the
user names (``--project``: it must fit the shape, the drill's fit check says what is
missing; never deleted), or a scratch project the shape is built into by a
:data:`ShapeBuilder` and deleted afterwards, always. The lab must be healthy first (the
shape's healthy case's checks hold). Then, for each trial and each case:

1. a fault is injected by the :class:`~copilot_core.drills.Drills` use case, built as the
   service builds it (:func:`~entrypoints.container.drills_use_case` over the catalog, the
   GNS3 tools' :class:`~adapters.gns3.Gns3DrillLab` and probes; its results in memory):
   the lab fits, a checkpoint, the fault's steps, its symptoms seen to fail. A healthy
   case injects nothing;
2. the model diagnoses it in a teaching-mode turn of the service (its chat service, agent
   and GNS3 tools; :func:`~entrypoints.eval_service.run_turn`), asked the same question on
   every lab (:func:`~entrypoints.eval_diagnosis.diagnosis_question`); its answer's final
   fenced JSON block is read strictly (:func:`~entrypoints.eval_diagnosis.parse_diagnosis`)
   and scored by the core's scorer against the ground truth;
3. with ``--fix``, a lab-automation turn in the same session repairs it (every approval
   answered yes) and the drill grades it (its fixed-checks and constraints; a healthy
   case: its checks, and every node's configuration and the topology unchanged);
4. the drill ends, whatever happened: the lab restored from the checkpoint, checked by
   the lab-state diff. A lab not restored exactly runs no further case.

The figures (:mod:`entrypoints.eval_fault_scores`) are printed as a table and written as
JSON (``--out``).
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from adapters.gns3 import FaultCatalog, Gns3LabBuilder, Gns3LabPlanner
from copilot_core import AbortToken, CopilotMode, SessionKey, ToolContext
from copilot_core.drills import (
    DrillCaller,
    DrillChoice,
    DrillLab,
    Drills,
    Grade,
    InMemoryDrillResults,
    grade_fix,
    score_diagnosis,
)
from copilot_core.errors import CopilotError, DrillNotStartedError
from copilot_core.faults import (
    ConfigUnchanged,
    Constraint,
    Fault,
    LabShape,
    TopologyUnchanged,
)
from copilot_core.intent import CheckProbes, CheckStatus, MonotonicClock, check_label, verify_checks
from copilot_core.labs import PlanProblems, Platform, plan_from_shape
from entrypoints.container import drills_use_case, gns3_drill_lab
from entrypoints.eval_diagnosis import (
    Malformed,
    diagnosis_data,
    diagnosis_question,
    fix_question,
    parse_diagnosis,
)
from entrypoints.eval_fault_scores import CaseRun, FixRun
from entrypoints.eval_gns3 import Gns3Labs
from entrypoints.eval_service import EVAL_USER, TurnFigures, run_turn

__all__ = [
    "FaultEval",
    "FaultsSetupError",
    "ShapeBuilder",
    "scratch_builder",
    "scratch_name",
    "select_cases",
]

TEACHING = CopilotMode.TEACHING_ASSISTANT
AUTOMATION = CopilotMode.LAB_AUTOMATION_ASSISTANT
#: How long a lab (a fresh scratch build, or a project given) may take to be healthy.
HEALTHY_WITHIN_S = 120.0
#: How long deleting a scratch project may take.
DELETE_WITHIN_S = 120.0
_PREFIX = "copilot-eval-faults-"

#: Builds a lab shape into an empty project (the context's): nodes from templates, links,
#: started, every device configured as the shape's healthy lab. One function, so that
#: the scratch lab is whatever builds it.
ShapeBuilder = Callable[[LabShape, ToolContext], Awaitable[None]]


class FaultsSetupError(Exception):
    """The run cannot start (no such fault, the project does not fit, no builder): the
    message says why; exit status 2."""


def scratch_name() -> str:
    """A scratch project's name: unique, and recognisable as the evaluation's."""
    return f"{_PREFIX}{secrets.token_hex(4)}"


def select_cases(
    catalog: FaultCatalog,
    fault_ids: Sequence[str] = (),
    topics: Sequence[str] = (),
    *,
    healthy: bool = True,
) -> list[Fault]:
    """The cases to run, in catalog order: the faults named (else those of the topics,
    else every fault), then, with ``healthy``, the healthy cases of their lab shapes.
    FaultsSetupError for an id the catalog does not have."""
    known = {f.id: f for f in catalog}
    unknown = [i for i in fault_ids if i not in known]
    if unknown:
        raise FaultsSetupError(f"no fault {', '.join(map(repr, unknown))} in the catalog")
    if fault_ids:
        chosen = set(fault_ids)
    else:
        chosen = {f.id for f in catalog if not f.healthy and (not topics or f.topic in topics)}
    if healthy:
        shapes = {known[i].lab for i in chosen}
        chosen |= {f.id for f in catalog if f.healthy and f.lab in shapes}
    return [f for f in catalog if f.id in chosen]


@dataclass
class _Lab:
    """A lab a shape's cases run in: its project, and what it still needs."""

    project_id: str
    context: ToolContext
    #: Why no further case may run here (the last restore was not exact).
    spoilt: str | None = None


class FaultEval:
    """The suite's run on one GNS3 server (see the module), over the service of
    ``labs`` (its container's chat, agent and GNS3 tools)."""

    def __init__(
        self,
        labs: Gns3Labs,
        catalog: FaultCatalog,
        *,
        fix: bool = False,
        trials: int = 1,
        builder: ShapeBuilder | None = None,
        on_run: Callable[[CaseRun], None] | None = None,
    ) -> None:
        self.labs = labs
        self.catalog = catalog
        self.fix = fix
        self.trials = max(1, trials)
        self.builder = builder
        self.on_run = on_run
        lab = gns3_drill_lab(labs.tools)
        assert lab is not None  # the GNS3 tools' own
        self.lab: DrillLab = lab
        self.probes: CheckProbes = labs.tools.probes
        service = labs.service
        drills = drills_use_case(
            catalog, lab, self.probes, InMemoryDrillResults(), service.clock, service.ids
        )
        assert drills is not None
        self.drills: Drills = drills
        self._turns = 0
        #: Per lab: its shape's summary, the project (or ``scratch``), the seconds to have
        #: it (a scratch lab: created and built) and to find it healthy, or what went wrong.
        self.lab_figures: list[dict[str, Any]] = []

    # ------------------------------------------------------------------ the labs
    def context(self, project_id: str, mode: CopilotMode = TEACHING) -> ToolContext:
        return ToolContext(
            project_id,
            EVAL_USER,
            "eval-faults",
            mode,
            AbortToken(),
            credentials=self.labs.token,
        )

    async def misfits(
        self, cases: Sequence[Fault], project_id: str
    ) -> dict[LabShape, tuple[str, ...]]:
        """The cases' lab shapes that ``project_id`` does not fit, and what it lacks."""
        context = self.context(project_id)
        missing: dict[LabShape, tuple[str, ...]] = {}
        for shape in dict.fromkeys(f.lab for f in cases):
            fit = await self.lab.fit(shape, context)
            if not fit.fits:
                missing[shape] = fit.missing
        return missing

    @contextlib.asynccontextmanager
    async def open(self, shape: LabShape, project_id: str | None) -> AsyncIterator[_Lab]:
        """The lab of ``shape``: the project given (kept), or a scratch project built by
        the builder (deleted afterwards, whatever happens)."""
        if project_id is not None:
            yield _Lab(project_id, self.context(project_id))
            return
        if self.builder is None:
            raise FaultsSetupError("no lab builder: give --project")
        client, token = self.labs.client, self.labs.token
        project = await client.create_project(token, scratch_name())
        made = str(project["project_id"])
        try:
            context = self.context(made, AUTOMATION)
            await self.builder(shape, context)
            yield _Lab(made, self.context(made))
        finally:
            await asyncio.shield(self._delete(made, str(project.get("name"))))

    async def _delete(self, project_id: str, name: str) -> None:
        """Its nodes stopped, then the project deleted: asked again until it is gone, for
        up to ``DELETE_WITHIN_S`` (GNS3 stopping Docker nodes takes longer than one
        request's time limit)."""
        client, token = self.labs.client, self.labs.token
        loop = asyncio.get_running_loop()
        deadline = loop.time() + DELETE_WITHIN_S
        with contextlib.suppress(CopilotError):
            await client.project_nodes_action(token, project_id, "stop")
        while True:
            try:
                await client.delete_project(token, project_id)
                return
            except CopilotError as exc:
                problem = exc.message
            with contextlib.suppress(CopilotError):
                if all(
                    str(p.get("project_id")) != project_id for p in await client.projects(token)
                ):
                    return
            if loop.time() >= deadline:
                print(f"gns3-copilot eval: could not delete {name}: {problem}", file=sys.stderr)
                return
            await asyncio.sleep(2)

    async def unhealthy(self, shape: LabShape, context: ToolContext) -> str | None:
        """Why the lab is not the shape's healthy lab (its healthy case's checks, retried
        for a while: a lab just built converges), or ``None``."""
        healthy = next((f for f in self.catalog if f.healthy and f.lab == shape), None)
        if healthy is not None:
            checks = list(healthy.fixed_checks)
        else:  # a fault's fixed-checks hold on the healthy lab too
            every = [c for f in self.catalog if f.lab == shape for c in f.fixed_checks]
            checks = list({c.model_dump_json(): c for c in every}.values())
        result = await verify_checks(
            checks,
            self.probes.probe(context),
            MonotonicClock(),
            wait_s=HEALTHY_WITHIN_S,
            interval=self.probes.limits.interval,
        )
        failed = [check_label(r.check) for r in result.checks if r.status is not CheckStatus.PASS]
        return None if not failed else f"the lab is not healthy: {', '.join(failed)} do not hold"

    # ------------------------------------------------------------------ the run
    async def run(self, cases: Sequence[Fault], project_id: str | None = None) -> list[CaseRun]:
        """Every case ``trials`` times, lab shape by lab shape."""
        runs: list[CaseRun] = []

        def done(run: CaseRun) -> None:
            runs.append(run)
            if self.on_run is not None:
                self.on_run(run)

        for shape in dict.fromkeys(f.lab for f in cases):
            mine = [f for f in cases if f.lab == shape]
            ran, began = len(runs), time.monotonic()
            figures: dict[str, Any] = {"lab": shape.summary, "project": project_id or "scratch"}
            self.lab_figures.append(figures)
            try:
                async with self.open(shape, project_id) as lab:
                    figures["ready_s"] = _since(began)
                    began = time.monotonic()
                    why = await self.unhealthy(shape, lab.context)
                    figures.update(healthy_s=_since(began), unhealthy=why)
                    for trial in range(1, self.trials + 1):
                        for fault in mine:
                            if why is not None or lab.spoilt is not None:
                                done(_case(fault, trial, error=f"not run: {why or lab.spoilt}"))
                            else:
                                done(await self.case(fault, lab, trial))
            except CopilotError as exc:  # the lab could not be built, read or deleted
                figures["error"] = exc.message
                seen = {(r.fault, r.trial) for r in runs[ran:]}
                for trial in range(1, self.trials + 1):
                    for fault in mine:
                        if (fault.id, trial) not in seen:
                            done(_case(fault, trial, error=f"the lab failed: {exc.message}"))
        return runs

    async def case(self, fault: Fault, lab: _Lab, trial: int = 1) -> CaseRun:
        """One case (see the module), its lab put back whatever happened."""
        started = time.monotonic()
        if fault.healthy:
            run = await self._healthy(fault, lab, trial)
        else:
            run = await self._fault(fault, lab, trial)
        if run.restored is False:
            lab.spoilt = f"the lab was not restored exactly after {fault.id}"
        return replace(run, total_s=_since(started))

    async def _fault(self, fault: Fault, lab: _Lab, trial: int) -> CaseRun:
        run = _case(fault, trial)
        caller = DrillCaller(lab.project_id, EVAL_USER, credentials=self.labs.token)
        began = time.monotonic()
        try:
            view = await self.drills.start(caller, DrillChoice(fault_id=fault.id))
        except DrillNotStartedError as exc:
            return replace(
                run,
                inject_s=_since(began),
                error=f"the fault did not take: {exc.message}",
                restored=exc.restored,
                differences=exc.differences,
            )
        except CopilotError as exc:
            return replace(run, inject_s=_since(began), error=exc.message)
        run = replace(run, inject_s=_since(began))
        try:
            run, key = await self._diagnose(run, fault, lab)
            if self.fix:
                fixing = await self._turn(lab, AUTOMATION, fix_question(), key)
                began = time.monotonic()
                grade = await self.drills.grade(caller, view.id, wait_s=fault.settle_s)
                run = replace(run, fix=_fix_run(grade, fixing, _since(began)))
        except CopilotError as exc:
            run = replace(run, error=exc.message)
        finally:
            began = time.monotonic()
            try:
                ending = await asyncio.shield(self.drills.end(caller, view.id, give_up=True))
            except CopilotError as exc:
                run = replace(run, restored=False, error=f"the restore failed: {exc.message}")
            else:
                report = ending.restore
                run = replace(run, restored=report.exact, differences=report.differences)
            run = replace(run, restore_s=_since(began))
        return run

    async def _healthy(self, fault: Fault, lab: _Lab, trial: int) -> CaseRun:
        """A healthy case: nothing injected; with ``--fix``, the lab is checkpointed, the
        repair graded on the case's checks and on every node and the topology unchanged,
        then the lab restored."""
        run = _case(fault, trial)
        context = lab.context
        checkpoint = None
        try:
            if self.fix:
                checkpoint = await self.lab.checkpoint(fault.lab, context)
            run, key = await self._diagnose(run, fault, lab)
            if checkpoint is not None:
                handed = time.monotonic()
                fixing = await self._turn(lab, AUTOMATION, fix_question(), key)
                began = time.monotonic()
                checks = await verify_checks(
                    fault.fixed_checks,
                    self.probes.probe(context),
                    MonotonicClock(),
                    wait_s=fault.settle_s,
                    interval=self.probes.limits.interval,
                )
                kept = _unchanged(fault.lab)
                judged = await self.lab.judge(checkpoint, kept, fault.lab, context)
                grade = grade_fix(
                    checks.checks, judged, time_s=time.monotonic() - handed, hints_used=0
                )
                run = replace(run, fix=_fix_run(grade, fixing, _since(began)))
        except CopilotError as exc:
            run = replace(run, error=exc.message)
        finally:
            if checkpoint is not None:
                began = time.monotonic()
                try:
                    report = await asyncio.shield(self.lab.restore(checkpoint, fault.lab, context))
                except CopilotError as exc:
                    run = replace(run, restored=False, error=f"the restore failed: {exc.message}")
                else:
                    run = replace(run, restored=report.exact, differences=report.differences)
                run = replace(run, restore_s=_since(began))
        return run

    async def _diagnose(self, run: CaseRun, fault: Fault, lab: _Lab) -> tuple[CaseRun, SessionKey]:
        """The diagnosis turn, its answer read and scored."""
        figures = await self._turn(lab, TEACHING, diagnosis_question(fault.lab.summary))
        transcript = figures.transcript
        run = replace(
            run,
            diagnosed=True,
            tool_calls=len(transcript.calls) + transcript.refused,
            tokens=figures.tokens,
            first_token_s=None if figures.first_s is None else round(figures.first_s, 2),
            diagnose_s=figures.seconds,
            turn_error=transcript.errors[0] if transcript.errors else None,
        )
        parsed = parse_diagnosis(transcript.answer)
        if isinstance(parsed, Malformed):
            run = replace(run, malformed=parsed.reason)
        else:
            score = score_diagnosis(parsed, fault.ground_truth)
            run = replace(
                run,
                diagnosis=diagnosis_data(parsed),
                root_cause_f1=round(score.root_cause_f1, 4),
                precision=round(score.precision, 4),
                recall=round(score.recall, 4),
                localisation=round(score.localisation, 4),
                verdict=score.verdict,
            )
        assert figures.session is not None
        return run, figures.session

    async def _turn(
        self, lab: _Lab, mode: CopilotMode, message: str, session: SessionKey | None = None
    ) -> _Figures:
        """One turn of the service in the lab's project (a new session named by number,
        never by the case: nothing of the case reaches the model but the question)."""
        service = self.labs.service
        if session is None:
            self._turns += 1
            session = await service.new_session(lab.project_id, f"faults {self._turns}", mode)
        began = time.monotonic()
        figures = await run_turn(
            service, lab.project_id, "", mode, message, self.labs.token, session=session
        )
        return _Figures(figures, _since(began), session)


def scratch_builder(
    labs: Gns3Labs,
    templates: Mapping[Platform, str],
    progress: Callable[[str], None] | None = None,
) -> ShapeBuilder:
    """The function that builds a lab shape into an empty project: the shape as a lab
    plan (:func:`~copilot_core.labs.plan_from_shape`, each platform's node from
    ``templates``' template, else the server's), resolved against the server
    (:class:`~adapters.gns3.Gns3LabPlanner`) and built
    (:class:`~adapters.gns3.Gns3LabBuilder`: nodes, links, started, every device's lines).
    A plan the server cannot build, or a build with a problem, raises
    :class:`~copilot_core.errors.CopilotError` saying why."""
    planner, builder = Gns3LabPlanner(labs.tools.lab), Gns3LabBuilder(labs.tools.lab)

    async def said(text: str) -> None:
        if progress is not None:
            progress(text)

    async def build(shape: LabShape, context: ToolContext) -> None:
        resolved = await planner.resolve(plan_from_shape(shape, templates), context)
        if isinstance(resolved, PlanProblems):
            problems = "; ".join(map(str, resolved.problems))
            raise CopilotError(f"GNS3 cannot build {shape.summary}: {problems}")
        report = await builder.build(resolved, context, said)
        if not report.ok:
            problems = "; ".join(report.problems) or "stopped"
            raise CopilotError(f"{shape.summary} was not built: {problems}")

    return build


@dataclass(frozen=True)
class _Figures:
    turn: TurnFigures
    seconds: float
    session: SessionKey | None

    @property
    def transcript(self) -> Any:
        return self.turn.transcript

    @property
    def tokens(self) -> int:
        return self.turn.tokens

    @property
    def first_s(self) -> float | None:
        return self.turn.first_s


def _case(fault: Fault, trial: int, error: str | None = None) -> CaseRun:
    return CaseRun(fault.id, fault.topic.value, fault.difficulty, fault.healthy, trial, error=error)


def _fix_run(grade: Grade, turn: _Figures, grade_s: float) -> FixRun:
    checks = [c for c in grade.conditions if c.kind == "check"]
    kept = [c for c in grade.conditions if c.kind == "constraint"]
    return FixRun(
        score=round(grade.score, 4),
        fixed=grade.fixed,
        checks_met=sum(1 for c in checks if c.met),
        checks=len(checks),
        constraints_held=sum(1 for c in kept if c.met),
        constraints=len(kept),
        tool_calls=len(turn.transcript.calls) + turn.transcript.refused,
        tokens=turn.tokens,
        seconds=turn.seconds,
        grade_s=grade_s,
        conditions=tuple(
            {"kind": c.kind, "name": c.name, "met": c.met, "evidence": c.evidence}
            for c in grade.conditions
        ),
    )


def _unchanged(shape: LabShape) -> tuple[Constraint, ...]:
    """What a repair of a healthy lab must respect: it changes nothing."""
    nodes: list[Constraint] = [
        ConfigUnchanged(kind="config_unchanged", node=n.name) for n in shape.nodes
    ]
    return (*nodes, TopologyUnchanged(kind="topology_unchanged"))


def _since(started: float) -> float:
    return round(time.monotonic() - started, 2)
