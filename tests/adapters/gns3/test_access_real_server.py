"""Authenticator and ProjectGate against a real gns3-server."""

from __future__ import annotations

import uuid

import pytest

from adapters.gns3 import Gns3Authenticator, Gns3Client, Gns3ProjectGate
from copilot_core.errors import (
    AuthenticationError,
    ProjectGoneError,
    ProjectNotFoundError,
    ProjectNotOpenedError,
)
from tests.fakes.gns3_server import RealGns3Server

pytestmark = pytest.mark.timeout(300)


async def test_a_valid_token_names_its_user(gns3_client: Gns3Client, admin_token: str) -> None:
    principal = await Gns3Authenticator(gns3_client).authenticate(admin_token)
    me = await gns3_client.current_user(admin_token)
    assert principal.user_id == me["user_id"]
    assert principal.username == "admin"
    assert principal.is_superadmin is True


@pytest.mark.parametrize("token", ["", "not-a-jwt", "eyJhbGciOiJIUzI1NiJ9.e30.forged"])
async def test_a_bad_token_is_an_authentication_error_without_the_token(
    gns3_client: Gns3Client, token: str
) -> None:
    with pytest.raises(AuthenticationError) as caught:
        await Gns3Authenticator(gns3_client).authenticate(token)
    if token:
        assert token not in str(caught.value)


async def test_an_open_project_passes_and_a_closed_one_is_refused(
    gns3_client: Gns3Client, admin_token: str, project_id: str
) -> None:
    gate = Gns3ProjectGate(gns3_client)
    await gate.require_open(project_id, admin_token)
    await gns3_client.close_project(admin_token, project_id)
    with pytest.raises(ProjectNotOpenedError):
        await gate.require_open(project_id, admin_token)
    await gns3_client.open_project(admin_token, project_id)
    await gate.require_open(project_id, admin_token)


@pytest.mark.parametrize("bad", [str(uuid.uuid4()), "../../access/users", "x" * 10])
async def test_unknown_or_malformed_project_ids_are_not_found(
    gns3_client: Gns3Client, admin_token: str, bad: str
) -> None:
    with pytest.raises(ProjectNotFoundError):
        await Gns3ProjectGate(gns3_client).require_open(bad, admin_token)


async def test_another_users_project_looks_exactly_like_a_missing_one(
    gns3_server: RealGns3Server, gns3_client: Gns3Client, project_id: str
) -> None:
    name = f"gate-{uuid.uuid4().hex[:8]}"
    gns3_server.create_user(name, "Secret-password-1")
    other = gns3_server.token(name, "Secret-password-1")
    with pytest.raises(ProjectNotFoundError) as caught:
        await Gns3ProjectGate(gns3_client).require_open(project_id, other)
    assert str(caught.value) == str(ProjectNotFoundError(project_id))


async def test_gns3_says_a_project_is_gone_only_to_a_caller_with_rights_on_it(
    gns3_server: RealGns3Server, gns3_client: Gns3Client, admin_token: str
) -> None:
    # gns3-server 3.0.6 checks the caller's privilege on /projects/{id} first: a user
    # without it gets 403 whether the project exists or not; only a caller with rights
    # learns that it does not exist (404). So only the 404 may delete anything.
    name = f"gone-{uuid.uuid4().hex[:8]}"
    gns3_server.create_user(name, "Secret-password-1")
    other = gns3_server.token(name, "Secret-password-1")
    gate = Gns3ProjectGate(gns3_client)
    project = str((await gns3_client.create_project(admin_token, name))["project_id"])
    with pytest.raises(ProjectNotFoundError) as existing:
        await gate.require_open(project, other)
    assert not isinstance(existing.value, ProjectGoneError)

    await gns3_client.delete_project(admin_token, project)
    with pytest.raises(ProjectGoneError) as gone:
        await gate.require_open(project, admin_token)
    assert str(gone.value) == str(existing.value)  # a client cannot tell the two apart
    with pytest.raises(ProjectNotFoundError) as deleted:
        await gate.require_open(project, other)
    assert not isinstance(deleted.value, ProjectGoneError)
    with pytest.raises(ProjectGoneError):
        await gate.require_open(str(uuid.uuid4()), admin_token)
