"""A user's standing intent in a project: the checks that should always hold in that lab
(``GET``/``PUT …/intent``, with their last run), and running them now (``POST
…/intent/run``, kept as their last run).

Two-line handlers over the core's :class:`~copilot_core.intent.StandingIntent`; another
user of the same project has their own checks. 501 when the deployment keeps none.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from litestar import Controller, Response, get, post, put
from litestar.openapi.datastructures import ResponseSpec
from litestar.params import JSONBody, QueryParameter
from litestar.status_codes import HTTP_200_OK, HTTP_202_ACCEPTED
from pydantic import BaseModel, ConfigDict, Field

from adapters.web._body import json_body
from adapters.web._openapi import ErrorBody, errors
from adapters.web._scopes import ProjectScope, ids_in_path, scopes
from adapters.web._state import Injected
from copilot_core.intent import (
    MAX_STANDING_CHECKS,
    Check,
    StandingIntent,
    StandingRun,
    dump_check,
)
from copilot_core.policy import UserLimits
from copilot_core.ports import StandingIntentRecord

__all__ = ["IntentBody", "IntentController", "IntentLastRun", "IntentReply", "IntentRunReply"]

WaitS = Annotated[
    float,
    QueryParameter(
        ge=0,
        le=300,
        description="Seconds checks that do not hold yet are retried (default 0: one round); "
        "the answer comes within wait_s + 30 s (202, status running, after that).",
    ),
]


class IntentBody(BaseModel):
    """The checks, each a JSON object with its ``kind`` (see docs/intent.md)."""

    model_config = ConfigDict(extra="forbid")

    checks: list[Check] = Field(max_length=MAX_STANDING_CHECKS)


class IntentLastRun(msgspec.Struct, kw_only=True):
    """The checks' last run: when it ended and its result, as ``POST …/run`` answered it."""

    at: str
    result: dict[str, Any]


class IntentReply(msgspec.Struct, kw_only=True):
    """The caller's checks in the project (as stored: defaults filled in), when they
    were last set (``null``: never), and their last run (``null``: not run since they
    were set to these checks)."""

    checks: list[dict[str, Any]]
    updated_at: str | None = None
    last_run: IntentLastRun | None = None

    @classmethod
    def of(cls, record: StandingIntentRecord | None) -> IntentReply:
        if record is None:
            return cls(checks=[])
        run = record.last_run
        return cls(
            checks=record.checks,
            updated_at=record.updated_at.isoformat(),
            last_run=None
            if run is None
            else IntentLastRun(at=run.at.isoformat(), result=run.result),
        )


class IntentRunReply(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A run in ``verify_intent``'s shape: ``status`` (pass, fail, error), ``summary``
    (counts), ``waited_s`` and per check its ``status``, ``observed``, ``evidence``,
    ``attempts``, ``waited_s`` and ``reason``; ``message`` when something was cut or the
    run was stopped at the time limit. A run that had not ended when its answer was due
    (202): ``status`` and each check's ``running``, and ``message`` saying where its
    result will be."""

    status: str
    summary: dict[str, int]
    waited_s: float
    checks: list[dict[str, Any]]
    message: str | None = None

    @classmethod
    def of(cls, run: StandingRun) -> IntentRunReply:
        """The run's JSON (the one the core keeps as its last run), on the wire."""
        return msgspec.convert(run.to_dict(), cls)


class IntentController(Controller):
    path = "/projects/{project_id:str}/intent"
    tags = ["intent"]  # noqa: RUF012 - Litestar's declared attribute
    dependencies = {**scopes()}  # noqa: RUF012 - Litestar's declared attribute
    guards = [ids_in_path]  # noqa: RUF012 - Litestar's declared attribute

    @get("/", operation_id="getStandingIntent", responses=errors(404, 501))
    async def read(
        self, visible_project: Injected[ProjectScope], intent: Injected[StandingIntent]
    ) -> IntentReply:
        """The caller's standing intent in the project (also of a closed project), with
        its last run."""
        project = visible_project
        return IntentReply.of(await intent.get(project.project_id, project.user_id))

    @put(
        "/",
        operation_id="putStandingIntent",
        status_code=HTTP_200_OK,
        guards=[json_body],
        responses=errors(404, 422, 501),
    )
    async def replace(
        self,
        visible_project: Injected[ProjectScope],
        intent: Injected[StandingIntent],
        data: JSONBody[IntentBody],
    ) -> IntentReply:
        """Replace the caller's standing intent; a check that is not valid is refused
        (422, naming it) and nothing is stored. Other checks than before forget the
        last run."""
        project = visible_project
        return IntentReply.of(
            await intent.put(
                project.project_id, project.user_id, [dump_check(c) for c in data.checks]
            )
        )

    @post(
        "/run",
        operation_id="runStandingIntent",
        status_code=HTTP_200_OK,
        responses={
            202: ResponseSpec(
                IntentRunReply,
                description="The run had not ended within wait_s + 30 s: status running; "
                "it goes on and its result becomes the checks' last_run (GET …/intent).",
                generate_examples=False,
            ),
            **errors(404, 501),
            409: ResponseSpec(
                ErrorBody,
                description="The project is not opened in GNS3, or a run of the caller's "
                "standing intent in it is under way.",
                generate_examples=False,
            ),
        },
    )
    async def run(
        self,
        project: Injected[ProjectScope],
        intent: Injected[StandingIntent],
        limits: Injected[UserLimits],
        wait_s: WaitS = 0.0,
    ) -> Response[IntentRunReply]:
        """Verify the caller's standing intent now, on the open project's lab, with the
        caller's GNS3 token: the verdicts in ``verify_intent``'s shape (kept as the
        checks' last run). One run per user and project at a time (409 while one is
        under way); answered within ``wait_s`` + 30 s (202 when it is still running);
        bounded as a tool call is (stopped at its time limit, its evidence cut to its
        result cap)."""
        run = await intent.run(
            project.project_id, project.user_id, project.caller.token, wait_s=wait_s, limits=limits
        )
        status = HTTP_202_ACCEPTED if run.running else HTTP_200_OK
        return Response(IntentRunReply.of(run), status_code=status)
