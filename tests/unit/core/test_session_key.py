"""A session is named by one value, :class:`SessionKey`, in every operation on it."""

from __future__ import annotations

import pytest

from copilot_core import Session, SessionKey, TurnRequest
from copilot_core.errors import InvalidRequestError, SessionNotFoundError
from copilot_core.ports import TurnInfo
from copilot_core.testing import text_reply

from .conftest import ALICE, BOB, PROJECT, World


async def new_session(world: World) -> str:
    world.model.add(text_reply("answer"), text_reply("A title"))
    events = await world.turn("hello")
    return str(events[0]["session_id"])


def test_a_key_is_a_value_of_its_three_ids() -> None:
    key = SessionKey("p", "s", "u")
    assert key == SessionKey(project_id="p", session_id="s", user_id="u")
    assert len({key, SessionKey("p", "s", "u"), SessionKey("p", "s", "other")}) == 2
    assert (key.project_id, key.session_id, key.user_id) == ("p", "s", "u")
    with pytest.raises(AttributeError):
        key.user_id = "mallory"  # type: ignore[misc]


@pytest.mark.parametrize("ids", [("", "s", "u"), ("p", "", "u"), ("p", "s", "")])
def test_a_key_refuses_an_empty_id(ids: tuple[str, str, str]) -> None:
    with pytest.raises(InvalidRequestError, match="must not be empty"):
        SessionKey(*ids)


async def test_a_turn_asked_in_an_empty_session_id_is_a_bad_request(world: World) -> None:
    with pytest.raises(InvalidRequestError, match="session_id must not be empty"):
        await world.service.start_turn(world.request(session_id=""))
    assert world.model.calls == []


@pytest.mark.parametrize("ids", [("p", None, "u"), ("p", "s", 7), (b"p", "s", "u")])
def test_a_key_refuses_an_id_that_is_not_a_string(ids: tuple[object, object, object]) -> None:
    with pytest.raises(TypeError, match="must be a string"):
        SessionKey(*ids)  # type: ignore[arg-type]


def test_the_values_that_belong_to_a_session_give_its_key(world: World) -> None:
    now = world.clock.now()
    session = Session(thread_id="s", user_id="u", project_id="p", created_at=now, updated_at=now)
    assert session.key == SessionKey("p", "s", "u")
    assert TurnInfo("t", "p", "s", "u").key == SessionKey("p", "s", "u")
    assert TurnRequest("p", "u", "hi", session_id="s").key == SessionKey("p", "s", "u")
    assert TurnRequest("p", "u", "hi").key is None  # a new session has no key yet


async def test_a_session_is_asked_by_its_key_and_only_by_it(world: World) -> None:
    session_id = await new_session(world)
    key = SessionKey(PROJECT, session_id, ALICE)
    assert (await world.service.get_session(key)).key == key
    assert (await world.service.get_session(key=key)).key == key
    with pytest.raises(SessionNotFoundError):  # the same ids, another user: no such session
        await world.service.get_session(SessionKey(PROJECT, session_id, BOB))
    with pytest.raises(TypeError):  # the three ids apart are not a key
        await world.service.get_session(PROJECT, session_id, ALICE)  # type: ignore[call-arg, arg-type]
