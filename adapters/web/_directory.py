"""What the chat page needs besides the chat API: sign in, the caller's projects,
and Markdown rendered safely on the server.

``POST /v3/copilot/auth/login`` is the only ``/v3/copilot`` route without a bearer
token: it trades GNS3 credentials for a GNS3 token. Neither the password nor the
token is logged; a failure says only that the credentials were refused.
"""

from __future__ import annotations

import asyncio
from typing import Any

import structlog
from litestar import Controller, get, post
from litestar.di import NamedDependency
from litestar.exceptions import HTTPException
from litestar.params import JSONBody
from litestar.status_codes import HTTP_200_OK, HTTP_501_NOT_IMPLEMENTED
from pydantic import Field, SecretStr

from adapters.web._auth import Caller
from adapters.web._body import json_body
from adapters.web._contracts import Gns3Directory, WebDependencies
from adapters.web._markdown import MAX_MARKDOWN_CHARS, MarkdownRenderer
from adapters.web._openapi import errors
from adapters.web._schemas import StrictBody
from copilot_core.errors import AuthenticationError

__all__ = ["DirectoryController", "LoginController", "LoginRequest", "RenderRequest"]

log = structlog.get_logger("adapters.web")

_RENDERER = MarkdownRenderer()


class LoginRequest(StrictBody):
    """GNS3 credentials (the password is never logged nor stored)."""

    username: str = Field(min_length=1, max_length=255)
    password: SecretStr = Field(min_length=1, max_length=1024)


class RenderRequest(StrictBody):
    markdown: str = Field(max_length=MAX_MARKDOWN_CHARS, description="CommonMark text.")


def _directory(deps: WebDependencies) -> Gns3Directory:
    if deps.directory is None:
        raise HTTPException(
            status_code=HTTP_501_NOT_IMPLEMENTED,
            detail="Signing in through the copilot is not available in this deployment.",
        )
    return deps.directory


def _user(caller: Caller) -> dict[str, Any]:
    principal = caller.principal
    return {
        "user_id": principal.user_id,
        "username": principal.username,
        "is_superadmin": principal.is_superadmin,
    }


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
        self, data: JSONBody[LoginRequest], deps: NamedDependency[WebDependencies]
    ) -> dict[str, Any]:
        """Sign in with GNS3 credentials: ``{access_token, user}`` (a GNS3 token).

        401 when GNS3 refuses the credentials. The token is the one GNS3 issued; send
        it as ``Authorization: Bearer`` to every other route.
        """
        directory = _directory(deps)
        try:
            token = await directory.login(data.username, data.password.get_secret_value())
            principal = await deps.authenticator.authenticate(token)
        except AuthenticationError:
            log.info("login_refused")
            raise AuthenticationError("GNS3 refused this username or password.") from None
        log.info("login", user_id=principal.user_id)
        return {
            "access_token": token,
            "token_type": "bearer",
            "user": _user(Caller(principal, token)),
        }


class DirectoryController(Controller):
    path = "/"
    tags = ["ui"]  # noqa: RUF012 - Litestar's declared attribute

    @get("/me", operation_id="whoAmI")
    async def me(self, caller: NamedDependency[Caller]) -> dict[str, Any]:
        """The signed-in user (checks that a stored token is still accepted)."""
        return _user(caller)

    @get("/projects", operation_id="listProjects", responses=errors(501))
    async def projects(
        self, caller: NamedDependency[Caller], deps: NamedDependency[WebDependencies]
    ) -> list[dict[str, Any]]:
        """The caller's GNS3 projects, by name: ``[{id, name, status}]``."""
        listed = await _directory(deps).projects(caller.token)
        found = [
            {
                "id": str(project.get("project_id", "")),
                "name": str(project.get("name", "")),
                "status": str(project.get("status", "unknown")),
            }
            for project in listed
        ]
        return sorted(found, key=lambda project: (project["name"].lower(), project["id"]))

    @post(
        "/render",
        operation_id="renderMarkdown",
        guards=[json_body],
        status_code=HTTP_200_OK,
    )
    async def render(
        self, data: JSONBody[RenderRequest], caller: NamedDependency[Caller]
    ) -> dict[str, str]:
        """Markdown to sanitised HTML (markdown-it-py, then nh3 with an allow-list):
        raw HTML, scripts, event handlers and ``javascript:`` links never survive."""
        if len(data.markdown) < 20_000:
            return {"html": _RENDERER.render(data.markdown)}
        return {"html": await asyncio.to_thread(_RENDERER.render, data.markdown)}
