"""The chat routes: ``/v3/copilot/projects/{project_id}/chat/...``."""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from typing import Annotated, Any

import structlog
from litestar import Controller, Response, delete, get, patch, post, put
from litestar.di import NamedDependency
from litestar.params import FromQuery, HeaderParameter, JSONBody, PathParameter, QueryParameter
from litestar.response import ServerSentEvent
from litestar.status_codes import HTTP_200_OK, HTTP_204_NO_CONTENT

from adapters.web._auth import Caller
from adapters.web._contracts import WebDependencies, WebSettings
from adapters.web._openapi import errors, sse_response_spec
from adapters.web._schemas import ID_PATTERN, ChatRequest, DecisionRequest, RenameRequest
from adapters.web._sse import Protocol, parse_last_event_id, sse_response
from copilot_core import TurnRequest, TurnResult
from copilot_core.errors import ProjectNotOpenedError
from copilot_core.session import CopilotMode, Session

__all__ = ["ChatController"]

log = structlog.get_logger("adapters.web")

ProjectId = Annotated[
    str, PathParameter(pattern=ID_PATTERN, description="The GNS3 project's id (a UUID).")
]
SessionId = Annotated[str, PathParameter(pattern=ID_PATTERN, description="The session's id.")]


def _bind(project_id: str, session_id: str | None = None) -> None:
    structlog.contextvars.bind_contextvars(project_id=project_id)
    if session_id is not None:
        structlog.contextvars.bind_contextvars(session_id=session_id)


async def _open_project(deps: WebDependencies, caller: Caller, project_id: str) -> None:
    _bind(project_id)
    await deps.projects.require_open(project_id, caller.token)


async def _known_project(deps: WebDependencies, caller: Caller, project_id: str) -> None:
    """For reading and deleting sessions: the caller must see the project in GNS3, which
    may be closed (its conversations are still there to read or clean up)."""
    _bind(project_id)
    with contextlib.suppress(ProjectNotOpenedError):
        await deps.projects.require_open(project_id, caller.token)


def _disconnect_abort(
    deps: WebDependencies, settings: WebSettings, project_id: str, session_id: str
) -> Callable[[], Awaitable[bool]] | None:
    """What to do when a client leaves a turn's stream: abort it, when so configured."""
    if not settings.abort_on_disconnect:
        return None

    async def abort() -> bool:
        return await deps.chat.runner.abort(project_id, session_id, "the client disconnected")

    return abort


def _result_body(result: TurnResult) -> dict[str, Any]:
    stats = result.stats
    return {
        "session_id": result.session_id,
        "message_id": result.message_id,
        "content": result.content,
        "messages": [message.to_dict() for message in result.messages],
        "stats": {
            "messages": stats.messages,
            "llm_calls": stats.llm_calls,
            "input_tokens": stats.input_tokens,
            "output_tokens": stats.output_tokens,
            "total_tokens": stats.total_tokens,
        },
        "aborted": result.aborted,
        "error": result.error,
    }


def _session_body(session: Session) -> dict[str, Any]:
    return session.to_dict()


class ChatController(Controller):
    path = "/projects/{project_id:str}/chat"
    tags = ["chat"]  # noqa: RUF012 - Litestar's declared attribute

    @post(
        "/stream",
        operation_id="streamChat",
        status_code=HTTP_200_OK,
        responses={
            200: sse_response_spec(
                "Server-Sent Events of the turn (see docs/sse-protocol.md); with "
                '"stream": false, one JSON object {session_id, message_id, content, '
                "messages, stats}."
            ),
            **errors(400, 401, 404, 409, 429, 502, 503),
        },
    )
    async def stream_chat(
        self,
        project_id: ProjectId,
        data: JSONBody[ChatRequest],
        caller: NamedDependency[Caller],
        deps: NamedDependency[WebDependencies],
        web_settings: NamedDependency[WebSettings],
        protocol: FromQuery[Protocol] = "copilot",
    ) -> ServerSentEvent | Response[dict[str, Any]]:
        """Answer one message: an SSE stream of the turn's events, or one JSON object.

        Without ``session_id`` a new session is created; every event carries the
        ``session_id``. ``done`` is sent after the turn is saved and carries the final
        assistant ``message_id``. With ``"stream": false`` the reply is one object
        ``{session_id, message_id, content, messages, stats}`` once the turn is saved.
        Errors before the turn starts (bad input, unknown session, busy session, LLM
        not configured) are answered with a status and ``{"detail": ...}`` and store
        nothing. ``?protocol=gaia`` streams spec 002's event vocabulary instead.
        """
        await _open_project(deps, caller, project_id)
        turn = await deps.chat.start_turn(
            TurnRequest(
                project_id=project_id,
                user_id=caller.user_id,
                message=data.message,
                session_id=data.session_id,
                agent_id=data.agent_id,
                copilot_mode=data.copilot_mode,
                temperature=data.temperature,
                max_tokens=data.max_tokens,
                credentials=caller.token,
            )
        )
        _bind(project_id, turn.session_id)
        log.info("turn_started", turn_id=turn.turn_id, stream=data.stream)
        if not data.stream:
            return Response(_result_body(await turn.wait()))
        return sse_response(
            turn,
            heartbeat=web_settings.heartbeat_interval,
            on_disconnect=_disconnect_abort(deps, web_settings, project_id, turn.session_id),
            protocol=protocol,
        )

    @get(
        "/sessions/{session_id:str}/stream",
        operation_id="resumeChatStream",
        responses={
            200: sse_response_spec("The missed events of the running turn, then live ones."),
            **errors(400, 401, 404, 409),
        },
    )
    async def resume_stream(
        self,
        project_id: ProjectId,
        session_id: SessionId,
        caller: NamedDependency[Caller],
        deps: NamedDependency[WebDependencies],
        web_settings: NamedDependency[WebSettings],
        last_event_id: Annotated[str | None, HeaderParameter(name="Last-Event-ID")] = None,
        protocol: FromQuery[Protocol] = "copilot",
    ) -> ServerSentEvent | Response[None]:
        """Re-attach to the session's running turn.

        With ``Last-Event-ID: <turn_id>:<seq>`` the events after ``seq`` are replayed
        first, then the stream follows live until ``done``. A turn that ended moments
        ago can still be replayed. 204 when no turn is running (or nothing is left to
        send).
        """
        await _open_project(deps, caller, project_id)
        _bind(project_id, session_id)
        await deps.chat.get_session(project_id, session_id, caller.user_id)
        turn = await deps.chat.attach(project_id, session_id, caller.user_id)
        if turn is None:
            return Response(None, status_code=HTTP_204_NO_CONTENT)
        after = parse_last_event_id(last_event_id, turn)
        if turn.finished and after >= turn.last_seq:
            return Response(None, status_code=HTTP_204_NO_CONTENT)
        return sse_response(
            turn,
            after=after,
            heartbeat=web_settings.heartbeat_interval,
            on_disconnect=_disconnect_abort(deps, web_settings, project_id, session_id),
            protocol=protocol,
            # An approval the client saw before it lost its connection is shown again.
            again=[event for event in turn.pending if event.seq <= after],
        )

    @get("/sessions", operation_id="listChatSessions", responses=errors(400, 401, 404, 409))
    async def list_sessions(
        self,
        project_id: ProjectId,
        caller: NamedDependency[Caller],
        deps: NamedDependency[WebDependencies],
        limit: Annotated[int, QueryParameter(ge=1, le=1000)] = 100,
        offset: Annotated[int, QueryParameter(ge=0)] = 0,
        copilot_mode: FromQuery[CopilotMode | None] = None,
    ) -> list[dict[str, Any]]:
        """The caller's sessions of the project: pinned first, then newest ``updated_at``
        (also of a closed project)."""
        await _known_project(deps, caller, project_id)
        sessions = await deps.chat.list_sessions(
            project_id, caller.user_id, limit=limit, offset=offset, copilot_mode=copilot_mode
        )
        return [_session_body(session) for session in sessions]

    @get(
        "/sessions/{session_id:str}/history",
        operation_id="getChatHistory",
        responses=errors(400, 401, 404, 409),
    )
    async def history(
        self,
        project_id: ProjectId,
        session_id: SessionId,
        caller: NamedDependency[Caller],
        deps: NamedDependency[WebDependencies],
        limit: Annotated[int, QueryParameter(ge=1, le=1000)] = 100,
        cursor: Annotated[int | None, QueryParameter(ge=1)] = None,
    ) -> dict[str, Any]:
        """The session's messages in the OpenAI shape, oldest first.

        The newest ``limit`` messages are returned; pass ``next_cursor`` back as
        ``cursor`` to page towards older ones (``null`` when there are none). Works on a
        closed project too.
        """
        await _known_project(deps, caller, project_id)
        _bind(project_id, session_id)
        session, page = await deps.chat.history(
            project_id, session_id, caller.user_id, limit=limit, before=cursor
        )
        return {
            "thread_id": session.thread_id,
            "title": session.title,
            "copilot_mode": session.copilot_mode.value,
            "pinned": session.pinned,
            "messages": [message.to_dict() for message in page.messages],
            "next_cursor": page.next_cursor,
            "created_at": session.created_at.isoformat(),
            "updated_at": session.updated_at.isoformat(),
            "llm_calls": session.llm_calls_count,
            "message_count": session.message_count,
            "input_tokens": session.input_tokens,
            "output_tokens": session.output_tokens,
            "total_tokens": session.total_tokens,
        }

    @patch(
        "/sessions/{session_id:str}",
        operation_id="renameChatSession",
        responses=errors(400, 401, 404, 409),
    )
    async def rename(
        self,
        project_id: ProjectId,
        session_id: SessionId,
        data: JSONBody[RenameRequest],
        caller: NamedDependency[Caller],
        deps: NamedDependency[WebDependencies],
    ) -> dict[str, Any]:
        """Rename the session (1–255 characters); returns the updated session."""
        await _open_project(deps, caller, project_id)
        _bind(project_id, session_id)
        session = await deps.chat.rename(project_id, session_id, caller.user_id, data.title)
        return _session_body(session)

    @delete(
        "/sessions/{session_id:str}",
        operation_id="deleteChatSession",
        responses=errors(401, 404, 409),
    )
    async def delete_session(
        self,
        project_id: ProjectId,
        session_id: SessionId,
        caller: NamedDependency[Caller],
        deps: NamedDependency[WebDependencies],
    ) -> None:
        """Delete the session and all its messages (a running turn is aborted first);
        also of a closed project."""
        await _known_project(deps, caller, project_id)
        _bind(project_id, session_id)
        await deps.chat.delete(project_id, session_id, caller.user_id)

    @post(
        "/sessions/{session_id:str}/abort",
        operation_id="abortChatTurn",
        status_code=HTTP_200_OK,
        responses=errors(401, 404, 409),
    )
    async def abort(
        self,
        project_id: ProjectId,
        session_id: SessionId,
        caller: NamedDependency[Caller],
        deps: NamedDependency[WebDependencies],
    ) -> dict[str, Any]:
        """Abort the session's running turn; every attached stream ends with ``abort``
        then ``done``. ``aborted`` is false when no turn was running."""
        await _open_project(deps, caller, project_id)
        _bind(project_id, session_id)
        aborted = await deps.chat.abort(project_id, session_id, caller.user_id)
        return {"status": "ok", "session_id": session_id, "aborted": aborted}

    @post(
        "/sessions/{session_id:str}/approvals/{approval_id:str}",
        operation_id="decideApproval",
        status_code=HTTP_200_OK,
        responses=errors(400, 401, 404, 409),
    )
    async def decide(
        self,
        project_id: ProjectId,
        session_id: SessionId,
        approval_id: Annotated[
            str, PathParameter(pattern=ID_PATTERN, description="The approval's id.")
        ],
        data: JSONBody[DecisionRequest],
        caller: NamedDependency[Caller],
        deps: NamedDependency[WebDependencies],
    ) -> dict[str, Any]:
        """Approve or reject a tool call that waits for approval (``approval_required``).

        Only the session's owner may decide (404 to anyone else, as for an unknown
        approval); a second decision, or one after the wait lapsed, gets 409. The turn
        resumes at once: an approved call runs, a rejected one is answered to the model
        with your comment.
        """
        await _open_project(deps, caller, project_id)
        _bind(project_id, session_id)
        await deps.chat.decide(
            project_id,
            session_id,
            caller.user_id,
            approval_id,
            approve=data.decision == "approve",
            comment=data.comment,
        )
        log.info("approval_decided", approval_id=approval_id, decision=data.decision)
        return {"status": "ok", "approval_id": approval_id, "decision": data.decision}

    @put(
        "/sessions/{session_id:str}/pin",
        operation_id="pinChatSession",
        responses=errors(401, 404, 409),
    )
    async def pin(
        self,
        project_id: ProjectId,
        session_id: SessionId,
        caller: NamedDependency[Caller],
        deps: NamedDependency[WebDependencies],
    ) -> dict[str, Any]:
        """Pin the session to the top of the list; returns the updated session."""
        await _open_project(deps, caller, project_id)
        _bind(project_id, session_id)
        return _session_body(
            await deps.chat.set_pinned(project_id, session_id, caller.user_id, True)
        )

    @delete(
        "/sessions/{session_id:str}/pin",
        operation_id="unpinChatSession",
        status_code=HTTP_200_OK,
        responses=errors(401, 404, 409),
    )
    async def unpin(
        self,
        project_id: ProjectId,
        session_id: SessionId,
        caller: NamedDependency[Caller],
        deps: NamedDependency[WebDependencies],
    ) -> dict[str, Any]:
        """Unpin the session; returns the updated session."""
        await _open_project(deps, caller, project_id)
        _bind(project_id, session_id)
        return _session_body(
            await deps.chat.set_pinned(project_id, session_id, caller.user_id, False)
        )
