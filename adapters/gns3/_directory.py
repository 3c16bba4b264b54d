"""Signing in and listing projects for the web page, over :class:`Gns3Client`.

:class:`Gns3ClientDirectory` is what the web adapter's ``Gns3Directory`` port asks for;
the web adapter never imports this package.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from adapters.gns3._client import Gns3Client

__all__ = ["Gns3ClientDirectory"]


class Gns3ClientDirectory:
    """Signs users in with their GNS3 credentials and lists the projects they may see."""

    def __init__(self, client: Gns3Client) -> None:
        self._client = client

    async def login(self, username: str, password: str) -> str:
        return await self._client.authenticate(username, password)

    async def projects(self, token: str) -> Sequence[Mapping[str, Any]]:
        return await self._client.projects(token)
