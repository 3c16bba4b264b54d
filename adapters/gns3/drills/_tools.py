"""The chat's way into a troubleshooting drill: one tool, ``practice_drill``, over the core's
:class:`~copilot_core.drills.Drills` use case.

"Give me an OSPF fault" makes the model call ``practice_drill`` with ``action: start``;
the use case checks the lab, takes the checkpoint, injects the fault and confirms its
symptoms — the model never sends the fault's lines, and they never reach the
conversation. What the tool answers is only what the student may see: the drill's
view (topic, difficulty, the lab, the symptoms, the hints revealed), a grade per
condition, and, once the drill has ended, the answer with the restore's report.

A separate tool source rather than a tool of the GNS3 registry: the use case reaches the
lab through :class:`~adapters.gns3.Gns3DrillLab`, which is built on the registry's own
:class:`~adapters.gns3.LabAccess`; a registry tool holding the use case would make the
two depend on each other. Starting and ending change the lab (a fault put in, the lab
put back), so the tool declares a device change: under the approval setting
``changes`` the student approves both, with a card that says what happens and never
which fault; a hint, a grade and the status change nothing and run at once.

Starting, grading and ending run to their end even when the call does not wait for them
(the turn is aborted, or the call reaches its time limit): a start cut half-way would
leave the project reserved with a fault in it and no drill handed over; the student
finds the drill with ``status`` afterwards.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Sequence
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from copilot_core import CopilotMode, ToolContext, ToolResult, ToolSpec
from copilot_core.drills import DrillCaller, DrillChoice, DrillEnding, Drills, Grade
from copilot_core.errors import CopilotError, error_code
from copilot_core.faults import Topic
from copilot_core.ports import (
    NOT_CLEARED,
    Assessment,
    ChangePreview,
    ChangeSteps,
    Clearance,
    ParsedToolCall,
    ToolEffect,
)

__all__ = ["DRILL_TOOL", "DrillTools", "ending_json", "grade_json"]

#: The tool's name.
DRILL_TOOL = "practice_drill"

T = TypeVar("T")

_TOPICS = tuple(t.value for t in Topic if t is not Topic.HEALTHY)


class PracticeDrill(BaseModel):
    """The tool's arguments."""

    model_config = ConfigDict(extra="forbid")

    action: Literal["start", "status", "hint", "grade", "end"] = Field(
        description="start: put a fault in the lab for the student to find; status: the "
        "running drill; hint: the next hint; grade: judge the student's fix; end: restore "
        "the lab and reveal the answer."
    )
    topic: Literal[_TOPICS] | None = Field(  # type: ignore[valid-type]
        default=None, description="start: the fault's topic (any when absent)."
    )
    difficulty: int | None = Field(
        default=None, ge=1, le=3, description="start: 1 (first steps) to 3 (subtle)."
    )
    give_up: bool = Field(
        default=False, description="end: the student gives up (the answer is shown)."
    )


_DESCRIPTION = (
    "Troubleshooting practice for the student: the service puts one known fault into the "
    "lab (you never see or send it), the student looks for it with your tutoring, asks "
    "for hints, has the fix graded and ends the drill (the lab is restored). Use it when "
    "the student asks for a fault, a drill or an exercise, for a hint, to be graded, or "
    "to stop. Never name or guess the fault for the student: tutor with questions and "
    "the hints this tool gives."
)


def _title(arguments: dict[str, Any]) -> str | None:
    action = arguments.get("action")
    topic = arguments.get("topic")
    return {
        "start": "Start a troubleshooting drill" + (f" ({topic})" if topic else ""),
        "status": "Read the troubleshooting drill",
        "hint": "Next hint of the drill",
        "grade": "Grade the fix",
        "end": "Give up the drill" if arguments.get("give_up") else "End the drill",
    }.get(str(action))


def grade_json(grade: Grade) -> dict[str, Any]:
    """A grade as the student sees it: each condition with its evidence, the share met."""
    return {
        "score": grade.score,
        "fixed": grade.fixed,
        "time_s": round(grade.time_s, 1),
        "hints_used": grade.hints_used,
        "conditions": [
            {"kind": c.kind, "name": c.name, "met": c.met, "evidence": c.evidence}
            for c in grade.conditions
        ],
    }


def ending_json(ending: DrillEnding) -> dict[str, Any]:
    """An ended drill: what the student saw, the answer, the restore, the kept result."""
    outcome = ending.outcome
    return {
        "drill": ending.view.to_json(),
        "answer": ending.answer.to_json(),
        "restore": {
            "exact": ending.restore.exact,
            "differences": list(ending.restore.differences),
        },
        "result": {
            "score": outcome.score,
            "time_s": round(outcome.time_s, 1),
            "hints_used": outcome.hints_used,
            "given_up": outcome.given_up,
            "restored": outcome.restored,
        },
    }


class DrillTools:
    """The ``practice_drill`` tool as a ``ToolExecutor`` (see the module), offered in both
    modes: a drill is a teaching turn, and any mode may tutor one."""

    def __init__(self, drills: Drills) -> None:
        self.drills = drills
        self._running: set[asyncio.Task[Any]] = set()
        self.spec = ToolSpec(
            name=DRILL_TOOL,
            description=_DESCRIPTION,
            parameters=_schema(),
            effect=ToolEffect.DEVICE_CHANGE,
            brief="Troubleshooting practice: start a fault drill, hint, grade, end.",
            everyday=False,
            cues=("drill", "fault", "practi", "exercis", "troublesh", "grade", "hint", "quiz"),
            title=_title,
        )

    def specs(self, mode: CopilotMode) -> Sequence[ToolSpec]:
        return [self.spec]

    async def assess(self, call: ParsedToolCall, context: ToolContext) -> Assessment:
        """Starting and ending change the lab (the card says how, never which fault);
        the rest reads."""
        args = _parse(call)
        if isinstance(args, ToolResult) or args.action not in ("start", "end"):
            return Assessment.read_only()
        if args.action == "start":
            what = " and ".join(
                part
                for part in (
                    f"topic {args.topic}" if args.topic else "",
                    f"difficulty {args.difficulty}" if args.difficulty else "",
                )
                if part
            )
            summary = (
                f"Start a troubleshooting drill ({what or 'any fault'}): the service checks "
                "that the lab fits, keeps its state, and puts one fault into it. Ending the "
                "drill restores the lab."
            )
        else:
            summary = (
                "End the troubleshooting drill: the lab is restored to its state before the "
                "fault, and the answer is shown."
            )
        return Assessment(True, ChangePreview(summary))

    async def change_steps(
        self, call: ParsedToolCall, context: ToolContext, assessment: Assessment
    ) -> ChangeSteps | None:
        return None

    async def execute(
        self, call: ParsedToolCall, context: ToolContext, clearance: Clearance = NOT_CLEARED
    ) -> ToolResult:
        args = _parse(call)
        if isinstance(args, ToolResult):
            return args
        caller = DrillCaller(
            context.project_id, context.user_id, context.credentials, context.limits
        )
        try:
            return ToolResult(await self._run(args, caller))
        except CopilotError as exc:  # already said without the answer (the core's rule)
            return ToolResult.error(exc.message, code=error_code(exc))

    async def _run(self, args: PracticeDrill, caller: DrillCaller) -> dict[str, Any]:
        drills = self.drills
        if args.action == "start":
            choice = DrillChoice(
                topic=Topic(args.topic) if args.topic else None, difficulty=args.difficulty
            )
            view = await self._to_the_end(drills.start(caller, choice))
            return {
                "status": "success",
                "drill": view.to_json(),
                "note": "The fault is in the lab. Tell the student the symptoms; let them "
                "find it. Give hints only from this tool.",
            }
        current = await drills.current(caller)
        if current is None:
            return {"status": "success", "drill": None, "note": "No drill of yours is running."}
        if args.action == "status":
            return {"status": "success", "drill": current.to_json()}
        if args.action == "hint":
            return {"status": "success", "drill": (await drills.hint(caller, current.id)).to_json()}
        if args.action == "grade":
            grade = await self._to_the_end(drills.grade(caller, current.id))
            return {"status": "success", "grade": grade_json(grade)}
        ending = await self._to_the_end(drills.end(caller, current.id, give_up=args.give_up))
        return {"status": "success", **ending_json(ending)}

    async def _to_the_end(self, work: Awaitable[T]) -> T:
        """``work`` in a task of its own that a cancelled call does not stop (see the
        module); kept referenced until it is done."""
        task: asyncio.Task[T] = asyncio.ensure_future(work)
        self._running.add(task)
        task.add_done_callback(self._done)
        return await asyncio.shield(task)

    def _done(self, task: asyncio.Task[Any]) -> None:
        self._running.discard(task)
        if not task.cancelled():
            task.exception()  # retrieved: nobody may be waiting any more (it is logged)


def _schema() -> dict[str, Any]:
    schema = PracticeDrill.model_json_schema()
    schema.pop("title", None)
    schema.pop("description", None)
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)
        if "anyOf" in prop:  # optional: the model omits it rather than sending null
            kept = [s for s in prop.pop("anyOf") if s.get("type") != "null"]
            prop.update(kept[0])
            prop.pop("default", None)
    return schema


def _parse(call: ParsedToolCall) -> PracticeDrill | ToolResult:
    try:
        return PracticeDrill.model_validate(call.arguments or {})
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}" for e in exc.errors()
        )
        return ToolResult.error(f"Invalid arguments for {DRILL_TOOL}: {problems}")
