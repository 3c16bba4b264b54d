"""The chat routes: ``/v3/copilot/projects/{project_id}/chat/...``.

The controller declares what its handlers work on: ``project`` (open in GNS3 for the
caller, by its canonical id) and ``session`` (a canonical session id in it), see
``_scopes``; the chat service is the ``chat`` dependency. Handlers only say what to do.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, Literal

import structlog
from litestar import Controller, Response, delete, get, patch, post, put
from litestar.openapi.datastructures import ResponseSpec
from litestar.params import FromQuery, HeaderParameter, JSONBody, PathParameter, QueryParameter
from litestar.response import ServerSentEvent
from litestar.status_codes import HTTP_200_OK, HTTP_204_NO_CONTENT

from adapters.web._body import json_body
from adapters.web._contracts import Gns3Directory, WebSettings
from adapters.web._export import file_name, markdown_report, project_name
from adapters.web._openapi import errors, sse_response_spec
from adapters.web._responses import (
    AbortReply,
    DecisionReply,
    HistoryBody,
    SessionBody,
    SessionExport,
    SessionMatchBody,
    TurnReply,
)
from adapters.web._schemas import (
    ID_PATTERN,
    MAX_SAFE_INTEGER,
    ChatRequest,
    DecisionRequest,
    RenameRequest,
)
from adapters.web._scopes import ProjectScope, SessionScope, ids_in_path, scopes
from adapters.web._sse import Protocol, parse_last_event_id, sse_response
from adapters.web._state import Injected
from copilot_core import ChatService, CopilotMode, Message, Session, TurnHandle, TurnRequest
from copilot_core.errors import InvalidRequestError, SessionNotFoundError
from copilot_core.policy import UserLimits
from copilot_core.rules import MAX_SEARCH_CHARS

__all__ = ["LAST_EVENT_ID_PATTERN", "MODE_NAMES", "MODE_PATTERN", "ChatController"]

#: The copilot modes, by name (the ``copilot_mode`` filter; a parameter typed as the enum
#: would take the string ``null`` for "no filter").
MODE_NAMES = [mode.value for mode in CopilotMode]
MODE_PATTERN = "^(?:" + "|".join(MODE_NAMES) + ")$"

#: An SSE id as the stream sends it: ``<turn_id>:<seq>`` (empty: from the first event).
LAST_EVENT_ID_PATTERN = r"^(?:\S+:[0-9]{1,18})?$"

log = structlog.get_logger("adapters.web")

Limit = Annotated[
    int,
    QueryParameter(
        ge=1,
        le=MAX_SAFE_INTEGER,
        description="At most this many (this deployment's page size bounds it; see maximum).",
    ),
]
Offset = Annotated[int, QueryParameter(ge=0, le=MAX_SAFE_INTEGER, description="Skip this many.")]
Cursor = Annotated[
    int,
    QueryParameter(
        ge=0,
        le=MAX_SAFE_INTEGER,
        description="The previous page's next_cursor; 0 (or none): the newest page.",
    ),
]
ModeFilter = Annotated[
    str | None,
    QueryParameter(
        pattern=MODE_PATTERN,
        schema_extra={"enum": MODE_NAMES},
        description="Only the sessions in this copilot mode.",
    ),
]
SearchText = Annotated[
    str,
    QueryParameter(
        name="q",
        min_length=1,
        max_length=MAX_SEARCH_CHARS,
        pattern=r"\S",
        description="Text to find in titles and messages (case does not matter for ASCII "
        "letters; whitespace is folded).",
    ),
]
ExportFormat = Annotated[
    Literal["markdown", "json"],
    QueryParameter(
        name="format",
        description="markdown: a lab report (text/markdown); json: the session and its messages.",
    ),
]
ApprovalId = Annotated[str, PathParameter(pattern=ID_PATTERN, description="The approval's id.")]
LastEventId = Annotated[
    str,
    HeaderParameter(
        name="Last-Event-ID",
        pattern=LAST_EVENT_ID_PATTERN,
        description="The last 'id:' received: '<turn_id>:<seq>'.",
    ),
]


def _turn_request(
    project: ProjectScope, data: ChatRequest, limit: int, limits: UserLimits
) -> TurnRequest:
    """The core's request for ``data``, within the deployment's message limit on the
    message as sent (what the OpenAPI document's ``maxLength`` says), carrying the
    caller's ``limits``: the core applies the operator's policy (a ``copilot_mode``
    above the caller's highest is its PermissionDeniedError, a 403 here)."""
    if len(data.message) > limit:
        raise InvalidRequestError(
            f"message is {len(data.message)} characters long; the limit is {limit}."
        )
    return TurnRequest(
        project_id=project.project_id,
        user_id=project.user_id,
        message=data.message,
        session_id=data.session_id,
        agent_id=data.agent_id,
        copilot_mode=data.copilot_mode,
        temperature=data.temperature,
        max_tokens=data.max_tokens,
        credentials=project.caller.token,
        replace_from=data.replace_from,
        limits=limits,
    )


async def _everything(chat: ChatService, session: SessionScope) -> tuple[Session, list[Message]]:
    """The session and all its messages, oldest first (read a page at a time)."""
    messages: list[Message] = []
    before: int | None = None
    while True:
        found, page = await chat.history(session.key, limit=chat.settings.max_page, before=before)
        messages[:0] = page.messages
        if page.next_cursor is None:
            return found, messages
        before = page.next_cursor


def _on_disconnect(
    chat: ChatService, settings: WebSettings, turn: TurnHandle
) -> Callable[[], Awaitable[bool]] | None:
    """What to do when a client leaves a turn's stream: abort it, when so configured,
    through the chat service like the abort route (the turn's owner is the one who left).

    The response task is being cancelled when this runs, and Litestar cancels it again at
    every await: the abort runs shielded, in a task of its own, so that it lands whatever
    it awaits (the session read of a real store)."""
    if not settings.abort_on_disconnect:
        return None

    async def abort() -> bool:
        try:
            return await chat.abort(turn.info.key, "the client disconnected")
        except SessionNotFoundError:  # deleted meanwhile: its turn was aborted then
            return False

    async def shielded() -> bool:
        return await asyncio.shield(asyncio.ensure_future(abort()))

    return shielded


async def _answer(
    turn: TurnHandle,
    *,
    stream: bool,
    chat: ChatService,
    settings: WebSettings,
    protocol: Protocol,
    after: int = 0,
) -> ServerSentEvent | Response[TurnReply]:
    """The turn as Server-Sent Events, or (``stream`` false) its reply once saved."""
    if not stream:
        return Response(
            TurnReply.from_result(await turn.wait()),
            headers={"X-Session-Id": turn.session_id, "X-Turn-Id": turn.turn_id},
        )
    return sse_response(
        turn,
        after=after,
        heartbeat=settings.heartbeat,
        on_disconnect=_on_disconnect(chat, settings, turn),
        protocol=protocol,
    )


class ChatController(Controller):
    path = "/projects/{project_id:str}/chat"
    tags = ["chat"]  # noqa: RUF012 - Litestar's declared attribute
    dependencies = scopes()
    guards = [ids_in_path]  # noqa: RUF012 - Litestar's declared attribute

    @post(
        "/stream",
        operation_id="streamChat",
        guards=[json_body],
        status_code=HTTP_200_OK,
        responses={
            200: ResponseSpec(
                TurnReply,
                description="Server-Sent Events of the turn (see docs/sse-protocol.md); with "
                '"stream": false, the turn\'s reply once it is saved.',
                generate_examples=False,
            ),
            **errors(403, 404, 409, 429),
        },
    )
    async def stream_chat(
        self,
        project: Injected[ProjectScope],
        data: JSONBody[ChatRequest],
        chat: Injected[ChatService],
        web_settings: Injected[WebSettings],
        limits: Injected[UserLimits],
        protocol: FromQuery[Protocol] = "copilot",
    ) -> ServerSentEvent | Response[TurnReply]:
        """Answer one message: an SSE stream of the turn's events, or one JSON object.

        Without ``session_id`` a new session is created; every event carries the
        ``session_id``. ``done`` is sent after the turn is saved and carries the final
        assistant ``message_id``. With ``"stream": false`` the reply is one object
        ``{session_id, message_id, content, messages, stats}`` once the turn is saved.
        Errors before the turn starts (bad input, unknown session, busy session, LLM
        not configured) are answered with a status and ``{"detail": ...}`` and store
        nothing. ``?protocol=gaia`` streams spec 002's event vocabulary instead.
        """
        turn = await chat.start_turn(
            _turn_request(project, data, chat.settings.max_message_chars, limits)
        )
        structlog.contextvars.bind_contextvars(session_id=turn.session_id)
        log.info("turn_started", turn_id=turn.turn_id, stream=data.stream)
        return await _answer(
            turn,
            stream=data.stream,
            chat=chat,
            settings=web_settings,
            protocol=protocol,
        )

    @get(
        "/sessions/{session_id:str}/stream",
        operation_id="resumeChatStream",
        responses={
            200: sse_response_spec("The missed events of the running turn, then live ones."),
            204: ResponseSpec(
                None, description="No turn is running, or a finished turn has nothing left."
            ),
            **errors(404, 409),
        },
    )
    async def resume_stream(
        self,
        session: Injected[SessionScope],
        chat: Injected[ChatService],
        web_settings: Injected[WebSettings],
        last_event_id: LastEventId = "",
        protocol: FromQuery[Protocol] = "copilot",
    ) -> ServerSentEvent | Response[None]:
        """Re-attach to the session's running turn.

        With ``Last-Event-ID: <turn_id>:<seq>`` the events after ``seq`` are replayed
        first, then the stream follows live until ``done``. A turn that ended moments
        ago can still be replayed. 204 when no turn is running (or nothing is left to
        send).
        """
        await chat.get_session(session.key)
        turn = await chat.attach(session.key)
        after = parse_last_event_id(last_event_id, turn) if turn is not None else 0
        if turn is None or (turn.finished and after >= turn.last_seq):
            return Response(None, status_code=HTTP_204_NO_CONTENT)
        return sse_response(
            turn,
            after=after,
            heartbeat=web_settings.heartbeat,
            on_disconnect=_on_disconnect(chat, web_settings, turn),
            protocol=protocol,
            # An approval the client saw before it lost its connection is shown again.
            again=[event for event in turn.pending if event.seq <= after],
        )

    @get("/sessions", operation_id="listChatSessions", responses=errors(404, 409))
    async def list_sessions(
        self,
        visible_project: Injected[ProjectScope],
        chat: Injected[ChatService],
        limit: Limit = 100,
        offset: Offset = 0,
        copilot_mode: ModeFilter = None,
    ) -> list[SessionBody]:
        """The caller's sessions of the project: pinned first, then newest ``updated_at``
        (also of a closed project)."""
        project, mode = visible_project, CopilotMode(copilot_mode) if copilot_mode else None
        found = await chat.list_sessions(
            project.project_id, project.user_id, limit=limit, offset=offset, copilot_mode=mode
        )
        return [SessionBody.from_session(session) for session in found]

    @get("/search", operation_id="searchChatSessions", responses=errors(404, 409))
    async def search(
        self,
        visible_project: Injected[ProjectScope],
        chat: Injected[ChatService],
        text: SearchText,
        limit: Limit = 20,
    ) -> list[SessionMatchBody]:
        """The caller's sessions of the project whose title or messages contain ``q``,
        most recently updated first, each with the words around its newest match."""
        project = visible_project
        found = await chat.search_sessions(project.project_id, project.user_id, text, limit=limit)
        return [SessionMatchBody.from_match(match) for match in found]

    @get(
        "/sessions/{session_id:str}/export",
        operation_id="exportChatSession",
        responses={
            200: ResponseSpec(
                SessionExport,
                description="format=json: the session and every message; format=markdown "
                "(text/markdown): a lab report.",
                generate_examples=False,
            ),
            **errors(404, 409),
        },
    )
    async def export(
        self,
        visible_session: Injected[SessionScope],
        chat: Injected[ChatService],
        directory_if_any: Injected[Gns3Directory | None],
        export_format: ExportFormat = "markdown",
    ) -> Response[Any]:
        """The whole session to keep or share: a Markdown lab report (each question, the
        tools run with the commands and each device's output, who approved what, the
        answers) or JSON. Sent as a download (``Content-Disposition``)."""
        session, messages = await _everything(chat, visible_session)
        name = file_name(session)
        if export_format == "json":
            return Response(
                SessionExport.of(session, messages),
                headers={"Content-Disposition": f'attachment; filename="{name}.json"'},
            )
        return Response(
            markdown_report(
                session,
                messages,
                await project_name(
                    directory_if_any, visible_session.caller.token, session.project_id
                ),
            ),
            media_type="text/markdown; charset=utf-8",
            headers={"Content-Disposition": f'attachment; filename="{name}.md"'},
        )

    @get(
        "/sessions/{session_id:str}/history",
        operation_id="getChatHistory",
        responses=errors(404, 409),
    )
    async def history(
        self,
        visible_session: Injected[SessionScope],
        chat: Injected[ChatService],
        limit: Limit = 100,
        cursor: Cursor = 0,
    ) -> HistoryBody:
        """The session's messages in the OpenAI shape, oldest first.

        The newest ``limit`` messages are returned; pass ``next_cursor`` back as
        ``cursor`` to page towards older ones (``null`` when there are none). Works on a
        closed project too.
        """
        session = visible_session
        found, page = await chat.history(session.key, limit=limit, before=cursor or None)
        return HistoryBody.from_page(found, page)

    @patch(
        "/sessions/{session_id:str}",
        operation_id="renameChatSession",
        guards=[json_body],
        responses=errors(404, 409),
    )
    async def rename(
        self,
        session: Injected[SessionScope],
        data: JSONBody[RenameRequest],
        chat: Injected[ChatService],
    ) -> SessionBody:
        """Rename the session (1–255 characters); returns the updated session."""
        return SessionBody.from_session(await chat.rename(session.key, data.title))

    @delete(
        "/sessions/{session_id:str}",
        operation_id="deleteChatSession",
        responses=errors(404, 409),
    )
    async def delete_session(
        self, visible_session: Injected[SessionScope], chat: Injected[ChatService]
    ) -> None:
        """Delete the session and all its messages (a running turn is aborted first);
        also of a closed project."""
        await chat.delete(visible_session.key)

    @post(
        "/sessions/{session_id:str}/abort",
        operation_id="abortChatTurn",
        status_code=HTTP_200_OK,
        responses=errors(404, 409),
    )
    async def abort(
        self, session: Injected[SessionScope], chat: Injected[ChatService]
    ) -> AbortReply:
        """Abort the session's running turn; every attached stream ends with ``abort``
        then ``done``. ``aborted`` is false when no turn was running."""
        aborted = await chat.abort(session.key)
        return AbortReply(status="ok", session_id=session.session_id, aborted=aborted)

    @post(
        "/sessions/{session_id:str}/approvals/{approval_id:str}",
        operation_id="decideApproval",
        guards=[json_body],
        status_code=HTTP_200_OK,
        responses=errors(404, 409),
    )
    async def decide(
        self,
        session: Injected[SessionScope],
        approval_id: ApprovalId,
        data: JSONBody[DecisionRequest],
        chat: Injected[ChatService],
    ) -> DecisionReply:
        """Approve or reject a tool call that waits for approval (``approval_required``).

        Only the session's owner may decide (404 to anyone else, as for an unknown
        approval); a second decision, or one after the wait lapsed, gets 409. The turn
        resumes at once: an approved call runs, a rejected one is answered to the model
        with your comment.
        """
        approve = data.decision == "approve"
        await chat.decide(
            session.key, approval_id, approve=approve, comment=data.comment, digest=data.digest
        )
        log.info("approval_decided", approval_id=approval_id, decision=data.decision)
        return DecisionReply(status="ok", approval_id=approval_id, decision=data.decision)

    @put(
        "/sessions/{session_id:str}/pin",
        operation_id="pinChatSession",
        responses=errors(404, 409),
    )
    async def pin(
        self, session: Injected[SessionScope], chat: Injected[ChatService]
    ) -> SessionBody:
        """Pin the session to the top of the list; returns the updated session."""
        return SessionBody.from_session(await chat.set_pinned(session.key, True))

    @delete(
        "/sessions/{session_id:str}/pin",
        operation_id="unpinChatSession",
        status_code=HTTP_200_OK,
        responses=errors(404, 409),
    )
    async def unpin(
        self, session: Injected[SessionScope], chat: Injected[ChatService]
    ) -> SessionBody:
        """Unpin the session; returns the updated session."""
        return SessionBody.from_session(await chat.set_pinned(session.key, False))
