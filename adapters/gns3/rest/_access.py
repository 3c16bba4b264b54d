"""Who is calling and whether their project is open: the core's ``Authenticator``
and ``ProjectGate`` over GNS3's own API, with the caller's token."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Sequence

from adapters.gns3.rest._client import Gns3Client
from copilot_core.errors import (
    AuthenticationError,
    PermissionDeniedError,
    ProjectNotFoundError,
)
from copilot_core.ports import Principal

__all__ = ["Gns3Authenticator", "Gns3GroupDirectory", "Gns3ProjectGate"]


def _is_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True


class Gns3Authenticator:
    """A token is valid when GNS3's ``/access/users/me`` accepts it."""

    def __init__(self, client: Gns3Client) -> None:
        self._client = client

    async def authenticate(self, token: str) -> Principal:
        if not token.strip():
            raise AuthenticationError("An empty bearer token is not a GNS3 token.")
        user = await self._client.current_user(token)
        user_id = user.get("user_id")
        if not user_id:
            raise AuthenticationError("GNS3 answered /access/users/me without a user id.")
        if user.get("is_active") is False:
            raise AuthenticationError(f"The GNS3 account {user.get('username')!r} is disabled.")
        return Principal(
            user_id=str(user_id),
            username=str(user.get("username") or user_id),
            is_superadmin=bool(user.get("is_superadmin")),
        )


class Gns3ProjectGate:
    """A project is usable when the caller can read it in GNS3 and it is opened.

    A project the caller may not see is reported exactly like one that does not
    exist, so that ids of other users' projects cannot be probed: GNS3's 403 becomes a
    plain ``ProjectNotFoundError``. GNS3's own 404 stays a
    :class:`~copilot_core.errors.ProjectGoneError` (a subclass, answered alike), which
    GNS3 sends only to a caller with rights on the project: the project is gone.
    """

    def __init__(self, client: Gns3Client) -> None:
        self._client = client

    async def require_open(self, project_id: str, credentials: str) -> None:
        if not _is_uuid(project_id):  # GNS3 ids are UUIDs; nothing else reaches a URL
            raise ProjectNotFoundError(project_id)
        try:
            await self._client.opened_project(credentials, project_id)
        except PermissionDeniedError:
            raise ProjectNotFoundError(project_id) from None


class Gns3GroupDirectory:
    """The GNS3 groups of a user (the core's ``GroupDirectory``), read with the service's
    own GNS3 account: GNS3 lets only an account with ``Group.Audit`` (a superadmin) read
    memberships. Its token is renewed when GNS3 rejects it."""

    def __init__(self, client: Gns3Client, *, username: str, password: str) -> None:
        self._client = client
        self._username = username
        self._password = password
        self._token: str | None = None
        self._lock = asyncio.Lock()

    async def _signed_in(self, renew: bool) -> str:
        async with self._lock:
            if self._token is None or renew:
                self._token = await self._client.authenticate(self._username, self._password)
            return self._token

    async def groups(self, principal: Principal, token: str) -> Sequence[str]:
        try:
            rows = await self._client.user_groups(await self._signed_in(False), principal.user_id)
        except AuthenticationError:
            rows = await self._client.user_groups(await self._signed_in(True), principal.user_id)
        except PermissionDeniedError:
            raise PermissionDeniedError(
                f"The operator's policy has group rules, and the service's GNS3 account "
                f"{self._username!r} may not read GNS3 groups (it needs Group.Audit: make it "
                "a superadmin); nothing was done."
            ) from None
        return [str(row["name"]) for row in rows if row.get("name")]
