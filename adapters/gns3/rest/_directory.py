"""Signing in, listing, creating and opening projects and drawing a project for the web
page, over
:class:`Gns3Client`.

:class:`Gns3ClientDirectory` is what the web adapter's ``Gns3Directory`` port asks for;
the web adapter never imports this package.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

from adapters.gns3.rest._client import Gns3Client
from copilot_core.errors import (
    ConflictError,
    Gns3Error,
    Gns3UnavailableError,
    InvalidRequestError,
)

__all__ = ["Gns3ClientDirectory"]

_ANY_HOST = frozenset({"0.0.0.0", "::", "", "0:0:0:0:0:0:0:0"})


class Gns3ClientDirectory:
    """Signs users in with their GNS3 credentials, lists the projects they may see, and
    reads a project's nodes and links (and follows its notifications) for the page.

    ``public_url`` is GNS3's address as a person's browser reaches it (for console
    addresses and links to GNS3's web UI); by default the client's own base URL.
    """

    def __init__(self, client: Gns3Client, *, public_url: str | None = None) -> None:
        self._client = client
        self._public = (public_url or client.base_url).rstrip("/")

    async def login(self, username: str, password: str) -> str:
        return await self._client.authenticate(username, password)

    async def projects(self, token: str) -> Sequence[Mapping[str, Any]]:
        return await self._client.projects(token)

    async def create_project(self, token: str, name: str) -> Mapping[str, Any]:
        with _refusals():
            return await self._client.create_project(token, name)

    async def open_project(self, token: str, project_id: str) -> Mapping[str, Any]:
        with _refusals():
            return await self._client.open_project(token, project_id)

    async def topology(self, token: str, project_id: str) -> Mapping[str, Any]:
        project, nodes, links = await asyncio.gather(
            self._client.project(token, project_id),
            self._client.nodes(token, project_id),
            self._client.links(token, project_id),
        )
        host = urlsplit(self._public).hostname or "127.0.0.1"
        for node in nodes:
            if str(node.get("console_host") or "") in _ANY_HOST:
                node["console_host"] = host
        return {
            "project": project,
            "nodes": nodes,
            "links": links,
            "web_ui": f"{self._public}/static/web-ui",
        }

    async def notifications(self, token: str, project_id: str) -> AsyncIterator[Mapping[str, Any]]:
        async for event in self._client.notifications(token, project_id):
            yield event


@contextmanager
def _refusals() -> Iterator[None]:
    """GNS3's refusals of a request as what they mean to the caller: a name that is taken
    (409) is a conflict, a value GNS3 does not take (400, 422) a bad request; GNS3's own
    words are kept."""
    try:
        yield
    except Gns3UnavailableError:
        raise
    except Gns3Error as exc:
        if exc.status_code == 409:
            raise ConflictError(exc.message) from None
        if exc.status_code in (400, 422):
            raise InvalidRequestError(exc.message) from None
        raise
