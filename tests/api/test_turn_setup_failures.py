"""Every failure of a turn is an answer (issue 36, item 2), over real HTTP on 127.0.0.1.

* A model that cannot be built (the provider's SDK refuses the options: openai 3.63 took
  no ``httpx.Timeout``, and every turn was a bare 500) is the turn's ``error`` event, the
  user's message kept, as for any model error; logged once, with its traceback.
* A provider's bug (any exception while choosing the model) is an ``error`` event too.
* What fails before anything can be stored (the store itself) is a 5xx whose body has a
  stable ``code`` and says what to do.
* Bad LLM settings are refused when stored, naming the field; ``null`` is "not set".

The first tests run the real service (``build_container``, ``create_app``) with the real
LLM settings repository and provider: only the provider's model factory is replaced.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from copilot_core.errors import StoreError
from copilot_core.testing import InMemoryCheckpointStore
from tests.api.conftest import OPEN, Service, collect_until_done, raw_events
from tests.api.real_app import RealApp, real_app

#: What langchain-openai 1.8.1 with openai 3.63 raised for every turn.
REFUSAL = (
    "Invalid timeout: expected a number, `None`, a tuple or `httpx2.Timeout`, "
    "got <class 'httpx.Timeout'>."
)


def refusing_factory(*args: object, **kwargs: object) -> Any:
    raise TypeError(REFUSAL)


class Records(logging.Handler):
    """Every log record of the run, as logged."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def with_traceback(self) -> list[logging.LogRecord]:
        """Records that carry an exception: stdlib's ``exc_info``, or structlog's (in the
        event dictionary, rendered later)."""
        return [
            r
            for r in self.records
            if (r.exc_info is not None and r.exc_info[0] is not None)
            or (isinstance(r.msg, dict) and r.msg.get("exc_info") is not None)
        ]


@pytest.fixture
def records() -> Iterator[Records]:
    handler = Records()
    logging.getLogger().addHandler(handler)
    try:
        yield handler
    finally:
        logging.getLogger().removeHandler(handler)


@pytest.fixture
async def real_service(tmp_path: Path) -> AsyncIterator[RealApp]:
    """The real service, its model factory refusing every model."""
    async with real_app(tmp_path / "data", factory=refusing_factory) as app:
        yield app


SETTINGS = {"provider": "openai_compatible", "model": "m", "base_url": "http://127.0.0.1:9/v1"}


async def test_a_model_that_cannot_be_built_is_the_turns_error_event_logged_once(
    real_service: RealApp, records: Records
) -> None:
    store = real_service.store
    async with real_service.client() as http:
        stored = await http.put("/v3/copilot/llm-config", json=SETTINGS)
        assert stored.status_code == 200, stored.text
        url = real_service.chat_url()
        async with http.stream("POST", url, json={"message": "hello?"}) as response:
            assert response.status_code == 200
            session_id = response.headers["x-session-id"]
            events = await collect_until_done(response)
        quiet = await http.post(url, json={"message": "and now?", "stream": False})
    assert [e.type for e in events] == ["error", "done"], events
    error = events[0].data
    assert error["code"] == "llm_setup"
    assert "could not be set up" in error["error"]
    assert "Check provider, base_url and model" in error["error"]
    assert "TypeError" in error["error"]
    # nothing stored but the user's message, as for any model error
    page = await store.history(OPEN, session_id)
    assert [(m.role.value, m.content) for m in page.messages] == [("user", "hello?")]
    # stream=false: the same answer, in the reply
    assert quiet.status_code == 200, quiet.text
    assert "could not be set up" in quiet.json()["error"]
    # logged once per turn, with the SDK's own traceback
    logged = records.with_traceback()
    assert len(logged) == 2, [r.getMessage() for r in logged]
    assert all(r.exc_info is not None and r.exc_info[0] is TypeError for r in logged)
    assert all(r.name == "adapters.llm._provider" for r in logged)


async def test_bad_llm_settings_are_refused_when_stored_naming_the_field(
    real_service: RealApp,
) -> None:
    async with real_service.client() as http:
        # null where the schema allows it is "not set": the default applies
        stored = await http.put("/v3/copilot/llm-config", json={**SETTINGS, "approval": None})
        assert stored.status_code == 200, stored.text
        assert stored.json()["approval"] == "changes"
        for field, value in (
            ("base_url", "http://127.0.0.1:9/v1\x7f"),  # every turn was a 500 after it
            ("base_url", "http://127.0.0.1:9/v 1"),
            ("base_url", "http://127.0.0.1:0/v1"),
            ("base_url", "http://user:pw@127.0.0.1:9/v1"),
            ("api_key", "sk-line\nbreak"),
        ):
            refused = await http.put("/v3/copilot/llm-config", json={**SETTINGS, field: value})
            assert refused.status_code == 422, (value, refused.text)
            assert refused.json()["code"] == "invalid_request"
            assert field in refused.json()["detail"], refused.text
            assert "sk-line" not in refused.text  # a key is never echoed
        kept = await http.get("/v3/copilot/llm-config")
    assert kept.json()["base_url"] == SETTINGS["base_url"]


async def test_a_providers_bug_is_the_turns_error_event_logged_once(
    service: Service, records: Records
) -> None:
    class Broken:
        async def for_user(self, user_id: str, overrides: object) -> object:
            raise RuntimeError("a provider's bug")

    service.chat.runner.starter._models = Broken()  # type: ignore[assignment]
    async with (
        service.client() as http,
        http.stream("POST", service.chat_url() + "/stream", json={"message": "q"}) as response,
    ):
        assert response.status_code == 200
        session_id = response.headers["x-session-id"]
        events = [event async for event in raw_events(response)]
    assert [e.type for e in events] == ["error", "done"]
    assert events[0].data["code"] == "internal"
    page = await service.store.history(OPEN, session_id)
    assert [m.content for m in page.messages] == ["q"]
    (logged,) = records.with_traceback()
    assert logged.exc_info is not None and logged.exc_info[0] is RuntimeError


class _StoreFailingAtStart(InMemoryCheckpointStore):
    def __init__(self, error: Exception) -> None:
        super().__init__()
        self.error = error

    async def create_session(self, *args: Any, **kwargs: Any) -> Any:
        raise self.error


@pytest.mark.parametrize(
    ("error", "status", "code"),
    [(RuntimeError("disk on fire"), 500, "internal"), (StoreError("locked"), 503, "store")],
)
async def test_a_store_failing_before_the_turn_is_a_5xx_with_a_code_and_what_to_do(
    service: Service, records: Records, error: Exception, status: int, code: str
) -> None:
    service.chat.runner.starter._store = _StoreFailingAtStart(error)  # type: ignore[assignment]
    async with service.client() as http:
        response = await http.post(service.chat_url() + "/stream", json={"message": "q"})
    assert response.status_code == status
    body = response.json()
    assert body["code"] == code
    assert "disk on fire" not in body["detail"]
    if status == 500:
        assert "Try again" in body["detail"] and "tell the operator" in body["detail"]
        assert len(records.with_traceback()) == 1
