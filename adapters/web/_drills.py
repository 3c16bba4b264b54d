"""Troubleshooting drills over HTTP (``…/projects/{project_id}/drills``): the catalog's
topics, starting a drill, the running drill, its next hint, grading the fix, ending it,
and the caller's history and best scores.

Two-line handlers over the core's :class:`~copilot_core.drills.Drills` use case, which
applies the operator's policy (403), keeps one drill per project (409), says what the lab
lacks (409, ``missing``), restores the lab when the fault does not take (502, with
``restored`` and ``differences``) and never gives the answer before the end: what these
routes answer is the student's view, a grade per condition, and the answer only in the
reply to ending the drill. 501 when the deployment has no drills.

Starting, grading and ending take seconds to a few minutes (a fault is injected and its
symptoms awaited for up to its ``settle_s``; the fixed-checks are retried as long; a
restore waits for the protocols to come back). They are plain requests, answered when
the work is done, as a rollback is (docs/api.md says how long each may take and why
not SSE).
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from litestar import Controller, get, post
from litestar.openapi.datastructures import ResponseSpec
from litestar.params import JSONBody, PathParameter, QueryParameter
from litestar.status_codes import HTTP_200_OK, HTTP_201_CREATED
from pydantic import Field

from adapters.web._body import json_body
from adapters.web._chat import Limit
from adapters.web._ids import UUID_PATTERN, canonical_uuid
from adapters.web._openapi import ErrorBody, errors
from adapters.web._schemas import StrictBody, _from_value
from adapters.web._scopes import ProjectScope, ids_in_path, scopes
from adapters.web._state import Injected
from copilot_core import ChatService
from copilot_core.drills import (
    DrillCaller,
    DrillChoice,
    DrillEnding,
    DrillOutcome,
    Drills,
    DrillView,
    Grade,
)
from copilot_core.errors import InvalidRequestError, NotFoundError
from copilot_core.faults import Topic
from copilot_core.policy import UNLIMITED, UserLimits

__all__ = [
    "DrillBody",
    "DrillCatalogBody",
    "DrillController",
    "DrillEndingBody",
    "DrillGradeBody",
    "DrillOutcomeBody",
    "StartDrillBody",
]

DrillId = Annotated[
    str,
    PathParameter(
        pattern=UUID_PATTERN, description="The drill's id (a UUID, as the started drill's id)."
    ),
]
GiveUp = Annotated[
    bool,
    QueryParameter(description="The student gives up (kept in the history as given up)."),
]
WaitS = Annotated[
    float | None,
    QueryParameter(
        ge=0,
        le=300,
        description="Seconds the fixed-checks that do not hold yet are retried (default: the "
        "fault's own settle time, 10 to 90 s in the shipped catalog).",
        schema_extra={"minimum": 0},  # Litestar leaves a bound of 0 out of an optional's
    ),
]

_DRILL_ERRORS = {
    **errors(404, 422, 501),
    409: ResponseSpec(
        ErrorBody,
        description="The project is not opened in GNS3, already has a drill running, or its "
        "lab does not have what the drill needs (the message says what is missing).",
        generate_examples=False,
    ),
}


def _caller(project: ProjectScope, limits: UserLimits = UNLIMITED) -> DrillCaller:
    return DrillCaller(project.project_id, project.user_id, project.caller.token, limits)


# ------------------------------------------------------------------- requests
#: A fault's topic, sent as its name (``ospf``, ``bgp``…).
DrillTopic = Annotated[Topic, _from_value(Topic)]


class StartDrillBody(StrictBody):
    """Which fault: of ``topic`` and ``difficulty`` (each: any when absent), picked at
    random among those the project's lab fits. ``{}``: any fault."""

    topic: DrillTopic | None = Field(default=None, description="The fault's topic.")
    difficulty: int | None = Field(
        default=None, ge=1, le=3, description="1 (first steps), 2, 3 (subtle)."
    )


# ------------------------------------------------------------------ responses
class DrillBody(msgspec.Struct, kw_only=True):
    """A running drill as its student sees it: never the fault's id, title, lines or
    ground truth."""

    id: str
    project_id: str
    topic: str
    difficulty: int
    #: The lab the drill runs on, in words.
    lab: str
    #: What is wrong, as the student notices it (the symptoms' names).
    symptoms: list[str]
    #: The hints revealed so far, in order.
    hints: list[str]
    hints_used: int
    hints_left: int
    #: When the lab was handed over with the fault in it (the drill's time counts from it).
    handed_at: str | None
    #: The last grade's score (``null``: not graded yet).
    score: float | None

    @classmethod
    def of(cls, view: DrillView) -> DrillBody:
        return msgspec.convert(view.to_json(), cls)


class ConditionBody(msgspec.Struct, kw_only=True):
    """One condition of a fix: a fixed-check (``check``) or a constraint
    (``constraint``), whether it is met, and the evidence."""

    kind: str
    name: str
    met: bool
    evidence: str


class DrillGradeBody(msgspec.Struct, kw_only=True):
    """The fix graded: each condition, ``score`` the share met (partial credit),
    ``fixed`` when every one is, the seconds since the lab was handed over, the hints
    used."""

    score: float
    fixed: bool
    time_s: float
    hints_used: int
    conditions: list[ConditionBody]

    @classmethod
    def of(cls, grade: Grade) -> DrillGradeBody:
        return cls(
            score=grade.score,
            fixed=grade.fixed,
            time_s=round(grade.time_s, 1),
            hints_used=grade.hints_used,
            conditions=[
                ConditionBody(kind=c.kind, name=c.name, met=c.met, evidence=c.evidence)
                for c in grade.conditions
            ],
        )


class RestoreBody(msgspec.Struct, kw_only=True):
    """The restore: ``exact`` when the lab reads as before the fault; else what still
    differs, by node and line."""

    exact: bool
    differences: list[str]


class DrillOutcomeBody(msgspec.Struct, kw_only=True):
    """A finished drill in the user's history."""

    drill_id: str
    project_id: str
    fault_id: str
    topic: str
    difficulty: int
    score: float | None
    started_at: str
    ended_at: str
    time_s: float
    hints_used: int
    given_up: bool
    restored: bool

    @classmethod
    def of(cls, outcome: DrillOutcome) -> DrillOutcomeBody:
        return cls(
            drill_id=outcome.drill_id,
            project_id=outcome.project_id,
            fault_id=outcome.fault_id,
            topic=outcome.topic,
            difficulty=outcome.difficulty,
            score=outcome.score,
            started_at=outcome.started_at.isoformat(),
            ended_at=outcome.ended_at.isoformat(),
            time_s=round(outcome.time_s, 1),
            hints_used=outcome.hints_used,
            given_up=outcome.given_up,
            restored=outcome.restored,
        )


class DrillEndingBody(msgspec.Struct, kw_only=True):
    """An ended drill: what the student saw, the answer (the fault's id, title, ground
    truth, the steps that broke the lab and the reference fix), the restore and the
    result kept in the history."""

    drill: DrillBody
    answer: dict[str, Any]
    restore: RestoreBody
    result: DrillOutcomeBody

    @classmethod
    def of(cls, ending: DrillEnding) -> DrillEndingBody:
        return cls(
            drill=DrillBody.of(ending.view),
            answer=ending.answer.to_json(),
            restore=RestoreBody(
                exact=ending.restore.exact, differences=list(ending.restore.differences)
            ),
            result=DrillOutcomeBody.of(ending.outcome),
        )


class TopicBody(msgspec.Struct, kw_only=True):
    """A topic of the catalog and how many faults it has per difficulty."""

    topic: str
    faults: int
    difficulties: dict[str, int]


class DrillCatalogBody(msgspec.Struct, kw_only=True):
    """What a drill can be asked for: the topics and their difficulties (no fault's id,
    title or content)."""

    topics: list[TopicBody]


class BestScoresBody(msgspec.Struct, kw_only=True):
    """The caller's best score per fault drilled (faults never graded are left out)."""

    best_scores: dict[str, float]


# ------------------------------------------------------------------ controller
class DrillController(Controller):
    path = "/projects/{project_id:str}/drills"
    tags = ["drills"]  # noqa: RUF012 - Litestar's declared attribute
    dependencies = {**scopes()}  # noqa: RUF012 - Litestar's declared attribute
    guards = [ids_in_path]  # noqa: RUF012 - Litestar's declared attribute

    @get("/catalog", operation_id="listDrillTopics", responses=errors(404, 422, 501))
    async def catalog(
        self, visible_project: Injected[ProjectScope], drills: Injected[Drills]
    ) -> DrillCatalogBody:
        """The topics a drill can be asked for, with the number of faults per difficulty.
        Nothing of a fault itself (its id, title, lines or answer) is listed."""
        counts: dict[str, dict[int, int]] = {}
        for fault in drills.faults():
            per = counts.setdefault(fault.topic.value, {})
            per[fault.difficulty] = per.get(fault.difficulty, 0) + 1
        return DrillCatalogBody(
            topics=[
                TopicBody(
                    topic=topic,
                    faults=sum(per.values()),
                    difficulties={str(d): per[d] for d in sorted(per)},
                )
                for topic, per in sorted(counts.items())
            ]
        )

    @post(
        "/",
        operation_id="startDrill",
        status_code=HTTP_201_CREATED,
        guards=[json_body],
        responses={**_DRILL_ERRORS, **errors(403, 502)},
    )
    async def start(
        self,
        project: Injected[ProjectScope],
        drills: Injected[Drills],
        limits: Injected[UserLimits],
        data: JSONBody[StartDrillBody],
    ) -> DrillBody:
        """Start a drill on the open project: a fault of the topic and difficulty asked
        (at random among those the lab fits) is put into the lab, and answered once its
        symptoms show (seconds to about two minutes: see docs/api.md). The reply is the
        student's view: the topic, the lab, the symptoms; never the fault.

        409 when the project has a drill running, or its lab lacks what the drill needs
        (the message says what); 403 when the operator's policy does not allow the
        caller teaching turns; 502 when the fault could not be put in or did not show
        (the lab was restored; the message says whether exactly); 422 when the catalog
        has no fault of that topic and difficulty."""
        choice = DrillChoice(topic=data.topic, difficulty=data.difficulty)
        return DrillBody.of(await drills.start(_caller(project, limits), choice))

    @get("/active", operation_id="getActiveDrill", responses=errors(404, 422, 501))
    async def active(
        self, visible_project: Injected[ProjectScope], drills: Injected[Drills]
    ) -> DrillBody:
        """The caller's drill running on the project (404 when there is none, or it is
        another user's, or it is still being set up)."""
        view = await drills.current(_caller(visible_project))
        if view is None:
            raise _no_drill()
        return DrillBody.of(view)

    @post(
        "/{drill_id:str}/hints",
        operation_id="revealDrillHint",
        status_code=HTTP_200_OK,
        responses=errors(404, 422, 501),
    )
    async def hint(
        self, visible_project: Injected[ProjectScope], drills: Injected[Drills], drill_id: DrillId
    ) -> DrillBody:
        """Reveal the drill's next hint (counted in the result): the view, with the new
        hint last. 422 when every hint has been given."""
        caller = _caller(visible_project)
        return DrillBody.of(await drills.hint(caller, canonical_uuid(drill_id)))

    @post(
        "/{drill_id:str}/grade",
        operation_id="gradeDrill",
        status_code=HTTP_200_OK,
        responses={**_DRILL_ERRORS, **errors(502)},
    )
    async def grade(
        self,
        project: Injected[ProjectScope],
        drills: Injected[Drills],
        drill_id: DrillId,
        wait_s: WaitS = None,
    ) -> DrillGradeBody:
        """Grade the lab as it is now: each fixed-check (retried until it holds, for
        ``wait_s``) and each constraint a fix must respect, with its evidence; the score
        is the share met (partial credit). Grading again is allowed; the last grade is
        the drill's score."""
        grade = await drills.grade(_caller(project), canonical_uuid(drill_id), wait_s=wait_s)
        return DrillGradeBody.of(grade)

    @post(
        "/{drill_id:str}/end",
        operation_id="endDrill",
        status_code=HTTP_200_OK,
        responses={**_DRILL_ERRORS, **errors(502)},
    )
    async def end(
        self,
        project: Injected[ProjectScope],
        drills: Injected[Drills],
        drill_id: DrillId,
        give_up: GiveUp = False,
    ) -> DrillEndingBody:
        """End the drill (or give up): the lab is restored to its state before the fault
        and compared with it (``restore``), the result is kept in the caller's history,
        and only now the answer is given. A restore that fails (an error, not a
        difference) leaves the drill running, to end again."""
        caller = _caller(project)
        return DrillEndingBody.of(
            await drills.end(caller, canonical_uuid(drill_id), give_up=give_up)
        )

    @get("/history", operation_id="listDrillHistory", responses=errors(404, 422, 501))
    async def history(
        self,
        visible_project: Injected[ProjectScope],
        drills: Injected[Drills],
        chat: Injected[ChatService],
        limit: Limit = 50,
    ) -> list[DrillOutcomeBody]:
        """The caller's finished drills, in every project, the latest first."""
        if limit > chat.settings.max_page:
            raise InvalidRequestError(f"limit must be between 1 and {chat.settings.max_page}.")
        found = await drills.history(visible_project.user_id, limit)
        return [DrillOutcomeBody.of(outcome) for outcome in found]

    @get("/best-scores", operation_id="getDrillBestScores", responses=errors(404, 422, 501))
    async def best_scores(
        self, visible_project: Injected[ProjectScope], drills: Injected[Drills]
    ) -> BestScoresBody:
        """The caller's best score per fault drilled, in every project."""
        return BestScoresBody(best_scores=await drills.best_scores(visible_project.user_id))


def _no_drill() -> NotFoundError:
    return NotFoundError("No drill of yours is running on this project.")
