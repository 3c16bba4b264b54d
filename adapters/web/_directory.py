"""What the chat page needs besides the chat API: sign in, the caller's projects,
and Markdown rendered safely on the server.

``POST /v3/copilot/auth/login`` is the only ``/v3/copilot`` route without a bearer
token: it trades GNS3 credentials for a GNS3 token. Neither the password nor the
token is logged; a failure says only that the credentials were refused.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

import structlog
from litestar import Controller, get, post
from litestar.params import JSONBody
from litestar.status_codes import HTTP_200_OK, HTTP_201_CREATED
from pydantic import Field, SecretStr

from adapters.web._auth import Caller
from adapters.web._body import json_body
from adapters.web._contracts import Gns3Directory
from adapters.web._ids import ProjectId, canonical_uuid
from adapters.web._markdown import MAX_MARKDOWN_CHARS, MarkdownRenderer
from adapters.web._openapi import errors
from adapters.web._responses import (
    LoginReply,
    ProjectBody,
    RenderedMarkdown,
    RenderedTool,
    RenderedTools,
    UserBody,
)
from adapters.web._schemas import NonBlank, StrictBody
from adapters.web._state import Injected
from adapters.web._toolview import failure_reason, parse_output, render_tool_html
from copilot_core.errors import AuthenticationError
from copilot_core.ports import Authenticator

__all__ = [
    "CreateProjectRequest",
    "DirectoryController",
    "LoginController",
    "LoginRequest",
    "RenderRequest",
    "RenderToolsRequest",
    "ToolOutput",
]

log = structlog.get_logger("adapters.web")

_RENDERER = MarkdownRenderer()


class LoginRequest(StrictBody):
    """GNS3 credentials (the password is never logged nor stored)."""

    username: str = Field(min_length=1, max_length=255)
    password: SecretStr = Field(min_length=1, max_length=1024)


class CreateProjectRequest(StrictBody):
    name: NonBlank = Field(min_length=1, max_length=255, description="The project's name.")


class RenderRequest(StrictBody):
    markdown: str = Field(max_length=MAX_MARKDOWN_CHARS, description="CommonMark text.")


#: Tool outputs one ``POST /render/tools`` takes at most.
MAX_TOOL_OUTPUTS = 16


class ToolOutput(StrictBody):
    """One tool call's result as the stream or the history gives it."""

    tool_name: str = Field(min_length=1, max_length=128)
    output: str = Field(
        max_length=MAX_MARKDOWN_CHARS, description="tool_output of tool_end (a JSON text)."
    )
    status: str | None = Field(
        default=None,
        max_length=32,
        description="tool_end's status (success, error, rejected, aborted), when known.",
    )


class RenderToolsRequest(StrictBody):
    items: list[ToolOutput] = Field(min_length=1, max_length=MAX_TOOL_OUTPUTS)


def _rendered(item: ToolOutput) -> RenderedTool:
    return RenderedTool(
        html=render_tool_html(item.output, item.status),
        reason=failure_reason(parse_output(item.output), item.status),
    )


def _projects(listed: Sequence[Mapping[str, Any]]) -> list[ProjectBody]:
    found = [
        ProjectBody(
            id=str(project.get("project_id", "")),
            name=str(project.get("name", "")),
            status=str(project.get("status", "unknown")),
        )
        for project in listed
    ]
    return sorted(found, key=lambda project: (project.name.lower(), project.id))


async def _signed_in(
    directory: Gns3Directory, authenticator: Authenticator, data: LoginRequest
) -> LoginReply:
    try:
        token = await directory.login(data.username, data.password.get_secret_value())
        principal = await authenticator.authenticate(token)
    except AuthenticationError:
        log.info("login_refused")
        raise AuthenticationError("GNS3 refused this username or password.") from None
    log.info("login", user_id=principal.user_id)
    return LoginReply(
        access_token=token, token_type="bearer", user=UserBody.from_principal(principal)
    )


class LoginController(Controller):
    path = "/auth"
    tags = ["ui"]  # noqa: RUF012 - Litestar's declared attribute

    @post(
        "/login",
        operation_id="login",
        guards=[json_body],
        status_code=HTTP_200_OK,
        security=[],
        responses=errors(401, 501, 502),
    )
    async def login(
        self,
        data: JSONBody[LoginRequest],
        directory: Injected[Gns3Directory],
        authenticator: Injected[Authenticator],
    ) -> LoginReply:
        """Sign in with GNS3 credentials: ``{access_token, user}`` (a GNS3 token).

        401 when GNS3 refuses the credentials. The token is the one GNS3 issued; send
        it as ``Authorization: Bearer`` to every other route.
        """
        return await _signed_in(directory, authenticator, data)


class DirectoryController(Controller):
    path = "/"
    tags = ["ui"]  # noqa: RUF012 - Litestar's declared attribute

    @get("/me", operation_id="whoAmI")
    async def me(self, caller: Injected[Caller]) -> UserBody:
        """The signed-in user (checks that a stored token is still accepted)."""
        return UserBody.from_principal(caller.principal)

    @get("/projects", operation_id="listProjects", responses=errors(501))
    async def projects(
        self, caller: Injected[Caller], directory: Injected[Gns3Directory]
    ) -> list[ProjectBody]:
        """The caller's GNS3 projects, by name: ``[{id, name, status}]``."""
        return _projects(await directory.projects(caller.token))

    @post(
        "/projects",
        operation_id="createProject",
        guards=[json_body],
        status_code=HTTP_201_CREATED,
        responses=errors(403, 409, 501, 502),
    )
    async def create_project(
        self,
        caller: Injected[Caller],
        directory: Injected[Gns3Directory],
        data: JSONBody[CreateProjectRequest],
    ) -> ProjectBody:
        """Create a GNS3 project (GNS3 opens it) with the caller's token: ``{id, name,
        status}``. 409 with GNS3's words when the name is taken; 403 when GNS3 does not
        let the caller create projects (a role without ``Project.Allocate``)."""
        created = await directory.create_project(caller.token, data.name)
        log.info("project_created", project_id=str(created.get("project_id", "")))
        return _projects([created])[0]

    @post(
        "/projects/{project_id:str}/open",
        operation_id="openProject",
        status_code=HTTP_200_OK,
        responses=errors(403, 404, 501, 502),
    )
    async def open_project(
        self, caller: Injected[Caller], directory: Injected[Gns3Directory], project_id: ProjectId
    ) -> ProjectBody:
        """Open a closed GNS3 project with the caller's token (an opened one stays
        open), so that its chat is available: ``{id, name, status}``. 403 when GNS3 does
        not let the caller open it (its role lacks the privilege)."""
        opened = await directory.open_project(caller.token, canonical_uuid(project_id))
        return _projects([opened])[0]

    @post("/render", operation_id="renderMarkdown", guards=[json_body], status_code=HTTP_200_OK)
    async def render(self, data: JSONBody[RenderRequest]) -> RenderedMarkdown:
        """Markdown to sanitised HTML (markdown-it-py, then nh3 with an allow-list):
        raw HTML, scripts, event handlers and ``javascript:`` links never survive."""
        if len(data.markdown) < 20_000:
            return RenderedMarkdown(html=_RENDERER.render(data.markdown))
        return RenderedMarkdown(html=await asyncio.to_thread(_RENDERER.render, data.markdown))

    @post(
        "/render/tools",
        operation_id="renderToolOutputs",
        guards=[json_body],
        status_code=HTTP_200_OK,
    )
    async def render_tools(self, data: JSONBody[RenderToolsRequest]) -> RenderedTools:
        """Tool outputs as a network engineer reads them (sanitised HTML, in order): each
        device's commands as headings with their output (device text highlighted),
        parsed rows and capture summaries as tables; ``reason`` says why a call failed."""
        size = sum(len(item.output) for item in data.items)
        if size < 20_000:
            return RenderedTools(items=[_rendered(item) for item in data.items])
        rendered = await asyncio.to_thread(lambda: [_rendered(item) for item in data.items])
        return RenderedTools(items=rendered)
